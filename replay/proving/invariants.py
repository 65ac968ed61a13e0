"""The invariants catalog: what must hold after every input, whatever the order.

Each invariant is a small named function whose docstring names the RFC
guarantee it protects (docs/invariants.md lists them all). There are two
kinds:

- an **event invariant** `check(before, event, step)` looks at one recorded
  event with the state it is applied to (`before`: the fold of every stored
  event up to it) and the input being applied (`step`); it catches a wrong
  decision at the moment it is made (a claim while a question holds the
  action, a retry of an `unknown` attempt);
- a **state invariant** `check(world)` looks at the engine after an input:
  its live decision state and views, and the same folded again from the
  stored (encoded, decoded) events.

A check returns None when the invariant holds, else a sentence saying what
is wrong (an `AssertionError` raised inside it counts the same). The checks
recompute what they need from the facts in the state, not through
`domain.dispatch`, so a broken decision rule cannot hide behind itself.

`Monitor` runs a list of invariants over an engine as inputs are applied;
the fuzzer (`replay.fuzz`), the bounded checker (`replay.check`) and the
property tests all use it. `catalog()` is the built-in list plus whatever
`register()` added; pass `invariants=[...]` wherever a run takes one to
choose exactly.
"""

from __future__ import annotations

import datetime
import inspect
import posixpath
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain import inputs as inp
from tandem.domain.events import Event, decode_event, encode_event
from tandem.domain.inputs import Input, format_at
from tandem.domain.state import Action, State, evolve
from tandem.projections import VIEW_NAMES, Views

# Spec sections 3.3 and 4, written out here rather than imported, so that the
# checks do not share the code they check.
TERMINAL = frozenset({"succeeded", "failed", "cancelled", "exhausted"})
BUSY = frozenset({"submitting", "queued", "accepted", "unknown", "cancel_requested"})
HOLDING = frozenset({"submitting", "accepted", "unknown"})  # a delivery in these holds its revisions (5.2)
CODE_ORDER = (
    "prerequisite_pending", "prerequisite_failed", "question_hold", "wider_hold", "scope_paused",
    "task_held", "intent_unsynced", "watchdog_unavailable", "resource_busy", "approval_pending",
    "budget_exhausted",
)  # fmt: skip
# Events that change an action (a terminal one must never see them again).
ACTION_EVENTS = (
    ev.ActionProposed, ev.ActionRevalidated, ev.ActionCancelled, ev.ActionCancelRequested, ev.ActionClaimed,
    ev.AttemptUpdated, ev.ActionOutcomeReported, ev.ActionBlocked,
)  # fmt: skip
# State fields that are the pass's scratch, not facts (a fold does not rebuild them).
PASS_SCRATCH = frozenset({"dirty_actions", "dirty_tasks", "watchdog_fresh"})


# ================================================================ the model


@dataclass(frozen=True, slots=True)
class Invariant:
    """One named check. `kind` is "event" (called before each event is applied)
    or "state" (called after each input); `guarantee` is the first paragraph of
    the check's docstring: the RFC guarantee it protects."""

    name: str
    kind: str
    check: Callable[..., str | None]
    guarantee: str

    def __repr__(self) -> str:
        return f"<{self.kind} invariant {self.name}>"


def _guarantee(function: Callable[..., Any]) -> str:
    doc = inspect.getdoc(function) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())


def event_invariant(function: Callable[[State, Event, "Step"], str | None]) -> Invariant:
    """Decorator: `function(before, event, step)` -> None or what is wrong."""
    return Invariant(function.__name__, "event", function, _guarantee(function))


def state_invariant(function: Callable[["World"], str | None]) -> Invariant:
    """Decorator: `function(world)` -> None or what is wrong."""
    return Invariant(function.__name__, "state", function, _guarantee(function))


@dataclass(slots=True)
class Step:
    """The input being applied: `number` counts inputs from 1 (setup included),
    `events` are the events it caused so far (for an event invariant: those
    before the one being checked; for a state invariant: all of them)."""

    input: Input
    number: int
    line: int | None = None
    events: list[Event] = field(default_factory=list)

    @property
    def at(self) -> datetime.datetime:
        return self.input.at


@dataclass
class World:
    """What a state invariant sees after an input: the live engine's state and
    views (`views` is None for an engine without views), and the same rebuilt
    by folding the stored events (`replayed`, `replayed_views`)."""

    state: State
    views: Views | None
    replayed: State
    replayed_views: Views
    step: Step

    @cached_property
    def document(self) -> dict[str, Any] | None:
        return self.views.document() if self.views is not None else None

    @cached_property
    def replayed_document(self) -> dict[str, Any]:
        return self.replayed_views.document()


class InvariantViolation(AssertionError):
    """An invariant does not hold. `invariant` is its name, `detail` what is
    wrong, `step` the input after (or during) which it was found."""

    def __init__(self, invariant: Invariant, detail: str, step: Step, event: Event | None = None) -> None:
        self.invariant = invariant
        self.detail = detail
        self.step = step
        self.event = event
        where = f"input {step.number} ({step.input.input_type} at {format_at(step.at)})"
        if event is not None:
            where += f", event {type(event).__name__}"
        super().__init__(f"invariant {invariant.name} violated at {where}: {detail}")


# ================================================================ running them


class Monitor:
    """Checks invariants as inputs are applied to an engine.

    Call `observe(input, events, state, views)` after each input with the
    events it caused: every event is encoded and decoded (as a store would),
    checked by the event invariants against the fold so far, then folded;
    then the state invariants look at the result. `history` is a log already
    stored (a restarted engine's), folded without checks."""

    def __init__(self, invariants: Iterable[Invariant] | None = None, history: Iterable[Event] = ()) -> None:
        chosen = list(catalog() if invariants is None else invariants)
        for invariant in chosen:
            if not isinstance(invariant, Invariant):
                raise TypeError(f"{invariant!r} is not an Invariant (decorate it with @event_invariant or @state_invariant)")
        self.invariants = chosen
        self.event_checks = [i for i in chosen if i.kind == "event"]
        self.state_checks = [i for i in chosen if i.kind == "state"]
        self.replayed = State()
        self.replayed_views = Views()
        self.inputs = 0
        for event in history:
            self._fold(event)
            if isinstance(event, (ev.InputAccepted, ev.InputRejected)):
                self.inputs += 1

    def _fold(self, event: Event) -> None:
        evolve(self.replayed, event)
        self.replayed_views.apply(event)

    def observe(
        self, value: Input, events: Sequence[Event], state: State, views: Views | None, line: int | None = None
    ) -> None:
        """Check one input's events and the state after it; raise
        InvariantViolation at the first invariant that does not hold."""
        self.inputs += 1
        step = Step(value, self.inputs, line)
        for event in events:
            stored = decode_event(encode_event(event))
            if stored != event:
                raise InvariantViolation(RESTART_IS_REPLAY, f"{type(event).__name__} does not survive encode/decode", step, event)
            for invariant in self.event_checks:
                _run(invariant, step, event, invariant.check, self.replayed, stored, step)
            step.events.append(stored)
            self._fold(stored)
        world = World(state, views, self.replayed, self.replayed_views, step)
        for invariant in self.state_checks:
            _run(invariant, step, None, invariant.check, world)


def _run(invariant: Invariant, step: Step, event: Event | None, check: Callable[..., Any], *arguments: Any) -> None:
    try:
        problem = check(*arguments)
    except InvariantViolation:
        raise
    except AssertionError as error:
        problem = str(error) or "assertion failed"
    if problem:
        raise InvariantViolation(invariant, problem, step, event)


# ============================================== the catalog: event invariants


@event_invariant
def terminal_actions_never_change(before: State, event: Event, step: Step) -> str | None:
    """Terminal actions never change again (spec 3.3): "suppression, exhausted
    retry budget, accepted delivery and resolved work are distinct outcomes" —
    a succeeded, failed, cancelled or exhausted operation is never revived,
    fenced, re-stamped or claimed."""
    if isinstance(event, ACTION_EVENTS):
        action = before.actions.get(event.operation_id)
        if isinstance(event, ev.ActionProposed):
            if action is not None:
                return f"{event.operation_id} proposed again while it exists ({action.state})"
        elif action is not None and action.state in TERMINAL:
            return f"{type(event).__name__} changes {event.operation_id}, which is already {action.state}"
    if isinstance(event, (ev.PolicySet, ev.GrantRevised, ev.TaskRevised)):
        for operation_id in [*event.fenced, *getattr(event, "restamped", ())]:
            action = before.actions.get(operation_id)
            if action is not None and action.state in TERMINAL:
                return f"{type(event).__name__} fences or re-stamps {operation_id}, which is {action.state}"
    return None


@event_invariant
def unknown_is_never_retried(before: State, event: Event, step: Step) -> str | None:
    """An `unknown` attempt is never retried automatically: "ambiguous outcome
    -> reconcile / expose unknown; no blind retry"; "uncertain attempts
    suppress automatic replay until reconciliation". Only an
    `executor.reconcile` saying `not_received` for that attempt lets the
    action go back to pending."""
    if isinstance(event, ev.ActionClaimed):
        action = before.actions.get(event.operation_id)
        if action is not None and action.attempts and action.attempts[-1].state == "unknown":
            return (
                f"{event.attempt_id} claimed while {action.attempts[-1].attempt_id} is unknown "
                f"(action {action.state}); no reconcile said not_received"
            )
    elif isinstance(event, (ev.AttemptUpdated, ev.ActionRevalidated)):
        action = before.actions.get(event.operation_id)
        if action is None or not action.attempts or action.attempts[-1].state != "unknown":
            return None
        if isinstance(event, ev.ActionRevalidated):
            return f"{event.operation_id} revalidated while its attempt {action.attempts[-1].attempt_id} is unknown"
        value = step.input
        reconciled = (
            isinstance(value, inp.ExecutorReconcile)
            and value.observed == "not_received"
            and value.attempt_id == action.attempts[-1].attempt_id
        )
        if event.action_state == "pending" and not reconciled:
            return f"{event.operation_id} sent back to pending from unknown by {value.input_type}, not by a not_received reconcile"
    return None


@event_invariant
def attempts_follow_receipts(before: State, event: Event, step: Step) -> str | None:
    """Each transport attempt has its own id and its receipts move only it:
    "persist a submission attempt before transport I/O"; "a retry reuses its
    operation ID". Attempt n + 1 (`{op}/a{n+1}`) only after attempt n was
    refused or not received; a receipt or reconcile moves the latest attempt
    only, and only the one it names."""
    if isinstance(event, ev.ActionClaimed):
        action = before.actions.get(event.operation_id)
        if action is None:
            return f"claim of {event.operation_id}, which was never proposed"
        n = len(action.attempts)
        if event.attempt_id != f"{event.operation_id}/a{n + 1}":
            return f"attempt id {event.attempt_id}, expected {event.operation_id}/a{n + 1}"
        if n and action.attempts[-1].state not in ("refused", "not_received"):
            return f"new attempt {event.attempt_id} while {action.attempts[-1].attempt_id} is {action.attempts[-1].state}"
    elif isinstance(event, ev.AttemptUpdated):
        action = before.actions.get(event.operation_id)
        latest = action.attempts[-1] if action is not None and action.attempts else None
        if latest is None or event.attempt_id != latest.attempt_id:
            return f"AttemptUpdated names {event.attempt_id}, the latest attempt is {latest.attempt_id if latest else None}"
        value = step.input
        if not isinstance(value, (inp.ExecutorReceipt, inp.ExecutorReconcile)) or value.attempt_id != event.attempt_id:
            return f"{event.attempt_id} moved by {value.input_type}, not by a receipt or reconcile naming it"
        allowed = ("submitting", "queued") if isinstance(value, inp.ExecutorReceipt) else ("unknown",)
        if latest.state not in allowed:
            return f"{value.input_type} moved {event.attempt_id} from {latest.state} (only from {' or '.join(allowed)})"
    elif isinstance(event, ev.ActionOutcomeReported):
        action = before.actions.get(event.operation_id)
        latest = action.attempts[-1].attempt_id if action is not None and action.attempts else None
        if event.attempt_id != latest:
            return f"outcome of {event.operation_id} names attempt {event.attempt_id}, the latest is {latest}"
    return None


@event_invariant
def claims_respect_blockers(before: State, event: Event, step: Step) -> str | None:
    """No claim while a blocking code applies (spec 4): "approval / failure hold
    / pause -> no automation bypass"; "hold only the affected task and
    dependents"; a fresh watchdog heartbeat "before each new unattended
    dispatch"; prerequisites verified "before atomically claiming"; conflicting
    work serialised by resource. The codes are recomputed here from the facts."""
    if not isinstance(event, ev.ActionClaimed):
        return None
    action = before.actions.get(event.operation_id)
    if action is None:
        return None  # attempts_follow_receipts says so
    if action.state != "pending":
        return f"{event.attempt_id} claimed while {event.operation_id} is {action.state}, not pending"
    codes = section_4_codes(before, action, step.at)
    if codes:
        return f"{event.operation_id} claimed ({event.attempt_id}) while blocked by {codes}"
    return None


@event_invariant
def claims_under_current_authority(before: State, event: Event, step: Step) -> str | None:
    """Claims only under current authority: "at dispatch, check current
    task/intent, grant and policy revisions ... operation, write roots"; "model
    prose cannot mint or widen a grant". The grant is live, the operation and
    every write path are inside grant ∩ policy, the task is active, and the
    attempt's envelope carries the current task, grant and policy revisions."""
    if not isinstance(event, ev.ActionClaimed):
        return None
    action = before.actions.get(event.operation_id)
    if action is None:
        return None
    grant = before.grants.get(action.grant_id)
    if grant is None or grant.state != "live":
        return f"{event.operation_id} claimed under grant {action.grant_id}, which is not live"
    policy = before.policy
    if action.operation not in grant.operations or action.operation not in policy.operations:
        return (
            f"{event.operation_id} claimed for {action.operation}, outside grant {sorted(grant.operations)} "
            f"∩ policy {sorted(policy.operations)}"
        )
    for path in action.write_paths:
        norm = normalised(path)
        if norm is None or not any(inside(norm, r) for r in grant.roots) or not any(inside(norm, r) for r in policy.roots):
            return f"{event.operation_id} claimed writing {path!r} outside grant {list(grant.roots)} ∩ policy {list(policy.roots)}"
    envelope = event.envelope
    if envelope.grant_revision != grant.revision:
        return f"{event.attempt_id} validated under grant r{envelope.grant_revision}, the grant is at r{grant.revision}"
    if envelope.policy_revision != policy.revision:
        return f"{event.attempt_id} validated under policy r{envelope.policy_revision}, the policy is at r{policy.revision}"
    if action.task_id is not None:
        task = before.tasks[action.task_id]
        if task.state != "active":
            return f"{event.operation_id} claimed while task {task.task_id} is {task.state}"
        if envelope.task_revision != task.revision:
            return f"{event.attempt_id} validated under task r{envelope.task_revision}, the task is at r{task.revision}"
    return None


@event_invariant
def grants_within_policy(before: State, event: Event, step: Step) -> str | None:
    """No permission escalation: "trusted daemon intake records only authority
    supported by the human instruction/current policy"; "narrow the grant to
    the delegated task". A grant is issued or revised inside the policy in
    force (operations ⊆ the policy's, every root inside a policy root)."""
    if not isinstance(event, (ev.GrantIssued, ev.GrantRevised)):
        return None
    policy = before.policy
    if event.policy_revision != policy.revision:
        return f"grant {event.grant_id} narrowed to policy r{event.policy_revision}, the policy is at r{policy.revision}"
    extra = set(event.allowed_operations) - policy.operations
    if extra:
        return f"grant {event.grant_id} keeps operations {sorted(extra)} outside the policy {sorted(policy.operations)}"
    for root in event.write_roots:
        if normalised(root) != root or not any(inside(root, r) for r in policy.roots):
            return f"grant {event.grant_id} keeps root {root!r}, not inside the policy roots {list(policy.roots)}"
    if not event.allowed_operations or not event.write_roots:
        return f"grant {event.grant_id} has no operation or no root"
    return None


@event_invariant
def budget_usage_adds_up(before: State, event: Event, step: Step) -> str | None:
    """Budgets are bounded and counted exactly: "bound ... calls, tokens,
    retries"; a grant's usage is the sum of `input_tokens + output_tokens` of
    the usage reports of its operations (a field not reported adds nothing)."""
    if not isinstance(event, ev.UsageReported) or event.grant_id is None:
        return None
    grant = before.grants.get(event.grant_id)
    expected = (grant.usage if grant is not None else 0) + (event.input_tokens or 0) + (event.output_tokens or 0)
    if event.grant_usage != expected:
        return f"grant {event.grant_id} usage becomes {event.grant_usage}, its reports sum to {expected}"
    return None


@event_invariant
def fenced_generation_commits_nothing(before: State, event: Event, step: Step) -> str | None:
    """A replaced background cannot commit for its successor: "foreground
    replacement transfers/rebinds the background owner and fences the old
    generation before new dispatch". A background input carrying a generation
    other than the current binding's is never accepted."""
    if not isinstance(event, ev.InputAccepted):
        return None
    value = event.input
    generation = getattr(value, "generation", None)
    if value.sender != "background" or generation is None or generation is UNSET:
        return None
    conversations = before.conversations
    if isinstance(value, (inp.ProposeAction, inp.RevalidateAction)):
        task_id = value.task_id if isinstance(value, inp.ProposeAction) else getattr(before.actions.get(value.operation_id), "task_id", None)
        task = before.tasks.get(task_id) if isinstance(task_id, str) else None
        bound = conversations[task.conversation_id].generation if task is not None else None
    elif isinstance(value, inp.SyncIntent):
        conversation = conversations.get(value.conversation_id)
        bound = conversation.generation if conversation is not None else None
    elif isinstance(value, inp.ClassifyTriage):
        background = conversations.get(value.conversation_id)
        foreground = conversations.get(background.foreground_id or "") if background is not None else None
        bound = foreground.generation if foreground is not None and foreground.background_id == value.conversation_id else None
    elif isinstance(value, inp.ProposeCard):
        generations = {c.generation for c in conversations.values() if c.role == "foreground"}
        bound = generation if generation in generations else None
    else:
        return None
    if bound != generation:
        return f"{value.input_type} from background generation {generation} accepted; the binding is at {bound}"
    return None


@event_invariant
def stale_triage_is_refused(before: State, event: Event, step: Step) -> str | None:
    """"update@2 during update@1 triage -> stale commit rejected; @2 remains
    pending": a triage is recorded only for the update's current revision."""
    if not isinstance(event, ev.UpdateTriaged):
        return None
    update = before.updates.get(event.cause_key)
    value = step.input
    current = update.revision if update is not None else 0
    if event.revision != current or (isinstance(value, inp.ClassifyTriage) and value.update_revision != current):
        named = value.update_revision if isinstance(value, inp.ClassifyTriage) else event.revision
        return f"triage of {event.cause_key} r{named} recorded while the update is at r{current}"
    return None


@event_invariant
def one_turn_at_a_time(before: State, event: Event, step: Step) -> str | None:
    """At most one running turn per conversation: "one controller/writer per
    provider conversation"; a turn runs from its dispatch until `turn.ended`,
    and deliveries of a turn go to the running one."""
    if isinstance(event, ev.TurnStarted):
        running = before.conversations[event.conversation_id].running_turn
        if running is not None:
            return f"{event.turn_id} started while {running.turn_id} runs"
    elif isinstance(event, ev.DeliveryCreated) and event.turn_id is not None:
        running = before.conversations[event.conversation_id].running_turn
        if running is None or running.turn_id != event.turn_id:
            return f"{event.delivery_id} for turn {event.turn_id}, the running turn is {running.turn_id if running else None}"
    return None


@event_invariant
def messages_sent_from_the_queue(before: State, event: Event, step: Step) -> str | None:
    """No human message delivered twice in an epoch, none withdrawn sent: "keep
    human messages durable"; a message goes into a delivery only while it is
    queued (a failed or interrupted turn puts it back), never once handled or
    withdrawn; a turn's end requeues only its own dispatched messages."""
    if isinstance(event, ev.DeliveryCreated):
        conversation = before.conversations[event.conversation_id]
        for message_id in event.messages:
            message = conversation.messages.get(message_id)
            if message is None or message.state != "queued" or message_id not in conversation.queue:
                state = message.state if message is not None else "unknown"
                return f"{message_id} put in {event.delivery_id} while it is {state}, not queued"
    elif isinstance(event, ev.TurnEnded):
        conversation = before.conversations[event.conversation_id]
        turn = conversation.running_turn
        own = turn.messages if turn is not None else []
        for message_id in event.requeued:
            if message_id not in own or conversation.messages[message_id].state != "dispatched":
                return f"{event.turn_id} requeues {message_id}, not a dispatched message of its own"
    return None


@event_invariant
def held_revision_not_resent(before: State, event: Event, step: Step) -> str | None:
    """No revision in two live deliveries: "uncertain acceptance stays
    uncertain until reconciled"; "reconcile by observation before any resend".
    A (cause, revision) held by
    a delivery of the current epoch (submitting, accepted, or unknown until its
    reconcile) is never put in another delivery."""
    if not isinstance(event, ev.DeliveryCreated):
        return None
    conversation = before.conversations[event.conversation_id]
    included = {tuple(pair) for pair in event.included}
    for other in conversation.deliveries.values():
        if other.epoch != conversation.epoch or other.released or other.attempt_state not in HOLDING:
            continue
        both = included & set(other.included)
        if both:
            return f"{event.delivery_id} includes {sorted(both)}, held by {other.delivery_id} ({other.attempt_state})"
    return None


@event_invariant
def deliveries_fit_the_context(before: State, event: Event, step: Step) -> str | None:
    """Every delivery fits the context: "if the estimated request plus reserves
    would exceed the configured session limit" it is not submitted
    (`context_tokens + tokens + reserve <= context_limit`, steers and reseeds
    included)."""
    if not isinstance(event, ev.DeliveryCreated):
        return None
    conversation = before.conversations[event.conversation_id]
    total = conversation.context_tokens + event.tokens + conversation.reserve
    if total > conversation.context_limit:
        return (
            f"{event.delivery_id} does not fit: {conversation.context_tokens} + {event.tokens} + "
            f"{conversation.reserve} > {conversation.context_limit}"
        )
    return None


@event_invariant
def cursor_never_moves_backwards(before: State, event: Event, step: Step) -> str | None:
    """The consumer cursor never moves backwards within an epoch: "an empty log
    still uses the watermark; never reset to zero merely because no rows
    remain"; a crash can neither lose nor double-apply an entry."""
    if not isinstance(event, (ev.CursorMoved, ev.ReconciliationCommitted)):
        return None
    consumer = before.consumers.get(event.consumer_id)
    reached = consumer.reached.get(event.epoch, 0) if consumer is not None else 0
    if event.seq < reached:
        return f"{event.consumer_id} cursor moves to ({event.epoch}, {event.seq}), below {reached} reached in that epoch"
    return None


@event_invariant
def alerts_raised_once_per_occurrence(before: State, event: Event, step: Step) -> str | None:
    """Alerts are raised once per occurrence: "cause-specific notification
    identity and resolution"; "repeated polls must not reset deadlines"; a
    continuing condition is not raised again — only a new update revision, a
    new incident or a new stale-question period is a new occurrence."""
    if not isinstance(event, ev.AlertRaised):
        return None
    if any(isinstance(e, ev.AlertRaised) and e.alert_id == event.alert_id for e in step.events):
        return f"{event.alert_id} raised twice by one input"
    alert = before.alerts.get(event.alert_id)
    if alert is None or not alert.open:
        return None
    kind = event.alert_id.partition(":")[0]
    if kind == "urgent" and event.revision is not None and event.revision != alert.revision:
        return None
    if kind == "question_stale":
        task_id, _, question_key = event.alert_id.partition(":")[2].partition("/")
        if any(
            isinstance(e, ev.QuestionResurfaced) and e.task_id == task_id and e.question_key == question_key
            for e in step.events
        ):
            return None
    if kind == "incident":
        incident_id = event.alert_id.partition(":")[2]
        if any(isinstance(e, ev.IncidentOpened) and e.incident_id == incident_id for e in step.events):
            return None
    return f"{event.alert_id} raised again while its condition goes on (count {alert.count}, no new occurrence)"


@event_invariant
def obligations_met_by_completed_turns(before: State, event: Event, step: Step) -> str | None:
    """Obligations are met only by a completed turn (DESIGN.md's reference loop:
    "marked handled only when a turn completes, background task delivery with
    a fallback"; the RFC: "compaction preserves outstanding obligations"): a
    delivery obligation is met when a turn whose accepted
    delivery held the outcome's update ends `completed` (and lists the cause
    in `delivered`, when given) — never by a failed turn or a reseed."""
    if not isinstance(event, ev.ObligationMet):
        return None
    value = step.input
    if not isinstance(value, inp.EndTurn) or value.outcome != "completed" or value.turn_id != event.turn_id:
        return f"obligation {event.operation_id} met by {value.input_type}, not by turn {event.turn_id} completing"
    obligation = before.obligations.get(event.operation_id)
    if obligation is None or obligation.state == "met":
        return f"obligation {event.operation_id} met twice or never opened"
    delivery = before.conversations[obligation.conversation_id].deliveries.get(event.delivery_id)
    if delivery is None or delivery.turn_id != event.turn_id or delivery.attempt_state != "accepted":
        state = delivery.attempt_state if delivery is not None else "missing"
        return f"obligation {event.operation_id} met by {event.delivery_id} ({state}), not an accepted delivery of {event.turn_id}"
    if obligation.cause_key not in {cause for cause, _ in delivery.included}:
        return f"obligation {event.operation_id} met by {event.delivery_id}, which did not hold {obligation.cause_key}"
    if value.delivered is not UNSET and value.delivered is not None and obligation.cause_key not in value.delivered:
        return f"obligation {event.operation_id} met though {event.turn_id} did not list {obligation.cause_key} in delivered"
    return None


# ============================================== the catalog: state invariants


@state_invariant
def one_live_action_per_cause(world: World) -> str | None:
    """At most one live action per cause (`duplicate_cause`): "lifecycle +
    background same fix -> one accepted managed operation"; "reconcile existing
    ownership before accepting a successor for the same cause"."""
    live: dict[str, list[str]] = {}
    for action in world.state.actions.values():
        if action.state not in TERMINAL:
            live.setdefault(action.cause_key, []).append(action.operation_id)
    for cause_key, operation_ids in live.items():
        if len(operation_ids) > 1:
            return f"cause {cause_key!r} has {len(operation_ids)} live actions: {operation_ids}"
    return None


@state_invariant
def blocked_by_is_section_4(world: World) -> str | None:
    """Blockers are visible and exact: "unclear blockers: show which task needs
    your answer, why"; authorised work is not left waiting. A pending action's
    `blocked_by` is exactly the section 4 codes that apply (so a pending action
    with none would have been claimed); every other action's is empty; the
    actions view agrees with the state."""
    state = world.state
    at = world.step.at
    rows = {row["operation_id"]: row for row in world.document["actions"]} if world.document is not None else None
    for operation_id, action in state.actions.items():
        if action.state == "pending":
            codes = section_4_codes(state, action, at)
            if list(action.blocked_by) != codes:
                hint = " (nothing blocks it: it should have been claimed)" if not codes else ""
                return f"pending {operation_id}: blocked_by {list(action.blocked_by)}, section 4 says {codes}{hint}"
        elif action.blocked_by:
            return f"{operation_id} is {action.state} but blocked_by is {list(action.blocked_by)}"
        if rows is not None:
            row = rows.get(operation_id)
            if row is None or row["state"] != action.state or row["blocked_by"] != list(action.blocked_by):
                return f"actions view row {row} disagrees with the state ({action.state}, {list(action.blocked_by)})"
    return None


@state_invariant
def human_messages_kept(world: World) -> str | None:
    """No human message lost: "keep human messages durable and the UI
    available"; "human races wake claim -> human not starved". Every queued
    message is in its queue exactly once, every dispatched one in the running
    turn, none withdrawn or handled is queued; an idle foreground that nothing
    holds has no message waiting."""
    for conversation in world.state.conversations.values():
        queue = conversation.queue
        if len(queue) != len(set(queue)):
            return f"{conversation.conversation_id} queue has duplicates: {queue}"
        running = conversation.running_turn
        in_turn = set(running.messages) if running is not None else set()
        for message_id, message in conversation.messages.items():
            queued = message_id in queue
            if (message.state == "queued") != queued:
                return f"{message_id} is {message.state} but {'in' if queued else 'not in'} the queue {queue}"
            if message.state == "dispatched" and message_id not in in_turn:
                return f"{message_id} is dispatched but not in a running turn"
        for message_id in queue:
            if message_id not in conversation.messages:
                return f"{conversation.conversation_id} queues {message_id}, which was never accepted"
        if conversation.role != "foreground" or not queue or running is not None:
            continue
        reseed = conversation.deliveries.get(conversation.reseed_id) if conversation.reseed_id else None
        held = (
            conversation.approvals
            or conversation.failure_held
            or conversation.recovery is not None
            or conversation.reseed_due
            or (reseed is not None and reseed.attempt_state != "accepted")
        )
        if not held:
            return f"{conversation.conversation_id} is idle and dispatchable with {queue} queued: no human turn started"
    return None


@state_invariant
def restart_is_replay(world: World) -> str | None:
    """Restart is replay: "save the plan, worker results and unfinished tasks
    outside the model conversation"; a restarted engine folds the stored
    events into exactly the live decision state and views (spec 7's eleven
    views)."""
    state, replayed = world.state, world.replayed
    for f in fields(State):
        if f.name in PASS_SCRATCH:
            continue
        live_value, replay_value = getattr(state, f.name), getattr(replayed, f.name)
        if live_value != replay_value:
            return f"replayed state.{f.name} differs:\n live   {live_value}\n replay {replay_value}"
    document = world.document
    if document is not None:
        if tuple(document) != VIEW_NAMES:
            return f"document keys {list(document)} are not spec section 7's {list(VIEW_NAMES)}"
        if document != world.replayed_document:
            for name in VIEW_NAMES:
                if document[name] != world.replayed_document[name]:
                    return f"replayed view {name} differs:\n live   {document[name]}\n replay {world.replayed_document[name]}"
    return None


# The invariant reported when an event does not survive its own codec.
RESTART_IS_REPLAY = restart_is_replay

BUILTIN: tuple[Invariant, ...] = (
    terminal_actions_never_change,
    unknown_is_never_retried,
    attempts_follow_receipts,
    claims_respect_blockers,
    claims_under_current_authority,
    grants_within_policy,
    budget_usage_adds_up,
    fenced_generation_commits_nothing,
    stale_triage_is_refused,
    one_turn_at_a_time,
    messages_sent_from_the_queue,
    held_revision_not_resent,
    deliveries_fit_the_context,
    cursor_never_moves_backwards,
    alerts_raised_once_per_occurrence,
    obligations_met_by_completed_turns,
    one_live_action_per_cause,
    blocked_by_is_section_4,
    human_messages_kept,
    restart_is_replay,
)
_registered: list[Invariant] = []


def register(invariant: Invariant) -> Invariant:
    """Add an invariant to `catalog()` (for every later run that does not pass
    its own list). Returns it, so it stacks under @event_invariant or
    @state_invariant."""
    if not isinstance(invariant, Invariant):
        raise TypeError(f"{invariant!r} is not an Invariant (decorate it with @event_invariant or @state_invariant)")
    if invariant.name in {i.name for i in (*BUILTIN, *_registered) if i is not invariant}:
        raise ValueError(f"an invariant named {invariant.name!r} is already in the catalog")
    if invariant not in _registered:
        _registered.append(invariant)
    return invariant


def unregister(invariant: Invariant) -> None:
    if invariant in _registered:
        _registered.remove(invariant)


def catalog() -> list[Invariant]:
    """The built-in invariants, then the registered ones."""
    return [*BUILTIN, *_registered]


def by_name(names: Iterable[str]) -> list[Invariant]:
    known = {invariant.name: invariant for invariant in catalog()}
    missing = [name for name in names if name not in known]
    if missing:
        raise KeyError(f"no invariant named {', '.join(missing)}; known: {', '.join(known)}")
    return [known[name] for name in names]


# ====================================================== section 4, again


def normalised(path: str) -> str | None:
    if not path.startswith("/"):
        return None
    out = posixpath.normpath(path)
    return "/" + out.lstrip("/")


def inside(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root.rstrip("/") + "/")


def section_4_codes(state: State, action: Action, at: datetime.datetime | None) -> list[str]:
    """The section 4 codes that block a pending action, recomputed from the
    facts in `state` (not its indexes, and without domain.dispatch)."""
    codes: set[str] = set()
    actions, tasks = state.actions, state.tasks

    for prerequisite in action.prerequisites:
        other = actions[prerequisite.operation_id]
        if other.state == "succeeded":
            if prerequisite.artifact_revision is not None and other.artifact_revision != prerequisite.artifact_revision:
                codes.add("prerequisite_failed")
        elif other.state in ("failed", "cancelled", "exhausted"):
            codes.add("prerequisite_failed")
        else:
            codes.add("prerequisite_pending")

    open_questions = [q for q in state.questions.values() if q.state == "open" and tasks[q.task_id].state == "active"]
    listed = {op for q in open_questions if isinstance(q.affected, list) for op in q.affected}
    task_held_by_question = {q.task_id for q in open_questions if q.affected == "task"}
    ancestors = _closure(action.operation_id, lambda op: [p.operation_id for p in actions[op].prerequisites])
    task = tasks[action.task_id] if action.task_id is not None else None
    upstream = _closure(task.task_id, lambda t: tasks[t].depends_on) if task is not None else set()
    if ancestors & listed or upstream & task_held_by_question:
        codes.add("question_hold")
    if any(q.affected == "unknown" for q in open_questions):
        codes.add("wider_hold")
    if "*" in state.paused or (task is not None and task.task_id in state.paused):
        codes.add("scope_paused")
    if task is not None:
        if any(tasks[d].state != "completed" for d in task.depends_on):
            codes.add("task_held")
        conversation = state.conversations[task.conversation_id]
        if action.proposed_by in ("background", "daemon") and conversation.intent_revision > conversation.synced_intent_revision:
            codes.add("intent_unsynced")
    fresh = (
        state.heartbeat_at is not None
        and at is not None
        and (at - state.heartbeat_at).total_seconds() <= state.config.watchdog_max_age_s
    )
    if action.unattended and not fresh:
        codes.add("watchdog_unavailable")
    if any(
        other.operation_id != action.operation_id and other.resource == action.resource and other.state in BUSY
        for other in actions.values()
    ):
        codes.add("resource_busy")
    if task is not None:
        conversation = state.conversations[task.conversation_id]
        background = state.conversations.get(conversation.background_id or "")
        if conversation.approvals or (background is not None and background.approvals):
            codes.add("approval_pending")
    grant = state.grants[action.grant_id]
    if grant.token_limit is not None and grant.usage >= grant.token_limit:
        codes.add("budget_exhausted")
    return [code for code in CODE_ORDER if code in codes]


def _closure(start: str, neighbours: Callable[[str], Iterable[str]]) -> set[str]:
    seen: set[str] = set()
    stack = [start]
    while stack:
        current = stack.pop()
        if current not in seen:
            seen.add(current)
            stack.extend(neighbours(current))
    return seen


