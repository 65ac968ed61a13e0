"""bench/console_live.py works: on two tiny console-workload stores (built
into a cache), a real `tandem serve` of a copy of each, with a `?rows=keys`
stream and then a `?rows=1` one open, takes timed human messages and tells
of each commit. No timing assertions (a figure is the benchmark's
business); what is asserted is what the messages weigh: the keys of the
changed rows weigh less than the rows, and grow less with the store."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from bench import console_live
from bench.console_pages import workload_digest


def test_the_console_live_bench_runs_and_keys_weigh_less_than_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console_live, "rows_start_grace_s", 0)  # no waiting: the figures are not asserted
    out = io.StringIO()
    cache = tmp_path / "cache"
    rows = console_live.run(console_live.Sizes(large_tasks=24, small_tasks=10), posts=2, cache=str(cache), out=out)
    assert [row.detail for row in rows] == ["keys", "1"]
    keys, full = rows
    assert all(len(row.large_ms) == len(row.small_ms) == 2 and row.ratio > 0 for row in rows)
    assert keys.large_bytes < full.large_bytes and keys.small_bytes < full.small_bytes
    # A conversation's row holds every delivery: rows grow with the store, keys do not.
    assert full.large_bytes > full.small_bytes and keys.large_bytes < 2 * keys.small_bytes
    assert "?rows=keys" in out.getvalue() and "?rows=1" in out.getvalue()
    assert sorted(path.name for path in cache.iterdir()) == sorted(f"console-{n}t-{workload_digest()}" for n in (24, 10))
