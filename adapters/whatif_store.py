"""A what-if over a store (docs/whatif.md): LINE is an input's number (its
seq, as explain's `input N` names it). The original is the store's own log;
the fork is the store as it was just before the first edited input (its
newest snapshot at or before that point, and the events since), with the
tail of inputs from there applied again, edited, into memory. The cost is
the tail, not the history; nothing is written to the store.

Everything is read as of the store's head when the what-if starts: a
writer that appends meanwhile (a served store: POST /v1/whatif reads it
beside the writer) changes neither side.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import msgspec

from tandem.adapters.store.memory import MemoryStore
from tandem.adapters.store.url import redacted
from tandem.adapters.whatif import explainer
from tandem.domain import events as ev
from tandem.replay.engine import Engine, Located, input_boundary, project
from tandem.replay.port import EventStore
from tandem.replay.traces import TraceInvalid, parse_trace
from tandem.replay.whatif.diff import Run, compare
from tandem.replay.whatif.edits import Edit, EditInvalid, Entry, apply
from tandem.replay.whatif.model import WhatIf, Where

tail_inputs_max = 1_000_000  # inputs a fork applies again (from the first edited input to the head)


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
        found = None
        for position, event in store.read(after=middle - 1, until=high):
            if type(event) in (ev.InputAccepted, ev.InputRejected):
                found = (position, event.seq)  # type: ignore[union-attr]
                break
        if found is None:
            high = middle - 1
        elif found[1] == seq:
            return found[0]
        elif found[1] < seq:
            low = found[0] + 1
        else:
            high = middle - 1
    return None


def _tail(store: EventStore, boundary: int, head: int) -> list[tuple[int, str | None, int | None, bytes]]:
    """(seq, file, line, the input as a JSON line) of every input after `boundary`, up to `head`."""
    tail = []
    for _, event in store.read(after=boundary, until=head):
        if type(event) in (ev.InputAccepted, ev.InputRejected):
            tail.append((event.seq, event.file, event.line, msgspec.json.encode(event.input)))  # type: ignore[union-attr]
            if len(tail) > tail_inputs_max:
                raise EditInvalid(f"over {tail_inputs_max} inputs after the first edited one: edit a later input")
    return tail


def _fork_items(
    tail: list[tuple[int, str | None, int | None, bytes]], edits: list[Edit], first: int, not_before: object
) -> tuple[list[Located], list[Entry]]:
    data = b"".join(line + b"\n" for *_, line in tail)
    edited, entries = apply(data, edits, first=first, unit="input")
    try:
        trace = parse_trace(edited, "what-if", "what-if", not_before)  # type: ignore[arg-type]
    except TraceInvalid as invalid:
        error = invalid.errors[0]
        entry = entries[error.line - 1] if 1 <= error.line <= len(entries) else None
        label = entry.label if entry is not None else f"input {error.line}"
        edited_by = f" (after {', '.join(entry.edited)})" if entry is not None and entry.edited else ""
        raise EditInvalid(f"the edited inputs are not valid: {label}{edited_by}: {error.message}") from None
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
        entry = entries[index]
        return Where(line=entry.origin) if entry.origin is not None else Where(line=None, inserted_after=entry.after, inserted=entry.nth)

    return where


def _until_position(store: EventStore, until: int | None, head: int) -> int:
    if until is None:
        return head
    following = _position_of_input(store, until + 1, head)
    return head if following is None else input_boundary(store, following - 1)


def whatif_store(store: EventStore, url: str, edits: list[Edit], until: int | None = None) -> WhatIf:
    """The what-if of `edits` over `store` (read only, as of its head now):
    inputs named by number. The answer names the store by `url`, its password
    left out."""
    head = store.head()
    first = _first_seq(edits) or head
    start = _position_of_input(store, first, head) if edits else None
    if edits and start is None:
        raise EditInvalid(f"{edits[0].text}: the store has no input {first}")
    boundary = start - 1 if start is not None else head
    until_position = _until_position(store, until, head)
    fork_store = ForkStore(store, boundary)
    fork = Engine(fork_store, snapshot_every=0)
    items, entries = _fork_items(_tail(store, boundary, head), edits, first, fork.state.last_at)
    fork_where = _fork_where(first, entries)
    for item, entry in zip(items, entries, strict=True):
        order = (entry.origin, 0) if entry.origin is not None else (entry.after, 1)
        if until is not None and order > (until, 0):
            break
        fork.submit(item)
    same = lambda seq: Where(line=seq)  # noqa: E731
    original_events = list(store.read(after=boundary, until=until_position))
    original = Run(
        events=original_events, views=project(store, until_position).document(), where=same, line_where=None,
        explain=explainer(store, until_position),
    )  # fmt: skip
    assert fork.views is not None
    forked = Run(
        events=list(fork_store.read(after=boundary)), views=fork.views.document(), where=fork_where, line_where=None,
        explain=explainer(fork_store),
    )  # fmt: skip
    return compare(original, forked, source=redacted(url), unit="input", edits=[edit.text for edit in edits], until=until)
