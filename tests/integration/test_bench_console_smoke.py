"""bench/console.py works: every read runs on tiny stores, with and without
the index, the two operations explained have the same history, and the
pages are fetched from two real `tandem serve` once their index is built.
No timing assertions (a figure is the benchmark's business)."""

from __future__ import annotations

import importlib.util
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_console_bench_runs(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("tandem_bench_console", ROOT / "bench" / "console.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # dataclasses look the module up by name
    spec.loader.exec_module(bench)
    out = io.StringIO()
    sizes = bench.Sizes(repetitions=2, calls=2, plain_calls=1, large_actions=120, small_actions=82, page_calls=2)
    results = bench.run(sizes, str(tmp_path), out)
    reads = [(name, indexed) for indexed in (True, False) for name in bench.READS]
    assert [(r.read, r.indexed) for r in results] == reads + [(page, True) for page in bench.PAGES]
    assert all(r.ratio > 0 for r in results)
    assert "Verdicts:" in out.getvalue()
    assert list(tmp_path.iterdir()) == []  # the scratch stores are removed
