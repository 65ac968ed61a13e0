"""The log newest first, a page at a time, one row an event (each event with
its input and the keys it concerns, to link to explain), optionally only the
events of one input type's inputs, or only those concerning one id (under
any key kind), or both. Its rows (`Row`) are also what the console's
timeline of inputs shows in each input's box (replay/input_timeline.py) and
the overview's latest inputs.

Pages go by position: `before=P` gives the `limit` newest matching events
before position P (the head's next when None); `older` is the `before` of
the next older page, `newer` of the next newer one (None when there is none).

With a `LogIndex` (replay/index.py) a page reads only its own events and
their inputs' records (`store.read_positions`), as of the index's head, and
`older`/`newer` are exact. Without one it reads the log backwards from
`before` in windows, looking at no more than `scan_events_max` events: a
filtered page may then hold fewer rows than `limit` and go on (`older`) from
where the scan stopped; its `newer` is `before + limit`, approximate.
"""

from __future__ import annotations

import heapq
import itertools
from bisect import bisect_right
from collections.abc import Iterator
from typing import Any

import msgspec

from tandem.domain import events as ev
from tandem.domain.keys import event_keys
from tandem.replay.explain.log import input_ref
from tandem.replay.explain.model import InputRef
from tandem.replay.index import LogIndex, split_key
from tandem.replay.port import EventStore

limit_default = 50
limit_max = 500
scan_events_max = 5_000  # a page without an index, or with both filters, looks at most this far
record_window_first = 64  # without an index: how far back the first look for a page's first input goes

RECORDS = (ev.InputAccepted, ev.InputRejected)


class Row(msgspec.Struct, frozen=True):
    position: int
    event: str  # its type
    # The input whose transaction holds it (seq, file, line, type, id, actor,
    # at, rejected: the reason, or None when accepted), as in explain; None
    # for a batch's SourceProgressed.
    input: InputRef | None
    keys: list[tuple[str, str]]  # (kind, id) per key of domain/keys.py; id "" for a singleton


class Page(msgspec.Struct, frozen=True):
    rows: list[Row]  # newest first
    head: int  # the log's head the page was read at
    before: int  # the rows are before this position
    older: int | None  # `before` of the next older page
    newer: int | None  # `before` of the next newer page
    scanned: int  # positions looked at (events read, without an index)


def timeline(
    store: EventStore,
    *,
    before: int | None = None,
    limit: int = limit_default,
    input_type: str | None = None,
    identifier: str | None = None,
    index: LogIndex | None = None,
) -> Page:
    """A page of the timeline (see the module's docstring)."""
    if not 1 <= limit <= limit_max:
        raise ValueError(f"limit {limit}: from 1 to {limit_max}")
    if index is not None:
        return _indexed(store, index, before, limit, input_type or None, identifier or None)
    return _scanned(store, before, limit, input_type or None, identifier or None)


def row(position: int, event: ev.Event, record: ev.InputAccepted | ev.InputRejected | None) -> Row:
    keys = [split_key(key) for key in event_keys(event)]
    return Row(position, type(event).__name__, input_ref(record) if record is not None else None, keys)


def latest_inputs(store: EventStore, count: int, *, until: int | None = None, index: LogIndex | None = None) -> list[Row]:
    """The last `count` inputs (their records' rows) at or before `until`
    (the head when None), newest first: the overview's "latest inputs".
    With an index it reads only those records; without, it reads back in
    windows, at most `scan_events_max` events."""
    if not 1 <= count <= limit_max:
        raise ValueError(f"count {count}: from 1 to {limit_max}")
    if index is not None:
        records = index.records(until=index.head if until is None else min(until, index.head))
        picked = list(reversed(records[-count:]))
        return [row(position, event, event) for position, event in zip(picked, _decoded(store, picked))]
    end = store.head() if until is None else min(until, store.head())
    rows: list[Row] = []
    scanned = 0
    while end > 0 and len(rows) < count and scanned < scan_events_max:
        after = max(0, end - 256)
        rows += [row(p, e, e) for p, e in reversed(list(store.read(after=after, until=end))) if isinstance(e, RECORDS)]
        scanned += end - after
        end = after
    return rows[:count]


def _decoded(store: EventStore, positions: list[int]) -> list[Any]:
    read = dict(store.read_positions(positions))
    return [ev.decode_event(read[position]) for position in positions]


# ------------------------------------------------------------ with an index


def _indexed(store: EventStore, index: LogIndex, before: int | None, limit: int, input_type: str | None, identifier: str | None) -> Page:
    head = index.head
    end = head + 1 if before is None or before > head + 1 else max(1, before)
    both = input_type is not None and identifier is not None
    older_scan, newer_scan = _Scan(index, input_type, both), _Scan(index, input_type, both)
    found = list(itertools.islice(older_scan.filter(_descending(index, end, head, input_type, identifier)), limit + 1))
    if len(found) > limit:
        older: int | None = found[limit - 1]
    else:
        older = older_scan.stopped  # None, or where a scan with both filters stopped
    following = list(itertools.islice(newer_scan.filter(_ascending(index, end, head, input_type, identifier)), limit))
    if len(following) == limit:
        newer: int | None = following[-1] + 1
    else:
        newer = head + 1 if following or (newer_scan.stopped is not None) else None
    looked = older_scan.looked if both else len(found)
    return Page(_rows(store, index, found[:limit]), head, end, older, newer, looked)


class _Scan:
    """With both filters: of an id's positions, those of `input_type`'s
    inputs, looking at no more than `scan_events_max` of them."""

    def __init__(self, index: LogIndex, input_type: str | None, active: bool) -> None:
        self.index = index
        self.input_type = input_type
        self.active = active
        self.looked = 0
        self.stopped: int | None = None  # `before` that goes on from where it stopped

    def filter(self, positions: Iterator[int]) -> Iterator[int]:
        if not self.active:
            yield from positions
            return
        for position in positions:
            if self.looked >= scan_events_max:
                self.stopped = position + 1
                return
            self.looked += 1
            record = self.index.record_of(position)
            if record is not None and self.index.input_type_of(record) == self.input_type:
                yield position


def _rows(store: EventStore, index: LogIndex, positions: list[int]) -> list[Row]:
    records = {position: index.record_of(position) for position in positions}
    read = dict(store.read_positions([*positions, *(r for r in records.values() if r is not None)]))
    decoded = {position: ev.decode_event(data) for position, data in read.items()}
    return [row(position, decoded[position], decoded[records[position]] if records[position] else None) for position in positions]  # type: ignore[index, arg-type]


def _descending(index: LogIndex, end: int, head: int, input_type: str | None, identifier: str | None) -> Iterator[int]:
    """The matching positions before `end`, newest first (by id first when both are given)."""
    if identifier is not None:
        keys = [(kind, identifier) for kind in index.kinds_of(identifier)]
        slices = [reversed(index.positions(key, until=end - 1)) for key in keys]
        return _distinct(heapq.merge(*slices, reverse=True))
    if input_type is not None:
        return _of_type_descending(index, end, head, input_type)
    return iter(range(end - 1, 0, -1))


def _ascending(index: LogIndex, start: int, head: int, input_type: str | None, identifier: str | None) -> Iterator[int]:
    """The matching positions from `start` on, oldest first."""
    if identifier is not None:
        keys = [(kind, identifier) for kind in index.kinds_of(identifier)]
        return _distinct(heapq.merge(*(index.positions(key, after=start - 1, until=head) for key in keys)))
    if input_type is not None:
        return _of_type_ascending(index, start, head, input_type)
    return iter(range(start, head + 1))


def _of_type_descending(index: LogIndex, end: int, head: int, input_type: str) -> Iterator[int]:
    records = index.records(input_type)
    for number in range(bisect_right(records, end - 1) - 1, -1, -1):
        record = records[number]
        yield from range(min(index.input_end(record, head), end - 1), record - 1, -1)


def _of_type_ascending(index: LogIndex, start: int, head: int, input_type: str) -> Iterator[int]:
    records = index.records(input_type)
    for number in range(max(0, bisect_right(records, start) - 1), bisect_right(records, head)):
        record = records[number]
        yield from range(max(record, start), index.input_end(record, head) + 1)


def _distinct(positions: Iterator[int]) -> Iterator[int]:
    last = None
    for position in positions:
        if position != last:
            yield position
            last = position


# ---------------------------------------------------------- without an index


def _scanned(store: EventStore, before: int | None, limit: int, input_type: str | None, identifier: str | None) -> Page:
    head = store.head()
    end = head + 1 if before is None or before > head + 1 else max(1, before)
    rows: list[Row] = []
    scanned = 0
    until = end - 1
    while until > 0 and len(rows) < limit and scanned < scan_events_max:
        after = max(0, until - max(4 * limit, 256), until - (scan_events_max - scanned))
        chunk = list(store.read(after=after, until=until))
        scanned += len(chunk)
        found = [r for r in _chunk_rows(store, chunk) if _matches(r, input_type, identifier)]
        rows.extend(reversed(found[-(limit - len(rows)) :]))
        until = after
    if len(rows) >= limit:
        older = rows[-1].position if rows[-1].position > 1 else None
    else:
        older = until + 1 if until > 0 else None  # where the scan stopped
    newer = min(end + limit, head + 1) if end <= head else None
    return Page(rows, head, end, older, newer, scanned)


def _matches(found: Row, input_type: str | None, identifier: str | None) -> bool:
    if input_type is not None and (found.input is None or found.input.type != input_type):
        return False
    return identifier is None or any(key[1] == identifier for key in found.keys)


def _chunk_rows(store: EventStore, chunk: list[tuple[int, Any]]) -> list[Row]:
    """The chunk's rows, oldest first, each with its input's record."""
    record: Any = None
    if chunk and not isinstance(chunk[0][1], RECORDS):
        record = _record_before(store, chunk[0][0])
    rows: list[Row] = []
    for position, event in chunk:
        if isinstance(event, RECORDS):
            record = event
        elif isinstance(event, ev.SourceProgressed):
            record = None
        rows.append(row(position, event, record))
    return rows


def _record_before(store: EventStore, position: int) -> Any:
    """The record of the input that holds `position`: the nearest before it,
    unless a SourceProgressed (a batch's end) comes between."""
    window = record_window_first
    until = position - 1
    while until > 0:
        after = max(0, until - window)
        for _, event in reversed(list(store.read(after=after, until=until))):
            if isinstance(event, RECORDS):
                return event
            if isinstance(event, ev.SourceProgressed):
                return None
        until, window = after, window * 4
    return None


__all__ = ["Page", "Row", "limit_default", "limit_max", "scan_events_max", "timeline"]
