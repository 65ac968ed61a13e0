"""What a thing is now, and what an event made it: asked of its lifecycle
(domain/lifecycles.py, the `after` tables), not restated here.

An event "changes" a thing when its lifecycle's `after` table says what it
leaves it in, or when it records that state itself (the events the tables
leave out: "the event says"). A transition that can only loop (a task's
`revise`: active to active) changes nothing: no "since" points at it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tandem.domain import events as ev
from tandem.domain.lifecycles import (
    ACTION,
    ATTEMPT,
    DELIVERY,
    INITIAL,
    LIFECYCLES,
    OBLIGATION,
    QUESTION,
    RUNTIME,
    TASK,
    Lifecycle,
)
from tandem.replay.explain.keys import Key
from tandem.replay.explain.log import Resolver, source
from tandem.replay.explain.model import Current

# The events that record the state they leave a thing in, and the field that says it.
RECORDED: dict[str, dict[type, str]] = {
    ACTION.name: {
        ev.AttemptUpdated: "action_state",
        ev.ActionOutcomeReported: "action_state",
        ev.DeadlineExceeded: "action_state",
    },
    ATTEMPT.name: {ev.AttemptUpdated: "attempt_state", ev.ActionOutcomeReported: "attempt_state"},
    DELIVERY.name: {ev.DeliveryReceipted: "attempt_state"},
}
# The events that fence the actions they list (in `fenced`), re-stamping the others
# (SourceRuleApplied fences the one action it names).
FENCES: frozenset[type] = frozenset(
    kind
    for kind, name in ACTION.after_transitions.items()
    if name == "fence" and not isinstance(kind, tuple)
)
# Explain's own two-state things (no lifecycle holds them).
SWITCHES: dict[type, str] = {
    ev.ScopePaused: "paused",
    ev.ScopeResumed: "resumed",
    ev.ApprovalOpened: "open",
    ev.ApprovalResolved: "resolved",
}


def _loops(lifecycle: Lifecycle) -> frozenset[Any]:
    """The `after` keys whose transition only ever loops back to its state."""
    return frozenset(
        key
        for key, name in lifecycle.after_transitions.items()
        if name != INITIAL
        and all(state == target for (state, event), target in lifecycle.table.items() if event == name)
    )


_LOOPS = {lifecycle.name: _loops(lifecycle) for lifecycle in LIFECYCLES}


def created_by(lifecycle: Lifecycle) -> tuple[type, ...]:
    """The event types that make such a thing (declared INITIAL)."""
    return tuple(key for key, name in lifecycle.after_transitions.items() if name == INITIAL)


def state_after(lifecycle: Lifecycle, event: Any, identifier: str | None = None) -> str | None:
    """The state `event` left the thing `identifier` in (None: unchanged)."""
    kind = type(event)
    field = RECORDED.get(lifecycle.name, {}).get(kind)
    if field is not None:
        return getattr(event, field)
    if lifecycle is ACTION and kind in FENCES and identifier not in event.fenced:
        return None  # re-stamped, not fenced
    if lifecycle is RUNTIME and kind is ev.ToolPolicySet and identifier not in event.revoked:
        return None  # re-stamped, not revoked
    if kind in _LOOPS[lifecycle.name]:
        return None
    return lifecycle.state_after(event)


def changes(lifecycle: Lifecycle, identifier: str | None = None) -> Callable[[Any], str | None]:
    return lambda event: state_after(lifecycle, event, identifier)


def now(
    resolver: Resolver, key: Key, state_of: Callable[[Any], str | None], before: int | None = None
) -> Current | None:
    """The state of `key`'s thing at `before` (the end of the log if None), and the event that set it."""
    entry = resolver.find(key, before, lambda event: state_of(event) is not None)
    return Current(state=state_of(entry[1]) or "", source=source(entry)) if entry is not None else None


def action_at(resolver: Resolver, operation_id: str, before: int | None = None) -> Current | None:
    return now(resolver, ("action", operation_id), changes(ACTION, operation_id), before)


def question_now(resolver: Resolver, question_id: str) -> Current | None:
    return now(resolver, ("question", question_id), changes(QUESTION))


def task_now(resolver: Resolver, task_id: str) -> Current | None:
    return now(resolver, ("task", task_id), changes(TASK))


def obligation_now(resolver: Resolver, operation_id: str) -> Current | None:
    return now(resolver, ("obligation", operation_id), changes(OBLIGATION))


def switch_now(resolver: Resolver, key: Key) -> Current | None:
    return now(resolver, key, lambda event: SWITCHES.get(type(event)))
