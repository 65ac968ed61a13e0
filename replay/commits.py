"""The log as a service shows it: commits (for the live stream and its
resume) and pages of events with the input behind each (for `/v1/events`).

`Commit` is one transaction as the live engine made it (adapters/runtime.py:
`LiveEngine.commit`): built once, when it is committed, and the same object
goes to the engine's listeners (the stream, the log's index) and back to
whoever submitted it (the HTTP answer, the console's flash).

A **commit** is one transaction: one input, a batch of inputs, or a batch
and its trailer; or one request of a group that `tandem serve` committed in
one transaction (adapters/group_commit.py), which is a commit per request,
live as read back. Its boundaries are recoverable from the log alone, so a
stream resumed after a restart still sends one message per commit:

* every input's events start with its record (`InputAccepted` /
  `InputRejected`);
* a batch of a trace file (ingest, the spool) ends with its
  `SourceProgressed`;
* the inputs of one HTTP request share a `file` no other request has
  (`http@{head before}`), and nothing else shares it;
* anything else (an input with no file, the runtime's own) is a commit of
  its own. (The runtime commits the watchdog rows it imports together; read
  back from the log they are one commit each.)

A commit may carry its **row changes** (`encoded_row_changes`): what changed in
each view it changed, in the stream's words (docs/api.md, "Row changes"),
encoded as it committed (the views move on), or None when nobody asked or
when they were over `message_rows_bytes_max`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from tandem.domain import events as ev
from tandem.domain.events import decode_event, event_name
from tandem.domain.inputs import format_at
from tandem.projections import Views
from tandem.replay.port import EventStore
from tandem.replay.snapshot import code_fingerprint, views_at

RECORDS = (ev.InputAccepted, ev.InputRejected)
tail_window_events_first = 4_096
# A start reads back at most this many events for the commits a stream may
# resume from: the 1,000 commits of a log ingested in transactions of 1,000
# inputs would be the whole log.
tail_events_max = 65_536
# ...and rebuilds their changes folding at most this many events before the
# first of them (`refoldable`): past that, fewer commits, or none (a stream
# resuming from before them gets a reset).
start_fold_events_max = 100_000
events_page_max = 1_000
record_search_window_first = 64
# A commit's row changes are kept (and sent) up to this size, encoded; a
# bigger commit's are not: a stream that asked for them gets a `reset`.
message_rows_bytes_max = 4 * 1_048_576


@dataclass(frozen=True, slots=True)
class Commit:
    """One commit (a transaction, or one request's part of a group's): the
    head before it and the events it added."""

    head_before: int
    events: list[ev.Event]
    views: list[str] = field(default_factory=list)  # the views it changed, in document order
    rows: bytes | None = None  # its row changes, encoded (`encoded_row_changes`), when they were asked for
    keys: bytes | None = None  # the keys of the rows it changed, encoded (`encoded_touched_keys`)

    @property
    def position(self) -> int:
        return self.head_before + len(self.events)


@dataclass(frozen=True, slots=True)
class CommitSummary:
    """What a stream message says about one commit."""

    after: int  # the head before it
    position: int  # the head after it
    types: frozenset[type]  # the event types it holds
    records: tuple[ev.InputAccepted | ev.InputRejected, ...]  # its inputs' records, in order
    # The views it changed, in document order, when known (a live commit);
    # None when read back from the log (then: the views that fold its events).
    views: tuple[str, ...] | None = None
    rows: bytes | None = None  # its row changes, encoded, when known and not too big
    keys: bytes | None = None  # the keys of the rows it changed, encoded, when known and not too big

    def input_facts(self) -> tuple[InputFacts, ...]:
        """(type, actor, at, accepted) per input: what a stream message says
        of each, kept without the input itself (its text, a batch's lines)."""
        return tuple(
            (record.input.input_type, record.input.sender, record.input.at, type(record) is ev.InputAccepted)
            for record in self.records
        )


InputFacts = tuple[str, str, Any, bool]  # an input's type, actor, at (a datetime) and whether it was accepted


def facts_json(facts: Iterable[InputFacts]) -> list[dict[str, Any]]:
    """{type, actor, at, accepted} per input, as a stream message sends them."""
    return [{"type": kind, "actor": actor, "at": format_at(at), "accepted": accepted} for kind, actor, at, accepted in facts]


def summarize(
    after: int, events: list[ev.Event], views: Iterable[str] | None = None, rows: bytes | None = None, keys: bytes | None = None
) -> CommitSummary:
    records = tuple(event for event in events if isinstance(event, RECORDS))
    changed = tuple(views) if views is not None else None
    return CommitSummary(after, after + len(events), frozenset(map(type, events)), records, changed, rows, keys)


def encoded_row_changes(views: Views) -> bytes | None:
    """The row changes of the views' changes since `take_changed` (call it
    before), encoded as a JSON object of view name to change; None once they
    pass `message_rows_bytes_max` (the rest is not even rendered)."""
    return _bounded_object(views.row_changes())


def encoded_touched_keys(views: Views) -> bytes | None:
    """The keys of the rows changed since `take_changed` (call it before),
    encoded as a JSON object of view name to `{"key", "touched"}` (null for
    a view whose change names no keys): what `?rows=keys` sends. Costs the
    keys, not the rows: cheap enough for every commit. None past
    `message_rows_bytes_max`."""
    return _bounded_object(views.touched_keys())


def _bounded_object(pairs: Iterable[tuple[str, Any]]) -> bytes | None:
    """`{name: value, ...}` encoded, each value as it comes; None once it
    passes `message_rows_bytes_max` (the rest is not even taken)."""
    parts: list[bytes] = []
    size = 2
    for name, value in pairs:
        part = msgspec.json.encode(name) + b":" + msgspec.json.encode(value)
        size += len(part) + 1
        if size > message_rows_bytes_max:
            return None
        parts.append(part)
    return b"{" + b",".join(parts) + b"}"


def split_commits(positioned: Iterable[tuple[int, ev.Event]]) -> Iterator[CommitSummary]:
    """Group consecutive events into commits (see the module's docstring).
    The first group may be the tail of a commit that began earlier."""
    group: list[ev.Event] = []
    start = 0
    file: str | None = None
    closed = False
    for position, event in positioned:
        if isinstance(event, RECORDS) and group and (closed or file is None or event.file != file):
            yield summarize(start, group)
            group = []
        if not group:
            start, file, closed = position - 1, getattr(event, "file", None), False
        group.append(event)
        if isinstance(event, ev.SourceProgressed):
            closed = True
    if group:
        yield summarize(start, group)


def tail_commits(store: EventStore, head: int, count: int) -> list[CommitSummary]:
    """The last `count` whole commits at or before `head`, oldest first:
    reads back in growing windows, at most `tail_events_max` events (fewer
    commits, or none, when they do not fit)."""
    window = tail_window_events_first
    while True:
        after = max(0, head - window)
        commits = list(split_commits(store.read(after=after, until=head)))
        if after > 0 and commits:
            commits = commits[1:]  # may have begun before the window
        if len(commits) >= count or after == 0 or window >= tail_events_max:
            return commits[-count:] if count else []
        window = min(window * 4, tail_events_max)


def refoldable(store: EventStore, commits: list[CommitSummary], fold_events_max: int = start_fold_events_max) -> list[CommitSummary]:
    """The newest of `commits` whose changes `with_changed_views` rebuilds
    folding at most `fold_events_max` events before the first of them (from
    the newest snapshot of the running code at or before it, else from 0):
    a start costs what the ring holds, not the log. None, when none is."""
    mine = code_fingerprint()
    snapshots = sorted(info.position for info in store.list_snapshots() if info.fingerprint == mine)
    for index, commit in enumerate(commits):
        base = max((position for position in snapshots if position <= commit.after), default=0)
        if commit.after - base <= fold_events_max:
            return commits[index:]
    return []


def with_changed_views(store: EventStore, commits: list[CommitSummary], rows_from: int = 0) -> list[CommitSummary]:
    """The same commits, each naming the views it changed and holding the
    keys of the rows it changed, and from the `rows_from`th on its row
    changes, as a live commit does: the views as they were before the first
    (from the newest snapshot before it), then each commit's events folded
    and the changes taken. (Rows cost their rendering: a start renders
    those of the newest few commits only.)"""
    if not commits:
        return []
    views = views_at(store, commits[0].after)
    views.take_changed()
    exact: list[CommitSummary] = []
    ends = iter(commits)
    commit = next(ends)
    for position, event in store.read(after=commits[0].after, until=commits[-1].position):  # one read
        views.apply(event)
        if position == commit.position:
            rows = encoded_row_changes(views) if len(exact) >= rows_from else None
            keys = encoded_touched_keys(views)
            exact.append(dataclasses.replace(commit, views=tuple(views.take_changed()), rows=rows, keys=keys))
            commit = next(ends, commit)
    assert len(exact) == len(commits), (len(exact), len(commits))
    return exact


def commits_after(store: EventStore, after: int, until: int) -> list[CommitSummary]:
    """The commits after position `after` (a commit boundary) up to `until`."""
    return list(split_commits(store.read(after=after, until=until)))


# ------------------------------------------------------------ event pages


class InputRef(msgspec.Struct, frozen=True):
    file: str | None
    line: int | None
    id: str | None


class EventRow(msgspec.Struct, frozen=True):
    position: int
    type: str
    input: InputRef | None
    body: msgspec.Raw


def _ref(record: ev.InputAccepted | ev.InputRejected) -> InputRef:
    return InputRef(record.file, record.line, record.input.id)


def _record_before(store: EventStore, position: int) -> InputRef | None:
    """The input whose events hold the event at `position + 1`: the nearest
    record at or before `position`, unless a SourceProgressed (a batch's end)
    comes after it. Reads back in growing windows."""
    window = record_search_window_first
    until = position
    while until > 0:
        after = max(0, until - window)
        for _, event in reversed(list(store.read(after=after, until=until))):
            if isinstance(event, RECORDS):
                return _ref(event)
            if isinstance(event, ev.SourceProgressed):
                return None
        until, window = after, window * 4
    return None


def events_page(store: EventStore, after: int, limit: int) -> tuple[list[EventRow], int | None]:
    """Up to `limit` events after `after`, each with its input, and where the
    next page starts (None when this one reaches the head)."""
    assert 1 <= limit <= events_page_max, limit
    head = store.head()
    rows: list[EventRow] = []
    current: InputRef | None = _record_before(store, after) if after > 0 else None
    for position, data in store.read_encoded(after=after, until=min(head, after + limit)):
        event = decode_event(data)
        if isinstance(event, RECORDS):
            current = _ref(event)
        rows.append(EventRow(position, event_name(event), None if isinstance(event, ev.SourceProgressed) else current, msgspec.Raw(data)))
        if isinstance(event, ev.SourceProgressed):
            current = None
    last = rows[-1].position if rows else after
    return rows, (last if last < head else None)
