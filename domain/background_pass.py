"""The background pass (contract v1.2 section 5.3): a background's reseed
after a context reset, once it has written a checkpoint.

After the foregrounds, for each background in id order whose reset made a
reseed due: unless it is not dispatchable (an open approval, a failure
hold, a delivery back-off, its provider unready, or context recovery), one
reseed delivery (kind `reseed`, no turn): its **required part** is its
foreground's control state costed as a foreground's (contract section 5.2),
+ 30 per open or exhausted investigation of the background, + its latest
checkpoint's tokens; its **optional part** the untriaged updates, oldest
`first_seen_at` first (then `cause_key`), that fit. If the required part
does not fit in `context_limit - reserve`, no reseed is made and the
background is `context_recovery_required` until it fits (below) or its
next reset. A background's deliveries hold nothing and count as delivered for nothing. A
refused reseed is due again (domain/conversation/delivery.py's receipt), and replaced
once the back-off allows. Until the reseed of its epoch is accepted, the
background's gated inputs are refused `context_not_reseeded`
(domain/tools/rules.py's `check_background_gates`, section 5.4).

Context recovery is a hold the background can leave (section 5.3's
Decision): every pass costs the required part of a background in recovery
again, from the state; once it fits, the background leaves recovery and its
reseed is due again (made in the same pass if it is dispatchable); while it
does not, a changed figure is recorded. What shrinks it: a smaller
checkpoint or a closed investigation (the two inputs section 5.4 admits in
recovery), or the foreground's control state.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable

from tandem.domain import events as ev
from tandem.domain.budgets.rules import Deferral, delivery_deferral, record_deferral, unready_deferral
from tandem.domain.conversation.delivery import context_room, control_state_tokens, deliver, fit, reseed_room
from tandem.domain.investigations.rules import unresolved_investigations
from tandem.domain.lifecycles import UPDATE
from tandem.domain.records import Conversation, Update
from tandem.domain.state import State

Emit = Callable[[ev.Event], None]

# Context cost of an open or exhausted investigation in a background reseed (contract v1.2 section 5.3).
reseed_investigation_tokens = 30


def run_background_pass(state: State, cause: int, at: datetime.datetime, emit: Emit) -> None:
    """Section 9 step 5: the reseeds due, backgrounds in id order; and why a
    due one waits, when that changed (only then: a v1 background records nothing)."""
    for conversation_id in state.conversation.backgrounds:
        conversation = state.conversation.by_id[conversation_id]
        if conversation.recovery == "reseed":
            cost_again(state, conversation, cause, emit)
        if not conversation.reseed_due and conversation.deferred is None:
            continue
        deferral: Deferral | None = None
        if conversation.reseed_due:
            deferral = unready_deferral(state, conversation) or delivery_deferral(state, conversation, at)
            if deferral is None and not (conversation.approvals or conversation.failure_held or conversation.recovery):
                background_reseed(state, conversation, cause, emit)
        record_deferral(state, conversation, cause, deferral, emit)


def required_tokens(state: State, background: Conversation) -> int:
    """The required part: its foreground's control state, its unresolved
    investigations, and its latest checkpoint."""
    foreground = state.conversation.by_id.get(background.foreground_id or "")
    control = control_state_tokens(state, foreground) if foreground is not None else 0
    investigations = reseed_investigation_tokens * len(unresolved_investigations(state, background.conversation_id))
    checkpoint = background.checkpoint.tokens if background.checkpoint is not None else 0
    return control + investigations + checkpoint


def cost_again(state: State, background: Conversation, cause: int, emit: Emit) -> None:
    """A background in context recovery, costed again from the state: out of
    recovery once its required part fits (its reseed due again), else the
    new figure recorded if it changed (section 5.3's Decision)."""
    required, room = required_tokens(state, background), context_room(background)
    if required <= room:
        emit(ev.RecoveryChanged(cause=cause, conversation_id=background.conversation_id, recovery=None, needed=required, room=room))
    elif (required, room) != (background.recovery_needed, background.recovery_room):
        emit(ev.RecoveryChanged(cause=cause, conversation_id=background.conversation_id, recovery="reseed", needed=required, room=room))


def _untriaged_key(update: Update) -> tuple[datetime.datetime, str]:
    return update.first_seen_at, update.cause_key


def background_reseed(state: State, conversation: Conversation, cause: int, emit: Emit) -> None:
    """One background reseed: the required part, then the untriaged updates that fit."""
    assert conversation.checkpoint is not None  # only a reset with a checkpoint makes it due
    required = required_tokens(state, conversation)
    left = reseed_room(conversation, required, cause, emit)
    if left is None:
        return
    untriaged = sorted((u for u in state.inbox.updates.values() if u.triage_state == UPDATE.initial), key=_untriaged_key)
    optional = fit(untriaged, left)
    deliver(
        state, conversation, cause, emit, "reseed", None, BACKGROUND_RESEED, [(optional, True)], [], 0, required,
        conversation.checkpoint.checkpoint_id,
    )  # fmt: skip


BACKGROUND_RESEED = "background_reseed"  # the rule a background reseed records (its explain text)
