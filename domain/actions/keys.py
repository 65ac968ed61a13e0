"""Which ids each event of the actions area concerns (domain/keys.py says how a
`"kind: path"` is read, and merges every area's `KEYS`)."""

from __future__ import annotations

from tandem.domain import events as ev

KEYS: dict[type[ev.Event], tuple[str, ...]] = {
    ev.ActionProposed: ("action: operation_id", "update: cause_key", "task_action: task_id"),
    ev.ActionRevalidated: ("action: operation_id",),
    ev.ActionCancelled: ("action: operation_id",),
    ev.ActionCancelRequested: ("action: operation_id",),
    ev.ActionClaimed: ("action: operation_id", "attempt: attempt_id"),
    ev.AttemptUpdated: ("action: operation_id", "attempt: attempt_id"),
    ev.ActionOutcomeReported: ("action: operation_id", "attempt: attempt_id"),
    ev.ActionBlocked: ("action: operation_id", "holds: facts[].questions[].task_id/question_key"),
    ev.SourceRuleApplied: ("action: operation_id",),
    ev.EvidenceAttached: ("action: operation_id",),
    ev.ScopePaused: ("scope: scope", "task: scope unless *"),
    ev.ScopeResumed: ("scope: scope", "task: scope unless *"),
    ev.UsageReported: (),
    ev.BudgetExhausted: ("grant: grant_id",),
}
