"""The `actions` view: each managed action, its attempts and what blocks it.

The states each event leaves an action and an attempt in are the lifecycles' (`ACTION.after`, `ATTEMPT.after`); events that record their state say it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tandem.domain import events as ev
from tandem.domain.inputs import given
from tandem.domain.lifecycles import ACTION, ATTEMPT
from tandem.projections.base import View, picked_rows, sorted_rows


class ActionsView(View):
    name = "actions"

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, Any]] = {}

    def _set_state(self, operation_id: str, state: str) -> None:
        row = self.rows[operation_id]
        if row["state"] != state:
            row["state"] = state
            row["blocked_by"] = []  # blocked_by is [] in every state but pending

    def _proposed(self, event: ev.ActionProposed) -> None:
        self.rows[event.operation_id] = {
            "operation_id": event.operation_id,
            "task_id": event.task_id,
            "rule_id": event.rule_id,
            "cause_key": event.cause_key,
            "operation": event.operation,
            "resource": event.resource,
            "state": ACTION.after[ev.ActionProposed],
            "blocked_by": [],
            "attempts": [],
            "outcome": None,
            "artifact_revision": None,
            "prerequisites": [p.operation_id for p in event.prerequisites],
            # contract v1.2 section 1.6 (every added key after the existing ones)
            "runtime_id": given(event.runtime_id),
            "calls": 0,
        }

    def _fenced(self, event: ev.PolicySet | ev.GrantRevised | ev.TaskRevised) -> None:
        fenced = ACTION.after[type(event)]
        for operation_id in event.fenced:
            self._set_state(operation_id, fenced)

    def _revalidated(self, event: ev.ActionRevalidated) -> None:
        self._set_state(event.operation_id, ACTION.after[ev.ActionRevalidated])

    def _cancelled(self, event: ev.ActionCancelled) -> None:
        self._set_state(event.operation_id, ACTION.after[ev.ActionCancelled])

    def _cancel_requested(self, event: ev.ActionCancelRequested) -> None:
        self._set_state(event.operation_id, ACTION.after[ev.ActionCancelRequested])

    def _claimed(self, event: ev.ActionClaimed) -> None:
        attempt = {"attempt_id": event.attempt_id, "state": ATTEMPT.after[ev.ActionClaimed]}
        self.rows[event.operation_id]["attempts"].append(attempt)
        self._set_state(event.operation_id, ACTION.after[ev.ActionClaimed])

    def _attempt(self, event: ev.AttemptUpdated) -> None:
        self.rows[event.operation_id]["attempts"][-1]["state"] = event.attempt_state
        self._set_state(event.operation_id, event.action_state)

    def _outcome(self, event: ev.ActionOutcomeReported) -> None:
        row = self.rows[event.operation_id]
        row["outcome"] = event.outcome
        row["artifact_revision"] = event.artifact_revision
        if event.attempt_state is not None:
            row["attempts"][-1]["state"] = event.attempt_state
        self._set_state(event.operation_id, event.action_state)

    def _blocked(self, event: ev.ActionBlocked) -> None:
        self.rows[event.operation_id]["blocked_by"] = list(event.blocked_by)

    def _call(self, event: ev.ToolCallAllowed) -> bool:
        if event.operation_id is None:
            return False
        self.rows[event.operation_id]["calls"] += 1
        return True

    handlers = {
        ev.ActionProposed: _proposed,
        ev.PolicySet: _fenced,
        ev.GrantRevised: _fenced,
        ev.TaskRevised: _fenced,
        ev.ActionRevalidated: _revalidated,
        ev.ActionCancelled: _cancelled,
        ev.ActionCancelRequested: _cancel_requested,
        ev.ActionClaimed: _claimed,
        ev.AttemptUpdated: _attempt,
        ev.ActionOutcomeReported: _outcome,
        ev.ActionBlocked: _blocked,
        ev.ToolCallAllowed: _call,
    }

    def render(self) -> list[dict[str, Any]]:
        return sorted_rows(self.rows)

    def pick(self, keys: Iterable[str]) -> list[dict[str, Any]]:
        return picked_rows(self.rows, keys)
