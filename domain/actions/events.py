"""The events of the actions area: immutable facts, in the past tense, one frozen
msgspec Struct each (domain/events.py assembles every area's into the one
union the log is written in)."""

from __future__ import annotations

import datetime

from msgspec import UNSET, UnsetType
from tandem.domain.event_base import (  # the bases, re-exported: `ev.Decision`
    Decision,
)
from tandem.domain.facts import (  # the Structs events carry: `ev.BlockFact` is facts.BlockFact
    BatchFixFacts,
    BlockFact,
    ClaimFacts,
    Envelope,
    PreemptFacts,
    PrerequisiteSpec,
    RefusalFacts,
    Revisions,
    SourceFacts,
)


class ActionProposed(Decision, frozen=True, kw_only=True):
    operation_id: str
    cause_key: str
    operation: str
    target: str
    resource: str
    write_paths: list[str]
    task_id: str | None
    rule_id: str | None
    grant_id: str
    prerequisites: list[PrerequisiteSpec]
    input_revisions: Revisions
    unattended: bool
    proposed_by: str
    generation: int | None
    cause_revision: int
    source_revision: int | UnsetType = UNSET  # contract v1.2 section 2.1: only when given
    target_sha: str | UnsetType = UNSET
    moot_statuses: list[str] | UnsetType = UNSET
    # Contract v1.2 section 1.4: only when the proposal names one (a v1 event is unchanged).
    runtime_id: str | UnsetType = UNSET
    priority: str | UnsetType = UNSET  # contract v1.2 section 8.1: only when given
    batch_id: str | UnsetType = UNSET  # section 7.3: its cause's batch, and that batch's revision
    batch_revision: int | UnsetType = UNSET


class ActionRevalidated(Decision, frozen=True, kw_only=True):
    operation_id: str
    input_revisions: Revisions
    source_revision: int | UnsetType = UNSET  # contract v1.2 section 2.3: the revision it answers now


class ActionCancelled(Decision, frozen=True, kw_only=True):
    operation_id: str


class ActionCancelRequested(Decision, frozen=True, kw_only=True):
    operation_id: str
    # "human", "task_cancelled", "budget_exhausted", "preempted" (v1.2 section 8.1) or "duplicate_batch" (7.3)
    reason: str
    preempted_by: PreemptFacts | UnsetType = UNSET  # "preempted": the foreground, and its message or proposal
    duplicate_batch: BatchFixFacts | UnsetType = UNSET  # "duplicate_batch": the batch and the fix that survives


class ActionClaimed(Decision, frozen=True, kw_only=True):
    operation_id: str
    attempt_id: str
    envelope: Envelope
    facts: ClaimFacts


class AttemptUpdated(Decision, frozen=True, kw_only=True):
    """A receipt or reconcile moved the latest attempt (and maybe its action)."""

    operation_id: str
    attempt_id: str
    attempt_state: str
    action_state: str
    # Set when the action returns to pending under a grant revised meanwhile
    # that still allows it: the revisions it is re-stamped with.
    restamped: Revisions | None = None
    # Set for a refusal (receipt refused, reconcile not_received) outside
    # cancel_requested: why the action went back to pending, was exhausted or fenced.
    refusal: RefusalFacts | None = None
    # Contract v1.2 section 3.5: back to pending, not claimed before this time.
    retry_at: datetime.datetime | UnsetType = UNSET


class ActionOutcomeReported(Decision, frozen=True, kw_only=True):
    operation_id: str
    outcome: str
    artifact_revision: str | None
    evidence_ref: str | None
    attempt_id: str | None
    attempt_state: str | None
    action_state: str


class ActionBlocked(Decision, frozen=True, kw_only=True):
    """The codes holding a pending action changed (contract section 4 order).
    `facts`: one per code, in the same order, as of this change (computed only
    when the codes change, so a fact that moves while the codes stay the same
    is not recorded again)."""

    operation_id: str
    blocked_by: list[str]
    facts: list[BlockFact] = []


class ScopePaused(Decision, frozen=True, kw_only=True):
    scope: str


class ScopeResumed(Decision, frozen=True, kw_only=True):
    scope: str


class UsageReported(Decision, frozen=True, kw_only=True):
    role: str  # "foreground", "background" or "workers"
    conversation_id: str | None
    operation_id: str | None
    grant_id: str | None
    input_tokens: int | None
    cached_input_tokens: int | None
    cache_write_tokens: int | None
    output_tokens: int | None
    context_tokens: int | None
    grant_usage: int | None


USAGE_FIELDS = ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens")  # summed by role


class BudgetExhausted(Decision, frozen=True, kw_only=True):
    grant_id: str
    usage: int
    token_limit: int
    operation_id: str | None = None  # the action whose usage report reached the limit


class SourceRuleApplied(Decision, frozen=True, kw_only=True):  # contract v1.2 section 2.2: its cause moved on
    # "superseded" (reason source_resolved or target_moved), "fenced" (a task's:
    # reason source_moved) or "restamped" (a rule's: it answers `source_revision` now).
    operation_id: str
    outcome: str
    reason: str | None
    source_revision: int
    facts: SourceFacts


class EvidenceAttached(Decision, frozen=True, kw_only=True):  # contract v1.2 section 2.5
    operation_id: str
    evidence_ref: str
    artifact_revision: str | None  # set when it sets the action's (which had none)


__all__ = ['ActionProposed', 'ActionRevalidated', 'ActionCancelled', 'ActionCancelRequested', 'ActionClaimed', 'AttemptUpdated', 'ActionOutcomeReported', 'ActionBlocked', 'ScopePaused', 'ScopeResumed', 'UsageReported', 'BudgetExhausted', 'SourceRuleApplied', 'EvidenceAttached', 'USAGE_FIELDS']  # every name here is the registry's: `ev.Name`
