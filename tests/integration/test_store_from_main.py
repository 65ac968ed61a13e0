"""A store written by an earlier main verifies clean on today's code: its
recorded inputs re-derive every stored event, byte for byte.

fixtures/stores/served-2026-12-01.jsonl is the export (`tandem export`) of a
store `tandem serve` wrote on 2026-12-01 (before the domain was split by
area): the bundled example POSTed input by input, a batch of observations,
inputs stamped by the server, and a refused one."""

from __future__ import annotations

from pathlib import Path

from tandem.adapters.cli import main
from tandem.adapters.store import open_store
from tandem.replay.verify import verify

ROOT = Path(__file__).resolve().parents[2]
EXPORT = ROOT / "fixtures" / "stores" / "served-2026-12-01.jsonl"


def test_a_store_written_by_main_verifies_clean(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'imported.db'}"
    assert main(["import", str(EXPORT), "--store", url]) == 0
    store = open_store(url)
    try:
        report = verify(store)
        assert report.ok, report
        assert store.head() == sum(1 for line in EXPORT.read_text().splitlines() if line.strip())
    finally:
        store.close()
