"""Budgets (contract v1.2 section 3): an action's execution deadline (stop
and alert), its retry back-off, a conversation's delivery back-off and retry
cap, the wake interval and batch wait, and the alert of an exhausted action.

Time is the inputs' `at`. A deadline is a timer: the pass stops the action at
the first input whose `at` reaches it, in time order with the contract's
timers (`deadline_rule`, called by the alerts area's time rules). Back-off, wake and retry times are not timers: the actions pass
and the foreground pass compare them with `at` (`retry_blocked`,
`delivery_deferral`, `wake_deferral`), and a change of why a conversation's
next delivery waits is recorded (`DeliveryDeferred`, with its facts). Every
setting defaults to the value that changes nothing, so a v1 trace records no
event of this area.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import msgspec

from tandem.domain import events as ev
from tandem.domain.alerts.rules import raise_alert
from tandem.domain.lifecycles import ACTION
from tandem.domain.records import Action, Conversation
from tandem.domain.actions.state import move_action
from tandem.domain.actions.state import drop_deadline
from tandem.domain.conversation.state import set_deferred
from tandem.domain.state import State

Emit = Callable[[ev.Event], None]

Deferral = tuple[str, datetime.datetime | None, ev.DeferralFacts]  # (reason, until, facts)


def _seconds(value: int) -> datetime.timedelta:
    return datetime.timedelta(seconds=value)


def _time(value: datetime.datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


# ------------------------------------------------------ 3.3 execution deadline


def deadline_for(state: State, action: Action, at: datetime.datetime) -> datetime.datetime | None:
    """The deadline an attempt's envelope records: set at the first claim
    from the grant revision in force, never moved after."""
    if action.deadline_at is not None:
        return action.deadline_at
    seconds = state.authority.grants[action.grant_id].execution_deadline_s
    return at + _seconds(seconds) if seconds is not None and not action.attempts else None


def deadline_rule(state: State, cause: int) -> Callable[[], ev.DeadlineExceeded]:
    """The time rules' step for execution deadlines (`alerts.run_time_rules`
    calls it while the first one, in time order then by id, is due): the
    event that stops that action (its evolver removes the timer)."""

    def stop_first() -> ev.DeadlineExceeded:
        deadline_at, operation_id = state.actions.deadline_timers.entries[0]
        action = state.actions.by_id[operation_id]
        if ACTION.allows(action.state, "request_cancel"):
            action_state = ACTION.target(action.state, "request_cancel")
        else:
            action_state = ACTION.target(action.state, "expire") or action.state  # cancel_requested: unchanged
        assert action_state is not None and action.first_claim_at is not None
        facts = ev.DeadlineFacts(
            attempt_id=action.attempts[0].attempt_id,
            claimed_at=action.first_claim_at,
            grant_revision=action.attempts[0].envelope.grant_revision,
            execution_deadline_s=int((deadline_at - action.first_claim_at).total_seconds()),
            state=action.state,
        )
        return ev.DeadlineExceeded(
            cause=cause, operation_id=operation_id, deadline_at=deadline_at, action_state=action_state, facts=facts
        )

    return stop_first


# ------------------------------------------------------ 3.5 action retry back-off


def retry_at(state: State, action: Action, at: datetime.datetime) -> datetime.datetime | None:
    """A refused action back to pending: `at` + retry_backoff_s x 2^(n-1), n
    its refused and not received attempts so far (this one included)."""
    seconds = state.authority.grants[action.grant_id].retry_backoff_s
    if not seconds:
        return None
    refused = 1 + sum(1 for attempt in action.attempts[:-1] if attempt.state in ("refused", "not_received"))
    return at + _seconds(seconds * 2 ** (refused - 1))


def retry_blocked(state: State, action: Action) -> bool:
    return action.retry_at is not None and state.last_at is not None and state.last_at < action.retry_at


def touch_backed_off(state: State, at: datetime.datetime) -> None:
    """The pending actions whose back-off `at` ended: the actions pass looks again."""
    for operation_id, until in state.actions.backing_off.items():
        if until <= at and "retry_backoff" in state.actions.by_id[operation_id].blocked_by:
            state.touch_action(operation_id)


# ----------------------------------------------- 3.6, 3.7 deferred deliveries


def backoff_until(state: State, conversation: Conversation) -> datetime.datetime | None:
    """No delivery before the latest refusal + delivery_backoff_s x 2^(refusals-1)."""
    if not conversation.refusals or conversation.refused_at is None:
        return None
    return conversation.refused_at + _seconds(state.authority.config.delivery_backoff_s * 2 ** (conversation.refusals - 1))


def unready_deferral(state: State, conversation: Conversation) -> Deferral | None:
    """ v1.2 section 4.3 (first in section 3.10's order): nothing is delivered
    while its provider's incident is open; until null (its recovery ends it)."""
    if not state.provider_unready(conversation):
        return None
    assert conversation.provider is not None
    provider = state.health.providers.get(conversation.provider)
    facts = ev.DeferralFacts(
        provider=conversation.provider,
        incident_id=f"provider/{conversation.provider}",
        observed_at=provider.incident_observed_at if provider is not None else None,
    )
    return "provider_unready", None, facts


def delivery_deferral(state: State, conversation: Conversation, at: datetime.datetime) -> Deferral | None:
    """3.6: the back-off after a refusal covers every delivery kind."""
    until = backoff_until(state, conversation)
    if until is None or at >= until:
        return None
    facts = ev.DeferralFacts(
        refusals=conversation.refusals,
        delivery_id=conversation.refused_id,
        refused_at=conversation.refused_at,
        delivery_backoff_s=state.authority.config.delivery_backoff_s,
    )
    return "backoff", until, facts


def wake_deferral(state: State, conversation: Conversation, at: datetime.datetime, urgent: bool) -> Deferral | None:
    """3.7: a coalesced wake that carries an urgent update waits for nothing
    (urgent + idle: notify now); any other waits for the interval since the
    previous wake, then (unless a full batch waits) for the oldest
    deliverable update's batch wait."""
    config = state.authority.config
    if urgent:
        return None
    if config.wake_min_interval_s and conversation.last_wake_at is not None:
        until = conversation.last_wake_at + _seconds(config.wake_min_interval_s)
        if at < until:
            facts = ev.DeferralFacts(last_wake_at=conversation.last_wake_at, wake_min_interval_s=config.wake_min_interval_s)
            return "wake_interval", until, facts
    waiting = len(conversation.deliverable)
    if not config.wake_batch_wait_s or waiting >= config.wake_batch_max:
        return None
    oldest = min(
        (state.inbox.updates[cause_key] for cause_key in conversation.deliverable),
        key=lambda update: (update.triaged_at or at, update.cause_key),
    )
    since = oldest.triaged_at or at
    until = since + _seconds(config.wake_batch_wait_s)
    if at >= until:
        return None
    facts = ev.DeferralFacts(
        cause_key=oldest.cause_key, deliverable_since=since, waiting=waiting, wake_batch_wait_s=config.wake_batch_wait_s
    )
    return "batch_wait", until, facts


# --------------------------------------- 3.7 what holds an urgent update back


def _approval(state: State, conversation: Conversation, tokens: int, room: int) -> ev.DeferralFacts | None:
    return ev.DeferralFacts(approvals=sorted(conversation.approvals)) if conversation.approvals else None


def _failure_hold(state: State, conversation: Conversation, tokens: int, room: int) -> ev.DeferralFacts | None:
    """The engine's hold after its retries (the retry cap, 3.6), or the human's."""
    if not conversation.failure_held:
        return None
    if not conversation.engine_held:
        return ev.DeferralFacts(held_by="human")
    retries_max = state.authority.config.delivery_retries_max
    return ev.DeferralFacts(held_by="engine", refusals=conversation.refusals, delivery_retries_max=retries_max)


def _context_recovery(state: State, conversation: Conversation, tokens: int, room: int) -> ev.DeferralFacts | None:
    return ev.DeferralFacts(recovery=conversation.recovery) if conversation.recovery is not None else None


def _reseed(state: State, conversation: Conversation, tokens: int, room: int) -> ev.DeferralFacts | None:
    """This epoch's reseed, due or not yet accepted."""
    reseed_id = conversation.reseed_id
    if not conversation.reseed_due and (reseed_id is None or conversation.deliveries[reseed_id].attempt_state == "accepted"):
        return None
    return ev.DeferralFacts(delivery_id=reseed_id)


def _paused(state: State, conversation: Conversation, tokens: int, room: int) -> ev.DeferralFacts | None:
    return ev.DeferralFacts() if "*" in state.actions.paused else None


def _context_limit(state: State, conversation: Conversation, tokens: int, room: int) -> ev.DeferralFacts | None:
    return ev.DeferralFacts(tokens=tokens, room=room) if tokens > room else None


def urgent_deferral(
    state: State, conversation: Conversation, deferral: Deferral | None, urgent: str, tokens: int, room: int
) -> Deferral | None:
    """3.7: the deferral of an idle foreground whose urgent update (`urgent`,
    the first by rank; `tokens`: the fewest any urgent update needs) the pass
    left undelivered names what holds it back: a deferral of every delivery
    (4.3, 3.6) as it is, else the first of URGENT_HOLDS that applies; its
    facts name the update."""
    if deferral is None or deferral[0] not in HOLDS_EVERY_DELIVERY:
        for reason, holds in URGENT_HOLDS.items():
            facts = holds(state, conversation, tokens, room)
            if facts is not None:
                deferral = reason, None, facts
                break
    if deferral is None:
        return None  # nothing holds it: a wake carried it (or a rule is broken)
    reason, until, facts = deferral
    return reason, until, msgspec.structs.replace(facts, urgent=urgent)


def record_deferral(state: State, conversation: Conversation, cause: int, deferral: Deferral | None, emit: Emit) -> None:
    """Record why the conversation's next delivery waits, when that changed
    (3.7: also when the urgent update it holds back changed)."""
    now = (deferral[0], deferral[1], deferral[2].urgent) if deferral is not None else None
    if now == conversation.deferred:
        return
    emit(
        ev.DeliveryDeferred(
            cause=cause,
            conversation_id=conversation.conversation_id,
            reason=deferral[0] if deferral is not None else None,
            until=deferral[1] if deferral is not None else None,
            facts=deferral[2] if deferral is not None else None,
        )
    )


def engine_hold(state: State, conversation: Conversation, seq: int) -> list[ev.Event]:
    """3.6: a refusal past delivery_retries_max holds the conversation (the
    first send and every allowed re-send were refused)."""
    retries_max = state.authority.config.delivery_retries_max
    refusals = conversation.refusals + 1
    if retries_max is None or refusals <= retries_max or conversation.failure_held:
        return []
    return [
        ev.FailureHoldChanged(
            cause=seq,
            conversation_id=conversation.conversation_id,
            held=True,
            by="engine",
            refusals=refusals,
            delivery_retries_max=retries_max,
        )
    ]


# ----------------------------------------------------------------- reactions


def _at(state: State) -> datetime.datetime:
    assert state.last_at is not None
    return state.last_at


def _on_deadline(state: State, event: ev.DeadlineExceeded) -> list[ev.Event]:
    facts = event.facts
    return raise_alert(
        state,
        event.cause,
        f"deadline_exceeded:{event.operation_id}",
        _at(state),
        detail=f"first claimed {_time(facts.claimed_at)} ({facts.attempt_id}), deadline {_time(event.deadline_at)}",
        facts=ev.AlertFacts(
            operation_id=event.operation_id,
            attempt_id=facts.attempt_id,
            deadline_at=event.deadline_at,
            grant_revision=facts.grant_revision,
            execution_deadline_s=facts.execution_deadline_s,
        ),
    )


def _on_failure_hold(state: State, event: ev.FailureHoldChanged) -> list[ev.Event]:
    if event.by != "engine" or not event.held:
        return []
    return raise_alert(
        state,
        event.cause,
        f"delivery_failing:{event.conversation_id}",
        _at(state),
        detail=f"{event.refusals} refused deliveries in a row (delivery_retries_max {event.delivery_retries_max})",
        facts=ev.AlertFacts(
            conversation_id=event.conversation_id,
            refusals=event.refusals,  # type: ignore[arg-type]
            delivery_retries_max=event.delivery_retries_max,  # type: ignore[arg-type]
        ),
    )


def _on_attempt(state: State, event: ev.AttemptUpdated) -> list[ev.Event]:
    """3.8: with exhausted_alerts, an action exhausted at max_attempts."""
    refusal = event.refusal
    if not state.authority.config.exhausted_alerts or refusal is None or refusal.reason != "max_attempts":
        return []
    return raise_alert(
        state,
        event.cause,
        f"exhausted:{event.operation_id}",
        _at(state),
        detail=f"{refusal.attempts} attempts refused or not received (max_attempts {refusal.max_attempts})",
        facts=ev.AlertFacts(operation_id=event.operation_id, attempts=refusal.attempts, max_attempts=refusal.max_attempts),
    )


# ----------------------------------------------------------------- evolvers


def _deadline_exceeded(state: State, event: ev.DeadlineExceeded) -> None:
    drop_deadline(state, event.deadline_at, event.operation_id)
    move_action(state, state.actions.by_id[event.operation_id], event.action_state)


def _delivery_deferred(state: State, event: ev.DeliveryDeferred) -> None:
    urgent = event.facts.urgent if event.facts is not None else None
    set_deferred(state, event.conversation_id, (event.reason, event.until, urgent) if event.reason is not None else None)


# 3.7: the deferrals of every delivery, named first (3.10's order).
HOLDS_EVERY_DELIVERY = frozenset({"provider_unready", "backoff"})
# 3.7: then what else can keep an urgent update out of an idle foreground, in
# this order (contract section 5.3's rule 1, then rule 4's pause and room).
URGENT_HOLDS: dict[str, Callable[[State, Conversation, int, int], ev.DeferralFacts | None]] = {
    "approval": _approval,
    "failure_hold": _failure_hold,
    "context_recovery": _context_recovery,
    "reseed": _reseed,
    "paused": _paused,
    "context_limit": _context_limit,
}

DECIDERS: dict[type, Any] = {}
EVOLVERS = {
    ev.DeadlineExceeded: _deadline_exceeded,
    ev.DeliveryDeferred: _delivery_deferred,
}
REACTIONS = {
    ev.DeadlineExceeded: _on_deadline,
    ev.FailureHoldChanged: _on_failure_hold,
    ev.AttemptUpdated: _on_attempt,
}
