"""The events of every fixture, byte for byte, as main recorded them: a
change to what the engine decides (or how it encodes it) shows here, and is
made on purpose (regenerate the digests and say why in the commit).

    python -m tests.integration.test_event_digests --write   # after a deliberate change

Each fixture trace is ingested into a memory store the way `tandem replay`
does (one batch of up to 1,000 inputs, its SourceProgressed at the end), and
the stored bytes of the whole log are hashed (SHA-256).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from tandem.adapters.ingest import ingest
from tandem.adapters.store import open_store
from tandem.adapters.trace import TraceInvalid, read_trace
from tandem.replay.engine import Engine

ROOT = Path(__file__).resolve().parents[2]
DIGESTS = ROOT / "fixtures" / "event-digests.json"


def traces() -> list[Path]:
    found = sorted(path for folder in ("gates", "traces") for path in (ROOT / "fixtures" / folder).glob("*.jsonl"))
    return [path for path in found if _valid(path)]


def _valid(path: Path) -> bool:
    try:
        read_trace(str(path))
    except TraceInvalid:
        return False
    return True


def digest(path: Path) -> str:
    engine = Engine(open_store("memory:"), with_views=False, snapshot_every=0)
    ingest(engine, read_trace(str(path)))
    assert engine.store is not None
    hasher = hashlib.sha256()
    for _, data in engine.store.read_encoded():
        hasher.update(data)
        hasher.update(b"\n")
    return hasher.hexdigest()


def name(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


@pytest.mark.parametrize("path", traces(), ids=name)
def test_the_events_are_byte_identical_to_mains(path: Path) -> None:
    recorded = json.loads(DIGESTS.read_text())
    assert name(path) in recorded, f"{name(path)} has no recorded digest: run this module with --write"
    assert digest(path) == recorded[name(path)]


def test_every_recorded_fixture_still_exists() -> None:
    assert sorted(json.loads(DIGESTS.read_text())) == sorted(name(path) for path in traces())


if __name__ == "__main__" and "--write" in sys.argv:
    DIGESTS.write_text(json.dumps({name(path): digest(path) for path in traces()}, indent=2) + "\n")
    print(f"wrote {DIGESTS}")
