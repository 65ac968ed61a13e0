"""The timeline's rows and the overview's latest inputs, read from the log
newest first, a bounded page at a time (never the whole log)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tandem.domain import events as ev
from tandem.domain.inputs import format_at
from tandem.domain.keys import event_keys
from tandem.replay.port import EventStore

timeline_page_events = 50
scan_events_max = 5_000  # a filtered page looks at most this far back
RECORDS = (ev.InputAccepted, ev.InputRejected)


@dataclass(frozen=True, slots=True)
class Row:
    position: int
    event: str
    input_type: str | None
    actor: str | None
    at: str | None
    accepted: bool | None
    reason: str | None
    file: str | None
    line: int | None
    keys: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Page:
    rows: list[Row]
    head: int
    before: int  # the rows are at positions before this (exclusive)
    older: int | None  # `before` of the next (older) page, None at the start
    newer: int | None  # `before` of the previous (newer) page, None at the head
    scanned: int  # events looked at


def _row(position: int, event: Any, record: Any) -> Row:
    value = record.input if record is not None else None
    return Row(
        position=position,
        event=type(event).__name__,
        input_type=value.input_type if value is not None else None,
        actor=value.sender if value is not None else None,
        at=format_at(value.at) if value is not None else None,
        accepted=(type(record) is ev.InputAccepted) if record is not None else None,
        reason=getattr(record, "reason", None),
        file=record.file if record is not None else None,
        line=record.line if record is not None else None,
        keys=tuple((key[0], "/".join(key[1:])) for key in event_keys(event)),
    )


def timeline_page(store: EventStore, before: int | None, input_type: str | None, identifier: str | None) -> Page:
    head = store.head()
    end = head + 1 if before is None or before > head + 1 else before
    rows: list[Row] = []
    scanned = 0
    until = end - 1
    while until > 0 and len(rows) < timeline_page_events and scanned < scan_events_max:
        after = max(0, until - timeline_page_events * 4)
        chunk = list(store.read(after=after, until=until))
        scanned += len(chunk)
        found = _rows_of(store, chunk, input_type, identifier)
        rows.extend(reversed(found[-(timeline_page_events - len(rows)) :]))  # newest first
        until = after
    if len(rows) >= timeline_page_events:
        older = rows[-1].position if rows[-1].position > 1 else None
    else:
        older = until + 1 if until > 0 else None  # the scan's bound, not the start: go on from there
    newer = min(end + timeline_page_events, head + 1) if end <= head else None
    return Page(rows, head, end, older, newer, scanned)


def _rows_of(store: EventStore, chunk: list[tuple[int, Any]], input_type: str | None, identifier: str | None) -> list[Row]:
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
        row = _row(position, event, record if not isinstance(event, ev.SourceProgressed) else None)
        if input_type and row.input_type != input_type:
            continue
        if identifier and identifier not in {name for _, name in row.keys}:
            continue
        rows.append(row)
    return rows


def _record_before(store: EventStore, position: int) -> Any:
    window = 64
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


def recent_inputs(store: EventStore, at: int | None, count: int) -> list[Row]:
    """The last `count` inputs at or before `at` (the head if None), newest first."""
    head = store.head() if at is None else min(at, store.head())
    rows: list[Row] = []
    until = head
    while until > 0 and len(rows) < count:
        after = max(0, until - 256)
        rows += [_row(p, e, e) for p, e in reversed(list(store.read(after=after, until=until))) if isinstance(e, RECORDS)]
        until = after
    return rows[:count]
