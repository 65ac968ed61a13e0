"""The `actions` view: each managed action, its attempts and what blocks it.

The states each event leaves an action and an attempt in are the lifecycles' (`ACTION.after`, `ATTEMPT.after`); events that record their state say it.

Contract v1.2 (section 2.6) adds, after the v1 keys: `reason` (why the
engine put it in its state: fenced, cancel_requested, cancelled, exhausted,
superseded; null in every other state), `source_revision` and `evidence_refs`.

The executor's extension (docs/contract/views.md, "What an executor reads")
appends what an executor needs to do the work: `target`, `write_paths`,
`input_revisions` (the revisions it was last validated under, as the engine
keeps them: proposed, re-stamped by a grant revision, replaced by a
revalidation) and, while an attempt is out with the executor, that attempt's
`attempt_id` and frozen `envelope`. `out` keeps the actions with an attempt
out, in claim order (the work queue, projections/work.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain.lifecycles import ACTION, ATTEMPT
from tandem.projections.base import ByState, View, picked_rows, rfc3339, sorted_rows

# What the lifecycles say these events leave, looked up once (the fold's hot path).
_PROPOSED = ACTION.after[ev.ActionProposed]
_CLAIMED = ACTION.after[ev.ActionClaimed]
_ATTEMPT_CLAIMED = ATTEMPT.after[ev.ActionClaimed]
_IN_FLIGHT = ACTION.in_flight


def _given(value: Any) -> Any:
    return None if value is UNSET else value


def envelope_row(envelope: ev.Envelope) -> dict[str, Any]:
    """An attempt's frozen envelope as the `actions` view shows it: every
    field, null where the claim set none, times in RFC 3339."""
    return {
        "operation": envelope.operation,
        "target": envelope.target,
        "resource": envelope.resource,
        "write_paths": list(envelope.write_paths),
        "task_revision": envelope.task_revision,
        "grant_revision": envelope.grant_revision,
        "policy_revision": envelope.policy_revision,
        "intent_revision": envelope.intent_revision,
        "source_revision": _given(envelope.source_revision),
        "target_sha": _given(envelope.target_sha),
        "deadline_at": rfc3339(_given(envelope.deadline_at)),
        "runtime_id": _given(envelope.runtime_id),
        "tool_policy_revision": _given(envelope.tool_policy_revision),
    }


def revisions_row(revisions: ev.Revisions) -> dict[str, Any]:
    return {"task": revisions.task, "grant": revisions.grant, "intent": revisions.intent}


class ActionsView(View):
    name = "actions"
    key = "operation_id"  # each handler returns the operation ids it touched

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, Any]] = {}
        self.by_state = ByState()  # what a page lists: rows by state, newest first
        self.cancelled_tasks: set[str] = set()
        # The actions with an attempt out with the executor, by claim: their
        # claim's number (claims counted from 1), the work queue's order.
        self.out: dict[str, int] = {}
        self.claims = 0

    def _set_state(self, operation_id: str, state: str, reason: str | None = None) -> None:
        """A new state and its reason (contract v1.2 section 2.6): `reason`, or
        the one it had when it stays where it is or is cancelled after a cancel request."""
        row = self.rows[operation_id]
        if row["state"] != state:
            if reason is None and not (state == "cancelled" and row["state"] == "cancel_requested"):
                row["reason"] = None
            self.by_state.enter(operation_id, state, row["state"])
            row["state"] = state
            row["blocked_by"] = []  # blocked_by is [] in every state but pending
            row["retry_at"] = None  # so is retry_at
            if state not in _IN_FLIGHT:  # no attempt out with the executor now
                row["attempt_id"] = None
                row["envelope"] = None
                self.out.pop(operation_id, None)
        if reason is not None:
            row["reason"] = reason

    def _proposed(self, event: ev.ActionProposed) -> str:
        self.rows[event.operation_id] = {
            "operation_id": event.operation_id,
            "task_id": event.task_id,
            "rule_id": event.rule_id,
            "cause_key": event.cause_key,
            "operation": event.operation,
            "resource": event.resource,
            "state": _PROPOSED,
            "blocked_by": [],
            "attempts": [],
            "outcome": None,
            "artifact_revision": None,
            "prerequisites": [p.operation_id for p in event.prerequisites] if event.prerequisites else [],
            "reason": None,
            "source_revision": event.source_revision if event.source_revision is not UNSET else None,
            "evidence_refs": [],
            "priority": event.priority if event.priority is not UNSET else "normal",  # contract v1.2 section 8.4
            # contract v1.2 section 1.6 (every added key after the existing ones)
            "runtime_id": event.runtime_id if event.runtime_id is not UNSET else None,
            "calls": 0,
            # Contract v1.2 section 3.10:
            "deadline_at": None,
            "retry_at": None,
            "batch_id": event.batch_id if event.batch_id is not UNSET else None,  # contract v1.2 section 7.3
            # What an executor reads (an extension, docs/contract/views.md):
            "target": event.target,
            "write_paths": list(event.write_paths),
            "input_revisions": revisions_row(event.input_revisions),
            "attempt_id": None,
            "envelope": None,
        }
        self.by_state.enter(event.operation_id, _PROPOSED)
        return event.operation_id

    def _fenced(self, event: ev.PolicySet | ev.GrantRevised | ev.TaskRevised) -> list[str]:
        fenced = ACTION.after[type(event)]
        reason = "task_revised" if type(event) is ev.TaskRevised else "authority_narrowed"
        for operation_id in event.fenced:
            self._set_state(operation_id, fenced, reason)
        if type(event) is ev.GrantRevised:  # the actions it still allows answer its new revision
            for operation_id in event.restamped:
                self.rows[operation_id]["input_revisions"]["grant"] = event.revision
            return [*event.fenced, *event.restamped]
        return event.fenced

    def _revalidated(self, event: ev.ActionRevalidated) -> str:
        self._set_state(event.operation_id, ACTION.after[ev.ActionRevalidated])
        row = self.rows[event.operation_id]
        row["input_revisions"] = revisions_row(event.input_revisions)
        if event.source_revision is not UNSET:
            row["source_revision"] = event.source_revision
        return event.operation_id

    def _task_cancelled(self, event: ev.TaskCancelled) -> tuple[()]:
        self.cancelled_tasks.add(event.task_id)  # its actions' ActionCancelled follow it
        return ()

    def _cancelled(self, event: ev.ActionCancelled) -> str:
        row = self.rows[event.operation_id]
        reason = "task_cancelled" if row["task_id"] in self.cancelled_tasks else "human"
        self._set_state(event.operation_id, ACTION.after[ev.ActionCancelled], reason)
        return event.operation_id

    def _cancel_requested(self, event: ev.ActionCancelRequested) -> str:
        self._set_state(event.operation_id, ACTION.after[ev.ActionCancelRequested], event.reason)
        return event.operation_id

    def _source_rule(self, event: ev.SourceRuleApplied) -> str:
        moved = ACTION.state_after(event)  # superseded or fenced; None: re-stamped
        if moved is not None:
            self._set_state(event.operation_id, moved, event.reason)
        self.rows[event.operation_id]["source_revision"] = event.source_revision
        return event.operation_id

    def _fix_superseded(self, event: ev.BatchFixSuperseded) -> str:  # contract v1.2 section 7.3
        self._set_state(event.operation_id, ACTION.after[ev.BatchFixSuperseded], "duplicate_batch")
        return event.operation_id

    def _evidence(self, event: ev.EvidenceAttached) -> str:
        row = self.rows[event.operation_id]
        if event.evidence_ref not in row["evidence_refs"]:
            row["evidence_refs"].append(event.evidence_ref)
        if event.artifact_revision is not None:
            row["artifact_revision"] = event.artifact_revision
        return event.operation_id

    def _claimed(self, event: ev.ActionClaimed) -> str:
        row = self.rows[event.operation_id]
        row["attempts"].append({"attempt_id": event.attempt_id, "state": _ATTEMPT_CLAIMED})
        if event.envelope.deadline_at is not UNSET:
            row["deadline_at"] = rfc3339(event.envelope.deadline_at)
        self._set_state(event.operation_id, _CLAIMED)
        row["attempt_id"] = event.attempt_id
        row["envelope"] = envelope_row(event.envelope)
        self.claims += 1
        self.out[event.operation_id] = self.claims
        return event.operation_id

    def _attempt(self, event: ev.AttemptUpdated) -> str:
        self.rows[event.operation_id]["attempts"][-1]["state"] = event.attempt_state
        refusal = event.refusal.reason if event.refusal is not None else None
        self._set_state(event.operation_id, event.action_state, refusal if refusal != "retry" else None)
        if event.retry_at is not UNSET:
            self.rows[event.operation_id]["retry_at"] = rfc3339(event.retry_at)
        if event.restamped is not None:  # back to pending under its grant's new revision
            self.rows[event.operation_id]["input_revisions"] = revisions_row(event.restamped)
        return event.operation_id

    def _outcome(self, event: ev.ActionOutcomeReported) -> str:
        row = self.rows[event.operation_id]
        row["outcome"] = event.outcome
        row["artifact_revision"] = event.artifact_revision
        row["evidence_refs"] = [event.evidence_ref] if event.evidence_ref is not None else []
        if event.attempt_state is not None:
            row["attempts"][-1]["state"] = event.attempt_state
        self._set_state(event.operation_id, event.action_state)
        return event.operation_id

    def _blocked(self, event: ev.ActionBlocked) -> str:
        row = self.rows[event.operation_id]
        row["blocked_by"] = list(event.blocked_by)
        if "retry_backoff" not in event.blocked_by:
            row["retry_at"] = None
        return event.operation_id

    def _deadline(self, event: ev.DeadlineExceeded) -> str:
        moved = self.rows[event.operation_id]["state"] != event.action_state  # a cancel_requested one stays as it was
        self._set_state(event.operation_id, event.action_state, "deadline" if moved else None)
        return event.operation_id

    def _call(self, event: ev.ToolCallAllowed) -> str | bool:
        if event.operation_id is None:
            return False
        self.rows[event.operation_id]["calls"] += 1
        return event.operation_id

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
        ev.DeadlineExceeded: _deadline,
        ev.TaskCancelled: _task_cancelled,
        ev.SourceRuleApplied: _source_rule,
        ev.BatchFixSuperseded: _fix_superseded,
        ev.EvidenceAttached: _evidence,
        ev.ToolCallAllowed: _call,
    }

    def render(self) -> list[dict[str, Any]]:
        return sorted_rows(self.rows)

    def pick(self, keys: Iterable[str]) -> list[dict[str, Any]]:
        return picked_rows(self.rows, keys)
