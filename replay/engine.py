"""The engine runtime: inputs in, events stored, views out.

A recorded trace and a live daemon are the same thing here: inputs applied
one after the other through `decide` and the dispatch pass, each input's
events appended to the store atomically (or a batch of inputs' events, for
group commit). The in-memory decision state is a fold of the log, so opening
an engine on a store is a replay of that store.
"""

from __future__ import annotations

import datetime
import gc
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from domain import events as ev
from domain.dispatch import step
from domain.inputs import Input
from domain.state import EVOLVERS, State, evolve
from projections import Views
from replay.port import EventStore

Step = Callable[[State, Input, int, "str | None", "int | None", Callable[[ev.Event], None]], None]


@dataclass(frozen=True, slots=True)
class Located:
    """An input with where it came from (trace file and 1-based line)."""

    input: Input
    file: str | None = None
    line: int | None = None


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector during a bulk fold.

    Folding allocates millions of small, long-lived, acyclic objects; each
    automatic collection rescans all of them, which halves replay speed and
    makes per-input cost grow with the live state. Reference counting still
    frees everything that is not cyclic.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def project(store: EventStore, until: int | None = None) -> Views:
    """The views alone, folded from a store (what `tandem show` needs: no
    decision state)."""
    views = Views()
    view_handlers = views.handlers_by_event
    folded = 0
    with collector_paused():
        for page in store.read_pages(until=until):
            for event in page:
                handlers = view_handlers.get(type(event))
                if handlers is not None:
                    for handler in handlers:
                        handler(event)
            folded += len(page)
    views.position = folded
    return views


def input_boundary(store: EventStore, position: int) -> int:
    """The greatest position <= `position` that falls between two inputs'
    events (every input's events start with its InputAccepted/InputRejected;
    a SourceProgressed marker ends a batch)."""
    boundary = 0
    seen = 0
    for page in store.read_pages(until=position + 1):
        for event in page:
            if type(event) in (ev.InputAccepted, ev.InputRejected, ev.SourceProgressed):
                boundary = seen
            seen += 1
    return position if seen <= position else boundary


class Engine:
    """Decision state (and, unless `with_views=False`, the views) over one
    store. Single writer per store."""

    def __init__(self, store: EventStore | None = None, *, with_views: bool = True, step: Step = step) -> None:
        self.store = store
        self.with_views = with_views
        self.step = step  # the decision rules (a test may pass a deliberately broken variant)
        self.state = State()
        self.views: Views | None = Views() if with_views else None
        if store is not None:
            self._rebuild()

    # ------------------------------------------------------------- replay

    def _rebuild(self) -> None:
        """Fold the whole log into fresh state and views (restart is replay)."""
        state = State()
        views = Views() if self.with_views else None
        if self.store is not None:
            # evolve() and Views.apply(), inlined: this loop is replay speed.
            evolvers = EVOLVERS
            view_handlers = views.handlers_by_event if views is not None else {}
            folded = 0
            with collector_paused():
                for page in self.store.read_pages():
                    for event in page:
                        kind = type(event)
                        evolvers[kind](state, event)
                        handlers = view_handlers.get(kind)
                        if handlers is not None:
                            for handler in handlers:
                                handler(event)
                    folded += len(page)
                # What the fold built lives as long as the engine: keep the
                # collector from rescanning it later. Frozen before the
                # collector resumes, or its first run would scan it all.
                gc.freeze()
            state.position += folded
            if views is not None:
                views.position += folded
        # Dirty marks made while folding facts are not decisions to take again.
        state.dirty_actions.clear()
        state.dirty_tasks.clear()
        state.watchdog_fresh = state.is_fresh(state.last_at)
        self.state, self.views = state, views

    @property
    def last_at(self) -> datetime.datetime | None:
        return self.state.last_at

    # -------------------------------------------------------------- decide

    def decide(self, item: Located) -> list[ev.Event]:
        """Apply one input to the in-memory state; return the events it caused
        (its record, the domain's events, the pass's events), not yet stored."""
        state = self.state
        seq = state.seq + 1
        produced: list[ev.Event] = []

        def emit(event: ev.Event) -> None:
            evolve(state, event)
            produced.append(event)

        self.step(state, item.input, seq, item.file, item.line, emit)
        return produced

    # ------------------------------------------------------------- submit

    def submit(self, item: Located) -> list[ev.Event]:
        """One input, one transaction."""
        return self.submit_batch([item])

    def submit_batch(self, items: Sequence[Located], trailer: Iterable[ev.Event] = ()) -> list[ev.Event]:
        """Several inputs (and optional bookkeeping events) in one transaction:
        group commit. All of them are stored, or none and the engine reloads."""
        head = self.state.position
        produced: list[ev.Event] = []
        with collector_paused():
            try:
                for item in items:
                    produced.extend(self.decide(item))
                for event in trailer:
                    evolve(self.state, event)
                    produced.append(event)
                if self.store is not None and produced:
                    self.store.append(produced, expected_head=head)
            except BaseException:
                # The in-memory state ran ahead of the store: fold the store again.
                self._rebuild()
                raise
            if self.views is not None:
                apply_view = self.views.apply
                for event in produced:
                    apply_view(event)
        return produced
