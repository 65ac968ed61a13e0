"""Tandem's replay package: the engine runtime.

    from tandem.replay import Engine, Located, parse_trace

The engine (engine.py): `Engine(store, with_views=..., step=...)`,
`Located(input, file, line)`, `DecisionStep` (the type of `step`),
`project(store)` (the views alone). The store port (port.py): `EventStore`,
`ConcurrencyError`, `StoreError`. The trace parser (traces.py):
`parse_trace(data, path)` -> `Trace`, `TraceInvalid`.

Also here, imported by their modules: snapshots (snapshot.py), `verify`
(verify.py), `explain` (the explain/ package). The proving tools — invariants, bounded
checking, fuzzing — are `tandem.replay.proving` (docs/fuzzing.md); importing
this package imports neither them nor Hypothesis.
"""

from __future__ import annotations

from tandem.replay.engine import DecisionStep, Engine, Located, project
from tandem.replay.port import ConcurrencyError, EventStore, StoreError
from tandem.replay.traces import Trace, TraceInvalid, parse_trace

__all__ = [
    "ConcurrencyError",
    "DecisionStep",
    "Engine",
    "EventStore",
    "Located",
    "StoreError",
    "Trace",
    "TraceInvalid",
    "parse_trace",
    "project",
]
