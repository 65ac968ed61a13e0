"""The proving tools' event store: an in-process log with crash injection.

`ProvingStore()` is an event store (the `replay.port.EventStore` protocol)
over a list of events in this process: what the bounded checker restarts
engines from, and what the fuzzer runs on when it is given no other store.
`ProvingStore(over=store)` passes everything to another store (SQLite, say)
and adds the same hooks. There is one hook, for every crash the tools
inject:

- `crash_next_append()`: the next append fails (raises `InjectedCrash`)
  before it writes anything, as a crash before the commit;
- `crash_next_append(written=n)`: the next append writes the first `n`
  events of its batch, then fails — a store that is NOT atomic, which the
  fuzzer's crash check must catch (tests/property/test_fuzz.py).

A store that forgets events on reopening is `ProvingStore(events[:-1])`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from tandem.domain.events import Event, decode_event, encode_event
from tandem.replay.port import ConcurrencyError, EventStore, SnapshotInfo, WriterClaim


class InjectedCrash(Exception):
    """A store append failed on purpose (crash injection): nothing was written
    (unless the store was told to write part of the batch first)."""


class ProvingStore:
    """An in-process event store (or one passing everything to `over`) whose
    next append can be made to fail: `crash_next_append(written=0)`."""

    def __init__(self, events: Iterable[Event] = (), *, over: EventStore | None = None) -> None:
        if over is not None and events != ():
            raise ValueError("give the events or the store they are in, not both")
        self.over = over
        self.url = over.url if over is not None else "log:"
        self._events: list[Event] = list(events)
        self._crash_written: int | None = None  # None: no crash armed
        self._claims: list[WriterClaim] = []

    @property
    def backing(self) -> EventStore | ProvingStore:
        """Where the events are: the store passed through to, or this one."""
        return self.over if self.over is not None else self

    @property
    def events(self) -> list[Event]:
        """Every stored event, in order (the in-process list itself, when there is no `over`)."""
        if self.over is None:
            return self._events
        return [event for page in self.over.read_pages() for event in page]

    # ------------------------------------------------------- crash injection

    def crash_next_append(self, written: int = 0) -> None:
        """Make the next append fail after writing `written` of its events
        (0: nothing, an honest crash before the commit)."""
        if written < 0:
            raise ValueError("written must be >= 0")
        self._crash_written = written

    def _crash(self, events: Sequence[Event], expected_head: int) -> None:
        written, self._crash_written = self._crash_written, None
        assert written is not None
        if written:
            self._write(list(events[:written]), expected_head)
            raise InjectedCrash(f"injected crash after a partial write: {written} of {len(events)} event(s) written")
        raise InjectedCrash(f"injected crash: append of {len(events)} event(s) after position {expected_head} not written")

    # ------------------------------------------------------------------ log

    def head(self) -> int:
        return self.over.head() if self.over is not None else len(self._events)

    def append(self, events: Sequence[Event], expected_head: int) -> int:
        if self._crash_written is not None:
            self._crash(events, expected_head)
        return self._write(events, expected_head)

    def _write(self, events: Sequence[Event], expected_head: int) -> int:
        if self.over is not None:
            return self.over.append(events, expected_head)
        if expected_head != len(self._events):
            raise ConcurrencyError(f"expected head {expected_head}, but the head is {len(self._events)}")
        self._events.extend(events)
        return len(self._events)

    def append_encoded(self, data: Sequence[bytes], expected_head: int) -> int:
        if self.over is not None and self._crash_written is None:
            return self.over.append_encoded(data, expected_head)
        return self.append([decode_event(item) for item in data], expected_head)

    def read(self, after: int = 0, until: int | None = None) -> Iterator[tuple[int, Event]]:
        if self.over is not None:
            yield from self.over.read(after, until)
            return
        stop = len(self._events) if until is None else min(until, len(self._events))
        for position in range(after + 1, stop + 1):
            yield position, self._events[position - 1]

    def read_pages(self, after: int = 0, until: int | None = None) -> Iterator[list[Event]]:
        if self.over is not None:
            yield from self.over.read_pages(after, until)
            return
        stop = len(self._events) if until is None else min(until, len(self._events))
        if after < stop:
            yield self._events[after:stop]

    def read_encoded(self, after: int = 0, until: int | None = None) -> Iterator[tuple[int, bytes]]:
        if self.over is not None:
            yield from self.over.read_encoded(after, until)
            return
        for position, event in self.read(after, until):
            yield position, encode_event(event)

    def read_positions(self, positions: Iterable[int]) -> list[tuple[int, bytes]]:
        if self.over is not None:
            return self.over.read_positions(positions)
        wanted = sorted({position for position in positions if 1 <= position <= len(self._events)})
        return [(position, encode_event(self._events[position - 1])) for position in wanted]

    # ------------------------------------------------------------ snapshots
    # Snapshots are a cache (replay/port.py): the in-process log keeps none,
    # so every engine opened on it folds the whole log.

    def write_snapshot(self, position: int, fingerprint: str, body: bytes) -> None:
        if self.over is not None:
            self.over.write_snapshot(position, fingerprint, body)

    def latest_snapshot(self, fingerprint: str, until: int | None = None) -> tuple[int, bytes] | None:
        return self.over.latest_snapshot(fingerprint, until) if self.over is not None else None

    def list_snapshots(self) -> list[SnapshotInfo]:
        return self.over.list_snapshots() if self.over is not None else []

    def delete_snapshot(self, position: int, fingerprint: str) -> None:
        if self.over is not None:
            self.over.delete_snapshot(position, fingerprint)

    # ------------------------------------------------------------ the key table
    # A cache as snapshots are: the in-process log keeps none.

    def keys_through(self, fingerprint: str) -> int:
        return self.over.keys_through(fingerprint) if self.over is not None else 0

    def read_key_positions(self, keys: Collection[tuple[str, str]], until: int) -> dict[tuple[str, str], list[int]]:
        return self.over.read_key_positions(keys, until) if self.over is not None else {key: [] for key in keys}

    def read_key_rows(self, until: int) -> Iterator[tuple[str, str, int]]:
        if self.over is not None:
            yield from self.over.read_key_rows(until)

    def write_keys(self, fingerprint: str, after: int, through: int, rows: Sequence[tuple[str, str, int]]) -> bool:
        return self.over.write_keys(fingerprint, after, through, rows) if self.over is not None else False

    # ---------------------------------------------------------------- writers
    # The in-process log has one writer, its own: a claim is recorded, never fenced.

    def claim_writer(self, pid: int | None, host: str, since: str, *, deferred: bool = False) -> WriterClaim | None:
        if self.over is not None:
            return self.over.claim_writer(pid, host, since, deferred=deferred)
        claim = WriterClaim(len(self._claims) + 1, len(self._events), pid, host, since)
        self._claims.append(claim)
        return claim

    def list_claims(self) -> list[WriterClaim]:
        return self.over.list_claims() if self.over is not None else list(self._claims)

    def close(self) -> None:
        if self.over is not None:
            self.over.close()
