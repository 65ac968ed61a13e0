"""A what-if over a store (docs/whatif.md): LINE is an input's number (its
seq, as explain's `input N` names it). The original is the store's own log;
the fork is the store as it was just before the first edited input (its
newest snapshot at or before that point, and the events since), with the
tail of inputs from there applied again, edited, into memory. The fork's
cost is the tail, not the history; explaining the things that differ on
both sides reads their history before the first edited input from the
store's key table, and scans the log past its mark, shared by both and by
every thing (adapters/whatif_explain.py). Nothing is written to the store.

Everything is read as of the store's head when the what-if starts: a
writer that appends meanwhile (a served store: POST /v1/whatif reads it
beside the writer) changes neither side.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import msgspec

from tandem.adapters.store.memory import MemoryStore
from tandem.adapters.store.url import redacted
from tandem.adapters.whatif import explainer
from tandem.adapters.whatif_explain import PrefixReads
from tandem.domain import events as ev
from tandem.projections import Views
from tandem.replay.engine import Engine, Located, input_boundary, project
from tandem.replay.index import LogIndex
from tandem.replay.key_scan import record_window_first
from tandem.replay.port import EventStore
from tandem.replay.snapshot import copy_views, fold_views
from tandem.replay.traces import TraceInvalid, parse_trace
from tandem.replay.whatif.diff import Run, compare
from tandem.replay.whatif.edits import Edit, EditInvalid, Entry, apply, refused
from tandem.replay.whatif.model import WhatIf, Where

tail_inputs_max = 1_000_000  # inputs a fork applies again (from the first edited input to the head)
Tail = tuple[int, str | None, int | None, bytes]  # an input after the boundary: (seq, file, line, its JSON)


class ForkStore(MemoryStore):
    """The base store's log up to `boundary`, read through it; what the fork
    appends after that, in memory. Its snapshots are the base's, up to `boundary`."""

    def __init__(self, base: EventStore, boundary: int) -> None:
        super().__init__("memory:")
        self.base, self.boundary = base, boundary

    def _select_head(self) -> int:
        return max(self.boundary, super()._select_head())

    def _select_page(self, after: int, until: int | None, limit: int) -> list[tuple[int, bytes]]:
        rows: list[tuple[int, bytes]] = []
        if after < self.boundary:
            end = self.boundary if until is None else min(until, self.boundary)
            rows = list(itertools.islice(self.base.read_encoded(after, end), limit))
        if len(rows) < limit and (until is None or until > self.boundary):
            rows += super()._select_page(max(after, self.boundary), until, limit - len(rows))
        return rows

    def _select_positions(self, positions: list[int]) -> list[tuple[int, bytes]]:
        below = [p for p in positions if p <= self.boundary]
        return [*self.base.read_positions(below), *super()._select_positions([p for p in positions if p > self.boundary])]

    def _snapshot_latest(self, fingerprint: str, until: int | None) -> tuple[int, bytes] | None:
        return self.base.latest_snapshot(fingerprint, self.boundary if until is None else min(until, self.boundary))


def _first_seq(edits: list[Edit]) -> int:
    """The first input an edit changes (an insertion after N changes what follows N)."""
    return min((edit.line + 1 if edit.op == "insert_after" else edit.line) for edit in edits) if edits else 0


def _position_of_input(store: EventStore, seq: int, head: int) -> int | None:
    """The position of input `seq`'s record (InputAccepted/InputRejected), by
    bisecting on positions up to `head` (seqs grow with positions)."""
    low, high = 1, head
    while low <= high:
        middle = (low + high) // 2
        found = _first_record(store, middle - 1, high)
        if found is None:
            high = middle - 1
        elif found[1] == seq:
            return found[0]
        elif found[1] < seq:
            low = found[0] + 1
        else:
            high = middle - 1
    return None


def _first_record(store: EventStore, after: int, until: int) -> tuple[int, int] | None:
    """(position, seq) of the first input's record after `after`, up to
    `until`: read a small window at a time (an input's events follow its record)."""
    window = record_window_first
    while after < until:
        end = min(until, after + window)
        for position, event in store.read(after=after, until=end):
            if type(event) in (ev.InputAccepted, ev.InputRejected):
                return position, event.seq  # type: ignore[union-attr]
        after, window = end, window * 8
    return None


def _read_after(store: EventStore, boundary: int, head: int) -> tuple[list[tuple[int, ev.Event]], list[Tail]]:
    """The events after `boundary` up to `head`, and (seq, file, line, the
    input as a JSON line) of every input among them."""
    events: list[tuple[int, ev.Event]] = []
    tail: list[Tail] = []
    for position, event in store.read(after=boundary, until=head):
        events.append((position, event))
        if type(event) in (ev.InputAccepted, ev.InputRejected):
            tail.append((event.seq, event.file, event.line, msgspec.json.encode(event.input)))  # type: ignore[union-attr]
            if len(tail) > tail_inputs_max:
                raise EditInvalid(f"over {tail_inputs_max} inputs after the first edited one: edit a later input")
    return events, tail


def _fork_items(
    tail: list[Tail], edits: list[Edit], first: int, not_before: object
) -> tuple[list[Located], list[Entry]]:
    data = b"".join(line + b"\n" for *_, line in tail)
    edited, entries = apply(data, edits, first=first, unit="input")
    try:
        trace = parse_trace(edited, "what-if", "what-if", not_before)  # type: ignore[arg-type]
    except TraceInvalid as invalid:
        raise refused(invalid, entries, "inputs are") from None
    where = {seq: (file, line) for seq, file, line, _ in tail}
    items = []
    for item, entry in zip(trace.items, entries, strict=True):
        file, line = where.get(entry.origin, (None, None)) if entry.origin is not None else (None, None)
        items.append(Located(item.input, file, line))
    return items, entries


def _fork_where(first: int, entries: list[Entry]) -> Callable[[int], Where | None]:
    def where(seq: int) -> Where | None:
        if seq < first:
            return Where(line=seq)
        index = seq - first
        if index >= len(entries):
            return None  # not an input of the tail (none is)
        return entries[index].where()

    return where


def _until_position(store: EventStore, until: int | None, head: int) -> int:
    if until is None:
        return head
    following = _position_of_input(store, until + 1, head)
    return head if following is None else input_boundary(store, following - 1)


def whatif_store(
    store: EventStore, url: str, edits: list[Edit], until: int | None = None, *, index: LogIndex | None = None
) -> WhatIf:
    """The what-if of `edits` over `store` (read only, as of its head now):
    inputs named by number. The answer names the store by `url`, its password
    left out. `index`: the store's `LogIndex` if it keeps one (a served
    store): its log is read through it, not scanned."""
    head = store.head()
    first = _first_seq(edits) or head
    start = _position_of_input(store, first, head) if edits else None
    if edits and start is None:
        raise EditInvalid(f"{edits[0].text}: the store has no input {first}")
    boundary = start - 1 if start is not None else head
    with PrefixReads(store, boundary, index) as prefix:
        if start is not None:
            prefix.guess(start)  # beside the fork's fold
        until_position = _until_position(store, until, head)
        fork_store = ForkStore(store, boundary)
        fork = Engine(fork_store, snapshot_every=0)
        assert fork.views is not None
        prefix_views = copy_views(fork.views)  # the original's too, up to the boundary
        after, tail = _read_after(store, boundary, head)
        items, entries = _fork_items(tail, edits, first, fork.state.last_at)
        for item, entry in zip(items, entries, strict=True):
            order = (entry.origin, 0) if entry.origin is not None else (entry.after, 1)
            if until is not None and order > (until, 0):
                break
            fork.submit(item)
        original_events = [(p, e) for p, e in after if p <= until_position]
        fork_events = list(fork_store.read(after=boundary))
        same = lambda seq: Where(line=seq)  # noqa: E731
        original = Run(
            events=original_events, views=_original_views(store, prefix_views, original_events, until_position),
            where=same, line_where=None, explain=explainer(store, until_position, prefix.index(original_events)),
        )  # fmt: skip
        forked = Run(
            events=fork_events, views=fork.views.document(), where=_fork_where(first, entries), line_where=None,
            explain=explainer(fork_store, None, prefix.index(fork_events)),
        )  # fmt: skip
        original, forked = prefix.explained(original, forked)
        return compare(original, forked, source=redacted(url), unit="input", edits=[edit.text for edit in edits], until=until)


def _original_views(store: EventStore, prefix_views: Views, events: list[tuple[int, ev.Event]], until_position: int) -> dict[str, Any]:
    """The original's views at `until_position`: the views the fork started
    from, with the original's events since folded into them; from the store
    when `until_position` is before the boundary."""
    if until_position < prefix_views.position:
        return project(store, until_position).document()
    prefix_views.position += fold_views(prefix_views, (event for _, event in events))
    return prefix_views.document()
