"""The decision state and `evolve`: a fold of the event log.

`evolve(state, event)` applies one recorded fact to the state in place. It
re-validates nothing (events are facts) and never runs a state machine; it
does no I/O and reads no clock. The state also keeps the indexes that make the
dispatch pass cost what an input touches rather than a scan of every live
action (by prerequisite, resource, task, grant, cause and conversation), and
the `dirty_*` sets through which evolve tells the pass what to look at again.
"""

from __future__ import annotations

import datetime
import hashlib
from dataclasses import dataclass, field

from msgspec.structs import replace
from sortedcontainers import SortedSet
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from tandem.domain import events as ev
from tandem.domain.inputs import canonical_body
from tandem.domain.lifecycles import ACTION, IN_FLIGHT

Seconds = int


@dataclass(slots=True)
class Config:
    watchdog_max_age_s: Seconds = 120
    fallback_after_s: Seconds = 600
    question_resurface_s: Seconds = 86_400
    wake_batch_max: int = 20


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
    state: str = "live"
    usage: int = 0
    actions: list[str] = field(default_factory=list)

    @property
    def budget_exhausted(self) -> bool:
        return self.token_limit is not None and self.usage >= self.token_limit


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
    state: str = "active"
    holds: tuple[str, ...] = ()
    actions: list[str] = field(default_factory=list)
    dependents: list[str] = field(default_factory=list)  # tasks whose depends_on names this one
    open_questions: int = 0


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
    state: str = "open"
    answer: str | None = None
    resurfaced: int = 0  # the greatest k for which it resurfaced (question_stale)


@dataclass(slots=True)
class Attempt:
    attempt_id: str
    state: str
    envelope: ev.Envelope


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
    prerequisites: list[ev.PrerequisiteSpec]
    revisions: ev.Revisions
    unattended: bool
    proposed_by: str
    generation: int | None
    cause_revision: int
    state: str = "pending"
    attempts: list[Attempt] = field(default_factory=list)
    outcome: str | None = None
    artifact_revision: str | None = None
    evidence_ref: str | None = None
    blocked_by: tuple[str, ...] = ()
    dependents: list[str] = field(default_factory=list)  # actions listing this one as a prerequisite

    @property
    def terminal(self) -> bool:
        return self.state in ACTION.terminal


@dataclass(slots=True)
class Message:
    message_id: str
    text: str
    tokens: int | None
    state: str = "queued"  # queued, withdrawn (dispatch states arrive with turns)


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
    attempt_state: str = "submitting"
    released: bool = False  # its turn failed or was interrupted: it holds nothing now
    orphaned: bool = False  # its turn failed while it was unknown: released once reconciled


@dataclass(slots=True)
class Turn:
    turn_id: str
    epoch: int
    kind: str
    messages: list[str] = field(default_factory=list)
    deliveries: list[str] = field(default_factory=list)
    state: str = "running"


@dataclass(slots=True)
class Conversation:
    conversation_id: str
    role: str
    context_limit: int
    reserve: int
    steer: bool
    foreground_id: str | None
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
    not_steered: set[tuple[str, int]] = field(default_factory=set)  # refused steers, this turn
    last_turn: Turn | None = None  # the turn that ended last (what its end settles)
    # Updates belonging to this foreground whose current revision is not held:
    deliverable: set[str] = field(default_factory=set)  # actionable, urgent, needs_input
    optional: set[str] = field(default_factory=set)  # routine: ride along in a human turn
    urgent: set[str] = field(default_factory=set)  # the deliverable ones triaged urgent

    @property
    def intent_unsynced(self) -> bool:
        return self.intent_revision > self.synced_intent_revision

    @property
    def view_state(self) -> str:
        if self.recovery is not None:
            return "context_recovery_required"
        if self.failure_held:
            return "failure_held"
        return "running" if self.running_turn is not None else "idle"


@dataclass(slots=True)
class Source:
    """What the engine remembers of an observation source, for repeats."""

    count: int = 0  # non-repeat observations: the last local revision
    latest_fingerprint: str | None = None
    versions: set[str] = field(default_factory=set)  # every source_version recorded, on any path


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
    triage_state: str = "untriaged"
    disposition: str | None = None
    action_priority: int | None = None
    notification_priority: int | None = None
    partial: bool = False
    repeats: int = 0
    text: str | None = None
    tokens: int | None = None
    foreground_id: str | None = None  # the conversation it belongs to, once triaged
    held_by: str | None = None  # the current-epoch delivery holding its current revision


@dataclass(slots=True)
class Consumer:
    """A change-log consumer: its durable cursor, deletion watermarks and gaps."""

    consumer_id: str
    epoch: int
    seq: int = 0
    watermarks: dict[int, int] = field(default_factory=dict)  # epoch -> max_deleted_seq seen
    reached: dict[int, int] = field(default_factory=dict)  # epoch -> highest seq the cursor reached in it
    state: str = "consuming"  # or "reconciliation_required"
    reconciliation_id: str | None = None  # the open one
    reconciliations: int = 0  # ids issued: {consumer_id}/r{n}
    gaps: int = 0

    def watermark(self, epoch: int | None = None) -> int:
        return self.watermarks.get(self.epoch if epoch is None else epoch, 0)


@dataclass(slots=True)
class Alert:
    """An alert (spec 6): its view state, and whether its condition is still
    on (`open`): a continuing condition is not raised again; the engine closes
    it when it observes the end. `revision`: the update revision an `urgent`
    alert is about."""

    alert_id: str
    kind: str
    first_raised_at: datetime.datetime
    last_raised_at: datetime.datetime
    count: int = 1
    state: str = "raised"  # raised, seen, resolved
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
    state: str = "open"  # open, due (its fallback alert is raised), met


USAGE_FIELDS = ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens")


@dataclass(slots=True)
class TraceProgress:
    line: int
    offset: int
    digest: str


@dataclass(slots=True)
class State:
    """Everything decide and the pass read. Rebuilt by folding the log."""

    position: int = 0  # events applied
    seq: int = 0  # inputs recorded (accepted or rejected)
    last_at: datetime.datetime | None = None
    configurable: bool = True  # no input of another kind than engine.configure yet
    config: Config = field(default_factory=Config)
    policy: Policy = field(default_factory=Policy)
    grants: dict[str, Grant] = field(default_factory=dict)
    rules: dict[str, str] = field(default_factory=dict)  # rule_id -> grant_id
    tasks: dict[str, Task] = field(default_factory=dict)
    questions: dict[tuple[str, str], Question] = field(default_factory=dict)
    actions: dict[str, Action] = field(default_factory=dict)
    conversations: dict[str, Conversation] = field(default_factory=dict)
    idempotency: dict[str, bytes] = field(default_factory=dict)  # input id -> body digest
    traces: dict[str, TraceProgress] = field(default_factory=dict)  # ingest progress by trace name
    heartbeat_generation: int | None = None
    heartbeat_at: datetime.datetime | None = None
    paused: set[str] = field(default_factory=set)
    sources: dict[str, Source] = field(default_factory=dict)
    updates: dict[str, Update] = field(default_factory=dict)
    consumers: dict[str, Consumer] = field(default_factory=dict)
    cards: dict[str, str] = field(default_factory=dict)  # card_id -> cause_key
    foregrounds: list[str] = field(default_factory=list)  # in id order: the foreground pass's order
    alerts: dict[str, Alert] = field(default_factory=dict)
    incidents: dict[str, bool] = field(default_factory=dict)  # incident_id -> open
    crashes: int = 0  # daemon_crash/{n} incidents issued
    daemon_last: str | None = None  # the latest daemon.stop/start: start, expected_stop, unexpected_stop
    obligations: dict[str, Obligation] = field(default_factory=dict)  # by operation_id
    obligations_by_cause: dict[str, str] = field(default_factory=dict)  # cause_key -> operation_id
    # Time rules (spec 6): (due_at, kind, key, key) in time order, checked on every
    # input's `at`. Only evolve adds and removes entries, so every entry applies.
    timers: SortedSet = field(default_factory=SortedSet)  # questions: (due_at, "question", task_id, key)
    # Open obligations by due time. Due = outcome `at` + a fixed fallback_after_s and
    # `at` never goes backwards, so insertion order is due order: O(1) in and out.
    obligation_timers: OrderedDict[str, datetime.datetime] = field(default_factory=OrderedDict)
    # ---- indexes
    pending: set[str] = field(default_factory=set)
    fenced: set[str] = field(default_factory=set)
    pending_by_resource: dict[str, set[str]] = field(default_factory=dict)
    pending_by_task: dict[str, set[str]] = field(default_factory=dict)
    pending_by_grant: dict[str, set[str]] = field(default_factory=dict)
    busy_by_resource: dict[str, int] = field(default_factory=dict)
    # The in-flight actions on each resource (what resource_busy's facts name).
    in_flight_by_resource: dict[str, set[str]] = field(default_factory=dict)
    actions_by_cause: dict[str, list[str]] = field(default_factory=dict)
    question_ops: dict[str, set[tuple[str, str]]] = field(default_factory=dict)  # op id -> open questions listing it
    task_questions: dict[str, set[str]] = field(default_factory=dict)  # task -> open "task" question keys
    unknown_questions: set[tuple[str, str]] = field(default_factory=set)  # open "unknown" questions
    # ---- what the pass must look at again (filled by evolve, emptied by the pass)
    dirty_actions: set[str] = field(default_factory=set)
    dirty_tasks: set[str] = field(default_factory=set)
    watchdog_fresh: bool = False  # as of the last pass

    # ---------------------------------------------------------------- queries

    def update_revision(self, cause_key: str) -> int:
        """The inbox update revision of a cause (0 while it has none)."""
        update = self.updates.get(cause_key)
        return update.revision if update is not None else 0

    def is_fresh(self, at: datetime.datetime | None) -> bool:
        """Spec 6: fresh iff a heartbeat exists and at - last <= max age."""
        if self.heartbeat_at is None or at is None:
            return False
        return (at - self.heartbeat_at).total_seconds() <= self.config.watchdog_max_age_s

    def question_active(self, key: tuple[str, str]) -> bool:
        question = self.questions[key]
        return question.state == "open" and self.tasks[question.task_id].state == "active"

    def wider_hold(self) -> bool:
        return any(self.question_active(key) for key in self.unknown_questions)

    # ------------------------------------------------------- dirty marking

    def touch_action(self, operation_id: str) -> None:
        self.dirty_actions.add(operation_id)

    def touch_all_pending(self) -> None:
        self.dirty_actions.update(self.pending)

    def touch_dependents(self, operation_id: str) -> None:
        """An action and, transitively, every action listing it as a prerequisite."""
        for current in reachable(operation_id, self._action_dependents):
            if current in self.actions:  # a question may list an operation not proposed yet
                self.dirty_actions.add(current)

    def touch_task(self, task_id: str) -> None:
        """A task, its actions, and transitively the tasks depending on it."""
        for current in reachable(task_id, lambda task: self.tasks[task].dependents):
            self.dirty_tasks.add(current)
            waiting = self.pending_by_task.get(current)
            if waiting:
                self.dirty_actions.update(waiting)

    def _action_dependents(self, operation_id: str) -> list[str]:
        action = self.actions.get(operation_id)
        return action.dependents if action is not None else []

    def touch_all_tasks(self) -> None:
        for task_id, task in self.tasks.items():
            if task.state == "active":
                self.dirty_tasks.add(task_id)
        self.touch_all_pending()

    def touch_resource(self, resource: str) -> None:
        waiting = self.pending_by_resource.get(resource)
        if waiting:
            self.dirty_actions.update(waiting)

    def touch_conversation(self, conversation_id: str) -> None:
        for task_id in self.conversations[conversation_id].tasks:
            waiting = self.pending_by_task.get(task_id)
            if waiting:
                self.dirty_actions.update(waiting)

    def touch_grant(self, grant_id: str) -> None:
        waiting = self.pending_by_grant.get(grant_id)
        if waiting:
            self.dirty_actions.update(waiting)

    def pending_of_task(self, task_id: str) -> list[str]:
        """The task's pending actions, in proposal order."""
        return sorted(self.pending_by_task.get(task_id, ()), key=lambda op: self.actions[op].order)

    def pending_of_grant(self, grant_id: str) -> list[str]:
        return sorted(self.pending_by_grant.get(grant_id, ()), key=lambda op: self.actions[op].order)

    def touch_question(self, question: Question) -> None:
        if question.affected == "unknown":
            self.touch_all_tasks()
        elif question.affected == "task":
            self.touch_task(question.task_id)
        else:
            for operation_id in question.affected:
                self.touch_dependents(operation_id)
            self.dirty_tasks.add(question.task_id)


def reachable(start: str, neighbours: Callable[[str], Iterable[str]]) -> Iterator[str]:
    """`start` and every id reachable from it (depth first, each once)."""
    stack = [start]
    seen: set[str] = set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        yield current
        stack.extend(neighbours(current))


# ===================================================================== evolve


def _index_add(index: dict[str, set[str]], key: str | None, operation_id: str) -> None:
    if key is not None:
        index.setdefault(key, set()).add(operation_id)


def _index_remove(index: dict[str, set[str]], key: str | None, operation_id: str) -> None:
    members = index.get(key) if key is not None else None
    if members is not None:
        members.discard(operation_id)
        if not members:
            del index[key]  # type: ignore[arg-type]


def _set_action_state(state: State, action: Action, new_state: str) -> None:
    """Move an action and keep the pending/fenced/resource indexes in step."""
    old = action.state
    if old == new_state:
        return
    action.state = new_state
    operation_id = action.operation_id
    resource = action.resource
    if old == "pending":
        state.pending.discard(operation_id)
        _index_remove(state.pending_by_resource, resource, operation_id)
        _index_remove(state.pending_by_task, action.task_id, operation_id)
        _index_remove(state.pending_by_grant, action.grant_id, operation_id)
        action.blocked_by = ()
    elif old == "fenced":
        state.fenced.discard(operation_id)
    if new_state == "pending":
        state.pending.add(operation_id)
        _index_add(state.pending_by_resource, resource, operation_id)
        _index_add(state.pending_by_task, action.task_id, operation_id)
        _index_add(state.pending_by_grant, action.grant_id, operation_id)
        state.dirty_actions.add(operation_id)
    elif new_state == "fenced":
        state.fenced.add(operation_id)
    was_busy = old in IN_FLIGHT
    is_busy = new_state in IN_FLIGHT
    if was_busy != is_busy:
        count = state.busy_by_resource.get(resource, 0) + (1 if is_busy else -1)
        if count:
            state.busy_by_resource[resource] = count
        else:
            state.busy_by_resource.pop(resource, None)
        if is_busy:
            _index_add(state.in_flight_by_resource, resource, operation_id)
        else:
            _index_remove(state.in_flight_by_resource, resource, operation_id)
        state.touch_resource(resource)
    if new_state in ACTION.terminal and action.dependents:
        # The outcome its dependents wait for is known now (prerequisite_*).
        state.dirty_actions.update(action.dependents)


def _fence(state: State, operation_ids: list[str]) -> None:
    for operation_id in operation_ids:
        _set_action_state(state, state.actions[operation_id], "fenced")


def _input_accepted(state: State, event: ev.InputAccepted) -> None:
    _record_input(state, event.input, event.seq)


def _input_rejected(state: State, event: ev.InputRejected) -> None:
    _record_input(state, event.input, event.seq, rejected_reason=event.reason)


def _record_input(state: State, value: Any, seq: int, rejected_reason: str | None = None) -> None:
    state.seq = seq
    state.last_at = value.at
    if value.input_type != "engine.configure":
        state.configurable = False
    if value.id is not None and rejected_reason not in ("duplicate_input", "idempotency_conflict"):
        state.idempotency.setdefault(value.id, hashlib.sha256(canonical_body(value)).digest())


def _source_progressed(state: State, event: ev.SourceProgressed) -> None:
    state.traces[event.file] = TraceProgress(event.line, event.offset, event.digest)


def _engine_configured(state: State, event: ev.EngineConfigured) -> None:
    state.config = Config(
        event.watchdog_max_age_s, event.fallback_after_s, event.question_resurface_s, event.wake_batch_max
    )


def _policy_set(state: State, event: ev.PolicySet) -> None:
    state.policy = Policy(event.revision, frozenset(event.allowed_operations), tuple(event.write_roots))
    _fence(state, event.fenced)


def _grant_issued(state: State, event: ev.GrantIssued) -> None:
    state.grants[event.grant_id] = Grant(
        grant_id=event.grant_id,
        revision=event.revision,
        task_id=event.task_id,
        rule_id=event.rule_id,
        operations=tuple(event.allowed_operations),
        roots=tuple(event.write_roots),
        max_attempts=event.max_attempts,
        token_limit=event.token_limit,
    )


def _grant_revised(state: State, event: ev.GrantRevised) -> None:
    grant = state.grants[event.grant_id]
    was_exhausted = grant.budget_exhausted
    grant.revision = event.revision
    grant.operations = tuple(event.allowed_operations)
    grant.roots = tuple(event.write_roots)
    grant.max_attempts = event.max_attempts
    grant.token_limit = event.token_limit
    _fence(state, event.fenced)
    for operation_id in event.restamped:
        action = state.actions[operation_id]
        action.revisions = replace(action.revisions, grant=event.revision)
    if grant.budget_exhausted != was_exhausted:
        state.touch_grant(grant.grant_id)


def _grant_revoked(state: State, event: ev.GrantRevoked) -> None:
    state.grants[event.grant_id].state = "revoked"


def _rule_set(state: State, event: ev.RuleSet) -> None:
    state.rules[event.rule_id] = event.grant_id


def _task_delegated(state: State, event: ev.TaskDelegated) -> None:
    task = Task(
        task_id=event.task_id,
        conversation_id=event.conversation_id,
        message_refs=list(event.message_refs),
        goal=event.goal,
        done_when=list(event.done_when),
        constraints=dict(event.constraints),
        fallback_decisions=dict(event.fallback_decisions),
        depends_on=list(event.depends_on),
        grant_id=event.grant_id,
    )
    state.tasks[event.task_id] = task
    for dependency in event.depends_on:
        state.tasks[dependency].dependents.append(event.task_id)
    state.conversations[event.conversation_id].tasks.append(event.task_id)
    state.dirty_tasks.add(event.task_id)


def _task_revised(state: State, event: ev.TaskRevised) -> None:
    task = state.tasks[event.task_id]
    task.revision = event.revision
    task.goal = event.goal
    task.done_when = list(event.done_when)
    task.constraints = dict(event.constraints)
    task.fallback_decisions = dict(event.fallback_decisions)
    _fence(state, event.fenced)


def _task_ended(state: State, task_id: str, new_state: str) -> None:
    task = state.tasks[task_id]
    task.state = new_state
    # Its questions stop holding anything; tasks depending on it change task_held.
    state.touch_task(task_id)
    if any(state.questions[key].state == "open" for key in state.unknown_questions if key[0] == task_id):
        state.touch_all_tasks()
    for key in [k for k in state.questions if k[0] == task_id]:
        question = state.questions[key]
        if question.state == "open":
            state.timers.discard(_resurface_timer(state, question))  # resurfaces only while its task is active
            if isinstance(question.affected, list):
                state.touch_question(question)


def _task_completed(state: State, event: ev.TaskCompleted) -> None:
    _task_ended(state, event.task_id, "completed")


def _task_cancelled(state: State, event: ev.TaskCancelled) -> None:
    _task_ended(state, event.task_id, "cancelled")


def _unindex_question(state: State, key: tuple[str, str], question: Question) -> None:
    if question.affected == "unknown":
        state.unknown_questions.discard(key)
    elif question.affected == "task":
        keys = state.task_questions.get(question.task_id)
        if keys is not None:
            keys.discard(key[1])
            if not keys:
                del state.task_questions[question.task_id]
    else:
        for operation_id in question.affected:
            listed = state.question_ops.get(operation_id)
            if listed is not None:
                listed.discard(key)
                if not listed:
                    del state.question_ops[operation_id]


def _index_question(state: State, key: tuple[str, str], question: Question) -> None:
    if question.affected == "unknown":
        state.unknown_questions.add(key)
    elif question.affected == "task":
        state.task_questions.setdefault(question.task_id, set()).add(key[1])
    else:
        for operation_id in question.affected:
            state.question_ops.setdefault(operation_id, set()).add(key)


def _question_raised(state: State, event: ev.QuestionRaised) -> None:
    key = (event.task_id, event.question_key)
    task = state.tasks[event.task_id]
    question = state.questions.get(key)
    opens = question is None or question.state != "open"
    if question is not None:
        if question.state == "open":
            _unindex_question(state, key, question)
            state.touch_question(question)
        else:
            task.open_questions += 1
        question.recipient = event.recipient
        question.blocking_reason = event.blocking_reason
        question.affected = event.affected
        question.evidence_revision = event.evidence_revision
        question.times_raised = event.times_raised
        question.state = "open"
    else:
        question = Question(
            task_id=event.task_id,
            question_key=event.question_key,
            recipient=event.recipient,
            blocking_reason=event.blocking_reason,
            affected=event.affected,
            evidence_revision=event.evidence_revision,
            first_seen_at=event.first_seen_at,
            times_raised=event.times_raised,
        )
        state.questions[key] = question
        task.open_questions += 1
    _index_question(state, key, question)
    state.touch_question(question)
    if opens:
        state.timers.add(_resurface_timer(state, question))


def _resurface_timer(state: State, question: Question) -> tuple[Any, ...]:
    """When an open question next resurfaces: first_seen_at + k x period, new k."""
    due = question.first_seen_at + datetime.timedelta(
        seconds=(question.resurfaced + 1) * state.config.question_resurface_s
    )
    return (due, "question", question.task_id, question.question_key)


def _question_resurfaced(state: State, event: ev.QuestionResurfaced) -> None:
    question = state.questions[(event.task_id, event.question_key)]
    state.timers.discard(_resurface_timer(state, question))
    question.resurfaced = event.k
    state.timers.add(_resurface_timer(state, question))


def _question_answered(state: State, event: ev.QuestionAnswered) -> None:
    key = (event.task_id, event.question_key)
    question = state.questions[key]
    _unindex_question(state, key, question)
    state.timers.discard(_resurface_timer(state, question))
    question.state = "answered"
    question.answer = event.answer
    state.tasks[event.task_id].open_questions -= 1
    state.touch_question(question)


def _task_holds_changed(state: State, event: ev.TaskHoldsChanged) -> None:
    state.tasks[event.task_id].holds = tuple(event.holds)


def _action_proposed(state: State, event: ev.ActionProposed) -> None:
    action = Action(
        operation_id=event.operation_id,
        order=len(state.actions),
        cause_key=event.cause_key,
        operation=event.operation,
        target=event.target,
        resource=event.resource,
        write_paths=list(event.write_paths),
        task_id=event.task_id,
        rule_id=event.rule_id,
        grant_id=event.grant_id,
        prerequisites=list(event.prerequisites),
        revisions=event.input_revisions,
        unattended=event.unattended,
        proposed_by=event.proposed_by,
        generation=event.generation,
        cause_revision=event.cause_revision,
        state="proposed",
    )
    state.actions[event.operation_id] = action
    for prerequisite in event.prerequisites:
        state.actions[prerequisite.operation_id].dependents.append(event.operation_id)
    if event.task_id is not None:
        state.tasks[event.task_id].actions.append(event.operation_id)
    state.grants[event.grant_id].actions.append(event.operation_id)
    state.actions_by_cause.setdefault(event.cause_key, []).append(event.operation_id)
    _set_action_state(state, action, "pending")


def _action_revalidated(state: State, event: ev.ActionRevalidated) -> None:
    action = state.actions[event.operation_id]
    action.revisions = event.input_revisions
    _set_action_state(state, action, "pending")


def _action_cancelled(state: State, event: ev.ActionCancelled) -> None:
    _set_action_state(state, state.actions[event.operation_id], "cancelled")


def _action_cancel_requested(state: State, event: ev.ActionCancelRequested) -> None:
    _set_action_state(state, state.actions[event.operation_id], "cancel_requested")


def _action_claimed(state: State, event: ev.ActionClaimed) -> None:
    action = state.actions[event.operation_id]
    action.attempts.append(Attempt(event.attempt_id, "submitting", event.envelope))
    _set_action_state(state, action, "submitting")


def _attempt_updated(state: State, event: ev.AttemptUpdated) -> None:
    action = state.actions[event.operation_id]
    action.attempts[-1].state = event.attempt_state
    if event.restamped is not None:
        action.revisions = event.restamped
    _set_action_state(state, action, event.action_state)


def _action_outcome_reported(state: State, event: ev.ActionOutcomeReported) -> None:
    action = state.actions[event.operation_id]
    action.outcome = event.outcome
    action.artifact_revision = event.artifact_revision
    action.evidence_ref = event.evidence_ref
    if event.attempt_state is not None:
        action.attempts[-1].state = event.attempt_state
    _set_action_state(state, action, event.action_state)


def _action_blocked(state: State, event: ev.ActionBlocked) -> None:
    state.actions[event.operation_id].blocked_by = tuple(event.blocked_by)


def _heartbeat_recorded(state: State, event: ev.HeartbeatRecorded) -> None:
    state.heartbeat_generation = event.generation
    state.heartbeat_at = event.at


def _scope_paused(state: State, event: ev.ScopePaused) -> None:
    state.paused.add(event.scope)
    _touch_scope(state, event.scope)


def _scope_resumed(state: State, event: ev.ScopeResumed) -> None:
    state.paused.discard(event.scope)
    _touch_scope(state, event.scope)


def _touch_scope(state: State, scope: str) -> None:
    if scope == "*":
        state.touch_all_tasks()
    else:
        state.touch_task(scope)


def _usage_reported(state: State, event: ev.UsageReported) -> None:
    # Role totals are the usage view's; decisions need the context and budgets.
    if event.conversation_id is not None and event.context_tokens is not None:
        state.conversations[event.conversation_id].context_tokens = event.context_tokens
    if event.grant_id is not None and event.grant_usage is not None:
        grant = state.grants[event.grant_id]
        was_exhausted = grant.budget_exhausted
        grant.usage = event.grant_usage
        if grant.budget_exhausted != was_exhausted:
            state.touch_grant(grant.grant_id)


def _budget_exhausted(state: State, event: ev.BudgetExhausted) -> None:
    state.touch_grant(event.grant_id)


def _conversation_opened(state: State, event: ev.ConversationOpened) -> None:
    state.conversations[event.conversation_id] = Conversation(
        conversation_id=event.conversation_id,
        role=event.role,
        context_limit=event.context_limit,
        reserve=event.reserve,
        steer=event.steer,
        foreground_id=event.foreground_id,
    )
    if event.role == "foreground":
        state.foregrounds.append(event.conversation_id)
        state.foregrounds.sort()


def _background_bound(state: State, event: ev.BackgroundBound) -> None:
    foreground = state.conversations[event.foreground_id]
    foreground.generation = event.generation
    foreground.background_id = event.conversation_id
    state.conversations[event.conversation_id].foreground_id = event.foreground_id


def _message_queued(state: State, event: ev.MessageQueued) -> None:
    conversation = state.conversations[event.conversation_id]
    conversation.messages[event.message_id] = Message(event.message_id, event.text, event.tokens)
    conversation.queue.append(event.message_id)
    conversation.intent_revision = event.intent_revision
    state.touch_conversation(event.conversation_id)


def _queue_edited(state: State, event: ev.QueueEdited) -> None:
    conversation = state.conversations[event.conversation_id]
    message = conversation.messages[event.message_id]
    if event.op == "withdraw":
        message.state = "withdrawn"
        conversation.queue.remove(event.message_id)
    else:
        message.text = event.text or ""
        message.tokens = None
    conversation.intent_revision = event.intent_revision
    state.touch_conversation(event.conversation_id)


def _intent_synced(state: State, event: ev.IntentSynced) -> None:
    conversation = state.conversations[event.conversation_id]
    conversation.synced_intent_revision = event.synced_revision
    state.touch_conversation(event.conversation_id)


def _observation_recorded(state: State, event: ev.ObservationRecorded) -> None:
    source = state.sources.get(event.source_id)
    if source is None:
        source = state.sources[event.source_id] = Source()
    source.count = event.local_revision
    if event.update_revision is None:
        # A background's own activity: recorded, no update (no feedback loop),
        # and not what later observations of the source are compared with.
        return
    source.latest_fingerprint = event.fingerprint
    if event.source_version is not None:
        source.versions.add(event.source_version)
    _revise_update(
        state, event.cause_key, event.kind, event.update_revision, event.at, not event.complete, event.text, event.tokens
    )


def _revise_update(
    state: State,
    cause_key: str,
    kind: str,
    revision: int,
    at: datetime.datetime,
    partial: bool,
    text: str | None,
    tokens: int | None,
) -> None:
    """A cause's update gets a new revision, untriaged (created on its first)."""
    update = state.updates.get(cause_key)
    if update is None:
        update = state.updates[cause_key] = Update(cause_key, kind, revision, at, at, at)
    _untriage(state, update)
    update.held_by = None  # holds are per revision
    update.partial = partial
    update.text = text
    update.tokens = tokens
    update.kind = kind
    update.revision = revision
    update.revised_at = at
    update.last_seen_at = at
    update.triage_state = "untriaged"
    update.disposition = None
    update.action_priority = None
    update.notification_priority = None


DELIVERABLE_DISPOSITIONS = frozenset({"actionable", "urgent", "needs_input"})


def refresh_candidate(state: State, update: Update) -> None:
    """Keep the foreground's deliverable/optional sets in step with the
    update's triage and hold (the foreground pass reads only those sets)."""
    if update.foreground_id is None:
        return
    conversation = state.conversations[update.foreground_id]
    cause_key = update.cause_key
    conversation.deliverable.discard(cause_key)
    conversation.optional.discard(cause_key)
    conversation.urgent.discard(cause_key)
    if update.triage_state != "triaged" or update.held_by is not None:
        return
    if update.disposition in DELIVERABLE_DISPOSITIONS:
        conversation.deliverable.add(cause_key)
        if update.disposition == "urgent":
            conversation.urgent.add(cause_key)
    elif update.disposition == "routine":
        conversation.optional.add(cause_key)


def _untriage(state: State, update: Update) -> None:
    if update.foreground_id is not None:
        conversation = state.conversations[update.foreground_id]
        conversation.deliverable.discard(update.cause_key)
        conversation.optional.discard(update.cause_key)
        conversation.urgent.discard(update.cause_key)


def _observation_repeated(state: State, event: ev.ObservationRepeated) -> None:
    if event.counted:
        update = state.updates[event.cause_key]
        update.repeats += 1
        update.last_seen_at = event.at


def _update_revised(state: State, event: ev.UpdateRevised) -> None:
    _revise_update(state, event.cause_key, event.kind, event.revision, event.at, False, event.text, None)


def _update_triaged(state: State, event: ev.UpdateTriaged) -> None:
    update = state.updates[event.cause_key]
    update.triage_state = "triaged"
    update.disposition = event.disposition
    update.action_priority = event.action_priority
    update.notification_priority = event.notification_priority
    _untriage(state, update)
    update.foreground_id = event.foreground_id
    refresh_candidate(state, update)


def _consumer_created(state: State, event: ev.ConsumerCreated) -> None:
    state.consumers[event.consumer_id] = Consumer(event.consumer_id, event.epoch)


def _cursor_moved(state: State, event: ev.CursorMoved) -> None:
    consumer = state.consumers[event.consumer_id]
    consumer.epoch = event.epoch
    consumer.seq = event.seq
    consumer.reached[event.epoch] = max(consumer.reached.get(event.epoch, 0), event.seq)


def _watermark_raised(state: State, event: ev.WatermarkRaised) -> None:
    state.consumers[event.consumer_id].watermarks[event.epoch] = event.max_deleted_seq


def _reconciliation_started(state: State, event: ev.ReconciliationStarted) -> None:
    consumer = state.consumers[event.consumer_id]
    consumer.state = "reconciliation_required"
    consumer.reconciliation_id = event.reconciliation_id
    consumer.reconciliations += 1


def _reconciliation_committed(state: State, event: ev.ReconciliationCommitted) -> None:
    consumer = state.consumers[event.consumer_id]
    consumer.state = "consuming"
    consumer.reconciliation_id = None
    consumer.epoch = event.epoch
    consumer.seq = event.seq
    consumer.reached[event.epoch] = max(consumer.reached.get(event.epoch, 0), event.seq)
    consumer.gaps = event.gaps


def _card_proposed(state: State, event: ev.CardProposed) -> None:
    state.cards[event.card_id] = event.cause_key


def _turn_started(state: State, event: ev.TurnStarted) -> None:
    conversation = state.conversations[event.conversation_id]
    conversation.turns += 1
    conversation.running_turn = Turn(event.turn_id, event.epoch, event.kind)
    conversation.not_steered.clear()


def _delivery_created(state: State, event: ev.DeliveryCreated) -> None:
    conversation = state.conversations[event.conversation_id]
    delivery = Delivery(
        event.delivery_id,
        event.turn_id,
        event.epoch,
        event.kind,
        [tuple(pair) for pair in event.included],  # type: ignore[misc]
        list(event.messages),
        event.tokens,
    )
    conversation.deliveries[event.delivery_id] = delivery
    for cause_key, revision in delivery.included:
        update = state.updates[cause_key]
        if update.revision == revision:
            update.held_by = event.delivery_id
            refresh_candidate(state, update)
    if event.messages:
        for message_id in event.messages:
            conversation.messages[message_id].state = "dispatched"
        dispatched = set(event.messages)
        conversation.queue = [m for m in conversation.queue if m not in dispatched]
    turn = conversation.running_turn
    if event.turn_id is not None and turn is not None and turn.turn_id == event.turn_id:
        turn.deliveries.append(event.delivery_id)
        turn.messages.extend(event.messages)
    if event.kind == "reseed":
        conversation.reseed_id = event.delivery_id
        conversation.reseed_due = False


def _release(state: State, delivery: Delivery) -> None:
    """The delivery holds its revisions no more."""
    delivery.released = True
    for cause_key, _ in delivery.included:
        update = state.updates[cause_key]
        if update.held_by == delivery.delivery_id:
            update.held_by = None
            refresh_candidate(state, update)


def _delivery_receipted(state: State, event: ev.DeliveryReceipted) -> None:
    conversation = state.conversations[event.conversation_id]
    delivery = conversation.deliveries[event.delivery_id]
    delivery.attempt_state = event.attempt_state
    conversation.context_tokens = event.context_tokens
    if event.releases:
        _release(state, delivery)
    if event.attempt_state in ("refused", "not_received"):
        turn = conversation.running_turn
        if delivery.kind == "steer" and event.attempt_state == "refused" and turn is not None and turn.turn_id == delivery.turn_id:
            conversation.not_steered.update(delivery.included)  # not steered again during that turn
        if delivery.kind == "reseed" and delivery.epoch == conversation.epoch:
            conversation.reseed_due = True  # replaced in the same pass


def _turn_ended(state: State, event: ev.TurnEnded) -> None:
    conversation = state.conversations[event.conversation_id]
    turn = conversation.running_turn
    assert turn is not None and turn.turn_id == event.turn_id
    turn.state = event.outcome
    conversation.running_turn = None
    conversation.last_turn = turn
    conversation.not_steered.clear()
    for message_id in turn.messages:
        conversation.messages[message_id].state = "handled" if event.outcome == "completed" else "queued"
    if event.requeued:
        conversation.queue = list(event.requeued) + conversation.queue
    for delivery_id in event.released:
        _release(state, conversation.deliveries[delivery_id])
    if event.outcome != "completed":
        for delivery_id in turn.deliveries:
            delivery = conversation.deliveries[delivery_id]
            if not delivery.released:
                delivery.orphaned = True  # still unknown: held until provider.reconcile


def _context_reset(state: State, event: ev.ContextReset) -> None:
    conversation = state.conversations[event.conversation_id]
    for delivery in conversation.deliveries.values():
        if delivery.epoch < event.epoch and not delivery.released:
            _release(state, delivery)  # earlier epochs hold and count for nothing now
    conversation.epoch = event.epoch
    conversation.context_tokens = 0
    conversation.reseed_id = None
    conversation.reseed_due = True


def _recovery_changed(state: State, event: ev.RecoveryChanged) -> None:
    conversation = state.conversations[event.conversation_id]
    conversation.recovery = event.recovery
    if event.recovery == "reseed":
        conversation.reseed_due = False  # no reseed this epoch: wait for the next reset


def _approval_opened(state: State, event: ev.ApprovalOpened) -> None:
    state.conversations[event.conversation_id].approvals[event.request_id] = event.detail
    _touch_approval(state, event.conversation_id)


def _approval_resolved(state: State, event: ev.ApprovalResolved) -> None:
    del state.conversations[event.conversation_id].approvals[event.request_id]
    _touch_approval(state, event.conversation_id)


def _touch_approval(state: State, conversation_id: str) -> None:
    """approval_pending: the actions of the foreground's tasks (a background's
    approval holds its foreground's)."""
    conversation = state.conversations[conversation_id]
    foreground_id = conversation.foreground_id if conversation.role == "background" else conversation_id
    if foreground_id is not None and foreground_id in state.conversations:
        state.touch_conversation(foreground_id)


def _failure_hold_changed(state: State, event: ev.FailureHoldChanged) -> None:
    state.conversations[event.conversation_id].failure_held = event.held


# -------------------------------------------- alerts, obligations, health


def _alert_raised(state: State, event: ev.AlertRaised) -> None:
    alert = state.alerts.get(event.alert_id)
    if alert is None:
        state.alerts[event.alert_id] = Alert(
            event.alert_id, event.kind, event.at, event.at, cause_key=event.cause_key, revision=event.revision
        )
        return
    alert.count += 1
    alert.last_raised_at = event.at
    alert.state = "raised"
    alert.open = True
    alert.cause_key = event.cause_key
    alert.revision = event.revision


def _alert_seen(state: State, event: ev.AlertSeen) -> None:
    state.alerts[event.alert_id].state = "seen"


def _alert_resolved(state: State, event: ev.AlertResolved) -> None:
    alert = state.alerts[event.alert_id]
    alert.state = "resolved"
    if event.by == "engine":
        alert.open = False


def _incident_opened(state: State, event: ev.IncidentOpened) -> None:
    state.incidents[event.incident_id] = True
    if event.kind == "daemon_crash":
        state.crashes += 1


def _incident_recovered(state: State, event: ev.IncidentRecovered) -> None:
    state.incidents[event.incident_id] = False


def _daemon_stopped(state: State, event: ev.DaemonStopped) -> None:
    state.daemon_last = "expected_stop" if event.expected else "unexpected_stop"


def _daemon_started(state: State, event: ev.DaemonStarted) -> None:
    state.daemon_last = "start"


def _obligation_opened(state: State, event: ev.ObligationOpened) -> None:
    state.obligations[event.operation_id] = Obligation(
        event.operation_id, event.cause_key, event.conversation_id, event.due_at
    )
    state.obligations_by_cause[event.cause_key] = event.operation_id
    timers = state.obligation_timers
    assert not timers or event.due_at >= next(reversed(timers.values())), "obligations fall due in order"
    timers[event.operation_id] = event.due_at


def _obligation_met(state: State, event: ev.ObligationMet) -> None:
    obligation = state.obligations[event.operation_id]
    obligation.state = "met"
    state.obligation_timers.pop(event.operation_id, None)
    del state.obligations_by_cause[obligation.cause_key]


def _obligation_due(state: State, event: ev.ObligationDue) -> None:
    obligation = state.obligations[event.operation_id]
    obligation.state = "due"
    state.obligation_timers.pop(event.operation_id, None)


EVOLVERS: dict[type, Any] = {
    ev.InputAccepted: _input_accepted,
    ev.InputRejected: _input_rejected,
    ev.SourceProgressed: _source_progressed,
    ev.EngineConfigured: _engine_configured,
    ev.PolicySet: _policy_set,
    ev.GrantIssued: _grant_issued,
    ev.GrantRevised: _grant_revised,
    ev.GrantRevoked: _grant_revoked,
    ev.RuleSet: _rule_set,
    ev.TaskDelegated: _task_delegated,
    ev.TaskRevised: _task_revised,
    ev.TaskCompleted: _task_completed,
    ev.TaskCancelled: _task_cancelled,
    ev.QuestionRaised: _question_raised,
    ev.QuestionAnswered: _question_answered,
    ev.TaskHoldsChanged: _task_holds_changed,
    ev.ActionProposed: _action_proposed,
    ev.ActionRevalidated: _action_revalidated,
    ev.ActionCancelled: _action_cancelled,
    ev.ActionCancelRequested: _action_cancel_requested,
    ev.ActionClaimed: _action_claimed,
    ev.AttemptUpdated: _attempt_updated,
    ev.ActionOutcomeReported: _action_outcome_reported,
    ev.ActionBlocked: _action_blocked,
    ev.HeartbeatRecorded: _heartbeat_recorded,
    ev.ScopePaused: _scope_paused,
    ev.ScopeResumed: _scope_resumed,
    ev.UsageReported: _usage_reported,
    ev.BudgetExhausted: _budget_exhausted,
    ev.ConversationOpened: _conversation_opened,
    ev.BackgroundBound: _background_bound,
    ev.MessageQueued: _message_queued,
    ev.QueueEdited: _queue_edited,
    ev.IntentSynced: _intent_synced,
    ev.ObservationRecorded: _observation_recorded,
    ev.ObservationRepeated: _observation_repeated,
    ev.UpdateRevised: _update_revised,
    ev.UpdateTriaged: _update_triaged,
    ev.ConsumerCreated: _consumer_created,
    ev.CursorMoved: _cursor_moved,
    ev.WatermarkRaised: _watermark_raised,
    ev.ReconciliationStarted: _reconciliation_started,
    ev.ReconciliationCommitted: _reconciliation_committed,
    ev.CardProposed: _card_proposed,
    ev.TurnStarted: _turn_started,
    ev.DeliveryCreated: _delivery_created,
    ev.DeliveryReceipted: _delivery_receipted,
    ev.TurnEnded: _turn_ended,
    ev.ContextReset: _context_reset,
    ev.RecoveryChanged: _recovery_changed,
    ev.ApprovalOpened: _approval_opened,
    ev.ApprovalResolved: _approval_resolved,
    ev.FailureHoldChanged: _failure_hold_changed,
    ev.AlertRaised: _alert_raised,
    ev.AlertSeen: _alert_seen,
    ev.AlertResolved: _alert_resolved,
    ev.IncidentOpened: _incident_opened,
    ev.IncidentRecovered: _incident_recovered,
    ev.DaemonStopped: _daemon_stopped,
    ev.DaemonStarted: _daemon_started,
    ev.ObligationOpened: _obligation_opened,
    ev.ObligationMet: _obligation_met,
    ev.ObligationDue: _obligation_due,
    ev.QuestionResurfaced: _question_resurfaced,
}
assert set(EVOLVERS) == set(ev.EVENT_TYPES.values()), "every event needs an evolver"


def evolve(state: State, event: ev.Event) -> State:
    """Apply one recorded event to `state` (in place) and return it."""
    EVOLVERS[type(event)](state, event)
    state.position += 1
    return state
