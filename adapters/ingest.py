"""Ingest: append a trace to a store in batches (group commit), resumably.

A trace's inputs are keyed by the trace's name and line: each committed batch
ends with a `SourceProgressed` event (line, byte offset, SHA-256 of the bytes
so far), in the same transaction as the batch's inputs. Run again after an
interruption, ingest checks that the file still starts with the bytes it
already took, and goes on from the next line: no input is applied twice, and
none is skipped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from tandem.adapters.trace import SchemaError, Trace, TraceInvalid
from tandem.domain.inputs import format_at
from tandem.domain import events as ev
from tandem.replay.engine import Engine

ingest_batch_inputs_max = 1_000  # inputs per transaction by default (group commit)


class TraceMismatch(Exception):
    """The store already holds a different trace under this name."""


@dataclass(frozen=True, slots=True)
class IngestResult:
    name: str
    applied: int  # inputs applied by this run
    skipped: int  # inputs already in the store from an earlier run
    rejected: int  # of the applied ones, how many the domain refused


def ingest(
    engine: Engine,
    trace: Trace,
    batch_inputs: int = ingest_batch_inputs_max,
    on_batch: Callable[[int], None] | None = None,
) -> IngestResult:
    """Append `trace` to the engine's store, `batch_inputs` inputs a transaction."""
    if batch_inputs < 1:
        raise ValueError("batch size must be at least 1")
    progress = engine.state.traces.get(trace.name)
    start_line = 0
    if progress is not None:
        if progress.offset > len(trace.data) or trace.digest_until(progress.offset) != progress.digest:
            raise TraceMismatch(
                f"the store already holds a different trace named {trace.name!r} "
                f"(its first {progress.offset} bytes differ); give this one another --name"
            )
        start_line = progress.line
    pending = [line for line in trace.lines if line.item.line is not None and line.item.line > start_line]
    skipped = len(trace.lines) - len(pending)
    last_at = engine.last_at
    if pending and last_at is not None and pending[0].item.input.at < last_at:
        first = pending[0].item
        raise TraceInvalid(
            trace.path,
            [SchemaError(first.line or 0, f"`at` {format_at(first.input.at)} is earlier than the store's last input ({format_at(last_at)})")],
            1,
        )
    hasher = hashlib.sha256(trace.data[: progress.offset if progress else 0])
    hashed_to = progress.offset if progress else 0
    rejected = 0
    for begin in range(0, len(pending), batch_inputs):
        chunk = pending[begin : begin + batch_inputs]
        end_offset = chunk[-1].end_offset
        hasher.update(trace.data[hashed_to:end_offset])
        hashed_to = end_offset
        marker = ev.SourceProgressed(
            file=trace.name, line=chunk[-1].item.line or 0, offset=end_offset, digest=hasher.copy().hexdigest()
        )
        produced = engine.submit_batch([line.item for line in chunk], trailer=[marker])
        rejected += sum(1 for event in produced if type(event) is ev.InputRejected)
        if on_batch is not None:
            on_batch(begin + len(chunk))
    return IngestResult(trace.name, len(pending), skipped, rejected)
