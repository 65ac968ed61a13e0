"""Running invariants: `Monitor` checks a list of them as inputs are applied
to an engine (the fuzzer, the bounded checker and the property tests all use it)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from tandem.domain import events as ev
from tandem.domain.events import Event, decode_event, encode_event
from tandem.domain.inputs import Input
from tandem.domain.rules import evolve
from tandem.domain.state import State
from tandem.projections import Views
from tandem.replay.proving.invariants import catalog
from tandem.replay.proving.model import Applying, Invariant, InvariantViolation, World
from tandem.replay.proving.state_invariants import RESTART_IS_REPLAY

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
        applying = Applying(value, self.inputs, line)
        for event in events:
            stored = decode_event(encode_event(event))
            if stored != event:
                raise InvariantViolation(RESTART_IS_REPLAY, f"{type(event).__name__} does not survive encode/decode", applying, event)
            for invariant in self.event_checks:
                _run(invariant, applying, event, invariant.check, self.replayed, stored, applying)
            applying.events.append(stored)
            self._fold(stored)
        world = World(state, views, self.replayed, self.replayed_views, applying)
        for invariant in self.state_checks:
            _run(invariant, applying, None, invariant.check, world)


def _run(invariant: Invariant, applying: Applying, event: Event | None, check: Callable[..., Any], *arguments: Any) -> None:
    try:
        problem = check(*arguments)
    except InvariantViolation:
        raise
    except AssertionError as error:
        problem = str(error) or "assertion failed"
    if problem:
        raise InvariantViolation(invariant, problem, applying, event)
