"""The timeline of inputs, for the console (docs/api.md, "The console"): one
entry per input, newest first — the input as recorded, its result and the
events it caused — filtered by input type, actor, an id its events concern
and a time range of its `at`, the filters combined; paged by position.

An input's events are its record (`InputAccepted`/`InputRejected`) and what
follows it up to the next record or the head: the domain's events, the
pass's and, after a batch's last input, the batch's `SourceProgressed` (the
same transaction). An entry holds at most `events_shown_max` of them (its
first ones) and how many there are.

Pages go by the records' positions: `before=P` gives the `limit` newest
matching inputs whose record is before P (the head's next when None), each
whole (its events after P too); `older` is the `before` of the next older
page, `newer` of the next newer one (None when there is none).

The time range (`since`, `until`, both inclusive) relies on the contract's
order: an input's `at` is never before the previous input's. With a
`LogIndex` (replay/index.py) a page reads what it shows and little more: the
range is found by a binary search over the records, the candidates come
from the index (every record, those of one input type, or the records of the
events that concern an id) and only an actor, or a type with an id, is
checked one candidate at a time, at most `scan_records_max` of them: the page
then ends there and `older` goes on from there. Without one it reads the log
backwards from `before` in windows, at most `scan_events_max` events (as
replay/timeline.py does): a filtered page may hold fewer inputs than `limit`,
and its `newer` is approximate (`before + limit`).
"""

from __future__ import annotations

import datetime
import heapq
import itertools
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from tandem.domain import events as ev
from tandem.domain.keys import event_keys
from tandem.replay.explain.log import input_ref
from tandem.replay.explain.model import InputRef
from tandem.replay.index import LogIndex
from tandem.replay.port import EventStore
from tandem.replay.timeline import Row, row

limit_default = 50
limit_max = 500
events_shown_max = 50  # of one input's events, an entry holds the first ones
scan_events_max = 5_000  # without an index, a page looks at most this far back
scan_records_max = 5_000  # with one, at most this many candidates are checked one by one
read_batch = 64  # records read together to check their actors

RECORDS = (ev.InputAccepted, ev.InputRejected)
Record = ev.InputAccepted | ev.InputRejected


@dataclass(frozen=True)
class Chosen:
    """The filters, each None when not given; all must hold."""

    kind: str | None = None  # the input's type
    actor: str | None = None
    identifier: str | None = None  # an id (of any key kind) one of its events concerns
    since: datetime.datetime | None = None  # its `at`, inclusive (aware: UTC)
    until: datetime.datetime | None = None

    def record_matches(self, record: Record) -> bool:
        value = record.input
        return (
            (self.kind is None or value.input_type == self.kind)
            and (self.actor is None or value.sender == self.actor)
            and (self.since is None or value.at >= self.since)
            and (self.until is None or value.at <= self.until)
        )


class Entry(msgspec.Struct, frozen=True):
    record: int  # the position of the input's record
    input: InputRef  # seq, file, line, type, id, actor, at, rejected (the reason)
    value: dict[str, Any]  # the input as recorded: a trace line's fields, its `at` as stamped
    detail: str  # a rejection's detail ("" when none)
    events: list[Row]  # its events, oldest first, its record first (at most events_shown_max)
    total: int | None  # how many events it holds (None: more than shown, not counted)
    concerns: list[tuple[str, str]]  # the keys its shown events concern, each once, in order


class Page(msgspec.Struct, frozen=True):
    entries: list[Entry]  # newest first
    head: int  # the log's head the page was read at
    before: int  # the entries' records are before this position
    older: int | None  # `before` of the next older page
    newer: int | None  # `before` of the next newer page
    scanned: int  # candidates checked (with an index) or events read (without)


def input_timeline(
    store: EventStore,
    *,
    before: int | None = None,
    limit: int = limit_default,
    chosen: Chosen = Chosen(),
    index: LogIndex | None = None,
) -> Page:
    """A page of the timeline of inputs (see the module's docstring)."""
    if not 1 <= limit <= limit_max:
        raise ValueError(f"limit {limit}: from 1 to {limit_max}")
    if index is not None:
        return _indexed(store, index, before, limit, chosen)
    return _scanned(store, before, limit, chosen)


def _end(before: int | None, head: int) -> int:
    return head + 1 if before is None or before > head + 1 else max(1, before)


def entry(record_position: int, group: Sequence[tuple[int, ev.Event]], total: int | None) -> Entry:
    """The entry of the input whose events (its record first, oldest first) are `group`."""
    record = group[0][1]
    assert isinstance(record, RECORDS), (record_position, type(record).__name__)
    rows: list[Row] = []
    holder: Record | None = record
    for position, event in group[:events_shown_max]:
        if isinstance(event, ev.SourceProgressed):
            holder = None  # a batch's marker: no input's (as /v1/events says)
        rows.append(row(position, event, holder))
    concerns = list(dict.fromkeys(key for shown in rows for key in shown.keys))
    detail = record.detail if isinstance(record, ev.InputRejected) else ""
    return Entry(record_position, input_ref(record), msgspec.to_builtins(record.input), detail, rows, total, concerns)


# ------------------------------------------------------------ with an index


def _indexed(store: EventStore, index: LogIndex, before: int | None, limit: int, chosen: Chosen) -> Page:
    head = index.head  # every read below is bounded by it: a commit may be indexed meanwhile
    end = _end(before, head)
    records = index.records()
    low, high = _time_bounds(store, records, chosen, head)
    older_scan, newer_scan = _Candidates(store, index, chosen), _Candidates(store, index, chosen)
    found = list(itertools.islice(older_scan.checked(_descending(index, chosen, head, end, (low, high))), limit + 1))
    older = found[limit - 1] if len(found) > limit else older_scan.stopped
    following = list(itertools.islice(newer_scan.checked(_ascending(index, chosen, head, end, (low, high))), limit))
    if len(following) == limit:
        newer: int | None = following[-1] + 1
    else:
        newer = head + 1 if following or newer_scan.stopped is not None else None
    entries = [_entry_at(store, records, position, head) for position in found[:limit]]
    return Page(entries, head, end, older, newer, older_scan.looked)


def _at(store: EventStore, position: int) -> datetime.datetime:
    (found,) = store.read_positions([position])
    record = ev.decode_event(found[1])
    assert isinstance(record, RECORDS), position
    return record.input.at


def _time_bounds(store: EventStore, records: Sequence[int], chosen: Chosen, head: int) -> tuple[int, int]:
    """The positions the records in the time range lie between (inclusive):
    a binary search, one record read a step."""
    count = bisect_right(records, head)
    low, high = 1, head
    if chosen.since is not None:
        first = bisect_left(records, chosen.since, 0, count, key=lambda position: _at(store, position))
        low = records[first] if first < count else head + 1
    if chosen.until is not None:
        past = bisect_right(records, chosen.until, 0, count, key=lambda position: _at(store, position))
        high = records[past - 1] if past > 0 else 0
    return low, high


def _next_record(records: Sequence[int], position: int, head: int) -> int:
    """The first record after `position`, or the head's next."""
    found = bisect_right(records, position)
    return records[found] if found < len(records) and records[found] <= head else head + 1


def _of_id(index: LogIndex, positions: Iterator[int]) -> Iterator[int]:
    """The records of those positions (ordered either way), each once."""
    last = None
    for position in positions:
        record = index.record_before(position)
        if record is None:
            return  # before the first input
        if record != last:
            yield record
            last = record


def _descending(index: LogIndex, chosen: Chosen, head: int, end: int, bounds: tuple[int, int]) -> Iterator[int]:
    """The records before `end` within `bounds`, newest first: those of the
    id's events (by the index's keys), else those of the type, else all."""
    low, high = bounds
    top = min(end - 1, high)
    if chosen.identifier is not None:
        cut = _next_record(index.records(), end - 1, head)  # the inputs before `end` own the events before it
        keys = [(kind, chosen.identifier) for kind in index.kinds_of(chosen.identifier)]
        positions = heapq.merge(*(reversed(index.positions(key, until=cut - 1)) for key in keys), reverse=True)
        candidates: Iterator[int] = _of_id(index, positions)
    else:
        held = index.records(chosen.kind)
        candidates = (held[number] for number in range(bisect_right(held, top) - 1, -1, -1))
    for record in candidates:
        if record < low:
            return
        if record <= top:
            yield record


def _ascending(index: LogIndex, chosen: Chosen, head: int, end: int, bounds: tuple[int, int]) -> Iterator[int]:
    """The records from `end` on within `bounds`, oldest first."""
    low, high = bounds
    start = max(end, low)
    if chosen.identifier is not None:
        cut = _next_record(index.records(), end - 1, head)
        keys = [(kind, chosen.identifier) for kind in index.kinds_of(chosen.identifier)]
        positions = heapq.merge(*(index.positions(key, after=cut - 1, until=head) for key in keys))
        candidates: Iterator[int] = _of_id(index, positions)
    else:
        held = index.records(chosen.kind)
        candidates = (held[number] for number in range(bisect_left(held, start), len(held)))
    for record in candidates:
        if record > high:
            return
        if record >= start:
            yield record


class _Candidates:
    """Of the candidate records, those of the type (when the candidates came
    from an id) and of the actor: read `read_batch` at a time, at most
    `scan_records_max` looked at (`stopped`: where it stopped, as `before`)."""

    def __init__(self, store: EventStore, index: LogIndex, chosen: Chosen) -> None:
        self.store, self.index, self.chosen = store, index, chosen
        self.looked = 0
        self.stopped: int | None = None

    def checked(self, candidates: Iterator[int]) -> Iterator[int]:
        kind = self.chosen.kind if self.chosen.identifier is not None else None  # else the candidates are of it
        if kind is None and self.chosen.actor is None:
            for record in candidates:
                self.looked += 1
                yield record
            return
        while True:
            batch = list(itertools.islice(candidates, read_batch))
            if not batch:
                return
            if self.looked + len(batch) > scan_records_max:
                self.stopped = batch[0] + 1
                return
            self.looked += len(batch)
            of_kind = [record for record in batch if kind is None or self.index.input_type_of(record) == kind]
            yield from self._of_actor(of_kind)

    def _of_actor(self, records: list[int]) -> Iterator[int]:
        if self.chosen.actor is None:
            yield from records
            return
        read = dict(self.store.read_positions(records))
        for record in records:
            decoded = ev.decode_event(read[record])
            if isinstance(decoded, RECORDS) and decoded.input.sender == self.chosen.actor:
                yield record


def _entry_at(store: EventStore, records: Sequence[int], record: int, head: int) -> Entry:
    last = _next_record(records, record, head) - 1
    shown_last = min(last, record + events_shown_max - 1)
    return entry(record, list(store.read(after=record - 1, until=shown_last)), last - record + 1)


# ---------------------------------------------------------- without an index


@dataclass
class _Scan:
    """A page read backwards: the events met since the last record (newest
    first), what was read, the entries found."""

    store: EventStore
    chosen: Chosen
    end: int
    head: int
    limit: int
    pending: list[tuple[int, ev.Event]]
    entries: list[Entry]
    scanned: int = 0
    first: bool = True  # the next record met is the newest before `end`: its events may go on past it
    done: bool = False  # nothing older can match (before the time range, or the page is full)

    def met(self, position: int, event: ev.Event) -> None:
        self.pending.append((position, event))
        if not isinstance(event, RECORDS):
            return
        group = self.pending[::-1]
        self.pending = []
        total: int | None = len(group)
        if self.first:
            following, complete = _following(self.store, self.end, self.head)
            group += following
            total = len(group) if complete else None
            self.first = False
        if self.chosen.since is not None and event.input.at < self.chosen.since:
            self.done = True  # every older input is earlier still
            return
        if self.chosen.record_matches(event) and _concerns(group, self.chosen.identifier):
            self.entries.append(entry(position, group, total))
            self.done = len(self.entries) >= self.limit


def _scanned(store: EventStore, before: int | None, limit: int, chosen: Chosen) -> Page:
    head = store.head()
    end = _end(before, head)
    scan = _Scan(store, chosen, end, head, limit, [], [])
    until = end - 1
    while until > 0 and not scan.done and scan.scanned < scan_events_max:
        after = max(0, until - max(4 * limit, 256), until - (scan_events_max - scan.scanned))
        chunk = list(store.read(after=after, until=until))
        scan.scanned += len(chunk)
        for position, event in reversed(chunk):
            scan.met(position, event)
            if scan.done:
                break
        until = after
    if len(scan.entries) >= limit:
        older = scan.entries[-1].record if scan.entries[-1].record > 1 else None
    else:
        older = until + 1 if until > 0 and not scan.done else None  # where the scan stopped
    newer = min(end + limit, head + 1) if end <= head else None
    return Page(scan.entries, head, end, older, newer, scan.scanned)


def _following(store: EventStore, start: int, head: int) -> tuple[list[tuple[int, ev.Event]], bool]:
    """The events from `start` on before the next record, at most
    `events_shown_max` of them; whether that is all of them."""
    found: list[tuple[int, ev.Event]] = []
    for position, event in store.read(after=start - 1, until=min(head, start + events_shown_max)):
        if isinstance(event, RECORDS):
            return found, True
        if len(found) == events_shown_max:
            return found, False
        found.append((position, event))
    return found, True


def _concerns(group: Sequence[tuple[int, ev.Event]], identifier: str | None) -> bool:
    """Whether one of the events names `identifier` in a key (of any kind)."""
    return identifier is None or any(len(key) > 1 and key[1] == identifier for _, event in group for key in event_keys(event))


__all__ = ["Chosen", "Entry", "Page", "entry", "input_timeline", "limit_default", "limit_max"]
