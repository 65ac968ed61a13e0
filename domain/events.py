"""Events: immutable facts, in the past tense, one frozen msgspec Struct each.

Every transaction starts with the input that caused it (`InputAccepted` or
`InputRejected`, carrying the decoded input itself), so any store can be
re-derived from its own inputs and verified. Every other event names that
input's sequence number in `cause` (contract section 8) and carries the resulting
states it sets, so a projection is a plain fold that re-decides nothing.

Provenance (contract section 8): an event the engine decides by itself also
records the facts it relied on (the Structs of domain/facts.py), so that
`tandem explain` walks recorded links and re-decides nothing. Which ids each
event concerns is declared once, in domain/keys.py.

Encoding: the tagged union is written as JSON with its tag in `"event"`. New
fields get defaults; existing field types never change (msgspec's rule). The
encoding is deterministic: the same trace gives the same bytes.
"""

from __future__ import annotations

import datetime
from typing import Any, Union

import msgspec
from msgspec import UNSET, UnsetType

from tandem.domain.event_base import Decision, Event  # the bases, re-exported: `ev.Decision`
from tandem.domain.facts import (  # the Structs events carry: `ev.BlockFact` is facts.BlockFact
    AlertFacts, ApprovalRef, BatchFixFacts, BlockFact, CandidateUpdate, ClaimFacts, DeadlineFacts, DeferralFacts,
    DeliveryBudget, Envelope, PreemptFacts, PrerequisiteFact, PrerequisiteSpec, QuestionRef, RefusalFacts, Revisions, SourceFacts,
    TaskStateFact, ToolFacts,
)
from tandem.domain.event_base import Decision, Event, InputAccepted, InputRejected, SourceProgressed  # noqa: F401
from tandem.domain.budget_events import DeadlineExceeded, DeliveryDeferred  # contract v1.2 section 3 (file size)
from tandem.domain.source_events import EvidenceAttached, SourceRuleApplied  # contract v1.2 section 2 (file size)
from tandem.domain.tool_events import (  # contract v1.2 section 1, in a module of their own (file size)
    RuntimeAdmitted, RuntimeFenced, RuntimeRefused, ToolCallAllowed, ToolCallDenied, ToolPolicySet,
)  # fmt: skip
from tandem.domain.health_events import (  # contract v1.2 section 4, re-exported: `ev.HostSuspended`
    HostResumed, HostSuspended, ProviderReadinessRecorded, TaskStalled,
)  # fmt: skip
from tandem.domain.continuity_events import (  # contract v1.2 section 5, re-exported: `ev.InvestigationOpened`
    BackgroundCheckpointed, InvestigationClosed, InvestigationExhausted, InvestigationOpened,
)  # fmt: skip
from tandem.domain.composition_events import DeliveryComposed  # contract v1.2 section 6, re-exported (file size)
from tandem.domain.review_events import (  # contract v1.2 section 7
    BatchFixSuperseded, BatchJoined, BatchRevised, SourceAliased,
)  # fmt: skip
from tandem.domain.obligation_events import ObligationDue, ObligationMet, ObligationOpened, QuestionResurfaced  # (file size)

# ------------------------------------------------------ configuration, policy


class EngineConfigured(Decision, frozen=True, kw_only=True):
    watchdog_max_age_s: int
    fallback_after_s: int
    question_resurface_s: int
    wake_batch_max: int
    # Contract v1.2 section 3.2: only when given (left out, the setting in force stays).
    wake_min_interval_s: int | UnsetType = UNSET
    wake_batch_wait_s: int | UnsetType = UNSET
    delivery_backoff_s: int | UnsetType = UNSET
    delivery_retries_max: int | UnsetType = UNSET
    backlog_degraded_at: int | UnsetType = UNSET
    exhausted_alerts: bool | UnsetType = UNSET
    suspend_gap_s: int | UnsetType = UNSET  # contract v1.2 section 4.5, only when given
    payload_required: bool | UnsetType = UNSET  # contract v1.2 section 6, only when given
    investigation_max_s: int | UnsetType = UNSET  # contract v1.2 section 5.1, only when given
    investigation_calls_max: int | UnsetType = UNSET


class PolicySet(Decision, frozen=True, kw_only=True):
    revision: int
    allowed_operations: list[str]
    write_roots: list[str]
    fenced: list[str]
    restamped: list[str]
    # Why each fenced action is no longer allowed (operation or a write path).
    fenced_because: dict[str, str] = {}


class GrantIssued(Decision, frozen=True, kw_only=True):
    grant_id: str
    revision: int
    task_id: str | None
    rule_id: str | None
    allowed_operations: list[str]
    write_roots: list[str]
    max_attempts: int
    token_limit: int | None
    policy_revision: int
    dropped_operations: list[str]
    dropped_roots: list[str]
    # Contract v1.2 section 3.1: only when set (unset: none, and 0).
    execution_deadline_s: int | UnsetType = UNSET
    retry_backoff_s: int | UnsetType = UNSET
    call_limit: int | UnsetType = UNSET  # contract v1.2 section 3.4


class GrantRevised(Decision, frozen=True, kw_only=True):
    grant_id: str
    revision: int
    allowed_operations: list[str]
    write_roots: list[str]
    max_attempts: int
    token_limit: int | None
    policy_revision: int
    dropped_operations: list[str]
    dropped_roots: list[str]
    fenced: list[str]
    restamped: list[str]
    # Why each fenced action is no longer allowed (operation or a write path).
    fenced_because: dict[str, str] = {}
    # Contract v1.2 section 3.1: only when set (unset: none, and 0).
    execution_deadline_s: int | UnsetType = UNSET
    retry_backoff_s: int | UnsetType = UNSET
    call_limit: int | UnsetType = UNSET  # contract v1.2 section 3.4


class GrantRevoked(Decision, frozen=True, kw_only=True):
    grant_id: str


class RuleSet(Decision, frozen=True, kw_only=True):
    rule_id: str
    grant_id: str
    scopes: list[str] | UnsetType = UNSET  # contract v1.2 section 2.4 (UNSET: a new rule's is ["*"])


# --------------------------------------------------------- tasks, questions


class TaskDelegated(Decision, frozen=True, kw_only=True):
    task_id: str
    conversation_id: str
    message_refs: list[str]
    goal: str
    done_when: list[str]
    constraints: dict[str, Any]
    fallback_decisions: dict[str, str]
    depends_on: list[str]
    grant_id: str
    progress_deadline_s: int | UnsetType = UNSET  # contract v1.2 section 4.4, only when given


class TaskRevised(Decision, frozen=True, kw_only=True):
    task_id: str
    revision: int
    goal: str
    done_when: list[str]
    constraints: dict[str, Any]
    fallback_decisions: dict[str, str]
    fenced: list[str]
    progress_deadline_s: int | UnsetType = UNSET  # contract v1.2 section 4.4, only when given


class TaskCompleted(Decision, frozen=True, kw_only=True):
    task_id: str
    evidence_refs: list[str]


class TaskCancelled(Decision, frozen=True, kw_only=True):
    task_id: str


class QuestionRaised(Decision, frozen=True, kw_only=True):
    task_id: str
    question_key: str
    recipient: str
    blocking_reason: str
    affected: list[str] | str
    evidence_revision: int
    times_raised: int
    first_seen_at: datetime.datetime
    reopened: bool


class QuestionAnswered(Decision, frozen=True, kw_only=True):
    task_id: str
    question_key: str
    answer: str


class TaskHoldsChanged(Decision, frozen=True, kw_only=True):
    task_id: str
    holds: list[str]
    # One per hold, in the same order: what makes it apply (see BlockFact).
    facts: list[BlockFact] = []


# ------------------------------------------------------------------ actions


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


# ------------------------------------------------------ health, scope, usage


class HeartbeatRecorded(Decision, frozen=True, kw_only=True):
    generation: int
    at: datetime.datetime
    beat_at: datetime.datetime | UnsetType = UNSET  # v1.2: min(beat_at, at), only when given


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


# ------------------------------------------------------------ conversations


class ConversationOpened(Decision, frozen=True, kw_only=True):
    conversation_id: str
    role: str
    context_limit: int
    reserve: int
    steer: bool
    foreground_id: str | None
    provider: str | UnsetType = UNSET  # contract v1.2 section 4.3, only when given


class BackgroundBound(Decision, frozen=True, kw_only=True):
    conversation_id: str
    foreground_id: str
    generation: int


class MessageQueued(Decision, frozen=True, kw_only=True):
    conversation_id: str
    message_id: str
    text: str
    tokens: int | None
    intent_revision: int


class QueueEdited(Decision, frozen=True, kw_only=True):
    conversation_id: str
    message_id: str
    op: str
    text: str | None
    intent_revision: int


class IntentSynced(Decision, frozen=True, kw_only=True):
    conversation_id: str
    synced_revision: int


# --------------------------------------------------- observations and the inbox


class ObservationRecorded(Decision, frozen=True, kw_only=True):
    """A new observation (not a repeat): its source's next local revision and,
    unless its origin is a background conversation or it is `out_of_order`,
    its cause's next update revision (`update_revision`, else None). Contract
    v1.1's fields are UNSET (not stored) unless given: v1's bytes are kept."""

    via: str  # "live", "log" or "reconcile"
    source_id: str
    local_revision: int
    cause_key: str
    kind: str
    scope: str
    fingerprint: str
    complete: bool
    source_version: str | None
    status: str | None
    commit_sha: str | None
    text: str | None
    evidence_ref: str | None
    tokens: int | None
    deleted: bool
    origin_conversation: str | None
    update_revision: int | None
    at: datetime.datetime
    subject: str | UnsetType = UNSET
    source_time: datetime.datetime | UnsetType = UNSET
    truncated: bool | UnsetType = UNSET
    out_of_order: bool | UnsetType = UNSET  # True: counted, no revision, not the latest
    batch_id: str | UnsetType = UNSET  # contract v1.2 section 7.1, as given
    judged_as: str | UnsetType = UNSET  # section 7.2: `source_id` is an alias of this source


class ObservationRepeated(Decision, frozen=True, kw_only=True):
    """A repeat: counted on its cause (unless from a background's own
    activity), nothing else changes."""

    via: str
    source_id: str
    cause_key: str
    counted: bool
    at: datetime.datetime
    judged_as: str | UnsetType = UNSET  # contract v1.2 section 7.2, as ObservationRecorded's


class UpdateRevised(Decision, frozen=True, kw_only=True):
    """An update the engine creates itself (an executor outcome)."""

    cause_key: str
    kind: str
    revision: int
    text: str | None
    at: datetime.datetime


class UpdateTriaged(Decision, frozen=True, kw_only=True):
    cause_key: str
    revision: int
    disposition: str
    action_priority: int | None
    notification_priority: int | None
    by: str  # the background conversation, or "engine"
    generation: int | None
    foreground_id: str | None  # the conversation the update belongs to


class ConsumerCreated(Decision, frozen=True, kw_only=True):
    consumer_id: str
    epoch: int


class CursorMoved(Decision, frozen=True, kw_only=True):
    consumer_id: str
    epoch: int
    seq: int


class EntriesSkipped(Decision, frozen=True, kw_only=True):
    """A batch's entries at or below the cursor, skipped and counted (v1.1)."""
    consumer_id: str
    epoch: int
    count: int
    cursor_seq: int  # the cursor they were at or below


class WatermarkRaised(Decision, frozen=True, kw_only=True):
    consumer_id: str
    epoch: int
    max_deleted_seq: int


class ReconciliationStarted(Decision, frozen=True, kw_only=True):
    consumer_id: str
    reconciliation_id: str
    reason: str  # "epoch_changed" or "history_deleted"
    epoch_seen: int
    # The cursor it was at, and the epoch's deletion watermark (history_deleted: above the cursor's seq).
    cursor_epoch: int | None = None
    cursor_seq: int | None = None
    max_deleted_seq: int | None = None


class ReconciliationCommitted(Decision, frozen=True, kw_only=True):
    consumer_id: str
    reconciliation_id: str
    epoch: int
    seq: int
    gaps: int
    # What the cursor was committed from: max(retained_head, watermark, where it had reached).
    retained_head: int | None = None
    watermark: int | None = None


class CardProposed(Decision, frozen=True, kw_only=True):
    card_id: str
    cause_key: str
    summary: str


# -------------------------------------------- conversations: turns, deliveries


class TurnStarted(Decision, frozen=True, kw_only=True):
    conversation_id: str
    turn_id: str
    epoch: int
    kind: str  # "human" or "wake"
    rule: str = ""  # the contract section 5.3 rule that applied: "human_turn" (3) or "wake" (4)


class DeliveryCreated(Decision, frozen=True, kw_only=True):
    """A manifest frozen before any provider I/O: exactly which messages and
    (cause, revision) pairs the delivery holds, in which epoch."""

    conversation_id: str
    delivery_id: str
    turn_id: str | None
    epoch: int
    kind: str  # "turn", "steer" or "reseed"
    included: list[tuple[str, int]]
    messages: list[str]
    tokens: int
    control_tokens: int  # a reseed's required part (0 otherwise)
    # Why (contract section 5.3): the rule that applied ("human_turn", "wake", "steer",
    # "reseed"), the budget, and the ranked updates considered (at most
    # `candidates_recorded_max`; `candidates_total` counts them all).
    rule: str = ""
    budget: DeliveryBudget | None = None
    candidates: list[CandidateUpdate] = []
    candidates_total: int = 0
    checkpoint: str | UnsetType = UNSET  # a background reseed's (contract v1.2 section 5.3)


class DeliveryReceipted(Decision, frozen=True, kw_only=True):
    """A provider receipt or reconcile: the delivery's new attempt state."""

    conversation_id: str
    delivery_id: str
    attempt_state: str  # accepted, unknown, refused, not_received
    context_tokens: int  # the conversation's context after it
    # It holds nothing from now on: refused or not received, or reconciled
    # after its turn failed or was interrupted (it stayed held until now).
    releases: bool = False


class TurnEnded(Decision, frozen=True, kw_only=True):
    conversation_id: str
    turn_id: str
    outcome: str  # completed, failed, interrupted
    requeued: list[str]  # messages put back at the front of the queue, in order
    delivered: list[str] | None
    released: list[str]  # deliveries whose revisions are no longer held
    # The delivery whose refused / not_received receipt ended the turn failed, if that is why.
    delivery_id: str | None = None


class ContextReset(Decision, frozen=True, kw_only=True):
    conversation_id: str
    epoch: int
    reason: str


class RecoveryChanged(Decision, frozen=True, kw_only=True):
    conversation_id: str
    recovery: str | None  # "message" (a human turn did not fit), "reseed", or None
    # When the pass enters recovery: the tokens needed (the queued messages,
    # or the reseed's required part) and the room there was.
    needed: int | None = None
    room: int | None = None


class ApprovalOpened(Decision, frozen=True, kw_only=True):
    conversation_id: str
    request_id: str
    detail: str


class ApprovalResolved(Decision, frozen=True, kw_only=True):
    conversation_id: str
    request_id: str


class FailureHoldChanged(Decision, frozen=True, kw_only=True):
    conversation_id: str
    held: bool
    # Contract v1.2 section 3.6: the engine's own hold (`by: "engine"`) after its retries.
    by: str | UnsetType = UNSET
    refusals: int | UnsetType = UNSET
    delivery_retries_max: int | UnsetType = UNSET



# --------------------------------------- section 6: alerts, obligations, health


class AlertRaised(Decision, frozen=True, kw_only=True):
    """A new occurrence of an alert's condition (its first, or one more):
    count + 1, `last_raised_at` = `at`, state `raised` again. `cause_key` and
    `revision` name the inbox update it is about, if any (an `urgent` alert
    is about one revision); `detail` says, for a human, what was seen;
    `facts`, for tools, what it relied on."""

    alert_id: str
    kind: str
    at: datetime.datetime
    cause_key: str | None = None
    revision: int | None = None
    detail: str = ""
    facts: AlertFacts | None = None


class AlertSeen(Decision, frozen=True, kw_only=True):
    alert_id: str


class AlertResolved(Decision, frozen=True, kw_only=True):
    """`by: "engine"` when the engine observed the condition's end (it may
    occur again later); `by: "human"` for `alert.resolve` (the condition may
    go on: it is not raised again until a new occurrence)."""

    alert_id: str
    by: str
    # For the engine's resolutions: what it observed end.
    detail: str = ""
    facts: AlertFacts | None = None


class IncidentOpened(Decision, frozen=True, kw_only=True):
    incident_id: str
    kind: str
    detail: str
    reported_by: str  # the actor: watchdog or daemon ("engine": a known credential expiry)
    observed_at: datetime.datetime | UnsetType = UNSET  # contract v1.2 section 4.2, only when given
    last_success_at: datetime.datetime | UnsetType = UNSET


class IncidentRecovered(Decision, frozen=True, kw_only=True):
    incident_id: str


class DaemonStopped(Decision, frozen=True, kw_only=True):
    expected: bool


class DaemonStarted(Decision, frozen=True, kw_only=True):
    """`after`: what the latest earlier daemon.stop/start was ("expected_stop",
    "unexpected_stop", "start", or None for the very first start)."""

    after: str | None


AnyEvent = Union[
    InputAccepted, InputRejected, SourceProgressed,
    EngineConfigured, PolicySet, GrantIssued, GrantRevised, GrantRevoked, RuleSet,
    TaskDelegated, TaskRevised, TaskCompleted, TaskCancelled, QuestionRaised, QuestionAnswered,
    TaskHoldsChanged,
    ActionProposed, ActionRevalidated, ActionCancelled, ActionCancelRequested, ActionClaimed,
    AttemptUpdated, ActionOutcomeReported, ActionBlocked, SourceRuleApplied, EvidenceAttached,
    HeartbeatRecorded, ScopePaused, ScopeResumed, UsageReported, BudgetExhausted,
    ConversationOpened, BackgroundBound, MessageQueued, QueueEdited, IntentSynced,
    ObservationRecorded, ObservationRepeated, UpdateRevised, UpdateTriaged,
    ConsumerCreated, CursorMoved, EntriesSkipped, WatermarkRaised, ReconciliationStarted, ReconciliationCommitted,
    CardProposed,
    TurnStarted, DeliveryCreated, DeliveryReceipted, TurnEnded, ContextReset, RecoveryChanged,
    ApprovalOpened, ApprovalResolved, FailureHoldChanged,
    DeadlineExceeded, DeliveryDeferred,
    AlertRaised, AlertSeen, AlertResolved, IncidentOpened, IncidentRecovered, DaemonStopped, DaemonStarted,
    ObligationOpened, ObligationMet, ObligationDue, QuestionResurfaced,
    ToolPolicySet, RuntimeAdmitted, RuntimeRefused, RuntimeFenced, ToolCallAllowed, ToolCallDenied,
    ProviderReadinessRecorded, HostSuspended, HostResumed, TaskStalled,
    DeliveryComposed,
    InvestigationOpened, InvestigationExhausted, InvestigationClosed, BackgroundCheckpointed,
    SourceAliased, BatchJoined, BatchRevised, BatchFixSuperseded,
]  # fmt: skip

EVENT_TYPES: dict[str, type[Event]] = {cls.__name__: cls for cls in AnyEvent.__args__}  # type: ignore[attr-defined]

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(AnyEvent)


def event_name(event: Event) -> str:
    return type(event).__name__


def encode_event(event: Event) -> bytes:
    return _encoder.encode(event)


def decode_event(data: bytes) -> AnyEvent:
    return _decoder.decode(data)
