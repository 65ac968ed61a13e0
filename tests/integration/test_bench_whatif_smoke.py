"""bench/whatif.py works: on a tiny store built as `tandem ingest` builds
one, both commands run (as processes and in this process) and give
positive times, and the cache is reused. No timing assertions (a figure
is the benchmark's business)."""

from __future__ import annotations

import importlib.util
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_whatif_bench_runs(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("tandem_bench_whatif", ROOT / "bench" / "whatif.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # dataclasses look the module up by name
    spec.loader.exec_module(bench)
    sizes = bench.Sizes(repetitions=1, observations=600, causes=20, near_head_inputs=10)
    scratch, cache = tmp_path / "scratch", tmp_path / "cache"
    scratch.mkdir()
    for built in ("built in", "reused from the cache"):
        out = io.StringIO()
        results = bench.run(sizes, str(scratch), out, cache=str(cache))
        assert [r.way for r in results] == ["commands, each a fresh process", "in this process (cli.main)"]
        assert all(r.ratio > 0 for r in results)
        assert built in out.getvalue() and "Verdicts:" in out.getvalue()
        assert list(scratch.iterdir()) == []  # the scratch directory is removed
    assert (cache / "events.db").exists()
