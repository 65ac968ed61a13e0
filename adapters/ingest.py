"""Ingest: append a trace to a store in batches (group commit), resumably.

A trace's inputs are keyed by the trace's name and line: each committed batch
ends with a `SourceProgressed` event (line, byte offset, SHA-256 of the bytes
so far), in the same transaction as the batch's inputs. Run again after an
interruption, ingest checks that the file still starts with the bytes it
already took, and goes on from the next line: no input is applied twice, and
none is skipped. A file is read as it is applied (replay/trace_scan.py: it
was checked whole by a first streaming pass), one batch held at a time.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

from tandem.adapters.trace import SchemaError, TraceInvalid, TraceLine
from tandem.domain.inputs import format_at
from tandem.domain import events as ev
from tandem.domain.records import TraceProgress
from tandem.replay.engine import Engine

ingest_batch_inputs_max = 1_000  # inputs per transaction by default (group commit)


class TraceMismatch(Exception):
    """The store already holds a different trace under this name."""


class BehindStore(TraceInvalid):
    """The trace's first input to apply is earlier than the store's last
    input: a schema error (contract section 1), and the one a trace can
    have for no fault of its own bytes (the store moved on meanwhile)."""


@dataclass(frozen=True, slots=True)
class IngestResult:
    name: str
    applied: int  # inputs applied by this run
    skipped: int  # inputs already in the store from an earlier run
    rejected: int  # of the applied ones, how many the domain refused
    restamped: int = 0  # of the applied ones, how many at a later `at` than their own (--restamp)


class TraceSource(Protocol):
    """A checked trace ingest can read: `Trace` (parsed whole, in memory) or
    `ScannedTrace` (checked by a streaming pass, read again a group at a time)."""

    path: str
    name: str

    @property
    def last_at(self) -> datetime.datetime | None:
        """The `at` of its last input (None if it has none)."""

    def read(self) -> Iterator[tuple[TraceLine, bytes]]: ...


def ingest(
    engine: Engine,
    trace: TraceSource,
    batch_inputs: int = ingest_batch_inputs_max,
    on_batch: Callable[[int], None] | None = None,
    until_line: int | None = None,
    restamp: bool = False,
) -> IngestResult:
    """Append `trace` to the engine's store, `batch_inputs` inputs a
    transaction; `until_line`: only its inputs on lines 1..until_line;
    `restamp`: an input earlier than the store's last input (or than the
    one stamped before it) is applied at that `at` instead of refused.
    Holds one batch of inputs at a time."""
    if batch_inputs < 1:
        raise ValueError("batch size must be at least 1")
    pending = _Pending(trace, engine.state.traces.get(trace.name), until_line)
    floor = engine.last_at  # the `at` the next input applied must not precede
    chunk: list[TraceLine] = []
    applied = rejected = restamped = 0
    for line in pending:
        if until_line is not None and (line.item.line or 0) > until_line:
            break
        if restamp:
            line, floor, moved = _stamped(line, floor)
            restamped += moved
        elif not applied and not chunk:
            _check_after(floor, trace, line)
        chunk.append(line)
        if len(chunk) == batch_inputs:
            rejected += _commit(engine, trace.name, chunk, pending.hasher)
            applied += len(chunk)
            chunk = []
            if on_batch is not None:
                on_batch(applied)
    if chunk:
        rejected += _commit(engine, trace.name, chunk, pending.hasher)
        applied += len(chunk)
        if on_batch is not None:
            on_batch(applied)
    return IngestResult(trace.name, applied, pending.skipped, rejected, restamped)


class _Pending:
    """The lines of `trace` after the part of it the store holds already
    (`progress`, None if none), each once `hasher` has taken the file's bytes
    through it; `skipped` counts the lines the store held (those on lines
    1..until_line). Raises TraceMismatch when the file does not start with
    the bytes the store took under its name."""

    def __init__(
        self, trace: TraceSource, progress: TraceProgress | None, until_line: int | None = None,
        earlier: str | None = None,
    ) -> None:  # fmt: skip
        self.trace = trace
        self.progress = progress  # `earlier`: the path of the trace before it in a run it is taken from
        self.earlier = earlier
        self.until_line = until_line
        self.hasher = hashlib.sha256()
        self.skipped = 0
        self.last: TraceLine | None = None  # the last line read

    def __iter__(self) -> Generator[TraceLine, None, None]:
        progress, until_line = self.progress, self.until_line
        start_line = progress.line if progress is not None else 0
        checked = progress is None  # the store's prefix of this trace is this file's
        for line, data in self.trace.read():
            number = line.item.line or 0
            self.hasher.update(data)
            self.last = line
            if number > start_line:
                if not checked:
                    break
                yield line
                continue
            self.skipped += int(until_line is None or number <= until_line)
            checked = checked or (number == start_line and _same_prefix(progress, line, self.hasher))
        if not checked:
            assert progress is not None
            name, taken = self.trace.name, progress.offset
            raise TraceMismatch(
                f"the store already holds a different trace named {name!r} (its first {taken} bytes differ); "
                "give this one another --name"
                if self.earlier is None
                else f"{self.earlier}, before it in this run, is a different trace named {name!r} (its first {taken} "
                "bytes differ); ingest this one on its own, with another --name"
            )

    def taken(self) -> TraceProgress | None:
        """What the store holds of the trace once every line was read and applied."""
        if self.last is None:
            return self.progress
        return TraceProgress(self.last.item.line or 0, self.last.end_offset, self.hasher.hexdigest())


def check_traces(
    engine: Engine, traces: Sequence[TraceSource], restamp: bool = False, until_line: int | None = None
) -> None:  # fmt: skip
    """What ingesting `traces` in order would refuse, found before anything
    is written: a trace the store holds another version of under its name
    (TraceMismatch), and, unless `restamp`, a first input to apply earlier
    than the store's last input or than the last input of a trace before it
    in `traces` (BehindStore). Reads each file up to its first input to apply
    (the whole file when a later one of `traces` has its name); `until_line`
    as for `ingest`."""
    floor, after = engine.last_at, None  # `after`: the trace whose last input `floor` is
    taken: dict[str, tuple[str, TraceProgress | None]] = {}  # by name: the path of the last trace, what it leaves
    for index, trace in enumerate(traces):
        earlier, known = taken.get(trace.name, (None, engine.state.traces.get(trace.name)))
        pending = _Pending(trace, known, earlier=earlier)
        again = any(later.name == trace.name for later in traces[index + 1 :])
        with _naming(trace):
            first = _first_to_apply(pending, until_line, read_all=again)
        if again:
            taken[trace.name] = (trace.path, pending.taken())
        if first is None:
            continue
        if not restamp:
            _check_after(floor, trace, first, after, hint=True)
        if trace.last_at is not None and (floor is None or trace.last_at > floor):
            floor, after = trace.last_at, trace.name


def _first_to_apply(pending: _Pending, until_line: int | None, read_all: bool) -> TraceLine | None:
    """The first line `pending` yields (None if none, or if after
    `until_line`); `read_all`: read the rest of the file too."""
    with closing(pending.__iter__()) as lines:  # closed: the file is not left open
        first = next(lines, None)
        if read_all:
            for _ in lines:
                pass
    if first is not None and until_line is not None and (first.item.line or 0) > until_line:
        return None
    return first


@contextmanager
def _naming(trace: TraceSource) -> Iterator[None]:
    """A TraceMismatch of `trace` says which file it is."""
    try:
        yield
    except TraceMismatch as error:
        raise TraceMismatch(f"{trace.path}: {error}") from error


def _same_prefix(progress: Any, line: TraceLine, hasher: Any) -> bool:
    """Whether the file up to `line` is the part of the trace the store took."""
    return bool(line.end_offset == progress.offset and hasher.hexdigest() == progress.digest)


def _check_after(
    floor: datetime.datetime | None, trace: TraceSource, first: TraceLine, after: str | None = None, hint: bool = False
) -> None:  # fmt: skip
    """The first input to apply must not precede the store's last input
    (`floor`), nor, in a run of several traces, the last input of the trace
    `after` (the one that will then be the store's last). `hint`: say that
    --restamp would apply it."""
    if floor is None or first.item.input.at >= floor:
        return
    last = "the store's last input" if after is None else f"the last input of {after}"
    message = f"`at` {format_at(first.item.input.at)} is earlier than {last} ({format_at(floor)})"
    if after is not None:
        message += ", the trace before it in this run"
    if hint:
        message += "; `tandem ingest --restamp` would apply it at that time"
    raise BehindStore(trace.path, [SchemaError(first.item.line or 0, message)], 1)


def _stamped(line: TraceLine, floor: datetime.datetime | None) -> tuple[TraceLine, datetime.datetime, int]:
    """(`line` as applied with --restamp, the `at` the next must not precede,
    1 if its `at` was raised): its `at` raised to `floor` when earlier."""
    value = line.item.input
    if floor is None or value.at >= floor:
        return line, value.at, 0
    item = dataclasses.replace(line.item, input=msgspec.structs.replace(value, at=floor))
    return TraceLine(item, line.end_offset), floor, 1


def _commit(engine: Engine, name: str, chunk: list[TraceLine], hasher: Any) -> int:
    """Apply one batch with its progress marker, in one transaction; how many it rejected."""
    last = chunk[-1]
    marker = ev.SourceProgressed(file=name, line=last.item.line or 0, offset=last.end_offset, digest=hasher.hexdigest())
    produced = engine.submit_batch([line.item for line in chunk], trailer=[marker])
    return sum(1 for event in produced if type(event) is ev.InputRejected)
