"""Conversations (contract section 5): opening and binding them, the human's
queue and intent, context resets, approvals and failure holds.

A foreground's intent revision moves with every message queued or edited;
a background syncs it (`intent.synced`) before its proposals are claimed. A
context reset starts a new epoch: what earlier epochs' deliveries held is
released and a reseed is due. Approvals and failure holds make a foreground
not dispatchable (and an approval holds its tasks' actions). What is
delivered, and when, is the delivery area's (the foreground pass).
"""

from __future__ import annotations

from typing import Any

from tandem.domain import events as ev
from tandem.domain import inputs as inp
from tandem.domain.actions.foreman import preempt_maintenance
from tandem.domain.conversation import composition, delivery
from tandem.domain.conversation.delivery import end_turn, release
from tandem.domain.inputs import given
from tandem.domain.lifecycles import MESSAGE
from tandem.domain.lookups import known_conversation
from tandem.domain.reasons import Rejected
from tandem.domain.records import Conversation, Message
from tandem.domain.state import State
from tandem.domain.tools.rules import check_background_gates

# ----------------------------------------------------------------- deciders


def decide_open(state: State, value: inp.OpenConversation, seq: int) -> list[ev.Event]:
    if value.conversation_id in state.conversation.by_id:
        raise Rejected("already_exists", f"conversation {value.conversation_id!r} already exists")
    foreground_id = given(value.foreground_id)
    if foreground_id is not None:
        known_conversation(state, foreground_id, "foreground")
    return [
        ev.ConversationOpened(
            cause=seq,
            conversation_id=value.conversation_id,
            role=value.role,
            context_limit=value.context_limit,
            reserve=value.reserve,
            steer=value.steer,
            foreground_id=foreground_id,
            provider=value.provider,
        )
    ]


def decide_binding(state: State, value: inp.BindBackground, seq: int) -> list[ev.Event]:
    known_conversation(state, value.conversation_id, "background")
    foreground = known_conversation(state, value.foreground_id, "foreground")
    if foreground.generation is not None and value.generation <= foreground.generation:
        raise Rejected("stale_generation", f"generation {value.generation} does not exceed {foreground.generation}")
    return [
        ev.BackgroundBound(
            cause=seq, conversation_id=value.conversation_id, foreground_id=value.foreground_id, generation=value.generation
        )
    ]


def decide_message(state: State, value: inp.HumanMessage, seq: int) -> list[ev.Event]:
    conversation = known_conversation(state, value.conversation_id, "foreground")
    if value.message_id in conversation.messages:
        raise Rejected("already_exists", f"message {value.message_id!r} already exists")
    return [
        ev.MessageQueued(
            cause=seq,
            conversation_id=conversation.conversation_id,
            message_id=value.message_id,
            text=value.text,
            tokens=given(value.tokens),
            intent_revision=conversation.intent_revision + 1,
        ),
        *preempt_maintenance(state, conversation.conversation_id, value.message_id, seq),  # v1.2 section 8.1
    ]


def decide_queue_edit(state: State, value: inp.EditQueue, seq: int) -> list[ev.Event]:
    conversation = known_conversation(state, value.conversation_id, "foreground")
    message = conversation.messages.get(value.message_id)
    if message is None or not MESSAGE.allows(message.state, value.op):  # edit or withdraw: queued only
        state_text = message.state if message else "not in this conversation"
        raise Rejected("already_dispatched", f"message {value.message_id!r} is {state_text}")
    events: list[ev.Event] = [
        ev.QueueEdited(
            cause=seq,
            conversation_id=conversation.conversation_id,
            message_id=value.message_id,
            op=value.op,
            text=given(value.text),
            intent_revision=conversation.intent_revision + 1,
        )
    ]
    if conversation.recovery == "message":
        # The message that did not fit was edited or withdrawn: try again.
        events.append(ev.RecoveryChanged(cause=seq, conversation_id=conversation.conversation_id, recovery=None))
    return events


def decide_intent_synced(state: State, value: inp.SyncIntent, seq: int) -> list[ev.Event]:
    conversation = known_conversation(state, value.conversation_id, "foreground")
    if conversation.generation is None or value.generation != conversation.generation:
        raise Rejected(
            "generation_fenced", f"generation {value.generation} is not the bound generation ({conversation.generation})"
        )
    check_background_gates(state, value, [conversation.background_id])
    if value.intent_revision > conversation.intent_revision:
        raise Rejected("stale_revision", f"intent is at revision {conversation.intent_revision}, not {value.intent_revision}")
    if value.intent_revision <= conversation.synced_intent_revision:
        return []  # never lowers it
    return [ev.IntentSynced(cause=seq, conversation_id=conversation.conversation_id, synced_revision=value.intent_revision)]


def decide_context_reset(state: State, value: inp.ResetContext, seq: int) -> list[ev.Event]:
    conversation = known_conversation(state, value.conversation_id)
    events: list[ev.Event] = []
    if conversation.running_turn is not None:
        events.append(end_turn(conversation, seq, "interrupted", None))
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
    conversation = known_conversation(state, value.conversation_id)
    if value.request_id in conversation.approvals:
        return []  # already open: a continuing condition
    return [
        ev.ApprovalOpened(
            cause=seq, conversation_id=conversation.conversation_id, request_id=value.request_id, detail=value.detail
        )
    ]


def decide_approval_resolved(state: State, value: inp.ResolveApproval, seq: int) -> list[ev.Event]:
    conversation = known_conversation(state, value.conversation_id)
    if value.request_id not in conversation.approvals:
        raise Rejected("not_open", f"no open approval {value.request_id!r} on {value.conversation_id!r}")
    return [ev.ApprovalResolved(cause=seq, conversation_id=conversation.conversation_id, request_id=value.request_id)]


def decide_hold_failure(state: State, value: inp.HoldFailure, seq: int) -> list[ev.Event]:
    conversation = known_conversation(state, value.conversation_id)
    if conversation.failure_held:
        return []
    return [ev.FailureHoldChanged(cause=seq, conversation_id=conversation.conversation_id, held=True)]


def decide_hold_release(state: State, value: inp.ReleaseHold, seq: int) -> list[ev.Event]:
    conversation = known_conversation(state, value.conversation_id)
    if not conversation.failure_held:
        return []
    return [ev.FailureHoldChanged(cause=seq, conversation_id=conversation.conversation_id, held=False)]


# ----------------------------------------------------------------- evolvers


def _conversation_opened(state: State, event: ev.ConversationOpened) -> None:
    state.conversation.by_id[event.conversation_id] = Conversation(
        conversation_id=event.conversation_id,
        role=event.role,
        context_limit=event.context_limit,
        reserve=event.reserve,
        steer=event.steer,
        foreground_id=event.foreground_id,
        provider=given(event.provider),
    )
    if event.role == "foreground":
        state.conversation.foregrounds.append(event.conversation_id)
        state.conversation.foregrounds.sort()
    else:
        state.conversation.backgrounds.append(event.conversation_id)
        state.conversation.backgrounds.sort()


def _background_bound(state: State, event: ev.BackgroundBound) -> None:
    foreground = state.conversation.by_id[event.foreground_id]
    foreground.generation = event.generation
    foreground.background_id = event.conversation_id
    state.conversation.by_id[event.conversation_id].foreground_id = event.foreground_id


def _message_queued(state: State, event: ev.MessageQueued) -> None:
    conversation = state.conversation.by_id[event.conversation_id]
    conversation.messages[event.message_id] = Message(
        event.message_id, event.text, event.tokens, state=MESSAGE.after[ev.MessageQueued]
    )
    conversation.queue.append(event.message_id)
    conversation.intent_revision = event.intent_revision
    state.touch_conversation(event.conversation_id)
    state.touch_maintenance()  # the owner is active (contract v1.2 section 8.1)


def _queue_edited(state: State, event: ev.QueueEdited) -> None:
    conversation = state.conversation.by_id[event.conversation_id]
    message = conversation.messages[event.message_id]
    message.state = MESSAGE.after[ev.QueueEdited, event.op]
    if event.op == "withdraw":
        conversation.queue.remove(event.message_id)
    else:
        message.text = event.text or ""
        message.tokens = None
    conversation.intent_revision = event.intent_revision
    state.touch_conversation(event.conversation_id)
    state.touch_maintenance()  # a withdrawal may leave the owner idle


def _intent_synced(state: State, event: ev.IntentSynced) -> None:
    conversation = state.conversation.by_id[event.conversation_id]
    conversation.synced_intent_revision = event.synced_revision
    state.touch_conversation(event.conversation_id)


def _context_reset(state: State, event: ev.ContextReset) -> None:
    conversation = state.conversation.by_id[event.conversation_id]
    for delivery in conversation.deliveries.values():
        if delivery.epoch < event.epoch and not delivery.released:
            release(state, delivery)  # earlier epochs hold and count for nothing now
    conversation.epoch = event.epoch
    conversation.context_tokens = 0
    conversation.reseed_id = None
    # Contract v1.2 section 5.3: a background gets a reseed only once it has a checkpoint.
    conversation.reseed_due = conversation.role == "foreground" or conversation.checkpoint is not None


def _recovery_changed(state: State, event: ev.RecoveryChanged) -> None:
    conversation = state.conversation.by_id[event.conversation_id]
    if event.recovery is None and conversation.recovery == "reseed":
        conversation.reseed_due = True  # it fits now (or a reset made room): the reseed is due again
    conversation.recovery = event.recovery
    conversation.recovery_needed, conversation.recovery_room = (event.needed, event.room) if event.recovery else (None, None)
    if event.recovery == "reseed":
        conversation.reseed_due = False  # no reseed while it does not fit (contract v1.2 section 5.3)


def _approval_opened(state: State, event: ev.ApprovalOpened) -> None:
    state.conversation.by_id[event.conversation_id].approvals[event.request_id] = event.detail
    _touch_approval(state, event.conversation_id)


def _approval_resolved(state: State, event: ev.ApprovalResolved) -> None:
    del state.conversation.by_id[event.conversation_id].approvals[event.request_id]
    _touch_approval(state, event.conversation_id)


def _touch_approval(state: State, conversation_id: str) -> None:
    """approval_pending: the actions of the foreground's tasks (a background's
    approval holds its foreground's)."""
    conversation = state.conversation.by_id[conversation_id]
    foreground_id = conversation.foreground_id if conversation.role == "background" else conversation_id
    if foreground_id is not None and foreground_id in state.conversation.by_id:
        state.touch_conversation(foreground_id)


def _failure_hold_changed(state: State, event: ev.FailureHoldChanged) -> None:
    conversation = state.conversation.by_id[event.conversation_id]
    conversation.failure_held = event.held
    conversation.engine_held = event.held and event.by == "engine"
    if not event.held:
        # The human's release ends the delivery back-off (contract v1.2 section 3.6).
        conversation.refusals, conversation.refused_at, conversation.refused_id = 0, None, None


DECIDERS = {
    inp.OpenConversation: decide_open,
    inp.BindBackground: decide_binding,
    inp.HumanMessage: decide_message,
    inp.EditQueue: decide_queue_edit,
    inp.SyncIntent: decide_intent_synced,
    inp.ResetContext: decide_context_reset,
    inp.RequireApproval: decide_approval_required,
    inp.ResolveApproval: decide_approval_resolved,
    inp.HoldFailure: decide_hold_failure,
    inp.ReleaseHold: decide_hold_release,
}
EVOLVERS = {
    ev.ConversationOpened: _conversation_opened,
    ev.BackgroundBound: _background_bound,
    ev.MessageQueued: _message_queued,
    ev.QueueEdited: _queue_edited,
    ev.IntentSynced: _intent_synced,
    ev.ContextReset: _context_reset,
    ev.RecoveryChanged: _recovery_changed,
    ev.ApprovalOpened: _approval_opened,
    ev.ApprovalResolved: _approval_resolved,
    ev.FailureHoldChanged: _failure_hold_changed,
}
REACTIONS: dict[type, Any] = {}

# The conversation area's other rules: its turns and deliveries (contract
# section 5.2, the foreground pass) and their composition (v1.2 section 6).
MORE_RULES = (delivery, composition)
