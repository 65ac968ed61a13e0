"""The rows of every view (docs/contract/views.md), as msgspec Structs: one
per view (`VIEW_ROWS`), with what its rows hold, for `/openapi.json`
(adapters/api_schema.py) and for clients that decode the views typed.

The views themselves keep producing plain dicts (a fold writes into them in
place, and they are encoded once per position); these Structs only describe
them. Each field is a key of the row, in the row's order, with the type it
has; `forbid_unknown_fields` makes a key the Struct forgets a decoding error.
`tests/integration/test_view_rows.py` converts every row of every fixture's
final views into its Struct and back, byte for byte, so the two cannot drift;
and checks that each state `Literal` is its lifecycle's states
(domain/lifecycles.py).

Times are RFC 3339 UTC strings (`projections/base.rfc3339`).
"""

from __future__ import annotations

from typing import Literal

from msgspec import UNSET, Struct, UnsetType

# The states a view shows, each its lifecycle's (domain/lifecycles.py), in its order.
TaskState = Literal["active", "completed", "cancelled"]
ActionState = Literal[
    "pending", "fenced", "submitting", "queued", "accepted", "unknown", "cancel_requested",
    "succeeded", "failed", "cancelled", "exhausted", "superseded",
]  # fmt: skip
AttemptState = Literal["submitting", "queued", "accepted", "unknown", "refused", "not_received"]
UpdateState = Literal["untriaged", "triaged"]
QuestionState = Literal["open", "answered"]
AlertState = Literal["raised", "seen", "resolved"]
DeliveryState = Literal["submitting", "accepted", "unknown", "refused", "not_received"]
ConsumerState = Literal["consuming", "reconciliation_required"]
HostState = Literal["running", "suspended", "resuming"]
RuntimeState = Literal["admitted", "refused", "fenced"]
InvestigationState = Literal["open", "exhausted", "concluded", "abandoned", "delegated"]


class Row(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What every row Struct is: keyword-only, frozen, and no key it does not name."""


# ------------------------------------------------------------------- tasks


class TaskRow(Row):
    task_id: str
    revision: int
    state: TaskState
    goal: str
    grant_id: str
    grant_revision: int
    depends_on: list[str]
    holds: list[str]
    open_questions: int
    actions: list[str]
    last_progress_at: str
    progress_due_at: str | None


# ----------------------------------------------------------------- actions


class ActionAttempt(Row):
    attempt_id: str
    state: AttemptState


class ActionRevisions(Row):
    """The revisions an action is validated under (`input_revisions`)."""

    task: int | None
    grant: int
    intent: int | None


class ActionEnvelope(Row):
    """The frozen envelope of the attempt out with the executor."""

    operation: str
    target: str
    resource: str
    write_paths: list[str]
    task_revision: int | None
    grant_revision: int
    policy_revision: int
    intent_revision: int | None
    source_revision: int | None
    target_sha: str | None
    deadline_at: str | None
    runtime_id: str | None
    tool_policy_revision: int | None


class ActionRow(Row):
    operation_id: str
    task_id: str | None
    rule_id: str | None
    cause_key: str
    operation: str
    resource: str
    state: ActionState
    blocked_by: list[str]
    attempts: list[ActionAttempt]
    outcome: Literal["succeeded", "failed", "cancelled"] | None
    artifact_revision: str | None
    prerequisites: list[str]
    reason: str | None
    source_revision: int | None
    evidence_refs: list[str]
    priority: Literal["normal", "maintenance"]
    runtime_id: str | None
    calls: int
    deadline_at: str | None
    retry_at: str | None
    batch_id: str | None
    # What an executor reads (an extension): docs/contract/views.md.
    target: str
    write_paths: list[str]
    input_revisions: ActionRevisions
    attempt_id: str | None
    envelope: ActionEnvelope | None


# ------------------------------------------------------------------- inbox


class InboxLatest(Row):
    """The cause's latest in-order observation (contract v1.1)."""

    status: str | None
    deleted: bool
    source_time: str | None
    evidence_ref: str | None
    excerpt: str | None
    truncated: bool


class InboxRow(Row):
    cause_key: str
    revision: int
    kind: str
    triage_state: UpdateState | None  # None: only ignored observations (revision 0)
    disposition: str | None
    action_priority: int | None
    notification_priority: int | None
    partial: bool
    repeats: int
    out_of_order: int
    first_seen_at: str
    last_seen_at: str
    delivered_revision: int | None
    retained: bool
    latest: InboxLatest | None
    batch_id: str | None
    ignored: int  # extension: observations recorded as ignored (docs/contract/views.md)


# --------------------------------------------------------- questions, alerts


class QuestionRow(Row):
    task_id: str
    question_key: str
    state: QuestionState
    recipient: str
    blocking_reason: str
    affected: list[str] | Literal["task", "unknown"]
    first_seen_at: str
    times_raised: int
    answer: str | None  # an extension: the answer, once answered (null while open)


class AlertRow(Row):
    alert_id: str
    kind: str
    state: AlertState
    first_raised_at: str
    last_raised_at: str
    count: int


# ----------------------------------------------------------- conversations


class DeliveryPayload(Row):
    ref: str
    digest: str
    adapter: str
    tokens: int | None


class ConversationDelivery(Row):
    delivery_id: str
    turn_id: str | None
    epoch: int
    kind: Literal["turn", "steer", "reseed"]
    included: list[tuple[str, int]]  # [cause_key, revision]
    messages: list[str]
    tokens: int
    attempt_state: DeliveryState
    payload: DeliveryPayload | None
    display_digest: str | None
    untrusted: list[str]
    checkpoint: str | None


class ConversationDeferred(Row):
    until: str | None
    reason: str


class ConversationCheckpoint(Row):
    checkpoint_id: str
    at: str
    generation: int
    epoch: int
    intent_revision: int
    sync_cursor: str
    investigations: list[str]
    evidence_refs: list[str]
    tokens: int


class ConversationRow(Row):
    conversation_id: str
    role: Literal["foreground", "background"]
    state: Literal["context_recovery_required", "failure_held", "running", "idle"]
    epoch: int
    generation: int | None
    intent_revision: int
    synced_intent_revision: int
    queue: list[str]
    context_tokens: int
    deliveries: list[ConversationDelivery]
    provider: str | None
    refusals: int
    deferred: ConversationDeferred | None
    stop_requested: str | None
    checkpoint: ConversationCheckpoint | None


# ------------------------------------------------------- consumers, health


class ConsumerRow(Row):
    consumer_id: str
    epoch: int
    seq: int
    max_deleted_seq: int
    state: ConsumerState
    gaps: int
    skipped: int


class HealthBacklog(Row):
    untriaged: int
    oldest_untriaged_at: str | None
    deliverable: int


class HealthIncident(Row):
    incident_id: str
    kind: str
    observed_at: str | None
    last_success_at: str | None


class HealthProvider(Row):
    provider: str
    ready: bool
    reason: str | None
    observed_at: str
    auth_expires_at: str | None
    last_ready_at: str | None


class HealthValue(Row):
    """The `health` view: one object, not a list."""

    watchdog_generation: int | None
    last_heartbeat_at: str | None
    watchdog_fresh: bool
    unattended_dispatch: Literal["allowed", "held"]
    open_incidents: list[str]
    backlog: HealthBacklog
    last_heartbeat_imported_at: str | None
    host: HostState
    last_resume_at: str | None
    incidents: list[HealthIncident]
    providers: list[HealthProvider]
    tool_policy_revision: int
    isolation_unavailable: list[str]
    degraded: list[str]


# ------------------------------------------------------------------ usage


class UsageTotals(Row):
    """One role's usage: a sum, or null when no report gave that field."""

    input_tokens: int | None
    cached_input_tokens: int | None
    cache_write_tokens: int | None
    output_tokens: int | None
    reports: int


class UsageValue(Row):
    """The `usage` view: one object, by role."""

    foreground: UsageTotals
    background: UsageTotals
    workers: UsageTotals


# ------------------------------------------ cards, rejections, v1.2's views


class CardRow(Row):
    card_id: str
    cause_key: str
    summary: str


class RejectionRow(Row):
    line: int | None
    type: str
    reason: str
    file: str | None | UnsetType = UNSET  # present when the store holds several traces


class RuntimeRow(Row):
    runtime_id: str
    role: str
    conversation_id: str | None
    generation: int | None
    adapter: str
    state: RuntimeState
    reason: str | None
    tool_policy_revision: int
    tools: list[str]
    calls_allowed: int
    calls_denied: int


class InvestigationRow(Row):
    investigation_id: str
    conversation_id: str
    cause_key: str
    task_id: str | None
    state: InvestigationState
    opened_at: str
    due_at: str
    calls: int
    evidence_refs: list[str]
    operation_id: str | None


# Each view's row Struct, in the document's order (projections.VIEW_NAMES);
# `health` and `usage` are one object each, the others lists of rows.
VIEW_ROWS: dict[str, type[Row]] = {
    "tasks": TaskRow,
    "actions": ActionRow,
    "inbox": InboxRow,
    "questions": QuestionRow,
    "alerts": AlertRow,
    "conversations": ConversationRow,
    "consumers": ConsumerRow,
    "health": HealthValue,
    "usage": UsageValue,
    "cards": CardRow,
    "rejections": RejectionRow,
    "runtimes": RuntimeRow,
    "investigations": InvestigationRow,
}
VALUE_VIEWS = ("health", "usage")  # views that are one object, not rows

# The state Literals and the lifecycle each must equal (checked by the tests).
STATE_LITERALS = {
    "TASK": TaskState,
    "ACTION": ActionState,
    "ATTEMPT": AttemptState,
    "UPDATE": UpdateState,
    "QUESTION": QuestionState,
    "ALERT": AlertState,
    "DELIVERY": DeliveryState,
    "CONSUMER": ConsumerState,
    "HOST": HostState,
    "RUNTIME": RuntimeState,
    "INVESTIGATION": InvestigationState,
}

