"""Trace files: read a trace from disk and parse it whole with the one parser
of trace text (replay/traces.py: contract section 1).

The parser and its types are replay's; they are named here too, for the
callers that read files. A live input's rules (the spool, HTTP) go down to
the parser as data (`replay.edge.LiveEdge`), never as hooks.
"""

from __future__ import annotations

import datetime
from pathlib import Path

from tandem.replay.edge import LiveEdge
from tandem.replay.traces import (
    SchemaError,
    Trace,
    TraceInvalid,
    TraceLine,
    line_bytes_max,
    parse_single,
    parse_trace,
    schema_errors_shown_max,
)

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
