"""What explain's indexed reads (replay/explain/indexed.py) ask of a
`LogIndex`, for the keys they ask only: `KeyScan` finds a key's events with
the store's `read_matching` (an SQL store filters the rows in the database:
an event of key (kind, id) is of a type that can have that kind and holds
the id's bytes, the same test as explain's full read), decodes those and
keeps the positions whose keys hold it, exactly as the `LogIndex` of the
same log would. Where the store keeps a key table (replay/key_table.py) of
the running code, the positions up to its mark are read from it and only the
log after the mark is scanned. Its cost is a scan of (that part of) the log
in the store per batch of new keys (`prefetch`), not a decode of every
event, and nothing of the rest of the log stays in memory: the right thing
for one command that explains a few things (`tandem whatif --store`), not
for a service.

`Spliced` is the index of a log made of another log's first `boundary`
events (a `KeyScan` of it, or any index) and a tail of its own (a
`LogIndex.after(boundary)` fed the tail's events): a what-if's original and
its fork share the prefix's scans.

Discovering the keys first: a read asks for keys as it goes (a fact's key
once it has read the event naming it), one scan each. With `discovering` on,
a key not scanned yet is answered with no events and noted in `missing`; a
caller runs its reads, scans every missing key in one `prefetch`, and runs
them again until no key is missing: that last run is exact (every key it
read was complete), the earlier ones are thrown away.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec
from tandem.domain import events as ev
from tandem.replay.explain.keys import KIND_TAGS, needle
from tandem.replay.explain.log import RECORD_FILE, files_seen_max
from tandem.replay.index import KEYERS, LogIndex, split_key
from tandem.replay.port import EventStore
from tandem.replay.snapshot import code_fingerprint

Key = tuple[str, ...]

record_window_first = 8  # events read back from an event to find its input's record (then 8x more, and so on)
_TAG_START = len(b'{"event":"')
_RECORD_TYPES = (ev.InputAccepted, ev.InputRejected)
_NAMES = {name.encode(): event_type for name, event_type in ev.EVENT_TYPES.items()}


def type_of(data: bytes) -> type[ev.Event]:
    """A stored event's type, from its tag (decoded when it is not spelled first)."""
    found = _NAMES.get(data[_TAG_START : data.find(b'"', _TAG_START)]) if data.startswith(b'{"event":"') else None
    return found if found is not None else type(ev.decode_event(data))


class KeyScan:
    """The keys' events of `store`'s log up to `head`, found as they are asked."""

    def __init__(self, store: EventStore, head: int) -> None:
        self.store = store
        self.head = head
        self.discovering = False
        self.missing: set[Key] = set()
        self.scans = 0  # reads of the log in the store (for the benchmark)
        self._through: int | None = None  # the key table's mark (up to `head`), once read
        self._positions: dict[Key, array[int]] = {}
        self._types: dict[int, type[ev.Event]] = {}
        self._records: dict[int, int | None] = {}  # an event's position -> its input's record (None: none before it)

    def prefetch(self, keys: Iterable[Key]) -> None:
        """Find every key of `keys` not found yet: from the store's key table
        up to its mark (replay/key_table.py), then one scan of the log after it."""
        new = {key for key in keys if key not in self._positions}
        if not new or self.head == 0:
            self._positions.update((key, array("I")) for key in new)
            return
        found = {key: array("I") for key in new}
        tabled = self._tabled(new, found)
        if tabled < self.head:
            filters: dict[str, set[bytes]] = {}
            for key in new:
                for tag in KIND_TAGS[key[0]]:
                    filters.setdefault(tag.decode(), set()).add(needle(key))
            self.scans += 1
            for position, data in self.store.read_matching(filters, after=tabled, until=self.head):
                self._keep(position, ev.decode_event(data), found)
        self._positions.update(found)
        self._find_records(sorted({p for positions in found.values() for p in positions} - self._records.keys()))

    def _tabled(self, new: set[Key], found: dict[Key, array[int]]) -> int:
        """The positions of `new` the key table holds (up to the position it
        returns: its mark, or the scan's head if lower), their types read."""
        if self._through is None:
            self._through = min(self.head, self.store.keys_through(code_fingerprint()))
        if self._through == 0:
            return 0
        table = self.store.read_key_positions([split_key(key) for key in new], self._through)
        for key in new:
            found[key].extend(table[split_key(key)])
        untyped = {p for positions in found.values() for p in positions} - self._types.keys()
        self._types.update((position, type_of(data)) for position, data in self.store.read_positions(untyped))
        return self._through

    def _keep(self, position: int, event: ev.Event, found: dict[Key, array[int]]) -> None:
        """Note `position` under each key of `found` its event has."""
        kept = False
        for kind, identifier in KEYERS[type(event)](event):
            positions = found.get((kind, identifier) if identifier else (kind,))
            if positions is not None and (not positions or positions[-1] != position):
                positions.append(position)
                kept = True
        if kept:
            self._types[position] = type(event)

    def _find_records(self, positions: list[int]) -> None:
        """Each position's record: the latest InputAccepted/InputRejected at or
        before it, read back a window at a time (an input's events follow its record)."""
        window = record_window_first
        while positions:
            wanted = {p for position in positions for p in range(max(1, position - window + 1), position + 1)}
            records = [p for p, data in self.store.read_positions(wanted) if issubclass(type_of(data), _RECORD_TYPES)]
            pending = []
            for position in positions:
                found = bisect_right(records, position)
                if found and records[found - 1] > position - window:
                    self._records[position] = records[found - 1]
                elif position - window < 1:
                    self._records[position] = None
                else:
                    pending.append(position)
            positions, window = pending, window * 8

    # ------------------------------------------- what IndexedReads asks of an index

    def positions(self, key: Key, after: int = 0, until: int | None = None) -> Sequence[int]:
        held = self._positions.get(key)
        if held is None:
            if self.discovering:
                self.missing.add(key)
                return ()
            self.prefetch([key])
            held = self._positions[key]
        end = len(held) if until is None else bisect_right(held, until)
        return held[bisect_right(held, after, 0, end) : end]

    def type_at(self, position: int) -> type[ev.Event]:
        found = self._types.get(position)
        if found is None:
            ((_, data),) = self.store.read_positions([position])
            found = self._types[position] = type_of(data)
        return found

    def record_before(self, position: int) -> int | None:
        if position not in self._records:
            self._find_records([position])
        return self._records[position]

    def files_seen(self, until: int | None = None) -> set[str]:
        """Of the first `files_seen_max` distinct trace files, those seen by
        `until`: a read of the whole log (explain's `document` asks it; its
        `explain` does not)."""
        files: set[str] = set()
        for _, data in self.store.read_encoded(until=self.head if until is None else min(until, self.head)):
            if len(files) >= files_seen_max:
                break
            if (named := RECORD_FILE.match(data)) is not None:
                files.add(msgspec.json.decode(named.group(1)))
        return files


class Spliced:
    """The index of `prefix`'s log up to `boundary` followed by `tail`'s
    events after it (`tail`: a `LogIndex.after(boundary)`)."""

    def __init__(self, prefix: Any, boundary: int, tail: LogIndex) -> None:
        assert tail.head >= boundary, (tail.head, boundary)
        self.prefix, self.boundary, self.tail = prefix, boundary, tail

    @property
    def head(self) -> int:
        return self.tail.head

    def positions(self, key: Key, after: int = 0, until: int | None = None) -> Sequence[int]:
        end = self.head if until is None else min(until, self.head)
        before = self.prefix.positions(key, after, min(end, self.boundary)) if after < self.boundary else ()
        later = self.tail.positions(key, max(after, self.boundary), end) if end > self.boundary else ()
        return [*before, *later] if later else before

    def type_at(self, position: int) -> type[ev.Event]:
        return self.prefix.type_at(position) if position <= self.boundary else self.tail.type_at(position)

    def record_before(self, position: int) -> int | None:
        if position > self.boundary:
            found = self.tail.record_before(position)
            if found is not None:
                return found
        return self.prefix.record_before(min(position, self.boundary)) if self.boundary else None

    def files_seen(self, until: int | None = None) -> set[str]:
        files = self.prefix.files_seen(min(self.boundary, self.head if until is None else until))
        for file in sorted(self.tail.files_seen(until) - files):
            if len(files) < files_seen_max:
                files.add(file)
        return files
