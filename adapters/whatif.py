"""Running a what-if (docs/whatif.md): the original and the fork, each
replayed into a store of its own in memory, compared by replay/whatif/diff.py.

Over a trace, both sides are that trace replayed as `tandem replay` replays
it: the original as it is, the fork as the edited file would be (the same
name, so every event but those the edit changes is the same, byte for byte).
Nothing is written anywhere: not the trace, not a store.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tandem.adapters.ingest import ingest
from tandem.adapters.store import open_store
from tandem.domain import events as ev
from tandem.replay.engine import Engine
from tandem.replay.explain import document
from tandem.replay.explain import explain as explain_thing
from tandem.replay.explain.model import ExplainError, Explanation
from tandem.replay.port import EventStore
from tandem.replay.traces import Trace, TraceInvalid, parse_trace
from tandem.replay.whatif.diff import Run, compare
from tandem.replay.whatif.edits import Edit, EditInvalid, Entry, apply, refused
from tandem.replay.whatif.model import WhatIf, Where

trace_bytes_max = 256 * 1_048_576  # a trace a what-if reads whole, twice, in memory


def explainer(store: EventStore, until: int | None = None, index: Any = None) -> Callable[[str, str], Explanation | None]:
    """A thing's explanation (None: the id names no such thing there), read
    through `index` when given (a `LogIndex` or what answers as one)."""

    def explain(kind: str, ident: str) -> Explanation | None:
        try:
            if index is not None:
                return explain_thing(store, ident, kind=kind, index=index, until=until)[0]
            return document(store, ident, kind=kind, until=until).matches[0]
        except ExplainError:
            return None

    return explain


def _replayed(trace: Trace, until_line: int | None) -> tuple[EventStore, Engine]:
    store = open_store("memory:")
    engine = Engine(store)
    ingest(engine, trace, until_line=until_line)
    return store, engine


def _run(trace: Trace, until_line: int | None, line_where: Callable[[int], Where | None]) -> Run:
    store, engine = _replayed(trace, until_line)
    events = list(store.read())
    lines = {e.seq: e.line for _, e in events if type(e) in (ev.InputAccepted, ev.InputRejected)}  # type: ignore[union-attr]

    def where(seq: int) -> Where | None:
        line = lines.get(seq)
        return line_where(line) if line is not None else None

    assert engine.views is not None
    return Run(events=events, views=engine.views.document(), where=where, line_where=line_where, explain=explainer(store))


def _entry_where(entries: list[Entry]) -> Callable[[int], Where | None]:
    return lambda line: entries[line - 1].where() if 1 <= line <= len(entries) else None


def _fork_until(entries: list[Entry], until: int | None) -> int | None:
    """The fork's last line to apply for the original's `--until LINE`: every
    line before the first that comes after LINE in the original's order."""
    if until is None:
        return None
    for number, entry in enumerate(entries, start=1):
        order = (entry.origin, 0) if entry.origin is not None else (entry.after, 1)
        if order > (until, 0):
            return number - 1
    return len(entries)


def _checked_fork(data: bytes, path: str, name: str, entries: list[Entry]) -> Trace:
    try:
        return parse_trace(data, path, name)
    except TraceInvalid as invalid:
        raise refused(invalid, entries, "trace is") from None


def whatif_trace(path: str, edits: list[Edit], until: int | None = None) -> WhatIf:
    """The what-if of `edits` over the trace at `path` (TraceInvalid: the
    trace itself is bad; EditInvalid: an edit is)."""
    left, right = trace_sides(path, edits, until)
    return compare(left, right, source=path, unit="line", edits=[edit.text for edit in edits], until=until)


def trace_sides(path: str, edits: list[Edit], until: int | None = None) -> tuple[Run, Run]:
    """The original and the fork of `edits` over the trace at `path`."""
    data = Path(path).read_bytes()
    if len(data) > trace_bytes_max:
        raise EditInvalid(f"{path}: {len(data)} bytes, over the {trace_bytes_max}-byte limit of a trace a what-if reads")
    original = parse_trace(data, path)
    edited, entries = apply(data, edits)
    fork = _checked_fork(edited, path, original.name, entries)
    same = lambda line: Where(line=line)  # noqa: E731
    return _run(original, until, same), _run(fork, _fork_until(entries, until), _entry_where(entries))
