"""What an invariant is: a named check, the two decorators that make one,
and what a check is given (`Applying`, `World`) and raises
(`InvariantViolation`). The checks themselves are in `event_invariants.py`
and `state_invariants.py`; `invariants.py` is the catalog.
"""

from __future__ import annotations

import datetime
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from tandem.domain.events import Event
from tandem.domain.inputs import Input, format_at
from tandem.domain.state import State
from tandem.projections import Views

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


def event_invariant(function: Callable[[State, Event, "Applying"], str | None]) -> Invariant:
    """Decorator: `function(before, event, applying)` -> None or what is wrong."""
    return Invariant(function.__name__, "event", function, _guarantee(function))


def state_invariant(function: Callable[["World"], str | None]) -> Invariant:
    """Decorator: `function(world)` -> None or what is wrong."""
    return Invariant(function.__name__, "state", function, _guarantee(function))


@dataclass(slots=True)
class Applying:
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
    applying: Applying

    @cached_property
    def document(self) -> dict[str, Any] | None:
        return self.views.document() if self.views is not None else None

    @cached_property
    def replayed_document(self) -> dict[str, Any]:
        return self.replayed_views.document()


class InvariantViolation(AssertionError):
    """An invariant does not hold. `invariant` is its name, `detail` what is
    wrong, `applying` the input after (or during) which it was found."""

    def __init__(self, invariant: Invariant, detail: str, applying: Applying, event: Event | None = None) -> None:
        self.invariant = invariant
        self.detail = detail
        self.applying = applying
        self.event = event
        where = f"input {applying.number} ({applying.input.input_type} at {format_at(applying.at)})"
        if event is not None:
            where += f", event {type(event).__name__}"
        super().__init__(f"invariant {invariant.name} violated at {where}: {detail}")


# ================================================================ running them
