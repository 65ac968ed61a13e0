"""The `tasks` view: each task's revision, state, grant revision, holds and
actions; and (contract v1.2 section 4.4) its last progress and when it is due."""

from __future__ import annotations

import datetime
import functools
from collections.abc import Iterable
from typing import Any

from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain.lifecycles import TASK
from tandem.projections.base import ByState, View, picked_rows, rfc3339, sorted_rows


class TasksView(View):
    name = "tasks"
    key = "task_id"  # each handler returns the task ids it touched

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, Any]] = {}
        self.by_state = ByState()  # what a page lists: rows by state, newest first
        self.grant_revisions: dict[str, int] = {}
        self.grant_tasks: dict[str, list[str]] = {}  # grant_id -> its tasks, delegated first first
        self.open_questions: set[tuple[str, str]] = set()
        self.now: datetime.datetime | None = None  # the input's `at`
        self.action_tasks: dict[str, str] = {}  # operation_id -> task_id
        self.deadlines: dict[str, int] = {}  # task_id -> progress_deadline_s
        self.stalled: set[str] = set()  # no progress by the due time, since
        # A row's two times (`last_progress_at`, `progress_due_at`) are
        # computed when it is read (`render`, `pick`), never stored in it:
        # both are functions of these fields, and formatting a time costs
        # more than all the rest of a progress event here. Reading writes
        # nothing into the view (what a snapshot keeps is the fold alone).
        self.last_progress: dict[str, datetime.datetime] = {}  # task_id -> its last progress

    def _input(self, event: ev.InputAccepted | ev.InputRejected) -> bool:
        self.now = event.input.at
        return False

    def _progress(self, task_id: str | None) -> str | tuple[()]:
        """Contract v1.2 section 4.4: the task progressed now (if active); the task touched."""
        row = self.rows.get(task_id) if task_id is not None else None
        if row is None or row["state"] != "active":
            return ()
        assert self.now is not None
        task_id = row["task_id"]
        self.stalled.discard(task_id)
        self.last_progress[task_id] = self.now
        return task_id

    def rendered(self, row: dict[str, Any]) -> dict[str, Any]:
        """The row as read: a copy, its two times computed (contract v1.2 section 4.4)."""
        task_id = row["task_id"]
        last = self.last_progress[task_id]
        deadline = self.deadlines.get(task_id)
        due = None
        if deadline is not None and row["state"] == "active" and not row["holds"] and task_id not in self.stalled:
            due = last + datetime.timedelta(seconds=deadline)
        return {**row, "last_progress_at": _formatted(last), "progress_due_at": _formatted(due)}

    def _delegated(self, event: ev.TaskDelegated) -> str:
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
            "last_progress_at": None,  # computed when read (`rendered`)
            "progress_due_at": None,
        }
        self.by_state.enter(event.task_id, self.rows[event.task_id]["state"])
        assert self.now is not None
        self.last_progress[event.task_id] = self.now
        self.grant_tasks.setdefault(event.grant_id, []).append(event.task_id)
        if event.progress_deadline_s is not UNSET:
            self.deadlines[event.task_id] = event.progress_deadline_s
        return event.task_id

    def _grant(self, event: ev.GrantIssued | ev.GrantRevised) -> list[str]:
        self.grant_revisions[event.grant_id] = event.revision
        # Its tasks alone: a grant per task must not cost the tasks squared.
        touched = [t for t in self.grant_tasks.get(event.grant_id, []) if self.rows[t]["grant_id"] == event.grant_id]
        for task_id in touched:
            self.rows[task_id]["grant_revision"] = event.revision
        return touched

    def _revised(self, event: ev.TaskRevised) -> str:
        row = self.rows[event.task_id]
        row["revision"] = event.revision
        row["goal"] = event.goal
        if event.progress_deadline_s is not UNSET:
            self.deadlines[event.task_id] = event.progress_deadline_s
        self._progress(event.task_id)
        return event.task_id

    def _ended(self, event: ev.TaskCompleted | ev.TaskCancelled) -> str:
        row = self.rows[event.task_id]
        state = TASK.after[type(event)]
        self.by_state.enter(event.task_id, state, row["state"])
        row["state"] = state
        return event.task_id

    def _holds(self, event: ev.TaskHoldsChanged) -> str:
        row = self.rows[event.task_id]
        row["holds"] = list(event.holds)
        if not row["holds"]:
            self._progress(event.task_id)
        return event.task_id

    def _stalled(self, event: ev.TaskStalled) -> str:
        self.stalled.add(event.task_id)
        return event.task_id

    def _action(self, event: ev.ActionClaimed | ev.ActionOutcomeReported | ev.EvidenceAttached) -> str | tuple[()]:
        return self._progress(self.action_tasks.get(event.operation_id))

    def _attempt(self, event: ev.AttemptUpdated) -> str | tuple[()]:
        if event.attempt_state == "accepted":
            return self._progress(self.action_tasks.get(event.operation_id))
        return ()

    def _raised(self, event: ev.QuestionRaised) -> str:
        key = (event.task_id, event.question_key)
        if key not in self.open_questions:
            self.open_questions.add(key)
            self.rows[event.task_id]["open_questions"] += 1
        return event.task_id

    def _answered(self, event: ev.QuestionAnswered) -> str:
        self.open_questions.discard((event.task_id, event.question_key))
        self.rows[event.task_id]["open_questions"] -= 1
        return event.task_id

    def _proposed(self, event: ev.ActionProposed) -> str | tuple[()]:
        if event.task_id is None:
            return ()
        self.rows[event.task_id]["actions"].append(event.operation_id)
        self.action_tasks[event.operation_id] = event.task_id
        self._progress(event.task_id)
        return event.task_id

    handlers = {
        ev.TaskDelegated: _delegated,
        ev.GrantIssued: _grant,
        ev.GrantRevised: _grant,
        ev.TaskRevised: _revised,
        ev.TaskCompleted: _ended,
        ev.TaskCancelled: _ended,
        ev.TaskHoldsChanged: _holds,
        ev.QuestionRaised: _raised,
        ev.QuestionAnswered: _answered,
        ev.ActionProposed: _proposed,
        ev.InputAccepted: _input,
        ev.InputRejected: _input,
        ev.ActionClaimed: _action,
        ev.ActionOutcomeReported: _action,
        ev.EvidenceAttached: _action,  # evidence attached to one of its actions (v1.2 sections 2.5, 4.4)
        ev.AttemptUpdated: _attempt,
        ev.TaskStalled: _stalled,
    }

    def render(self) -> list[dict[str, Any]]:
        return [self.rendered(row) for row in sorted_rows(self.rows)]

    def pick(self, keys: Iterable[str]) -> list[dict[str, Any]]:
        rows = self.rows
        return picked_rows({key: self.rendered(rows[key]) for key in set(keys) if key in rows}, keys)


# A task's times are formatted when read, and read again at every position a
# client asks for: the same instants, formatted once (a pure function's memo).
formatted_times_max = 65_536
_formatted = functools.lru_cache(maxsize=formatted_times_max)(rfc3339)
