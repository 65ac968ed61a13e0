"""The registry: every area's DECIDERS, EVOLVERS and REACTIONS merged into
one map each, and the record of an input (`record`, `decide`, `evolve`).

An input's path: `decide` checks idempotency and the actor (contract section 1),
then calls the decider of its kind, which lives in its area (authority, tasks,
actions, inbox, consumer, conversation, delivery, alerts). Each event it
causes is applied by `evolve`, one dict lookup to its area's evolver, and
followed by its reactions (`reacting`: the alerts area's rules for what that
event made true). The dispatch pass (domain/dispatch.py) then decides what the
engine does by itself.

At import, this module asserts that no key appears in two areas' maps, that
every input kind has a decider and every event type an evolver, and that
reactions answer only events.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from tandem.domain.areas import area_modules
from tandem.domain import events as ev
from tandem.domain import inputs as inp
from tandem.domain.reasons import Rejected
from tandem.domain.records import TraceProgress
from tandem.domain.state import State

Decider = Callable[[State, Any, int], list[ev.Event]]
Evolver = Callable[[State, Any], None]
Reaction = Callable[[State, Any], list[ev.Event]]
Emit = Callable[[ev.Event], None]

# Each area's rules, and the modules an area keeps more of its rules in (its
# rules.py names them in `MORE_RULES`): each has DECIDERS, EVOLVERS and
# REACTIONS maps at its foot.
AREAS = tuple(module for rules in area_modules("rules") for module in (rules, *getattr(rules, "MORE_RULES", ())))


# ------------------------------------------------------------ the record


def record(state: State, value: inp.Input, seq: int, file: str | None, line: int | None) -> list[ev.Event]:
    """The events one input causes, its own record first. Never raises Rejected."""
    try:
        events = decide(state, value, seq)
    except Rejected as rejection:
        return [
            ev.InputRejected(
                seq=seq, file=file, line=line, input=value, reason=rejection.reason, detail=rejection.detail
            ),
            *rejection.consequences,
        ]
    return [ev.InputAccepted(seq=seq, file=file, line=line, input=value), *events]


def decide(state: State, value: inp.Input, seq: int) -> list[ev.Event]:
    """Pure: no I/O, no clock (time is the input's `at`), no mutation of the
    state. Checks run in the contract's order (section 1): idempotency,
    `not_authorized`, then the kind's checks in the order docs/contract/ lists
    them; the first that fails is the reason. A rejection raises `Rejected`
    before any event is made, so a refused input changes nothing."""
    if value.id is not None:
        known = state.idempotency.get(value.id)
        if known is not None:
            if known == hashlib.sha256(inp.canonical_body(value)).digest():
                raise Rejected("duplicate_input", f"input id {value.id!r} was already recorded")
            raise Rejected("idempotency_conflict", f"input id {value.id!r} was recorded with another body")
    accepted = value.actors
    if value.sender not in accepted:
        raise Rejected("not_authorized", f"{value.input_type} accepts {', '.join(accepted)}, not {value.sender}")
    return DECIDERS[type(value)](state, value, seq)


def _input_recorded(state: State, event: ev.InputAccepted | ev.InputRejected) -> None:
    value = event.input
    state.seq = event.seq
    state.previous_at = state.last_at  # contract v1.2 section 4.5: the gap an input follows
    state.last_at = value.at
    if state.configurable and value.input_type != "engine.configure":
        state.configurable = False  # for good: nothing sets it back
    if value.id is not None:
        reason = event.reason if type(event) is ev.InputRejected else None
        if reason not in ("duplicate_input", "idempotency_conflict"):
            state.idempotency.setdefault(value.id, hashlib.sha256(inp.canonical_body(value)).digest())


def _source_progressed(state: State, event: ev.SourceProgressed) -> None:
    state.traces[event.file] = TraceProgress(event.line, event.offset, event.digest)


RECORD_EVOLVERS = {
    ev.InputAccepted: _input_recorded,
    ev.InputRejected: _input_recorded,
    ev.SourceProgressed: _source_progressed,
}


# ------------------------------------------------------------ the maps


def _merged(name: str, maps: list[Mapping[type, Any]]) -> dict[type, Any]:
    merged: dict[type, Any] = {}
    for entries in maps:
        twice = set(merged) & set(entries)
        assert not twice, f"{name}: {sorted(t.__name__ for t in twice)} in two areas"
        merged.update(entries)
    return merged


DECIDERS: dict[type, Decider] = _merged("DECIDERS", [area.DECIDERS for area in AREAS])
EVOLVERS: dict[type, Evolver] = _merged("EVOLVERS", [RECORD_EVOLVERS, *(area.EVOLVERS for area in AREAS)])
REACTIONS: dict[type, Reaction] = _merged("REACTIONS", [area.REACTIONS for area in AREAS])

assert set(DECIDERS) == set(inp.AnyInput.__args__), "every input kind needs a decider"  # type: ignore[attr-defined]
assert set(EVOLVERS) == set(ev.EVENT_TYPES.values()), "every event needs an evolver"
assert set(REACTIONS) <= set(ev.EVENT_TYPES.values()), "reactions answer events"


def evolve(state: State, event: ev.Event) -> State:
    """Apply one recorded event to `state` (in place) and return it. It
    re-validates nothing (events are facts) and never runs a state machine."""
    EVOLVERS[type(event)](state, event)
    state.position += 1
    return state


def reacting(state: State, emit: Emit) -> Emit:
    """`emit`, followed by the reactions to what was emitted (recursively):
    a reaction runs after its event is applied, so it reads the state that
    event made.

    Depth first, each rule's events taken one at a time (a rule may be a
    generator that reads what its earlier events did), with an explicit
    stack: a closure that called itself would be a reference cycle, and
    every input's events, held by it, would wait for the cyclic collector
    instead of being freed when the input is done (measured: ~13 objects of
    cyclic garbage an input, and the collections that find them)."""
    reactions = REACTIONS

    def emit_and_react(event: ev.Event) -> None:
        emit(event)
        rule = reactions.get(type(event))
        if rule is None:
            return
        stack = [iter(rule(state, event))]
        while stack:
            follow = next(stack[-1], None)
            if follow is None:
                stack.pop()
                continue
            emit(follow)
            rule = reactions.get(type(follow))
            if rule is not None:
                stack.append(iter(rule(state, follow)))

    return emit_and_react
