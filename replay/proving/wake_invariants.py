"""The catalog's invariant of contract v1.2 section 3.7 (issue 23): the RFC's
routing table "urgent + idle -> notify now; coalesced wake if permitted, else
next boundary". Restated from the state (which updates are deliverable and
urgent, what holds a foreground, the room left: written out here, the
back-off from restated.py), not asked of domain/budgets/rules.py or
domain/conversation/delivery.py, so the check does not share the code it checks."""

from __future__ import annotations

import math
from collections.abc import Callable

from tandem.domain.records import Conversation, Update
from tandem.projections.base import rfc3339
from tandem.domain.state import State
from tandem.replay.proving.model import World, state_invariant
from tandem.replay.proving.restated import HOLDING, backoff_until


def _held(conversation: Conversation, update: Update) -> bool:
    """Contract section 5.2: a delivery of the current epoch that still holds
    the update's current revision (submitting, accepted or unknown, not released)."""
    pair = (update.cause_key, update.revision)
    return any(
        delivery.epoch == conversation.epoch and delivery.attempt_state in HOLDING and not delivery.released
        and pair in delivery.included
        for delivery in conversation.deliveries.values()
    )  # fmt: skip


def _tokens(update: Update) -> int:
    if update.tokens is not None:
        return update.tokens
    return math.ceil(len(update.text.encode("utf-8")) / 4) if update.text else 0


def _backing_off(state: State, conversation: Conversation, urgent: list[Update]) -> bool:
    until = backoff_until(state, conversation)
    return until is not None and state.last_at is not None and state.last_at < until


def _reseed_pending(state: State, conversation: Conversation, urgent: list[Update]) -> bool:
    reseed = conversation.deliveries.get(conversation.reseed_id) if conversation.reseed_id else None
    return conversation.reseed_due or (reseed is not None and reseed.attempt_state != "accepted")


def _none_fits(state: State, conversation: Conversation, urgent: list[Update]) -> bool:
    room = conversation.context_limit - conversation.reserve - conversation.context_tokens
    return all(_tokens(update) > room for update in urgent)


# Section 3.7's limits, in the order the first that applies is named.
_LIMITS: dict[str, Callable[[State, Conversation, list[Update]], bool]] = {
    "provider_unready": lambda s, c, u: c.provider is not None and bool(s.alerts.incidents.get(f"provider/{c.provider}")),
    "backoff": _backing_off,
    "approval": lambda s, c, u: bool(c.approvals),
    "failure_hold": lambda s, c, u: c.failure_held,
    "context_recovery": lambda s, c, u: c.recovery is not None,
    "reseed": _reseed_pending,
    "paused": lambda s, c, u: "*" in s.actions.paused,
    "context_limit": _none_fits,
}


def _said(deferred: tuple | None) -> str:
    if deferred is None:
        return "null"
    reason, until, urgent = deferred
    return f"{reason} until {rfc3339(until) if until is not None else 'null'} (urgent {urgent})"


@state_invariant
def urgent_idle_not_held_by_interval(world: World) -> str | None:
    """"urgent + idle -> notify now; coalesced wake if permitted, else next
    boundary" (contract v1.2 section 3.7): after a pass, a foreground with no
    running turn and an urgent deliverable update was not left so by the wake
    interval or the batch wait — a limit holds it (its provider not ready, a
    refusal's back-off, an approval, a failure hold, context recovery, a
    reseed not accepted, the `*` pause, no urgent update fitting) and its
    deferral names the first that applies, in the state and the
    conversations view."""
    state = world.state
    views = world.views if world.views is not None else world.replayed_views
    rows = {row["conversation_id"]: row for row in views.view("conversations")}
    waiting: dict[str, list[Update]] = {}
    for update in state.inbox.updates.values():
        if update.triage_state == "triaged" and update.disposition == "urgent" and update.foreground_id is not None:
            waiting.setdefault(update.foreground_id, []).append(update)
    for conversation_id in state.conversation.foregrounds:
        conversation = state.conversation.by_id[conversation_id]
        urgent = [u for u in waiting.get(conversation_id, []) if not _held(conversation, u)]
        if conversation.running_turn is not None or not urgent:
            continue
        holding = [reason for reason, holds in _LIMITS.items() if holds(state, conversation, urgent)]
        keys = sorted(update.cause_key for update in urgent)
        deferred = conversation.deferred
        if not holding:
            return f"{conversation_id} is idle with urgent {keys} undelivered and nothing holds them (deferred {_said(deferred)})"
        if deferred is None or deferred[0] != holding[0]:
            return f"{conversation_id} is idle with urgent {keys} held back by {holding[0]}, but deferred {_said(deferred)}"
        shown = rows[conversation_id]["deferred"]
        if shown is None or shown["reason"] != holding[0]:
            return f"{conversation_id}'s view shows deferred {shown} while {holding[0]} holds urgent {keys}"
    return None
