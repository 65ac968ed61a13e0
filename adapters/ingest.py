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

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from tandem.adapters.trace import SchemaError, TraceInvalid, TraceLine
from tandem.domain.inputs import format_at
from tandem.domain import events as ev
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


class TraceSource(Protocol):
    """A checked trace ingest can read: `Trace` (parsed whole, in memory) or
    `ScannedTrace` (checked by a streaming pass, read again a group at a time)."""

    path: str
    name: str

    def read(self) -> Iterator[tuple[TraceLine, bytes]]: ...


def ingest(
    engine: Engine,
    trace: TraceSource,
    batch_inputs: int = ingest_batch_inputs_max,
    on_batch: Callable[[int], None] | None = None,
    until_line: int | None = None,
) -> IngestResult:
    """Append `trace` to the engine's store, `batch_inputs` inputs a
    transaction; `until_line`: only its inputs on lines 1..until_line. Holds
    one batch of inputs at a time."""
    if batch_inputs < 1:
        raise ValueError("batch size must be at least 1")
    progress = engine.state.traces.get(trace.name)
    start_line = progress.line if progress is not None else 0
    hasher = hashlib.sha256()
    checked = progress is None  # the store's prefix of this trace is this file's
    chunk: list[TraceLine] = []
    applied = skipped = rejected = 0
    for line, data in trace.read():
        number = line.item.line or 0
        hasher.update(data)
        if number <= start_line:
            skipped += int(until_line is None or number <= until_line)
            checked = checked or (number == start_line and _same_prefix(progress, line, hasher))
            continue
        if not checked:
            break
        if until_line is not None and number > until_line:
            break
        if not applied and not chunk:
            _check_after_store(engine, trace, line)
        chunk.append(line)
        if len(chunk) == batch_inputs:
            rejected += _commit(engine, trace.name, chunk, hasher)
            applied += len(chunk)
            chunk = []
            if on_batch is not None:
                on_batch(applied)
    if not checked:
        assert progress is not None
        raise TraceMismatch(
            f"the store already holds a different trace named {trace.name!r} "
            f"(its first {progress.offset} bytes differ); give this one another --name"
        )
    if chunk:
        rejected += _commit(engine, trace.name, chunk, hasher)
        applied += len(chunk)
        if on_batch is not None:
            on_batch(applied)
    return IngestResult(trace.name, applied, skipped, rejected)


def _same_prefix(progress: Any, line: TraceLine, hasher: Any) -> bool:
    """Whether the file up to `line` is the part of the trace the store took."""
    return bool(line.end_offset == progress.offset and hasher.hexdigest() == progress.digest)


def _check_after_store(engine: Engine, trace: TraceSource, first: TraceLine) -> None:
    """The first input to apply must not precede the store's last input."""
    last_at = engine.last_at
    if last_at is not None and first.item.input.at < last_at:
        message = f"`at` {format_at(first.item.input.at)} is earlier than the store's last input ({format_at(last_at)})"
        raise BehindStore(trace.path, [SchemaError(first.item.line or 0, message)], 1)


def _commit(engine: Engine, name: str, chunk: list[TraceLine], hasher: Any) -> int:
    """Apply one batch with its progress marker, in one transaction; how many it rejected."""
    last = chunk[-1]
    marker = ev.SourceProgressed(file=name, line=last.item.line or 0, offset=last.end_offset, digest=hasher.hexdigest())
    produced = engine.submit_batch([line.item for line in chunk], trailer=[marker])
    return sum(1 for event in produced if type(event) is ev.InputRejected)
