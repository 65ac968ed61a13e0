"""The `tasks` view: each task's revision, state, grant revision, holds and actions."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tandem.domain import events as ev
from tandem.domain.lifecycles import TASK
from tandem.projections.base import View, picked_rows, sorted_rows


class TasksView(View):
    name = "tasks"

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, Any]] = {}
        self.grant_revisions: dict[str, int] = {}
        self.open_questions: set[tuple[str, str]] = set()

    def _delegated(self, event: ev.TaskDelegated) -> None:
        self.rows[event.task_id] = {
            "task_id": event.task_id,
            "revision": 1,
            "state": TASK.after[ev.TaskDelegated],
            "goal": event.goal,
            "grant_id": event.grant_id,
            "grant_revision": self.grant_revisions[event.grant_id],
            "depends_on": list(event.depends_on),
            "holds": [],
            "open_questions": 0,
            "actions": [],
        }

    def _grant(self, event: ev.GrantIssued | ev.GrantRevised) -> None:
        self.grant_revisions[event.grant_id] = event.revision
        for row in self.rows.values():
            if row["grant_id"] == event.grant_id:
                row["grant_revision"] = event.revision

    def _revised(self, event: ev.TaskRevised) -> None:
        row = self.rows[event.task_id]
        row["revision"] = event.revision
        row["goal"] = event.goal

    def _completed(self, event: ev.TaskCompleted) -> None:
        self.rows[event.task_id]["state"] = TASK.after[ev.TaskCompleted]

    def _cancelled(self, event: ev.TaskCancelled) -> None:
        self.rows[event.task_id]["state"] = TASK.after[ev.TaskCancelled]

    def _holds(self, event: ev.TaskHoldsChanged) -> None:
        self.rows[event.task_id]["holds"] = list(event.holds)

    def _raised(self, event: ev.QuestionRaised) -> None:
        key = (event.task_id, event.question_key)
        if key not in self.open_questions:
            self.open_questions.add(key)
            self.rows[event.task_id]["open_questions"] += 1

    def _answered(self, event: ev.QuestionAnswered) -> None:
        self.open_questions.discard((event.task_id, event.question_key))
        self.rows[event.task_id]["open_questions"] -= 1

    def _proposed(self, event: ev.ActionProposed) -> None:
        if event.task_id is not None:
            self.rows[event.task_id]["actions"].append(event.operation_id)

    handlers = {
        ev.TaskDelegated: _delegated,
        ev.GrantIssued: _grant,
        ev.GrantRevised: _grant,
        ev.TaskRevised: _revised,
        ev.TaskCompleted: _completed,
        ev.TaskCancelled: _cancelled,
        ev.TaskHoldsChanged: _holds,
        ev.QuestionRaised: _raised,
        ev.QuestionAnswered: _answered,
        ev.ActionProposed: _proposed,
    }

    def render(self) -> list[dict[str, Any]]:
        return sorted_rows(self.rows)

    def pick(self, keys: Iterable[str]) -> list[dict[str, Any]]:
        return picked_rows(self.rows, keys)
