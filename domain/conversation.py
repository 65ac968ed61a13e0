"""Conversations (spec section 5): provider receipts, turn ends, context
resets, approvals and failure holds; and the foreground pass that decides
human turns, coalesced wakes, steers and reseeds.

Sent ≠ accepted ≠ in the current context: a delivery's manifest (which
messages and which (cause, revision) pairs) is recorded before any provider
I/O; only an `accepted` delivery of the current epoch counts as delivered; an
`unknown` one keeps holding what it held until `provider.reconcile` — never a
blind resend. A turn that fails or is interrupted puts its human messages back
at the front of the queue, in order: no human message is ever lost.
"""

from __future__ import annotations

import datetime
import itertools
import math
from collections.abc import Callable

import msgspec

from tandem.domain import events as ev
from tandem.domain import inputs as inp
from tandem.domain.alerts import raise_alert, resolve_alert, urgent_rule
from tandem.domain.lifecycles import DELIVERY
from tandem.domain.reasons import Rejected
from tandem.domain.state import Conversation, Delivery, State, Update

Emit = Callable[[ev.Event], None]

# Context cost of the control state in a reseed, per item (spec 5.2).
reseed_task_tokens = 40
reseed_grant_tokens = 20
reseed_question_tokens = 30
reseed_action_tokens = 30

# Provenance of a delivery: the ranked candidates it records (the rest are counted).
candidates_recorded_max = 64


def numbered_owner(identifier: str, marker: str) -> str | None:
    """The conversation id of `{conversation_id}/{marker}{n}`, or None."""
    head, separator, number = identifier.rpartition(f"/{marker}")
    return head if separator and number.isdigit() else None


def _delivery(state: State, delivery_id: str) -> tuple[Conversation, Delivery]:
    conversation = state.conversations.get(numbered_owner(delivery_id, "d") or "")
    delivery = conversation.deliveries.get(delivery_id) if conversation is not None else None
    if conversation is None or delivery is None:
        raise Rejected("stale_attempt", f"no delivery {delivery_id!r}")
    return conversation, delivery


def _conversation(state: State, conversation_id: str) -> Conversation:
    conversation = state.conversations.get(conversation_id)
    if conversation is None:
        raise Rejected("unknown_conversation", f"no conversation {conversation_id!r}")
    return conversation


def _end_turn(conversation: Conversation, seq: int, outcome: str, delivered: list[str] | None) -> ev.TurnEnded:
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
        ended = _end_turn(conversation, seq, "failed", None)
        released = [d for d in ended.released if d != delivery.delivery_id]  # released by the receipt
        events.append(msgspec.structs.replace(ended, released=released, delivery_id=delivery.delivery_id))
    return events


def _settle_from(state: State, delivery_id: str, delivery_event: str, expected: str, seq: int) -> list[ev.Event]:
    conversation, delivery = _delivery(state, delivery_id)
    attempt_state = DELIVERY.target(delivery.attempt_state, delivery_event)
    if attempt_state is None:
        raise Rejected("stale_attempt", f"{delivery_id!r} is {delivery.attempt_state}, not {expected}")
    return _settle_delivery(state, conversation, delivery, attempt_state, seq)


def decide_provider_receipt(state: State, value: inp.ProviderReceipt, seq: int) -> list[ev.Event]:
    """Only while the delivery is submitting (spec 5.1)."""
    return _settle_from(state, value.delivery_id, f"receipt_{value.result}", "submitting", seq)


def decide_provider_reconcile(state: State, value: inp.ProviderReconcile, seq: int) -> list[ev.Event]:
    """Only while the delivery is unknown (spec 5.1)."""
    return _settle_from(state, value.delivery_id, f"reconcile_{value.observed}", "unknown", seq)


def decide_turn_ended(state: State, value: inp.EndTurn, seq: int) -> list[ev.Event]:
    conversation = state.conversations.get(numbered_owner(value.turn_id, "t") or "")
    if conversation is None or conversation.running_turn is None or conversation.running_turn.turn_id != value.turn_id:
        raise Rejected("stale_attempt", f"{value.turn_id!r} is not a running turn")
    delivered = list(value.delivered) if isinstance(value.delivered, list) else None
    return [_end_turn(conversation, seq, value.outcome, delivered)]


def decide_context_reset(state: State, value: inp.ResetContext, seq: int) -> list[ev.Event]:
    conversation = _conversation(state, value.conversation_id)
    events: list[ev.Event] = []
    if conversation.running_turn is not None:
        events.append(_end_turn(conversation, seq, "interrupted", None))
    events.append(
        ev.ContextReset(
            cause=seq, conversation_id=conversation.conversation_id, epoch=conversation.epoch + 1, reason=value.reason
        )
    )
    if conversation.recovery is not None:
        # A reset makes room: the reseed goes first, then a kept message.
        events.append(ev.RecoveryChanged(cause=seq, conversation_id=conversation.conversation_id, recovery=None))
    return events


def decide_approval_required(state: State, value: inp.RequireApproval, seq: int) -> list[ev.Event]:
    conversation = _conversation(state, value.conversation_id)
    if value.request_id in conversation.approvals:
        return []  # already open: a continuing condition
    return [
        ev.ApprovalOpened(
            cause=seq, conversation_id=conversation.conversation_id, request_id=value.request_id, detail=value.detail
        )
    ]


def decide_approval_resolved(state: State, value: inp.ResolveApproval, seq: int) -> list[ev.Event]:
    conversation = _conversation(state, value.conversation_id)
    if value.request_id not in conversation.approvals:
        raise Rejected("not_open", f"no open approval {value.request_id!r} on {value.conversation_id!r}")
    return [ev.ApprovalResolved(cause=seq, conversation_id=conversation.conversation_id, request_id=value.request_id)]


def decide_hold_failure(state: State, value: inp.HoldFailure, seq: int) -> list[ev.Event]:
    conversation = _conversation(state, value.conversation_id)
    if conversation.failure_held:
        return []
    return [ev.FailureHoldChanged(cause=seq, conversation_id=conversation.conversation_id, held=True)]


def decide_hold_release(state: State, value: inp.ReleaseHold, seq: int) -> list[ev.Event]:
    conversation = _conversation(state, value.conversation_id)
    if not conversation.failure_held:
        return []
    return [ev.FailureHoldChanged(cause=seq, conversation_id=conversation.conversation_id, held=False)]


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
    return sorted((state.updates[cause] for cause in causes), key=_rank_key)


class Fitted:
    """What `_fit` took, and the candidates it considered with their verdicts
    (the provenance of a delivery, spec section 8)."""

    __slots__ = ("ranked", "chosen", "used", "considered")

    def __init__(self, ranked: list[Update]) -> None:
        self.ranked = ranked
        self.chosen: list[Update] = []
        self.used = 0
        self.considered: list[tuple[Update, int, str]] = []  # (update, tokens, verdict), in rank order

    def left(self) -> list[Update]:
        """The candidates a full wake did not consider (over wake_batch_max)."""
        return self.ranked[len(self.considered) :]


def _fit(updates: list[Update], budget: int, limit: int | None = None) -> Fitted:
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


def _control_tokens(state: State, conversation: Conversation) -> int:
    """The reseed's required part: this conversation's control state."""
    total = 0
    for task_id in conversation.tasks:
        task = state.tasks[task_id]
        if task.state != "active":
            continue
        total += reseed_task_tokens
        if state.grants[task.grant_id].state == "live":
            total += reseed_grant_tokens
        total += reseed_question_tokens * task.open_questions
        total += reseed_action_tokens * sum(1 for op in task.actions if not state.actions[op].terminal)
    return total


def run_foreground_pass(state: State, cause: int, at: datetime.datetime, emit: Emit) -> None:
    """Spec 5.3: for each foreground, in id order, the first rule that
    applies; then the urgent rule for what it left undelivered."""
    for conversation_id in state.foregrounds:
        conversation = state.conversations[conversation_id]
        _conversation_pass(state, conversation, cause, at, emit)
        if conversation.urgent:
            urgent_rule(state, conversation_id, cause, at, emit)


def _delivery_id(conversation: Conversation) -> str:
    return f"{conversation.conversation_id}/d{len(conversation.deliveries) + 1}"


def _deliver(
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
) -> None:
    """Record a delivery's manifest, and why (spec section 8): the rule that
    applied, the budget, and the ranked candidates with their verdicts."""
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
                room=_room(conversation),
                message_tokens=message_tokens_total,
                control_tokens=control_tokens,
                update_tokens=update_tokens_total,
            ),
            candidates=candidates,
            candidates_total=candidates_total,
        )
    )


def _room(conversation: Conversation) -> int:
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
    # 1. Not dispatchable: keep the queue and the updates.
    if conversation.approvals or conversation.failure_held:
        return
    room = _room(conversation)
    if conversation.reseed_due and conversation.recovery is None:
        _reseed(state, conversation, cause, emit)
        return
    if conversation.recovery is not None:
        return
    if conversation.reseed_id is not None:
        reseed = conversation.deliveries[conversation.reseed_id]
        if reseed.attempt_state != "accepted":
            return
    turn = conversation.running_turn
    if turn is not None:
        # 2. Running: only urgent updates, steered into the same turn.
        if conversation.steer and conversation.deliverable:
            urgent = [
                update
                for update in _ranked(state, conversation.deliverable)
                if update.disposition == "urgent" and (update.cause_key, update.revision) not in conversation.not_steered
            ]
            fitted = _fit(urgent, room)
            if fitted.chosen:
                _deliver(state, conversation, cause, emit, "steer", turn.turn_id, "steer", [(fitted, False)], [])
        return
    if conversation.queue:
        # 3. A human turn: every queued message, then what fits.
        messages = list(conversation.queue)
        needed = sum(message_tokens(conversation, m) for m in messages)
        if needed > room:
            emit(
                ev.RecoveryChanged(
                    cause=cause, conversation_id=conversation.conversation_id, recovery="message", needed=needed, room=room
                )
            )
            return
        required = _fit(_ranked(state, conversation.deliverable), room - needed)
        optional = _fit(_ranked(state, conversation.optional), room - needed - required.used)
        turn_id = _start_turn(conversation, cause, emit, "human", "human_turn")
        _deliver(
            state, conversation, cause, emit, "turn", turn_id, "human_turn", [(required, False), (optional, True)],
            messages, needed,
        )  # fmt: skip
        return
    if conversation.deliverable and "*" not in state.paused:
        # 4. One coalesced wake: up to wake_batch_max updates that fit.
        fitted = _fit(_ranked(state, conversation.deliverable), room, state.config.wake_batch_max)
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
            return
        for event in resolve_alert(
            state, cause, compaction, detail=f"a wake fits in {room} tokens", facts=ev.AlertFacts(reason="wake_fits", room=room)
        ):
            emit(event)  # a later wake fits
        turn_id = _start_turn(conversation, cause, emit, "wake", "wake")
        _deliver(state, conversation, cause, emit, "turn", turn_id, "wake", [(fitted, False)], [])


def _reseed(state: State, conversation: Conversation, cause: int, emit: Emit) -> None:
    """A bounded reseed of the new epoch: the control state, then what fits."""
    required = _control_tokens(state, conversation)
    room = _room(conversation)
    if required > room:
        emit(
            ev.RecoveryChanged(
                cause=cause, conversation_id=conversation.conversation_id, recovery="reseed", needed=required, room=room
            )
        )
        return
    fitted = _fit(_ranked(state, conversation.deliverable), room - required)
    _deliver(state, conversation, cause, emit, "reseed", None, "reseed", [(fitted, False)], [], 0, required)
