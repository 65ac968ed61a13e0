"""Events: immutable facts, in the past tense, one frozen msgspec Struct each.

Every transaction starts with the input that caused it (`InputAccepted` or
`InputRejected`, carrying the decoded input itself), so any store can be
re-derived from its own inputs and verified. Every other event names that
input's sequence number in `cause` (spec section 8) and carries the resulting
states it sets, so a projection is a plain fold that re-decides nothing.

Provenance (spec section 8): an event the engine decides by itself also
records the facts it relied on, so that `tandem explain` (replay/explain.py)
walks recorded links and re-decides nothing. A fact names what it relied on by
its key (an operation, a question `(task_id, question_key)`, a task, grant or
policy revision, a heartbeat's generation and time, a binding generation), and
the key leads to the event, and so the input, that established it. Facts are
computed only when their event is emitted: the hot path pays nothing for them.

Encoding: the tagged union is written as JSON with its tag in `"event"`. New
fields get defaults; existing field types never change (msgspec's rule). The
encoding is deterministic: the same trace gives the same bytes. Fact structs
omit their defaults, so an absent fact costs no bytes.
"""

from __future__ import annotations

import datetime
from typing import Any, Union

import msgspec
from msgspec import Struct

from tandem.domain.inputs import AnyInput, nesting_depth_max, too_deep


class Event(Struct, frozen=True, tag_field="event", kw_only=True, omit_defaults=False):
    pass


class Decision(Event, frozen=True, kw_only=True):
    """An event caused by an input; `cause` is that input's sequence number."""

    cause: int


# ----------------------------------------------------------------- inputs


class InputAccepted(Event, frozen=True, kw_only=True):
    seq: int
    file: str | None
    line: int | None
    input: AnyInput


class InputRejected(Event, frozen=True, kw_only=True):
    seq: int
    file: str | None
    line: int | None
    input: AnyInput
    reason: str
    detail: str = ""


class SourceProgressed(Event, frozen=True, kw_only=True):
    """How far a trace file has been ingested: its first `offset` bytes (whose
    SHA-256 is `digest`) up to line `line`. Written once per committed batch."""

    file: str
    line: int
    offset: int
    digest: str


# ------------------------------------------------------ configuration, policy


class EngineConfigured(Decision, frozen=True, kw_only=True):
    watchdog_max_age_s: int
    fallback_after_s: int
    question_resurface_s: int
    wake_batch_max: int


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


class GrantRevoked(Decision, frozen=True, kw_only=True):
    grant_id: str


class RuleSet(Decision, frozen=True, kw_only=True):
    rule_id: str
    grant_id: str


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


class TaskRevised(Decision, frozen=True, kw_only=True):
    task_id: str
    revision: int
    goal: str
    done_when: list[str]
    constraints: dict[str, Any]
    fallback_decisions: dict[str, str]
    fenced: list[str]


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


class Revisions(Struct, frozen=True, kw_only=True):
    task: int | None
    grant: int
    intent: int | None


class PrerequisiteSpec(Struct, frozen=True, kw_only=True):
    operation_id: str
    outcome: str
    artifact_revision: str | None


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


class ActionRevalidated(Decision, frozen=True, kw_only=True):
    operation_id: str
    input_revisions: Revisions


class ActionCancelled(Decision, frozen=True, kw_only=True):
    operation_id: str


class ActionCancelRequested(Decision, frozen=True, kw_only=True):
    operation_id: str
    reason: str  # "human", "task_cancelled" or "budget_exhausted"


class Envelope(Struct, frozen=True, kw_only=True):
    """What an attempt was validated under, frozen before any transport."""

    operation: str
    target: str
    resource: str
    write_paths: list[str]
    task_revision: int | None
    grant_revision: int
    policy_revision: int
    intent_revision: int | None


class PrerequisiteFact(Struct, frozen=True, kw_only=True):
    """A prerequisite as it was when relied on: its state and artifact (its
    outcome event, `ActionOutcomeReported` of `operation_id`, says when), and
    the artifact revision the dependent action requires, if any."""

    operation_id: str
    state: str
    artifact_revision: str | None
    required_artifact_revision: str | None = None


class ClaimFacts(Struct, frozen=True, kw_only=True):
    """What a claim relied on beyond its envelope. (Kept small: a claim is the
    most frequent decision. The freshness rule and the synced intent revision
    it met are the latest `EngineConfigured` and `IntentSynced` before it in
    the log.)"""

    heartbeat_generation: int | None
    heartbeat_at: datetime.datetime | None
    binding_generation: int | None
    prerequisites: list[PrerequisiteFact]


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


class ActionOutcomeReported(Decision, frozen=True, kw_only=True):
    operation_id: str
    outcome: str
    artifact_revision: str | None
    evidence_ref: str | None
    attempt_id: str | None
    attempt_state: str | None
    action_state: str


class RefusalFacts(Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What the engine decided after a refused or not received attempt, and why:
    `reason` is "retry" (back to pending), "max_attempts" (exhausted),
    "task_revised" or "authority_narrowed" (fenced: revalidate to go on)."""

    reason: str
    attempts: int
    max_attempts: int
    task_revision: int | None = None  # the task's revision now
    validated_task_revision: int | None = None  # the one the action was validated under
    grant_revision: int | None = None
    policy_revision: int | None = None


class QuestionRef(Struct, frozen=True, kw_only=True, omit_defaults=True):
    """An open question that holds something. `via`: "operation" (it lists the
    action), "prerequisite" (it lists `through`, a prerequisite, transitively),
    "task" (affected "task" on the action's task), "depends_on" (affected
    "task" on `through`, a task depended on, transitively), "unknown"
    (affected "unknown": wider_hold)."""

    task_id: str
    question_key: str
    via: str
    through: str | None = None


class TaskStateFact(Struct, frozen=True, kw_only=True):
    task_id: str
    state: str


class ApprovalRef(Struct, frozen=True, kw_only=True):
    conversation_id: str
    request_id: str


class BlockFact(Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Why one code of `blocked_by` (or of a task's `holds`) applies, as of
    the event that records it. Only the fields of its code are set:

    - prerequisite_pending / prerequisite_failed: `prerequisites` concerned;
    - question_hold / wider_hold: `questions` that hold it;
    - scope_paused: `scope` ("*" or the task id);
    - task_held: `tasks` it depends on that are not completed;
    - intent_unsynced: `conversation_id`, `intent_revision`, `synced_intent_revision`;
    - watchdog_unavailable: the last heartbeat (`heartbeat_generation`,
      `heartbeat_at`, None if never seen) and `watchdog_max_age_s`;
    - resource_busy: `resource` and the in-flight `operations` holding it;
    - approval_pending: the open `approvals`;
    - budget_exhausted: `grant_id`, `usage`, `token_limit`.
    """

    code: str
    prerequisites: list[PrerequisiteFact] | None = None
    questions: list[QuestionRef] | None = None
    scope: str | None = None
    tasks: list[TaskStateFact] | None = None
    conversation_id: str | None = None
    intent_revision: int | None = None
    synced_intent_revision: int | None = None
    heartbeat_generation: int | None = None
    heartbeat_at: datetime.datetime | None = None
    watchdog_max_age_s: int | None = None
    resource: str | None = None
    operations: list[str] | None = None
    approvals: list[ApprovalRef] | None = None
    grant_id: str | None = None
    usage: int | None = None
    token_limit: int | None = None


class ActionBlocked(Decision, frozen=True, kw_only=True):
    """The codes holding a pending action changed (spec section 4 order).
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
    unless its origin is a background conversation, its cause's next update
    revision (`update_revision`, else None)."""

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


class ObservationRepeated(Decision, frozen=True, kw_only=True):
    """A repeat: counted on its cause (unless from a background's own
    activity), nothing else changes."""

    via: str
    source_id: str
    cause_key: str
    counted: bool
    at: datetime.datetime


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
    rule: str = ""  # the spec 5.3 rule that applied: "human_turn" (3) or "wake" (4)


class DeliveryBudget(Struct, frozen=True, kw_only=True):
    """The context budget a delivery was fitted into (spec 5.3): it fits when
    `context_tokens + tokens + reserve <= context_limit`; `room` is
    `context_limit - reserve - context_tokens` before it."""

    context_limit: int
    reserve: int
    context_tokens: int
    room: int
    message_tokens: int
    control_tokens: int
    update_tokens: int


class CandidateUpdate(Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A ranked update a delivery considered, in rank order (urgent first, then
    notification_priority descending, null last, then first_seen_at, then
    cause_key). `verdict`: "included", "does_not_fit" (skipped: it would not
    fit) or "over_wake_batch_max" (a wake was full). `optional`: routine,
    riding along in a human turn."""

    cause_key: str
    revision: int
    disposition: str | None
    notification_priority: int | None = None
    tokens: int
    verdict: str
    optional: bool = False


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
    # Why (spec 5.3): the rule that applied ("human_turn", "wake", "steer",
    # "reseed"), the budget, and the ranked updates considered (at most
    # `candidates_recorded_max`; `candidates_total` counts them all).
    rule: str = ""
    budget: DeliveryBudget | None = None
    candidates: list[CandidateUpdate] = []
    candidates_total: int = 0


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


# --------------------------------------- section 6: alerts, obligations, health


class AlertFacts(Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What an alert's raise (or the engine's resolution) relied on; only the
    fields of its kind are set. `reason`: urgent "not_dispatchable" or
    "running_turn"; fallback_delivery "left_out" or "overdue";
    reconciliation_required "epoch_changed" or "history_deleted"; for a
    resolution, the observed end ("accepted_delivery", "fresh_heartbeat",
    "answered", "limit_lifted", "reset", "wake_fits", "approval_resolved",
    "obligation_met", "recovered", "reconciled")."""

    reason: str | None = None
    operation_id: str | None = None
    conversation_id: str | None = None
    request_id: str | None = None
    incident_id: str | None = None
    consumer_id: str | None = None
    reconciliation_id: str | None = None
    grant_id: str | None = None
    usage: int | None = None
    token_limit: int | None = None
    task_id: str | None = None
    question_key: str | None = None
    k: int | None = None
    first_seen_at: datetime.datetime | None = None
    heartbeat_generation: int | None = None
    heartbeat_at: datetime.datetime | None = None
    watchdog_max_age_s: int | None = None
    room: int | None = None
    smallest_tokens: int | None = None
    candidates: int | None = None
    turn_id: str | None = None
    delivery_id: str | None = None
    due_at: datetime.datetime | None = None
    card_id: str | None = None


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
    reported_by: str  # the actor: watchdog or daemon


class IncidentRecovered(Decision, frozen=True, kw_only=True):
    incident_id: str


class DaemonStopped(Decision, frozen=True, kw_only=True):
    expected: bool


class DaemonStarted(Decision, frozen=True, kw_only=True):
    """`after`: what the latest earlier daemon.stop/start was ("expected_stop",
    "unexpected_stop", "start", or None for the very first start)."""

    after: str | None


class ObligationOpened(Decision, frozen=True, kw_only=True):
    """A task action's outcome: the task's conversation must be told."""

    operation_id: str
    cause_key: str
    conversation_id: str
    due_at: datetime.datetime  # the outcome's time + fallback_after_s


class ObligationMet(Decision, frozen=True, kw_only=True):
    operation_id: str
    cause_key: str
    turn_id: str
    delivery_id: str


class ObligationDue(Decision, frozen=True, kw_only=True):
    """`reason`: "left_out" (a completed turn held it but did not list it in
    `delivered`) or "overdue" (`fallback_after_s` passed)."""

    operation_id: str
    reason: str
    turn_id: str | None = None
    # left_out: the accepted delivery of that turn that held it (overdue: the
    # due time is the ObligationOpened's).
    delivery_id: str | None = None


class QuestionResurfaced(Decision, frozen=True, kw_only=True):
    """An open question reached `first_seen_at + k x question_resurface_s`."""

    task_id: str
    question_key: str
    k: int
    due_at: datetime.datetime | None = None  # first_seen_at + k x question_resurface_s


AnyEvent = Union[
    InputAccepted, InputRejected, SourceProgressed,
    EngineConfigured, PolicySet, GrantIssued, GrantRevised, GrantRevoked, RuleSet,
    TaskDelegated, TaskRevised, TaskCompleted, TaskCancelled, QuestionRaised, QuestionAnswered,
    TaskHoldsChanged,
    ActionProposed, ActionRevalidated, ActionCancelled, ActionCancelRequested, ActionClaimed,
    AttemptUpdated, ActionOutcomeReported, ActionBlocked,
    HeartbeatRecorded, ScopePaused, ScopeResumed, UsageReported, BudgetExhausted,
    ConversationOpened, BackgroundBound, MessageQueued, QueueEdited, IntentSynced,
    ObservationRecorded, ObservationRepeated, UpdateRevised, UpdateTriaged,
    ConsumerCreated, CursorMoved, WatermarkRaised, ReconciliationStarted, ReconciliationCommitted,
    CardProposed,
    TurnStarted, DeliveryCreated, DeliveryReceipted, TurnEnded, ContextReset, RecoveryChanged,
    ApprovalOpened, ApprovalResolved, FailureHoldChanged,
    AlertRaised, AlertSeen, AlertResolved, IncidentOpened, IncidentRecovered, DaemonStopped, DaemonStarted,
    ObligationOpened, ObligationMet, ObligationDue, QuestionResurfaced,
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


# An event holds its input one level down (`InputAccepted.input`), and the
# input's free-form values (`constraints`) no deeper than that: the events of
# inputs within `nesting_depth_max` nest at most one level more.
event_nesting_depth_max = nesting_depth_max + 1


def decode_foreign_event(data: bytes) -> AnyEvent:
    """Decode an event that comes from outside the store (`tandem import`):
    nested no deeper than `event_nesting_depth_max`, or a ValidationError
    naming where (as an input at the edge), never a RecursionError. Events
    read back from the store were checked when they came and are not."""
    refusal = too_deep(data, event_nesting_depth_max)
    if refusal is not None:
        raise refusal
    return _decoder.decode(data)
