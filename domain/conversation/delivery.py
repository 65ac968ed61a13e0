"""Deliveries (contract section 5): the foreground pass that decides human turns,
coalesced wakes, steers and reseeds, the provider's receipts and reconciles
of what it delivered, and the ends of turns.

Sent ≠ accepted ≠ in the current context: a delivery's manifest (which
messages and which (cause, revision) pairs) is recorded before any provider
I/O; only an `accepted` delivery of the current epoch counts as delivered; an
`unknown` one keeps holding what it held until `provider.reconcile` — never a
blind resend. A turn that fails or is interrupted puts its human messages back
at the front of the queue, in order: no human message is ever lost (the
message lifecycle). What is left undelivered urgent is the alerts area's
(`urgent_rule`, after each foreground).
"""

from __future__ import annotations

import datetime
import itertools
import math
from collections.abc import Callable
from typing import Any

import msgspec
from msgspec import UNSET
from tandem.domain import events as ev
from tandem.domain import inputs as inp
from tandem.domain.alerts.rules import raise_alert, resolve_alert
from tandem.domain.budgets.rules import (
    Deferral,
    delivery_deferral,
    engine_hold,
    record_deferral,
    unready_deferral,
    urgent_deferral,
    wake_deferral,
)  # fmt: skip
from tandem.domain.conversation.composition import require_payload
from tandem.domain.conversation.state import refresh_candidate
from tandem.domain.lifecycles import DELIVERY, MESSAGE, TURN
from tandem.domain.lookups import known_delivery, numbered_owner
from tandem.domain.reasons import Rejected
from tandem.domain.records import Conversation, Delivery, Turn, Update
from tandem.domain.inbox.state import hold_update
from tandem.domain.state import State

Emit = Callable[[ev.Event], None]

# Context cost of the control state in a reseed, per item (contract section 5.2).
reseed_task_tokens = 40
reseed_grant_tokens = 20
reseed_question_tokens = 30
reseed_action_tokens = 30

# Provenance of a delivery: the ranked candidates it records (the rest are counted).
candidates_recorded_max = 64

# ------------------------------------------------- receipts and turn ends


def end_turn(conversation: Conversation, seq: int, outcome: str, delivered: list[str] | None) -> ev.TurnEnded:
    """The running turn ends with `outcome` (a receipt, turn.ended or context.reset)."""
    turn = conversation.running_turn
    assert turn is not None
    if outcome == "completed":
        requeued: list[str] = []
        released: list[str] = []
    else:
        # Back at the front, in order; revisions released except what an
        # `unknown` delivery holds (it stays held until provider.reconcile).
        requeued = [m for m in turn.messages if conversation.messages[m].state == "dispatched"]
        released = [
            d
            for d in turn.deliveries
            if conversation.deliveries[d].attempt_state != "unknown" and not conversation.deliveries[d].released
        ]
    return ev.TurnEnded(
        cause=seq,
        conversation_id=conversation.conversation_id,
        turn_id=turn.turn_id,
        outcome=outcome,
        requeued=requeued,
        delivered=delivered,
        released=released,
    )


def _settle_delivery(
    state: State, conversation: Conversation, delivery: Delivery, attempt_state: str, seq: int
) -> list[ev.Event]:
    tokens = conversation.context_tokens
    if attempt_state == "accepted" and delivery.epoch == conversation.epoch:
        tokens += delivery.tokens
    settled = attempt_state != "unknown"
    events: list[ev.Event] = [
        ev.DeliveryReceipted(
            cause=seq,
            conversation_id=conversation.conversation_id,
            delivery_id=delivery.delivery_id,
            attempt_state=attempt_state,
            context_tokens=tokens,
            releases=attempt_state in ("refused", "not_received") or (delivery.orphaned and settled),
        )
    ]
    turn = conversation.running_turn
    if (
        attempt_state in ("refused", "not_received")
        and delivery.kind == "turn"
        and turn is not None
        and turn.turn_id == delivery.turn_id
    ):
        # A turn whose delivery is refused or not received ends failed here.
        ended = end_turn(conversation, seq, "failed", None)
        released = [d for d in ended.released if d != delivery.delivery_id]  # released by the receipt
        events.append(msgspec.structs.replace(ended, released=released, delivery_id=delivery.delivery_id))
    if attempt_state in ("refused", "not_received"):
        events.extend(engine_hold(state, conversation, seq))  # contract v1.2 section 3.6
    return events


def _settle_from(state: State, delivery_id: str, delivery_event: str, expected: str, seq: int) -> list[ev.Event]:
    conversation, delivery = known_delivery(state, delivery_id)
    attempt_state = DELIVERY.target(delivery.attempt_state, delivery_event)
    if attempt_state is None:
        raise Rejected("stale_attempt", f"{delivery_id!r} is {delivery.attempt_state}, not {expected}")
    require_payload(state, delivery, attempt_state)  # contract v1.2 section 6
    return _settle_delivery(state, conversation, delivery, attempt_state, seq)


def decide_provider_receipt(state: State, value: inp.ProviderReceipt, seq: int) -> list[ev.Event]:
    """Only while the delivery is submitting (contract section 5.1)."""
    return _settle_from(state, value.delivery_id, f"receipt_{value.result}", "submitting", seq)


def decide_provider_reconcile(state: State, value: inp.ProviderReconcile, seq: int) -> list[ev.Event]:
    """Only while the delivery is unknown (contract section 5.1)."""
    return _settle_from(state, value.delivery_id, f"reconcile_{value.observed}", "unknown", seq)


def decide_turn_ended(state: State, value: inp.EndTurn, seq: int) -> list[ev.Event]:
    conversation = state.conversation.by_id.get(numbered_owner(value.turn_id, "t") or "")
    if conversation is None or conversation.running_turn is None or conversation.running_turn.turn_id != value.turn_id:
        raise Rejected("stale_attempt", f"{value.turn_id!r} is not a running turn")
    delivered = list(value.delivered) if isinstance(value.delivered, list) else None
    return [end_turn(conversation, seq, value.outcome, delivered)]


# ============================================================ foreground pass


def message_tokens(conversation: Conversation, message_id: str) -> int:
    message = conversation.messages[message_id]
    if message.tokens is not None:
        return message.tokens
    return math.ceil(len(message.text.encode("utf-8")) / 4)


def update_tokens(update: Update) -> int:
    if update.tokens is not None:
        return update.tokens
    if update.text:
        return math.ceil(len(update.text.encode("utf-8")) / 4)
    return 0


def _rank_key(update: Update) -> tuple:
    """urgent first, then notification_priority descending (null last), then
    first_seen_at, then cause_key."""
    priority = update.notification_priority
    return (update.disposition != "urgent", priority is None, -(priority or 0), update.first_seen_at, update.cause_key)


def _ranked(state: State, causes: set[str]) -> list[Update]:
    return sorted((state.inbox.updates[cause] for cause in causes), key=_rank_key)


class Fitted:
    """What `_fit` took, and the candidates it considered with their verdicts
    (the provenance of a delivery, contract section 8)."""

    __slots__ = ("ranked", "chosen", "used", "considered")

    def __init__(self, ranked: list[Update]) -> None:
        self.ranked = ranked
        self.chosen: list[Update] = []
        self.used = 0
        self.considered: list[tuple[Update, int, str]] = []  # (update, tokens, verdict), in rank order

    def left(self) -> list[Update]:
        """The candidates a full wake did not consider (over wake_batch_max)."""
        return self.ranked[len(self.considered) :]


def fit(updates: list[Update], budget: int, limit: int | None = None) -> Fitted:
    """Take updates in order, skipping those that would not fit (and, with a
    limit, leaving the rest once it is reached)."""
    fitted = Fitted(updates)
    chosen = fitted.chosen
    considered = fitted.considered
    used = 0
    for update in updates:
        if limit is not None and len(chosen) >= limit:
            break
        tokens = update_tokens(update)
        if used + tokens <= budget:
            chosen.append(update)
            used += tokens
            considered.append((update, tokens, "included"))
        else:
            considered.append((update, tokens, "does_not_fit"))
    fitted.used = used
    return fitted


def _candidates(*parts: tuple[Fitted, bool]) -> tuple[list[ev.CandidateUpdate], int]:
    """The ranked candidates of a delivery (required ones, then optional
    ones), at most `candidates_recorded_max`, and how many there were."""
    recorded: list[ev.CandidateUpdate] = []
    total = 0
    for fitted, optional in parts:
        total += len(fitted.ranked)
        left = ((update, update_tokens(update), "over_wake_batch_max") for update in fitted.left())
        for update, tokens, verdict in itertools.chain(fitted.considered, left):
            if len(recorded) >= candidates_recorded_max:
                break
            recorded.append(
                ev.CandidateUpdate(
                    cause_key=update.cause_key,
                    revision=update.revision,
                    disposition=update.disposition,
                    notification_priority=update.notification_priority,
                    tokens=tokens,
                    verdict=verdict,
                    optional=optional,
                )
            )
    return recorded, total


def control_state_tokens(state: State, conversation: Conversation) -> int:
    """The reseed's required part: this conversation's control state."""
    total = 0
    for task_id in conversation.tasks:
        task = state.tasks.by_id[task_id]
        if task.state != "active":
            continue
        total += reseed_task_tokens
        if state.authority.grants[task.grant_id].state == "live":
            total += reseed_grant_tokens
        total += reseed_question_tokens * task.open_questions
        total += reseed_action_tokens * sum(1 for op in task.actions if not state.actions.by_id[op].terminal)
    return total


def run_foreground_pass(state: State, cause: int, at: datetime.datetime, emit: Emit) -> None:
    """Spec 5.3: for each foreground, in id order, the first rule that
    applies; then the urgent rule for what it left undelivered."""
    for conversation_id in state.conversation.foregrounds:
        conversation = state.conversation.by_id[conversation_id]
        _conversation_pass(state, conversation, cause, at, emit)
        if conversation.urgent:
            urgent_rule(state, conversation_id, cause, at, emit)


def _delivery_id(conversation: Conversation) -> str:
    return f"{conversation.conversation_id}/d{len(conversation.deliveries) + 1}"


def deliver(
    state: State,
    conversation: Conversation,
    cause: int,
    emit: Emit,
    kind: str,
    turn_id: str | None,
    rule: str,
    fitted: list[tuple[Fitted, bool]],
    messages: list[str],
    message_tokens_total: int = 0,
    control_tokens: int = 0,
    checkpoint: str | None = None,
) -> None:
    """Record a delivery's manifest, and why (contract section 8): the rule that
    applied, the budget, and the ranked candidates with their verdicts (and
    a background reseed's checkpoint: contract v1.2 section 5.3)."""
    updates = [update for part, _ in fitted for update in part.chosen]
    update_tokens_total = sum(part.used for part, _ in fitted)
    candidates, candidates_total = _candidates(*fitted)
    emit(
        ev.DeliveryCreated(
            cause=cause,
            conversation_id=conversation.conversation_id,
            delivery_id=_delivery_id(conversation),
            turn_id=turn_id,
            epoch=conversation.epoch,
            kind=kind,
            included=[(update.cause_key, update.revision) for update in updates],
            messages=messages,
            tokens=message_tokens_total + control_tokens + update_tokens_total,
            control_tokens=control_tokens,
            rule=rule,
            budget=ev.DeliveryBudget(
                context_limit=conversation.context_limit,
                reserve=conversation.reserve,
                context_tokens=conversation.context_tokens,
                room=context_room(conversation),
                message_tokens=message_tokens_total,
                control_tokens=control_tokens,
                update_tokens=update_tokens_total,
            ),
            candidates=candidates,
            candidates_total=candidates_total,
            checkpoint=checkpoint if checkpoint is not None else UNSET,
        )
    )


def context_room(conversation: Conversation) -> int:
    return conversation.context_limit - conversation.reserve - conversation.context_tokens


def _start_turn(conversation: Conversation, cause: int, emit: Emit, kind: str, rule: str) -> str:
    turn_id = f"{conversation.conversation_id}/t{conversation.turns + 1}"
    emit(
        ev.TurnStarted(
            cause=cause,
            conversation_id=conversation.conversation_id,
            turn_id=turn_id,
            epoch=conversation.epoch,
            kind=kind,
            rule=rule,
        )
    )
    return turn_id


def _conversation_pass(state: State, conversation: Conversation, cause: int, at: datetime.datetime, emit: Emit) -> None:
    """One foreground: no delivery of any kind while its provider is not
    ready (contract v1.2 section 4.3, messages stay queued) or a refusal's
    back-off lasts (section 3.6), else the first rule that applies; then why
    its next delivery waits, if that changed (section 3.10's order), naming
    what holds back an urgent update it left idle (section 3.7)."""
    deferral = unready_deferral(state, conversation) or delivery_deferral(state, conversation, at)
    if deferral is None:
        deferral = _first_rule(state, conversation, cause, at, emit)
    if conversation.urgent and conversation.running_turn is None:
        urgent = _ranked(state, conversation.urgent)
        tokens = min(update_tokens(update) for update in urgent)
        deferral = urgent_deferral(state, conversation, deferral, urgent[0].cause_key, tokens, context_room(conversation))
    record_deferral(state, conversation, cause, deferral, emit)


def _first_rule(state: State, conversation: Conversation, cause: int, at: datetime.datetime, emit: Emit) -> Deferral | None:
    """The first rule of contract section 5.3 that applies to one foreground
    (a wake may be deferred: contract v1.2 section 3.7)."""
    # 1. Not dispatchable: keep the queue and the updates.
    if conversation.approvals or conversation.failure_held:
        return
    if conversation.reseed_due and conversation.recovery is None:
        _reseed(state, conversation, cause, emit)
        return None
    if conversation.recovery is not None:
        return None
    if conversation.reseed_id is not None:
        reseed = conversation.deliveries[conversation.reseed_id]
        if reseed.attempt_state != "accepted":
            return None
    room = context_room(conversation)
    if conversation.running_turn is not None:
        _steer(state, conversation, cause, emit, room)
    elif conversation.queue:
        _human_turn(state, conversation, cause, emit, room)
    elif conversation.deliverable and "*" not in state.actions.paused:
        return _wake(state, conversation, cause, at, emit, room)
    return None


def _steer(state: State, conversation: Conversation, cause: int, emit: Emit, room: int) -> None:
    """2. Running: only urgent updates, steered into the same turn."""
    turn = conversation.running_turn
    assert turn is not None
    if conversation.steer and conversation.deliverable:
        urgent = [
            update
            for update in _ranked(state, conversation.deliverable)
            if update.disposition == "urgent" and (update.cause_key, update.revision) not in conversation.not_steered
        ]
        fitted = fit(urgent, room)
        if fitted.chosen:
            deliver(state, conversation, cause, emit, "steer", turn.turn_id, "steer", [(fitted, False)], [])


def _human_turn(state: State, conversation: Conversation, cause: int, emit: Emit, room: int) -> None:
    """3. A human turn: every queued message, then what fits."""
    messages = list(conversation.queue)
    needed = sum(message_tokens(conversation, m) for m in messages)
    if needed > room:
        emit(
            ev.RecoveryChanged(
                cause=cause, conversation_id=conversation.conversation_id, recovery="message", needed=needed, room=room
            )
        )
        return
    required = fit(_ranked(state, conversation.deliverable), room - needed)
    optional = fit(_ranked(state, conversation.optional), room - needed - required.used)
    turn_id = _start_turn(conversation, cause, emit, "human", "human_turn")
    deliver(
        state, conversation, cause, emit, "turn", turn_id, "human_turn", [(required, False), (optional, True)],
        messages, needed,
    )  # fmt: skip


def _wake(
    state: State, conversation: Conversation, cause: int, at: datetime.datetime, emit: Emit, room: int
) -> Deferral | None:
    """4. One coalesced wake: up to wake_batch_max updates that fit (unless
    the wake interval or the batch wait defers it: contract v1.2 section 3.7)."""
    fitted = fit(_ranked(state, conversation.deliverable), room, state.authority.config.wake_batch_max)
    compaction = f"compaction_required:{conversation.conversation_id}"
    if not fitted.chosen:
        # Nothing fits: raised once while it goes on.
        detail = f"no deliverable update fits in {room} tokens"
        facts = ev.AlertFacts(
            conversation_id=conversation.conversation_id,
            room=room,
            candidates=len(fitted.ranked),
            smallest_tokens=min((tokens for _, tokens, _ in fitted.considered), default=None),
        )
        for event in raise_alert(state, cause, compaction, at, detail=detail, facts=facts):
            emit(event)
        return None
    deferral = wake_deferral(state, conversation, at, any(update.disposition == "urgent" for update in fitted.chosen))
    if deferral is not None:
        return deferral
    for event in resolve_alert(
        state, cause, compaction, detail=f"a wake fits in {room} tokens", facts=ev.AlertFacts(reason="wake_fits", room=room)
    ):
        emit(event)  # a later wake fits
    turn_id = _start_turn(conversation, cause, emit, "wake", "wake")
    deliver(state, conversation, cause, emit, "turn", turn_id, "wake", [(fitted, False)], [])
    return None


def reseed_room(conversation: Conversation, required: int, cause: int, emit: Emit) -> int | None:
    """The room a reseed leaves for its optional part once its required part
    is in; None, with the conversation sent to recovery, when it does not fit."""
    room = context_room(conversation)
    if required > room:
        emit(
            ev.RecoveryChanged(
                cause=cause, conversation_id=conversation.conversation_id, recovery="reseed", needed=required, room=room
            )
        )
        return None
    return room - required


def _reseed(state: State, conversation: Conversation, cause: int, emit: Emit) -> None:
    """A bounded reseed of the new epoch: the control state, then what fits."""
    required = control_state_tokens(state, conversation)
    left = reseed_room(conversation, required, cause, emit)
    if left is None:
        return
    fitted = fit(_ranked(state, conversation.deliverable), left)
    deliver(state, conversation, cause, emit, "reseed", None, "reseed", [(fitted, False)], [], 0, required)


def urgent_rule(state: State, conversation_id: str, cause: int, at: datetime.datetime, emit: Emit) -> None:
    """Spec 5.3: an urgent revision still deliverable after the pass (it was
    not put into a delivery) raises `urgent:{cause_key}`, once per revision."""
    conversation = state.conversation.by_id[conversation_id]
    for cause_key in sorted(conversation.urgent):
        update = state.inbox.updates[cause_key]
        alert = state.alerts.by_id.get(f"urgent:{cause_key}")
        if alert is not None and alert.open and alert.revision == update.revision:
            continue  # continuing: this revision was raised already
        reason = "not dispatchable" if conversation.running_turn is None else "running turn"
        facts = ev.AlertFacts(
            reason=reason.replace(" ", "_"),
            conversation_id=conversation_id,
            turn_id=conversation.running_turn.turn_id if conversation.running_turn is not None else None,
        )
        for event in raise_alert(
            state,
            cause,
            f"urgent:{cause_key}",
            at,
            new_occurrence=True,
            cause_key=cause_key,
            revision=update.revision,
            detail=f"revision {update.revision} not delivered to {conversation_id} ({reason})",
            facts=facts,
        ):
            emit(event)


# ----------------------------------------------------------------- evolvers


def _turn_started(state: State, event: ev.TurnStarted) -> None:
    conversation = state.conversation.by_id[event.conversation_id]
    conversation.turns += 1
    conversation.running_turn = Turn(event.turn_id, event.epoch, event.kind, state=TURN.after[ev.TurnStarted])
    conversation.not_steered.clear()
    if event.kind == "wake":
        conversation.last_wake_at = state.last_at  # the wake interval counts from here (v1.2 section 3.7)


def _delivery_created(state: State, event: ev.DeliveryCreated) -> None:
    conversation = state.conversation.by_id[event.conversation_id]
    delivery = Delivery(
        event.delivery_id,
        event.turn_id,
        event.epoch,
        event.kind,
        [tuple(pair) for pair in event.included],  # type: ignore[misc]
        list(event.messages),
        event.tokens,
        attempt_state=DELIVERY.after[ev.DeliveryCreated],
        checkpoint=event.checkpoint if event.checkpoint is not UNSET else None,
    )
    conversation.deliveries[event.delivery_id] = delivery
    # A background's deliveries hold nothing (contract v1.2 section 5.3).
    for cause_key, revision in delivery.included if conversation.role == "foreground" else ():
        update = state.inbox.updates[cause_key]
        if update.revision == revision:
            hold_update(update, event.delivery_id)
            refresh_candidate(state, update)
    if event.messages:
        dispatched = MESSAGE.after[ev.DeliveryCreated]
        for message_id in event.messages:
            conversation.messages[message_id].state = dispatched
        sent = set(event.messages)
        conversation.queue = [m for m in conversation.queue if m not in sent]
    turn = conversation.running_turn
    if event.turn_id is not None and turn is not None and turn.turn_id == event.turn_id:
        turn.deliveries.append(event.delivery_id)
        turn.messages.extend(event.messages)
    if event.kind == "reseed":
        conversation.reseed_id = event.delivery_id
        conversation.reseed_due = False


def release(state: State, delivery: Delivery) -> None:
    """The delivery holds its revisions no more (refused, not received, its turn
    failed, or an earlier epoch's: conversation.reset)."""
    delivery.released = True
    for cause_key, _ in delivery.included:
        update = state.inbox.updates[cause_key]
        if update.held_by == delivery.delivery_id:
            hold_update(update, None)
            refresh_candidate(state, update)


def _delivery_receipted(state: State, event: ev.DeliveryReceipted) -> None:
    conversation = state.conversation.by_id[event.conversation_id]
    delivery = conversation.deliveries[event.delivery_id]
    delivery.attempt_state = event.attempt_state
    conversation.context_tokens = event.context_tokens
    if event.releases:
        release(state, delivery)
    if event.attempt_state == "accepted":
        conversation.refusals, conversation.refused_at, conversation.refused_id = 0, None, None
    if event.attempt_state in ("refused", "not_received"):
        # Counted for the delivery back-off (contract v1.2 section 3.6).
        conversation.refusals += 1
        conversation.refused_at, conversation.refused_id = state.last_at, delivery.delivery_id
        turn = conversation.running_turn
        if delivery.kind == "steer" and event.attempt_state == "refused" and turn is not None and turn.turn_id == delivery.turn_id:
            conversation.not_steered.update(delivery.included)  # not steered again during that turn
        if delivery.kind == "reseed" and delivery.epoch == conversation.epoch:
            conversation.reseed_due = True  # replaced in the same pass


def _turn_ended(state: State, event: ev.TurnEnded) -> None:
    conversation = state.conversation.by_id[event.conversation_id]
    turn = conversation.running_turn
    assert turn is not None and turn.turn_id == event.turn_id
    turn.state = TURN.after[ev.TurnEnded, event.outcome]
    conversation.running_turn = None
    conversation.last_turn = turn
    conversation.not_steered.clear()
    state.touch_maintenance()  # the owner may be idle now (contract v1.2 section 8.1)
    message_state = MESSAGE.after[ev.TurnEnded, event.outcome]  # handled, or queued again
    for message_id in turn.messages:
        conversation.messages[message_id].state = message_state
    if event.requeued:
        conversation.queue = list(event.requeued) + conversation.queue
    for delivery_id in event.released:
        release(state, conversation.deliveries[delivery_id])
    if event.outcome != "completed":
        for delivery_id in turn.deliveries:
            delivery = conversation.deliveries[delivery_id]
            if not delivery.released:
                delivery.orphaned = True  # still unknown: held until provider.reconcile


DECIDERS = {
    inp.ProviderReceipt: decide_provider_receipt,
    inp.ProviderReconcile: decide_provider_reconcile,
    inp.EndTurn: decide_turn_ended,
}
EVOLVERS = {
    ev.TurnStarted: _turn_started,
    ev.DeliveryCreated: _delivery_created,
    ev.DeliveryReceipted: _delivery_receipted,
    ev.TurnEnded: _turn_ended,
}
REACTIONS: dict[type, Any] = {}
