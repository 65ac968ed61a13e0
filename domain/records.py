"""The entity records the decision state holds: one mutable dataclass per
thing (a grant, a task, an action and its attempts, a conversation and its
messages, turns and deliveries, an inbox update, a consumer, an alert, an
obligation), filled by the areas' evolvers.

A record's `state` starts where its lifecycle starts (domain/lifecycles.py:
`TASK.initial`, ...) and moves only as its events say (`after`). Records are
plain data: the indexes over them are the State's (domain/state.py). They are
pickled in snapshots, so their module is part of the snapshot fingerprint.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any

from tandem.domain.facts import Envelope, PrerequisiteSpec, Revisions
from tandem.domain.lifecycles import (
    ACTION,
    ALERT,
    CONSUMER,
    DELIVERY,
    GRANT,
    INVESTIGATION,
    MESSAGE,
    OBLIGATION,
    QUESTION,
    RUNTIME,
    TASK,
    TURN,
    UPDATE,
)

Seconds = int


@dataclass(slots=True)
class Config:
    watchdog_max_age_s: Seconds = 120
    fallback_after_s: Seconds = 600
    question_resurface_s: Seconds = 86_400
    wake_batch_max: int = 20
    # Contract v1.2 section 3.2: the defaults change nothing.
    wake_min_interval_s: Seconds = 0
    wake_batch_wait_s: Seconds = 0
    delivery_backoff_s: Seconds = 0
    delivery_retries_max: int | None = None  # unbounded
    backlog_degraded_at: int | None = None
    exhausted_alerts: bool = False
    suspend_gap_s: Seconds = 0  # contract v1.2 section 4.5: 0, no unannounced suspend
    payload_required: bool = False  # contract v1.2 section 6: acceptance needs the exact payload
    # Contract v1.2 section 5.1: they bound only investigations, which v1 has none of.
    investigation_max_s: Seconds = 3600
    investigation_calls_max: int = 100


@dataclass(slots=True)
class Policy:
    revision: int = 0
    operations: frozenset[str] = frozenset()
    roots: tuple[str, ...] = ()


@dataclass(slots=True)
class Grant:
    grant_id: str
    revision: int
    task_id: str | None
    rule_id: str | None
    operations: tuple[str, ...]  # its own authority, as narrowed (in request order)
    roots: tuple[str, ...]
    max_attempts: int
    token_limit: int | None
    state: str = GRANT.initial
    usage: int = 0
    execution_deadline_s: Seconds | None = None  # contract v1.2 section 3.3
    retry_backoff_s: Seconds = 0  # contract v1.2 section 3.5
    call_limit: int | None = None  # contract v1.2 section 3.4
    calls: int = 0  # the allowed tool calls of its actions (section 3.4)
    actions: list[str] = field(default_factory=list)

    @property
    def budget_exhausted(self) -> bool:
        return (self.token_limit is not None and self.usage >= self.token_limit) or self.calls_reached

    @property
    def calls_reached(self) -> bool:
        """Contract v1.2 section 3.4: its actions made `call_limit` calls."""
        return self.call_limit is not None and self.calls >= self.call_limit


@dataclass(slots=True)
class Task:
    task_id: str
    conversation_id: str
    message_refs: list[str]
    goal: str
    done_when: list[str]
    constraints: dict[str, Any]
    fallback_decisions: dict[str, str]
    depends_on: list[str]
    grant_id: str
    revision: int = 1
    state: str = TASK.initial
    holds: tuple[str, ...] = ()
    actions: list[str] = field(default_factory=list)
    dependents: list[str] = field(default_factory=list)  # tasks whose depends_on names this one
    open_questions: int = 0
    # Contract v1.2 section 4.4: the latest progress (its time and event), the
    # deadline, and the due time the progress timer holds (None: no timer).
    last_progress_at: datetime.datetime | None = None
    last_progress_event: str = "TaskDelegated"
    progress_deadline_s: Seconds | None = None
    progress_due_at: datetime.datetime | None = None
    stalled_at: datetime.datetime | None = None  # while no_progress is raised: when


@dataclass(slots=True)
class Question:
    task_id: str
    question_key: str
    recipient: str
    blocking_reason: str
    affected: list[str] | str
    evidence_revision: int
    first_seen_at: datetime.datetime
    times_raised: int = 1
    state: str = QUESTION.initial
    answer: str | None = None
    resurfaced: int = 0  # the greatest k for which it resurfaced (question_stale)


@dataclass(slots=True)
class Attempt:
    attempt_id: str
    state: str
    envelope: Envelope


@dataclass(slots=True)
class Action:
    operation_id: str
    order: int  # proposal order: the pass claims in this order
    cause_key: str
    operation: str
    target: str
    resource: str
    write_paths: list[str]
    task_id: str | None
    rule_id: str | None
    grant_id: str
    prerequisites: list[PrerequisiteSpec]
    revisions: Revisions
    unattended: bool
    proposed_by: str
    generation: int | None
    cause_revision: int
    state: str = ACTION.initial
    attempts: list[Attempt] = field(default_factory=list)
    outcome: str | None = None
    artifact_revision: str | None = None
    evidence_ref: str | None = None
    blocked_by: tuple[str, ...] = ()
    dependents: list[str] = field(default_factory=list)  # actions listing this one as a prerequisite
    # Contract v1.2 section 2: the cause's revision it answers (None: it names none), and
    # what makes it pointless; its evidence refs (the outcome's, then those attached).
    source_revision: int | None = None
    target_sha: str | None = None
    moot_statuses: tuple[str, ...] = ()
    evidence_refs: list[str] = field(default_factory=list)
    awaiting_evidence: tuple[str, ...] = ()  # as of its last ActionBlocked (dispatch.awaiting_evidence)
    deadline_at: datetime.datetime | None = None  # its first claim + execution_deadline_s (v1.2 section 3.3)
    first_claim_at: datetime.datetime | None = None  # when it was (only with a deadline)
    retry_at: datetime.datetime | None = None  # not claimed before (v1.2 section 3.5), once refused
    runtime_id: str | None = None  # contract v1.2 section 1.4: the worker runtime executing it
    calls: int = 0  # allowed tool calls charged to it
    priority: str = "normal"  # contract v1.2 section 8.1: "maintenance" yields to the owner
    # Contract v1.2 section 7.3: its cause's batch when it was proposed, and that batch's revision then.
    batch_id: str | None = None
    batch_revision: int = 0

    @property
    def terminal(self) -> bool:
        return self.state in ACTION.terminal


@dataclass(slots=True)
class Message:
    message_id: str
    text: str
    tokens: int | None
    state: str = MESSAGE.initial


@dataclass(slots=True)
class Delivery:
    """A context manifest: what one turn, steer or reseed payload held."""

    delivery_id: str
    turn_id: str | None
    epoch: int
    kind: str
    included: list[tuple[str, int]]
    messages: list[str]
    tokens: int
    attempt_state: str = DELIVERY.initial
    released: bool = False  # its turn failed or was interrupted: it holds nothing now
    orphaned: bool = False  # its turn failed while it was unknown: released once reconciled
    payload: Payload | None = None  # its exact payload, once composed (contract v1.2 section 6)
    checkpoint: str | None = None  # a background reseed's checkpoint (contract v1.2 section 5.3)


@dataclass(slots=True, frozen=True)
class Payload:
    """What `delivery.composed` recorded of a delivery's provider payload."""

    ref: str
    digest: str
    adapter: str
    tokens: int | None


@dataclass(slots=True)
class Turn:
    turn_id: str
    epoch: int
    kind: str
    messages: list[str] = field(default_factory=list)
    deliveries: list[str] = field(default_factory=list)
    state: str = TURN.initial


@dataclass(slots=True)
class Conversation:
    conversation_id: str
    role: str
    context_limit: int
    reserve: int
    steer: bool
    foreground_id: str | None
    provider: str | None = None  # contract v1.2 section 4.3
    epoch: int = 1
    generation: int | None = None  # the bound background's generation (foreground only)
    background_id: str | None = None
    intent_revision: int = 0
    synced_intent_revision: int = 0
    queue: list[str] = field(default_factory=list)
    messages: dict[str, Message] = field(default_factory=dict)
    context_tokens: int = 0
    tasks: list[str] = field(default_factory=list)
    turns: int = 0  # turn ids issued: {conversation_id}/t{n}, never reused
    deliveries: dict[str, Delivery] = field(default_factory=dict)  # by n: {conversation_id}/d{n}
    running_turn: Turn | None = None
    approvals: dict[str, str] = field(default_factory=dict)  # open request_id -> detail
    failure_held: bool = False
    recovery: str | None = None  # "message" or "reseed": context_recovery_required
    reseed_id: str | None = None  # this epoch's reseed delivery, once made
    reseed_due: bool = False  # a reset asked for a reseed not yet made
    # While in recovery: the tokens needed and the room there was, as last recorded (RecoveryChanged).
    recovery_needed: int | None = None
    recovery_room: int | None = None
    not_steered: set[tuple[str, int]] = field(default_factory=set)  # refused steers, this turn
    last_turn: Turn | None = None  # the turn that ended last (what its end settles)
    # Updates belonging to this foreground whose current revision is not held:
    deliverable: set[str] = field(default_factory=set)  # actionable, urgent, needs_input
    optional: set[str] = field(default_factory=set)  # routine: ride along in a human turn
    urgent: set[str] = field(default_factory=set)  # the deliverable ones triaged urgent
    # Budgets (contract v1.2 sections 3.6, 3.7):
    refusals: int = 0  # refused or not received deliveries since the last accepted one
    refused_at: datetime.datetime | None = None  # the latest of them
    refused_id: str | None = None  # and its delivery
    engine_held: bool = False  # its failure hold is the engine's, after its retries
    last_wake_at: datetime.datetime | None = None  # the previous wake turn's start
    # (reason, until, the urgent update it holds back: v1.2 section 3.7), as the last pass left it
    deferred: tuple[str, datetime.datetime | None, str | None] | None = None
    # Contract v1.2 section 5.2 (a background): its latest checkpoint, and how many it wrote.
    checkpoint: Checkpoint | None = None
    checkpoints: int = 0

    @property
    def intent_unsynced(self) -> bool:
        return self.intent_revision > self.synced_intent_revision

    @property
    def unreseeded(self) -> bool:
        """Contract v1.2 section 5.4 (a background): a reset made its reseed
        due, and that epoch's reseed is not accepted (none made, not settled,
        refused, or too big: context recovery)."""
        if self.reseed_due or self.recovery == "reseed":
            return True
        return self.reseed_id is not None and self.deliveries[self.reseed_id].attempt_state != "accepted"

    @property
    def view_state(self) -> str:
        if self.recovery is not None:
            return "context_recovery_required"
        if self.failure_held:
            return "failure_held"
        return "running" if self.running_turn is not None else "idle"


@dataclass(slots=True, frozen=True)
class Checkpoint:
    """A background's checkpoint (contract v1.2 section 5.2): what it wrote, and
    the investigations the engine added (its open and exhausted ones)."""

    checkpoint_id: str
    at: datetime.datetime
    generation: int
    epoch: int
    intent_revision: int
    sync_cursor: str
    investigations: tuple[str, ...]
    evidence_refs: tuple[str, ...]
    tokens: int  # as counted (section 5.2): at most summary_bytes + 10 per evidence ref
    summary_bytes: int = 0  # its summary's UTF-8 bytes: what bounds the model's `tokens`


@dataclass(slots=True)
class Investigation:
    """A background's bounded inquiry into a cause (contract v1.2 section 5.1)."""

    investigation_id: str
    conversation_id: str
    cause_key: str
    task_id: str | None
    opened_at: datetime.datetime
    due_at: datetime.datetime
    state: str = INVESTIGATION.initial
    calls: int = 0  # allowed tool calls naming it
    evidence_refs: list[str] = field(default_factory=list)
    operation_id: str | None = None  # the worker action it was delegated to


@dataclass(slots=True)
class Source:
    """What the engine remembers of an observation source: its count (the
    last local revision), and per cause it concerns what repeats and order
    are judged by (contract v1.1: per source and cause)."""

    count: int = 0  # non-repeat observations: the last local revision
    causes: dict[str, SourceCause] = field(default_factory=dict)
    latest_cause: str | None = None  # the cause of its latest recorded observation (v1.2 section 7.2)


@dataclass(slots=True)
class SourceCause:
    """One source's observations of one cause."""

    latest_fingerprint: str | None = None
    versions: set[str] = field(default_factory=set)  # every source_version recorded, on any path
    latest_time: datetime.datetime | None = None  # the latest in-order source_time
    deleted_time: datetime.datetime | None = None  # source_time of its latest deletion


@dataclass(slots=True)
class Batch:
    """A review batch (contract v1.2 section 7.1): its causes, each with the
    batch's revision when it joined, and its revision (+ 1 for each new
    update revision of one of its causes)."""

    batch_id: str
    revision: int = 0
    joined: dict[str, int] = field(default_factory=dict)  # cause_key -> the revision it joined at


@dataclass(slots=True)
class Update:
    """A pending update of the inbox: one per cause, revised per new observation.

    Its size does not grow with the number of observations of its cause: it
    keeps the latest observation's text and tokens and counts the rest."""

    cause_key: str
    kind: str
    revision: int
    first_seen_at: datetime.datetime
    last_seen_at: datetime.datetime
    revised_at: datetime.datetime  # when it got its current revision
    triage_state: str = UPDATE.initial
    disposition: str | None = None
    action_priority: int | None = None
    notification_priority: int | None = None
    partial: bool = False
    repeats: int = 0
    text: str | None = None
    tokens: int | None = None
    foreground_id: str | None = None  # the conversation it belongs to, once triaged
    held_by: str | None = None  # the current-epoch delivery holding its current revision
    triaged_at: datetime.datetime | None = None  # when its current revision was triaged (deliverable since)
    latest: LatestObservation | None = None  # its latest in-order observation (contract v1.2 section 2)


@dataclass(slots=True, frozen=True)
class LatestObservation:
    """What the source rule reads of a cause's latest in-order observation
    (contract v1.2 section 2.1), and the input that recorded it."""

    scope: str
    status: str | None
    commit_sha: str | None
    deleted: bool
    complete: bool
    observed_by: int

    def moot(self, moot_statuses: tuple[str, ...]) -> bool:
        """Complete, and deleted or in one of `moot_statuses` (a partial one never is)."""
        return self.complete and (self.deleted or (self.status is not None and self.status in moot_statuses))

    def moved_from(self, target_sha: str | None) -> bool:
        """On another commit than `target_sha` (when both are known)."""
        return target_sha is not None and self.commit_sha is not None and self.commit_sha != target_sha


# The triage dispositions a foreground must be told about (the rest ride along
# in a human turn: "routine").
DELIVERABLE_DISPOSITIONS = frozenset({"actionable", "urgent", "needs_input"})


@dataclass(slots=True)
class Consumer:
    """A change-log consumer: its durable cursor, deletion watermarks and gaps."""

    consumer_id: str
    epoch: int
    seq: int = 0
    watermarks: dict[int, int] = field(default_factory=dict)  # epoch -> max_deleted_seq seen
    reached: dict[int, int] = field(default_factory=dict)  # epoch -> highest seq the cursor reached in it
    state: str = CONSUMER.initial
    reconciliation_id: str | None = None  # the open one
    reconciliations: int = 0  # ids issued: {consumer_id}/r{n}
    gaps: int = 0
    skipped: int = 0  # batch entries at or below the cursor

    def watermark(self, epoch: int | None = None) -> int:
        return self.watermarks.get(self.epoch if epoch is None else epoch, 0)


@dataclass(slots=True)
class Alert:
    """An alert (contract section 6): its view state, and whether its condition is still
    on (`open`): a continuing condition is not raised again; the engine closes
    it when it observes the end. `revision`: the update revision an `urgent`
    alert is about."""

    alert_id: str
    kind: str
    first_raised_at: datetime.datetime
    last_raised_at: datetime.datetime
    count: int = 1
    state: str = ALERT.initial  # its view state; `open`: whether its condition is on
    open: bool = True
    cause_key: str | None = None
    revision: int | None = None


@dataclass(slots=True)
class Obligation:
    """A delivery obligation: tell the task's conversation about an outcome."""

    operation_id: str
    cause_key: str
    conversation_id: str
    due_at: datetime.datetime
    state: str = OBLIGATION.initial  # due: its fallback alert is raised




@dataclass(slots=True)
class ToolPolicy:
    """A role's tool policy (contract v1.2 section 1.1): exact tools, normalised read roots."""

    tools: frozenset[str] = frozenset()
    read_roots: tuple[str, ...] = ()


@dataclass(slots=True)
class Runtime:
    """A process that runs a model with tools (contract v1.2 section 1.2): a
    background's runner or a worker profile, as last admitted or refused."""

    runtime_id: str
    role: str
    conversation_id: str | None
    generation: int | None
    adapter: str
    tool_policy_revision: int
    tools: tuple[str, ...]
    read_roots: tuple[str, ...]
    state: str = RUNTIME.initial
    reason: str | None = None
    calls_allowed: int = 0
    calls_denied: int = 0
    call_ids: set[str] = field(default_factory=set)  # every call asked (allowed or denied)


@dataclass(slots=True)
class Provider:
    """A provider account's readiness (contract v1.2 section 4.3): its latest
    report, its known credential expiry, and whether that expiry still needs
    checking (`expiry_due`: not yet passed, or passed and not yet checked)."""

    provider: str
    ready: bool
    reason: str | None
    observed_at: datetime.datetime
    auth_expires_at: datetime.datetime | None = None
    last_ready_at: datetime.datetime | None = None
    expiry_due: bool = False
    incident_observed_at: datetime.datetime | None = None  # its open incident's observed_at (section 4.3)


@dataclass(slots=True)
class TraceProgress:
    line: int
    offset: int
    digest: str

