"""The `questions` view: clarifications on their tasks, deduplicated, with their age."""

from __future__ import annotations

from typing import Any

from tandem.domain import events as ev
from tandem.domain.lifecycles import QUESTION
from tandem.projections.base import ByState, View, rfc3339


class QuestionsView(View):
    """Keyed by (task_id, question_key): no one field names a row, so the
    stream sends this view whole when it changes (`View.change`)."""

    name = "questions"

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[tuple[str, str], dict[str, Any]] = {}
        self.by_state = ByState()  # what a page lists: rows by state, newest first
        self.by_task: dict[str, list[tuple[str, str]]] = {}  # a task's questions, first raised first

    def _raised(self, event: ev.QuestionRaised) -> None:
        key = (event.task_id, event.question_key)
        before = self.rows[key]["state"] if key in self.rows else None
        if before is None:
            self.by_task.setdefault(event.task_id, []).append(key)
        self.by_state.enter(key, QUESTION.after[ev.QuestionRaised], before)
        self.rows[key] = {
            "task_id": event.task_id,
            "question_key": event.question_key,
            "state": QUESTION.after[ev.QuestionRaised],
            "recipient": event.recipient,
            "blocking_reason": event.blocking_reason,
            "affected": event.affected,
            "first_seen_at": rfc3339(event.first_seen_at),
            "times_raised": event.times_raised,
            "answer": None,  # an extension (docs/contract/views.md): the answer, once answered
        }

    def _answered(self, event: ev.QuestionAnswered) -> None:
        key = (event.task_id, event.question_key)
        row = self.rows[key]
        self.by_state.enter(key, QUESTION.after[ev.QuestionAnswered], row["state"])
        row["state"] = QUESTION.after[ev.QuestionAnswered]
        row["answer"] = event.answer

    handlers = {ev.QuestionRaised: _raised, ev.QuestionAnswered: _answered}

    def render(self) -> list[dict[str, Any]]:
        return [self.rows[key] for key in sorted(self.rows)]
