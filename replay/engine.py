"""The engine runtime: inputs in, events stored, views out.

A recorded trace and a live daemon are the same thing here: inputs applied
one after the other through `decide` and the dispatch pass, each input's
events appended to the store atomically (or a batch of inputs' events, for
group commit). The in-memory decision state is a fold of the log, so opening
an engine on a store is a replay of that store: of its tail, after the newest
snapshot the running code can use (replay/snapshot.py).

Snapshot policy: after a commit, once `snapshot_every` events (default
`snapshot_every_events_default`) have been appended since the last snapshot,
and at least as many as the next snapshot's expected size in bytes divided by
`snapshot_bytes_per_event`, the engine writes one. The first rule bounds the
tail a restart folds (50,000 events: a fraction of a second). The second keeps
the cost of writing snapshots of a large live state (about 1 µs of pickling
per object, ~400 bytes per live action) a small share of the work of the
events between them; the expected size is the last snapshot's, grown at the
rate seen between the last two this engine wrote. A state that grows by more
than 16 bytes an event (one that keeps something of every event) then gets no
more snapshots from this engine: unpickling it would cost about what folding
its events does. A snapshot is written inside the commit call that
crosses the threshold, after the commit: that call takes longer by the
snapshot's cost. A failed snapshot write is logged and never fails a commit.
A snapshot holds the views too. An engine opened `with_views=False` folds
none until its first snapshot, which folds them from the previous snapshot
(reading the events since back); from then on, if it writes snapshots by
itself, it folds them as it commits, unseen (about a tenth of ingest's cost,
against a third for reading the events back at every snapshot).

An engine given `snapshots_beside` (`tandem ingest` and `tandem serve`:
adapters/snapshots_beside.py) writes none itself: when one is due it starts a process that folds the store
up to that position, as a restart does, and writes it, while the engine goes
on committing; one such process at a time, its result taken (the size the
policy reckons with) at the first commit after it finished.
"""

from __future__ import annotations

import dataclasses
import datetime
import gc
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

from tandem.domain import events as ev
from tandem.domain.dispatch import handle_input
from tandem.domain.inputs import Input
from tandem.domain.rules import EVOLVERS, evolve
from tandem.domain.state import State
from tandem.projections import Views
from tandem.replay import snapshot as snapshots
from tandem.replay.compare import first_difference
from tandem.replay.port import EventStore

snapshot_every_events_default = 50_000
snapshot_bytes_per_event = 16

log = logging.getLogger("tandem.snapshots")

# The decision step: applies one input to the state, emitting its events
# (`domain.dispatch.handle_input`, or a variant under test).
DecisionStep = Callable[[State, Input, int, "str | None", "int | None", Callable[[ev.Event], None]], None]


class SnapshotProcess(Protocol):
    """Snapshots written by another process, beside this engine's commits
    (adapters/snapshots_beside.py): one at a time, each at the position it
    was started with (or the store's head, if lower)."""

    def busy(self) -> bool: ...

    def start(self, position: int) -> None: ...

    def collect(self) -> snapshots.Written | None: ...

    def wait(self) -> snapshots.Written | None: ...

    def cancel(self) -> None: ...


class ViewsDiverged(Exception):
    """A snapshot's check of itself: the live views are not the fold of the
    stored events at their position (something wrote into them, or folded
    an event twice); the snapshot is not written."""

    def __init__(self, position: int, difference: str) -> None:
        super().__init__(f"the live views at position {position} are not the fold of the stored events: {difference}")
        self.position = position
        self.difference = difference


class EngineBusy(AssertionError):
    """An engine was used by a second thread while a first one used it. Its
    state and views are folded in place, so that is never allowed: callers
    serialise (`tandem serve`: `Service.engine_lock`, held until the work on
    the engine has ended)."""


class PartFailed(Exception):
    """Deciding part `index` of a group (`Engine.submit_parts`) raised
    `error` (a bug: a decider raises nothing but rejections, which are
    events): nothing was stored, and the engine folded the store again."""

    def __init__(self, index: int, error: Exception) -> None:
        super().__init__(f"part {index} of the transaction failed: {type(error).__name__}: {error}")
        self.index, self.error = index, error


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


def project(store: EventStore, until: int | None = None, use_snapshots: bool = True) -> Views:
    """The views alone, folded from a store (what `tandem show` needs: no
    decision state): from the newest usable snapshot at or before `until`."""
    head = store.head()
    with collector_paused():
        return snapshots.views_at(store, head if until is None else min(until, head), use_snapshots)


def input_boundary(store: EventStore, position: int) -> int:
    """The greatest position <= `position` that falls between two inputs'
    events (every input's events start with its InputAccepted/InputRejected;
    a SourceProgressed marker ends a batch). Reads only around `position`:
    the event after it, then back, in growing windows, to its input's start."""
    starts = (ev.InputAccepted, ev.InputRejected, ev.SourceProgressed)
    following = next(store.read(after=position, until=position + 1), None)
    if following is None or isinstance(following[1], starts):
        return position
    window = 64
    until = position
    while until > 0:
        after = max(0, until - window)
        found = [at for at, event in store.read(after=after, until=until) if isinstance(event, starts)]
        if found:
            return found[-1] - 1  # the views before that input: its record is event found[-1]
        until, window = after, window * 2
    return 0


def settle_folded(state: State) -> None:
    """What a fold leaves as a decision's starting point: the dirty marks
    made while folding facts are not decisions to take again (a replay, and
    a follower that folds the writer's new events, both end with this)."""
    state.dirty_actions.clear()
    state.dirty_tasks.clear()
    state.dirty_sources.clear()
    state.unstalled.clear()  # their no_progress resolutions are in the log already
    state.watchdog_fresh = state.is_fresh(state.last_at)


class Engine:
    """Decision state (and, unless `with_views=False`, the views) over one
    store. Single writer per store.

    `snapshot_every`: events between automatic snapshots (0: never write
    one); `use_snapshots=False` ignores stored snapshots (a full replay)."""

    def __init__(
        self,
        store: EventStore | None = None,
        *,
        with_views: bool = True,
        step: DecisionStep = handle_input,
        snapshot_every: int = snapshot_every_events_default,
        use_snapshots: bool = True,
        snapshots_beside: SnapshotProcess | None = None,
        until: int | None = None,
    ) -> None:
        if snapshot_every < 0:
            raise ValueError(f"snapshot_every is 0 (never) or more, not {snapshot_every}")
        self.store = store
        self.with_views = with_views
        self.step = step  # the decision rules (a test may pass a deliberately broken variant)
        self.snapshot_every = snapshot_every
        self.use_snapshots = use_snapshots
        self.snapshots_beside = snapshots_beside
        self.until = until  # fold only the first `until` events (a snapshot of an earlier head); None: all
        self.state = State()
        self.views: Views | None = Views() if with_views else None
        # A snapshot holds the views too. An engine without views folds them,
        # unseen, from its first snapshot on (from the previous snapshot and
        # the events since, read back once), then as it commits: cheaper than
        # reading the events back for every snapshot.
        self._kept_views: Views | None = self.views
        self._views_folded_at = -1  # the views' position when they were last folded from the store (not applied live)
        self.snapshot_position = 0  # the newest snapshot loaded or written (0: none)
        self.snapshot_size = 0  # its body's bytes
        self.snapshot_growth = 0.0  # body bytes per event between the last two this engine wrote
        self.snapshot_started = 0  # the head when the last snapshot process beside started (0: none)
        self.last_snapshot: snapshots.Written | None = None
        self._user = threading.RLock()  # held by the thread folding or committing: `exclusive`
        if store is not None:
            self._rebuild()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Use the engine's state and views, one thread at a time: a second
        thread raises EngineBusy instead of folding beside the first (the
        same thread may nest: a failed commit folds the store again)."""
        if not self._user.acquire(blocking=False):
            raise EngineBusy("the engine is in use by another thread: its state and views are one thread's at a time")
        try:
            yield
        finally:
            self._user.release()

    # ------------------------------------------------------------- replay

    def _rebuild(self) -> None:
        """Fold the log into fresh state and views (restart is replay): from
        the newest usable snapshot, else from the start."""
        with self.exclusive():
            self._fold_store()

    def _fold_store(self) -> None:
        state = State()
        views = Views() if self.with_views else None
        if self.store is not None:
            start = 0
            folded = 0
            with collector_paused():
                # Unpickling, like folding, makes many long-lived objects:
                # the collector stays paused, and they are frozen below.
                loaded = (
                    snapshots.load(self.store, self._fold_until(), with_views=self.with_views)
                    if self.use_snapshots
                    else None
                )
                if loaded is not None:
                    assert loaded.state is not None
                    state, start = loaded.state, loaded.position
                    if self.with_views:
                        views = loaded.views
                    self.snapshot_position, self.snapshot_size = loaded.position, loaded.size
                else:
                    self.snapshot_position, self.snapshot_size = 0, 0
                # evolve() and Views.apply(), inlined: this loop is replay speed.
                evolvers = EVOLVERS
                view_handlers = views.handlers_by_event if views is not None else {}
                for page in self.store.read_pages(after=start, until=self.until):
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
            state.position = start + folded
            if views is not None:
                views.position = start + folded
        settle_folded(state)
        self.state, self.views, self._kept_views = state, views, views
        self._views_folded_at = views.position if views is not None else -1

    def _fold_until(self) -> int:
        head = self.store.head() if self.store is not None else 0
        return head if self.until is None else min(self.until, head)

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
        with self.exclusive():
            return self._submit_batch(items, trailer)

    def _submit_batch(self, items: Sequence[Located], trailer: Iterable[ev.Event]) -> list[ev.Event]:
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
            if self._kept_views is not None:
                apply_view = self._kept_views.apply
                for event in produced:
                    apply_view(event)
        if produced and self.store is not None:
            self._after_commit()
        return produced

    def submit_parts(
        self, parts: Iterable[Sequence[Located]], settled: Callable[[list[ev.Event]], None] | None = None
    ) -> list[list[ev.Event]]:
        """Several parts, each a sequence of inputs, in one transaction (the
        requests of a group, `tandem serve`): every part's events, in order,
        stored together or not at all. `parts` may be lazy: the next part is
        taken once the one before it is decided, so what it holds may depend
        on the state they left. Once the transaction is stored, each part's
        events are folded into the views and `settled(events)` is told, part
        by part (a live engine takes the views each part changed there). A
        part whose decision raises is PartFailed: nothing is stored, and the
        engine folds the store again."""
        with self.exclusive():
            head = self.state.position
            decided: list[list[ev.Event]] = []
            with collector_paused():
                try:
                    for index, items in enumerate(parts):
                        decided.append(self._decide_part(index, items))
                    produced = [event for part in decided for event in part]
                    if self.store is not None and produced:
                        self.store.append(produced, expected_head=head)
                except BaseException:
                    self._rebuild()  # the in-memory state ran ahead of the store
                    raise
                for part in decided:
                    if self._kept_views is not None:
                        apply_view = self._kept_views.apply
                        for event in part:
                            apply_view(event)
                    if settled is not None:
                        settled(part)
            if produced and self.store is not None:
                self._after_commit()
            return decided

    def _decide_part(self, index: int, items: Sequence[Located]) -> list[ev.Event]:
        part: list[ev.Event] = []
        try:
            for item in items:
                part.extend(self.decide(item))
        except Exception as error:
            raise PartFailed(index, error) from error
        return part

    def _after_commit(self) -> None:
        """After a commit that stored events: a snapshot, if one is due."""
        if self.snapshots_beside is not None:
            self.collect_beside()  # first: the policy reckons with the size it wrote
        if self._snapshot_due():
            self._snapshot()

    # ----------------------------------------------------------- snapshots

    def _snapshot_due(self) -> bool:
        if not self.snapshot_every:
            return False
        since = self.state.position - max(self.snapshot_position, self.snapshot_started)
        if since < self.snapshot_every:
            return False
        # The next body's expected size: the last one's, grown as between the
        # last two. A state that grows by more than `snapshot_bytes_per_event`
        # bytes an event (one that keeps every event's facts) costs about as
        # much to unpickle as its events cost to fold: no more snapshots then.
        expected = self.snapshot_size + self.snapshot_growth * since
        return since * snapshot_bytes_per_event >= expected

    def _snapshot(self) -> None:
        """The due snapshot: written now, or by the process beside, if this
        engine has one and it is not busy with the one before."""
        beside = self.snapshots_beside
        if beside is None:
            if self._write_snapshot_logged() is None:
                self.snapshot_position = self.state.position  # try again after as many events, not at every commit
            return
        if not beside.busy():
            beside.start(self.state.position)
            self.snapshot_started = self.state.position  # due again after as many events

    def collect_beside(self, wait: bool = False) -> snapshots.Written | None:
        """Take what the snapshot process beside wrote, when it has finished
        (with `wait`, once it has): the size the policy reckons with."""
        beside = self.snapshots_beside
        if beside is None:
            return None
        written = beside.wait() if wait else beside.collect()
        if written is not None:
            self._note_written(written)
        return written

    def cancel_beside(self) -> None:
        """Stop the snapshot process beside, if one runs (a stopping daemon
        writes its own at the head instead)."""
        if self.snapshots_beside is not None:
            self.snapshots_beside.cancel()

    def write_snapshot(self) -> snapshots.Written:
        """Store a snapshot of the state and views at the head now (an
        engine that keeps no views folds them from the previous snapshot, and
        keeps them from then on if it writes snapshots by itself)."""
        if self.store is None:
            raise ValueError("an engine without a store has nowhere to keep a snapshot")
        started = time.perf_counter()
        with self.exclusive(), collector_paused():
            views = self._kept_views
            if views is None:
                views = snapshots.views_at(self.store, self.state.position)
                self._views_folded_at = views.position
                if self.snapshot_every:
                    self._kept_views = views
            elif views.position != self._views_folded_at:
                self._check_views(views)
            written = snapshots.write(self.store, self.state, views)
        written = dataclasses.replace(written, seconds=time.perf_counter() - started)  # the views' fold included
        self._note_written(written)
        return written

    def _check_views(self, views: Views) -> None:
        """The views this engine kept as it committed (or as it followed) are
        the fold of the stored events at their position: the fold of the
        events since the newest snapshot, from that snapshot's views (at
        most the events between two snapshots: a fraction of the snapshot's
        own cost). Raises ViewsDiverged naming the first difference."""
        assert self.store is not None
        folded = snapshots.views_at(self.store, views.position)
        for name, view in folded.by_name.items():
            live = vars(views.by_name[name])
            if live == vars(view):  # the C comparison; the slow walk only to say where
                continue
            difference = first_difference(live, vars(view), f"views.{name}")
            where = difference[2][0].replace("snapshot", "live", 1) if difference is not None else f"views.{name}"
            raise ViewsDiverged(views.position, where)

    def _note_written(self, written: snapshots.Written) -> None:
        if self.snapshot_position and written.position > self.snapshot_position:
            self.snapshot_growth = max(0.0, (written.size - self.snapshot_size) / (written.position - self.snapshot_position))
        self.snapshot_position, self.snapshot_size = written.position, written.size
        self.last_snapshot = written

    def checkpoint(self, min_events: int = 1) -> snapshots.Written | None:
        """A snapshot now if at least `min_events` events came since the last
        one (e.g. at a daemon's stop: the next start folds nothing); failures
        are logged, not raised."""
        if self.store is None or self.state.position - self.snapshot_position < max(1, min_events):
            return None
        return self._write_snapshot_logged()

    def _write_snapshot_logged(self) -> snapshots.Written | None:
        """`write_snapshot`, a failure logged instead of raised. A snapshot is
        a cache and the commit before it stands, so any Exception (a store
        error, but also a pickling or RecursionError from an unforeseen
        state) must not fail the commit nor, raised again, every later one.
        KeyboardInterrupt and SystemExit are not Exceptions: they propagate."""
        try:
            return self.write_snapshot()
        except ViewsDiverged as diverged:
            # Never kept: a restart from it would start from views no event
            # gave. The fold of the store is the truth: the engine folds again.
            log.error("%s; the snapshot is not written and the engine folds the store again", diverged)
            try:
                self._rebuild()
            except Exception as error:
                log.error("folding the store again failed (%s: %s)", type(error).__name__, error)
            return None
        except Exception as error:
            log.warning(
                "snapshot at position %d not written (%s: %s)", self.state.position, type(error).__name__, error
            )
            return None
