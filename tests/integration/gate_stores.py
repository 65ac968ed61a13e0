"""A gate fixture ingested into a memory store the way `tandem replay` does,
for the explain tests to walk (no views kept, no snapshots)."""

from __future__ import annotations

from pathlib import Path

from tandem.adapters.ingest import ingest
from tandem.adapters.store import open_store
from tandem.adapters.trace import read_trace
from tandem.replay.engine import Engine

GATES = Path(__file__).resolve().parents[2] / "fixtures" / "gates"


def stored(name: str):  # type: ignore[no-untyped-def]
    """The event store holding fixture `fixtures/gates/{name}.jsonl`."""
    engine = Engine(open_store("memory:"), with_views=False, snapshot_every=0)
    ingest(engine, read_trace(str(GATES / f"{name}.jsonl")))
    return engine.store
