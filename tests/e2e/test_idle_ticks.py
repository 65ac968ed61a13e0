"""RFC "Idle background/foreground activity must produce no triage loop" (fixture fixtures/gates/32_idle_no_triage_loop.jsonl):
after its setup, an engine fed only ticks records nothing but the ticks themselves.

Counted twice: in process, each tick's transaction holds exactly its own `InputAccepted`; and
through the CLI, a SQLite store holding the whole trace has exactly the events of a store holding
only the setup, plus one `InputAccepted` per tick (and ingest's own progress markers).
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tandem.adapters.ingest import ingest
from tandem.adapters.store import open_store
from tandem.adapters.trace import parse_trace, read_trace
from tandem.domain import events as ev
from tandem.replay.engine import Engine

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "fixtures" / "gates" / "32_idle_no_triage_loop.jsonl"


def split_setup(data: bytes) -> tuple[bytes, int]:
    """The bytes before the first tick, and how many ticks follow (only ticks follow)."""
    lines = data.splitlines(keepends=True)
    first = next(n for n, line in enumerate(lines) if b'"type":"tick"' in line)
    ticks = [line for line in lines[first:] if line.strip() and not line.startswith(b"//")]
    assert all(b'"type":"tick"' in line for line in ticks), "only ticks after the setup"
    return b"".join(lines[:first]), len(ticks)


def test_ticks_add_only_their_own_records_in_process() -> None:
    trace = read_trace(str(FIXTURE))
    setup, ticks = split_setup(trace.data)
    assert ticks >= 15
    engine = Engine(open_store("memory:"))
    setup_trace = parse_trace(setup, str(FIXTURE))
    ingest(engine, setup_trace)
    before = Counter(type(event).__name__ for page in engine.store.read_pages() for event in page)

    tick_items = [line.item for line in trace.lines if line.item.input.input_type == "tick"]
    assert len(tick_items) == ticks
    for item in tick_items:
        produced = engine.submit(item)
        assert [type(event) for event in produced] == [ev.InputAccepted], (item.line, produced)

    after = Counter(type(event).__name__ for page in engine.store.read_pages() for event in page)
    assert after - before == Counter({"InputAccepted": ticks})


def _topics(database: Path) -> Counter[str]:
    with sqlite3.connect(database) as connection:
        return Counter(dict(connection.execute("SELECT topic, count(*) FROM tandem_events GROUP BY topic")))


def _ingest(path: Path, database: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tandem.adapters.cli", "ingest", str(path), "--store", f"sqlite:///{database}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


def test_ticks_add_only_their_own_records_in_the_store(tmp_path: Path) -> None:
    setup, ticks = split_setup(FIXTURE.read_bytes())
    setup_only = tmp_path / "setup" / FIXTURE.name
    setup_only.parent.mkdir()
    setup_only.write_bytes(setup)
    _ingest(setup_only, tmp_path / "setup.db")
    _ingest(FIXTURE, tmp_path / "whole.db")
    with_setup, whole = _topics(tmp_path / "setup.db"), _topics(tmp_path / "whole.db")
    ignore = ("InputAccepted", "SourceProgressed")  # the inputs' own records, ingest's bookkeeping
    assert whole["InputAccepted"] - with_setup["InputAccepted"] == ticks
    assert {k: v for k, v in whole.items() if k not in ignore} == {k: v for k, v in with_setup.items() if k not in ignore}
    assert whole["InputRejected"] == 0
