"""The Structs events carry inside them: what a decision was validated under
(`Revisions`, `PrerequisiteSpec`, an attempt's `Envelope`) and, for the
decisions the engine takes by itself, the facts it relied on (contract section 8:
`ClaimFacts`, `BlockFact`, `RefusalFacts`, `AlertFacts`, a delivery's budget
and candidates). domain/events.py holds the events themselves; `ev.BlockFact`
and the like are these classes, which it imports for its field types.

A fact names what it relied on by its key (an operation, a question
`(task_id, question_key)`, a task, grant or policy revision, a heartbeat's
generation and time, a binding generation), and the key leads to the event,
and so the input, that established it (domain/keys.py). Facts are computed
only when their event is emitted: the hot path pays nothing for them.

Encoding: fields never change type; fact structs omit their defaults, so an
absent fact costs no bytes (the events' bytes are the same wherever these
classes live: msgspec writes field names, not class paths).
"""

from __future__ import annotations

import datetime

from msgspec import UNSET, Struct, UnsetType


class Revisions(Struct, frozen=True, kw_only=True):
    task: int | None
    grant: int
    intent: int | None


class PrerequisiteSpec(Struct, frozen=True, kw_only=True):
    operation_id: str
    outcome: str
    artifact_revision: str | None
    evidence_required: bool | UnsetType = UNSET  # contract v1.2 section 2.5 (set only when true)


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
    # Contract v1.2 section 10: the source revision and commit the action answers, when it names them.
    source_revision: int | UnsetType = UNSET
    target_sha: str | UnsetType = UNSET
    # Contract v1.2 section 3.3: the action's execution deadline (the same on
    # every attempt: set at the first claim, never moved).
    deadline_at: datetime.datetime | UnsetType = UNSET
    # Contract v1.2 section 1.4: the worker runtime that executes it and the
    # tool policy revision it was admitted at (set only for an action naming one).
    runtime_id: str | UnsetType = UNSET
    tool_policy_revision: int | UnsetType = UNSET


class PrerequisiteFact(Struct, frozen=True, kw_only=True):
    """A prerequisite as it was when relied on: its state and artifact (its
    outcome event, `ActionOutcomeReported` of `operation_id`, says when), and
    the artifact revision the dependent action requires, if any."""

    operation_id: str
    state: str
    artifact_revision: str | None
    required_artifact_revision: str | None = None
    # Contract v1.2 section 2.5, only for a prerequisite that requires evidence.
    evidence_required: bool | UnsetType = UNSET
    evidence_refs: list[str] | UnsetType = UNSET


class SourceFacts(Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What the source rule (contract v1.2 section 2.2) relied on: the action's
    source revision and target SHA, the cause's current update revision, and
    its latest in-order observation (`observed_by`: the input that recorded it;
    None when the cause has no observation)."""

    source_revision: int
    cause_revision: int
    target_sha: str | None = None
    moot_statuses: list[str] | None = None
    status: str | None = None
    commit_sha: str | None = None
    deleted: bool | None = None
    complete: bool | None = None
    observed_by: int | None = None


class ClaimFacts(Struct, frozen=True, kw_only=True):
    """What a claim relied on beyond its envelope. (Kept small: a claim is the
    most frequent decision. The freshness rule and the synced intent revision
    it met are the latest `EngineConfigured` and `IntentSynced` before it in
    the log.)"""

    heartbeat_generation: int | None
    heartbeat_at: datetime.datetime | None
    binding_generation: int | None
    prerequisites: list[PrerequisiteFact]


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
      `heartbeat_at`, None if never seen) and `watchdog_max_age_s`; `host` and
      `last_resume_at` when the host is not running (contract v1.2 section 4.5);
    - resource_busy: `resource` and the in-flight `operations` holding it;
    - approval_pending: the open `approvals`;
    - budget_exhausted: `grant_id`, `usage`, `token_limit`, and `calls`,
      `call_limit` when it has a call limit (contract v1.2 section 3.4);
    - rule_opted_out (contract v1.2 section 2.4): `rule_id`, its `scopes`, and
      `scope`, the scope of the cause's latest observation (None: none yet).
    - retry_backoff: `retry_at` and the refused or not received `attempts` so far.
    - runtime_not_admitted: `runtime_id`, `runtime_state` (None: never admitted).
    - owner_active (contract v1.2 section 8.1): the first foreground in id
      order whose owner is active and that affects the action:
      `conversation_id`, its queued `messages` and its running human turn
      (`turn_id`); how it affects the action (`via`: "task", "session",
      "resource"); for "session" and "resource" the `resource`, for
      "resource" the foreground's non-terminal actions naming it (`operations`).
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
    # Contract v1.2 section 4.5: the host suspended or resuming (left out while it runs).
    host: str | None = None
    last_resume_at: datetime.datetime | None = None
    resource: str | None = None
    operations: list[str] | None = None
    approvals: list[ApprovalRef] | None = None
    grant_id: str | None = None
    usage: int | None = None
    token_limit: int | None = None
    calls: int | None = None
    call_limit: int | None = None
    rule_id: str | None = None
    scopes: list[str] | None = None
    retry_at: datetime.datetime | None = None
    attempts: int | None = None
    runtime_id: str | None = None
    runtime_state: str | None = None
    messages: list[str] | None = None
    turn_id: str | None = None
    via: str | None = None  # owner_active: how the foreground affects the action


class PreemptFacts(Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What preempted a maintenance action (contract v1.2 section 8.1): the
    foreground (`conversation_id`) and the human message queued on it, or
    (`operation_id`, no message) the proposal of its work made while its
    owner was active; how the foreground affects the action (`via`: "task",
    "session", "resource"; None in a log written before the rule was
    scoped), for "session" and "resource" the `resource`, for "resource" the
    foreground's non-terminal actions naming it (`operations`)."""

    conversation_id: str
    message_id: str | None = None
    operation_id: str | None = None
    via: str | None = None
    resource: str | None = None
    operations: list[str] | None = None


class BatchFixFacts(Struct, frozen=True, kw_only=True):
    """Why a fix was superseded or asked to stop `duplicate_batch` (contract
    v1.2 section 7.3): `joined` joined batch `batch_id` (at its `revision`),
    whose earlier live fix `kept`, for `kept_cause`, survives."""

    batch_id: str
    revision: int
    joined: str
    kept: str
    kept_cause: str


class ToolFacts(Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Why a runtime was refused or revoked, or a tool call denied (contract
    v1.2 section 10): the failed `check` (its reason code), the first
    offending `entry` (the inherited, non-exact or missing tool, the read
    root or path), the tool policy revision in force, and the evidence the
    admission named. For a call: the tool policy revision the runtime was
    admitted at (`admitted_revision`; its RuntimeAdmitted is found by the
    runtime's key) and, for a denied tool, where it is missing."""

    check: str
    tool_policy_revision: int
    entry: str | None = None
    isolation_test_ref: str | None = None
    admitted_revision: int | None = None
    in_admission: bool | None = None  # a denied tool: was it among the admitted tools?
    in_allowlist: bool | None = None  # ... and in the role's current allowlist?
    # budget_exhausted (contract v1.2 section 3.4): the grant's count and limits.
    calls: int | None = None
    call_limit: int | None = None
    usage: int | None = None
    token_limit: int | None = None
    # budget_exhausted by an investigation (contract v1.2 section 5.1): its calls and bounds.
    investigation_calls_max: int | None = None
    due_at: datetime.datetime | None = None


class DeliveryBudget(Struct, frozen=True, kw_only=True):
    """The context budget a delivery was fitted into (contract section 5.3): it fits when
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


class AlertFacts(Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What an alert's raise (or the engine's resolution) relied on; only the
    fields of its kind are set. `reason`: urgent "not_dispatchable" or
    "running_turn"; fallback_delivery "left_out" or "overdue";
    reconciliation_required "epoch_changed" or "history_deleted";
    consumer_sequence_reset "sequence_reset"; for a
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
    calls: int | None = None  # budget_exhausted by calls (contract v1.2 section 3.4)
    call_limit: int | None = None
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
    runtime_id: str | None = None
    # Contract v1.2 section 4: no_progress (the task's last progress and deadline) and a provider incident.
    progress_deadline_s: int | None = None
    last_progress_at: datetime.datetime | None = None
    last_progress_event: str | None = None
    provider: str | None = None
    # Tandem's consumer_sequence_reset: the first entry, at a seq the consumer had read, that is no repeat.
    entry_seq: int | None = None
    read_seq: int | None = None
    source_id: str | None = None
    observed_at: datetime.datetime | None = None
    auth_expires_at: datetime.datetime | None = None
    # Budgets (contract v1.2 section 3): a deadline, an exhausted action, a failing conversation.
    deadline_at: datetime.datetime | None = None
    attempt_id: str | None = None
    grant_revision: int | None = None
    execution_deadline_s: int | None = None
    attempts: int | None = None
    max_attempts: int | None = None
    refusals: int | None = None
    delivery_retries_max: int | None = None
    # investigation_exhausted (contract v1.2 section 5.1): by "time" or "calls".
    investigation_id: str | None = None
    investigation_calls_max: int | None = None


class DeadlineFacts(Struct, frozen=True, kw_only=True):
    """What a deadline stop relied on (contract v1.2 section 3.3): the first
    claim (`attempt_id`, `claimed_at`), the grant revision in force then and
    its `execution_deadline_s`, and the state the action was in."""

    attempt_id: str
    claimed_at: datetime.datetime
    grant_revision: int
    execution_deadline_s: int
    state: str


class DeferralFacts(Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Why a conversation's next delivery waits (contract v1.2 sections 3.6,
    3.7): `backoff`: the `refusals` since the last accepted delivery, the latest
    refused one (`delivery_id`, `refused_at`) and `delivery_backoff_s`;
    `wake_interval`: the previous wake (`last_wake_at`) and
    `wake_min_interval_s`; `batch_wait`: the oldest deliverable update
    (`cause_key`, `deliverable_since`), the `waiting` updates and
    `wake_batch_wait_s`; `provider_unready` (v1.2 section 4.3): the
    conversation's `provider`, its open `incident_id` and the incident's
    `observed_at`. Section 3.7, what holds an urgent update back from an idle
    foreground: `urgent`, that update (the first deliverable urgent one by
    rank), with `approval`: the open request ids (`approvals`);
    `failure_hold`: `held_by` (`engine`, after its retries, or `human`) and
    the engine's `refusals` and `delivery_retries_max`; `context_recovery`:
    `recovery`; `reseed`: the reseed's `delivery_id`; `paused`: nothing more;
    `context_limit`: the fewest `tokens` an urgent update needs and the
    `room` left."""

    refusals: int | None = None
    delivery_id: str | None = None
    refused_at: datetime.datetime | None = None
    delivery_backoff_s: int | None = None
    last_wake_at: datetime.datetime | None = None
    wake_min_interval_s: int | None = None
    cause_key: str | None = None
    deliverable_since: datetime.datetime | None = None
    waiting: int | None = None
    wake_batch_wait_s: int | None = None
    provider: str | None = None
    incident_id: str | None = None
    observed_at: datetime.datetime | None = None
    urgent: str | None = None
    approvals: list[str] | None = None
    held_by: str | None = None
    delivery_retries_max: int | None = None
    recovery: str | None = None
    tokens: int | None = None
    room: int | None = None
