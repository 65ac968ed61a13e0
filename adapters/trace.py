"""Trace files: read a trace from disk, and bring the live edge's rules to the
parser (replay/traces.py, the one parser of trace text: contract section 1).

`read_trace` reads a file and parses it whole; `parse_trace` and
`parse_single` take a `LiveEdge` (adapters/edge.py: the spool and HTTP) and
hand the parser its hooks. The types and limits are the parser's.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from tandem.adapters.edge import LiveEdge, decode_live
from tandem.domain.inputs import Input, decode_input
from tandem.replay import traces
from tandem.replay.traces import SchemaError, Trace, TraceInvalid, TraceLine, line_bytes_max, schema_errors_shown_max

__all__ = [
    "SchemaError",
    "Trace",
    "TraceInvalid",
    "TraceLine",
    "line_bytes_max",
    "parse_single",
    "parse_trace",
    "read_trace",
    "schema_errors_shown_max",
]


@dataclass(frozen=True, slots=True)
class _LiveHooks:
    """A live edge as the parser calls it (`replay.traces.LiveRules`): a line
    may leave `at` out; the edge admits the sender and places the time. Its
    refusals (EdgeRefused) pass through."""

    edge: LiveEdge

    def decode(self, raw: bytes) -> tuple[Input, bool]:
        return decode_live(raw, decode_input)

    def admit(self, value: Input, line: int) -> Input:
        return self.edge.retried(self.edge.admit(value, line))

    def place(self, value: Input, line: int, stamped: bool, previous: datetime.datetime | None) -> Input:
        return self.edge.place(value, line, stamped, previous)


def parse_trace(
    data: bytes,
    path: str,
    name: str | None = None,
    not_before: datetime.datetime | None = None,
    live: LiveEdge | None = None,
) -> Trace:
    """Validate every line; raise TraceInvalid listing up to 20 bad lines.

    With `live` (the spool, HTTP), a line may leave `at` out (it is stamped),
    and the edge's rules apply (adapters/edge.py): a refusal raises EdgeRefused."""
    return traces.parse_trace(data, path, name, not_before, _LiveHooks(live) if live is not None else None)


def parse_single(data: bytes, name: str, live: LiveEdge) -> Trace:
    """One live input, a body of its own (pretty-printed JSON is fine): line 1.
    Raises TraceInvalid or EdgeRefused."""
    return traces.parse_single(data, name, _LiveHooks(live))


def read_trace(
    path: str, name: str | None = None, not_before: datetime.datetime | None = None, live: LiveEdge | None = None
) -> Trace:
    """The trace in the file at `path`, parsed whole (FileNotFoundError if it
    cannot be read)."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise FileNotFoundError(f"cannot read trace {path}: {error.strerror}") from error
    return parse_trace(data, path, name, not_before, live)
