"""How a what-if over a store explains the things that differ (adapters/
whatif_store.py): both sides are the store's log up to the boundary (the
prefix: the position before the first edited input) followed by a tail of
their own, so both read the prefix through one `KeyScan` of it (replay/
key_scan.py), or the store's own `LogIndex` when it has one (a served
store), and their tails through a `LogIndex` each (`Spliced`).

The scans cost a read of the prefix in the store each (SQLite filters the
rows in the database), past the store's key table's mark (replay/
key_table.py: up to it, a key's positions are read from the table), so
there are as few as the reads need: every thing
`compare` will explain is explained beforehand, on both sides, in rounds
that note the keys not scanned yet (`discovering`), one scan for each
round's new keys, until a round needs none; its answers, exact, are the
ones `compare` gets. The first scan starts beside the fork's fold, in a
thread (SQLite reads without holding the interpreter): it looks for the
things the first edited input's events name, most often what differs.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Self

from tandem.domain import events as ev
from tandem.domain.keys import event_keys
from tandem.replay.explain.model import Explanation
from tandem.replay.explain.walk import keys_named
from tandem.replay.index import LogIndex
from tandem.replay.key_scan import Key, KeyScan, Spliced
from tandem.replay.port import EventStore
from tandem.replay.whatif.diff import CHAIN_KINDS_BY_KEY, Run, explained

discovery_rounds_max = 8  # explain rounds finding the keys to scan (then each side explains as asked)
guessed_events_max = 64  # of the first edited input's events, those whose things are scanned beside the fold


class PrefixReads:
    """The reads of the store's log up to `boundary`, shared by both sides:
    through `index` (the store's `LogIndex`, a served store's) when it holds
    the prefix, with no scan at all; else through a `KeyScan`."""

    def __init__(self, store: EventStore, boundary: int, index: LogIndex | None = None) -> None:
        self.store, self.boundary = store, boundary
        self.scan = KeyScan(store, boundary) if index is None or index.head < boundary else None
        self.prefix: KeyScan | LogIndex = self.scan if self.scan is not None else index  # type: ignore[assignment]
        self._beside: _Beside | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        """Never leaves the scan beside running (the store is closed next)."""
        beside, self._beside = self._beside, None
        if beside is not None:
            beside.join()
            if kind is None and beside.error is not None:
                raise beside.error

    def guess(self, start: int) -> None:
        """Scan, in a thread beside what follows, for the things the events of
        the input whose record is at `start` name (its own, in the original)."""
        if self.scan is None:
            return
        keys = set(_guessed_keys(self.store, start))
        scan = self.scan
        if keys:
            self._beside = _Beside(lambda: scan.prefetch(keys))
            self._beside.start()

    def index(self, events: list[tuple[int, ev.Event]]) -> Spliced:
        """The index of a side: the prefix, then `events` (its tail, from the boundary on)."""
        tail = LogIndex.after(self.boundary)
        tail.add(self.boundary, [event for _, event in events])
        return Spliced(self.prefix, self.boundary, tail)

    def explained(self, original: Run, fork: Run) -> tuple[Run, Run]:
        """The two sides, answering from their explanations found beforehand."""
        if self._beside is not None:
            self._beside.finish()
            self._beside = None
        pairs = explained(original, fork)
        if not pairs or self.scan is None:  # nothing to explain, or an index to explain by as asked
            return original, fork
        self.scan.prefetch(key for _, ident in pairs for key in keys_named(ident))
        found = self._discovered((original, fork), pairs)
        if found is None:  # not settled: each side explains as asked, scanning key by key
            return original, fork
        return (
            dataclasses.replace(original, explain=_answering(found, 0, original)),
            dataclasses.replace(fork, explain=_answering(found, 1, fork)),
        )

    def _discovered(self, runs: tuple[Run, Run], pairs: list[tuple[str, str]]) -> dict[tuple[int, str, str], Explanation | None] | None:
        scan = self.scan
        assert scan is not None
        scan.discovering = True
        try:
            for _ in range(discovery_rounds_max):
                found: dict[tuple[int, str, str], Explanation | None] = {}
                for side, run in enumerate(runs):
                    for kind, ident in pairs:
                        try:
                            found[(side, kind, ident)] = run.explain(kind, ident)
                        except Exception:
                            if not scan.missing:
                                raise  # a read of complete keys only: no missing key's doing
                if not scan.missing:
                    return found
                scan.prefetch(scan.missing)
                scan.missing.clear()
            return None
        finally:
            scan.discovering = False


def _answering(found: dict[tuple[int, str, str], Explanation | None], side: int, run: Run) -> Callable[[str, str], Explanation | None]:
    def explain(kind: str, ident: str) -> Explanation | None:
        return found[(side, kind, ident)] if (side, kind, ident) in found else run.explain(kind, ident)

    return explain


def _guessed_keys(store: EventStore, start: int) -> Iterable[Key]:
    """The keys an explanation of each thing the input's events name starts from."""
    records = (ev.InputAccepted, ev.InputRejected, ev.SourceProgressed)
    for _, event in store.read(after=start, until=start + guessed_events_max):
        if isinstance(event, records):
            return
        for key in event_keys(event):
            if len(key) > 1 and key[0] in CHAIN_KINDS_BY_KEY:
                yield from keys_named(key[1])


class _Beside(threading.Thread):
    """Work in a thread of its own; `finish` waits for it and raises what it raised."""

    def __init__(self, work: Callable[[], None]) -> None:
        super().__init__(name="tandem-whatif-scan", daemon=True)
        self.work = work
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.work()
        except BaseException as error:  # noqa: BLE001 - raised again by finish()
            self.error = error

    def finish(self) -> None:
        self.join()
        if self.error is not None:
            raise self.error
