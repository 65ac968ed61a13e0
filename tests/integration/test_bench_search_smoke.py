"""bench/search.py works: on a tiny store built as `tandem ingest` builds
one, its index built as a server's first start builds it, every query runs
(in this process and as the console's page from a real `tandem serve`),
the cache is reused, and the scratch directory is removed. No timing
assertions (a figure is the benchmark's business)."""

from __future__ import annotations

import importlib.util
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_search_bench_runs(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("tandem_bench_search", ROOT / "bench" / "search.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # dataclasses look the module up by name
    spec.loader.exec_module(bench)
    sizes = bench.Sizes(repetitions=1, calls=1, actions=60, observations=300, question_every=5, page_calls=1)
    scratch, cache = tmp_path / "scratch", tmp_path / "cache"
    scratch.mkdir()
    for built in ("built in", "reused from the cache"):
        out = io.StringIO()
        results = bench.run(sizes, str(scratch), out, cache=str(cache))
        queries = list(bench.queries(bench.Store("", 0, None, None, 0, "op-1", ("a", "b", "c"))))
        assert [r.name for r in results] == queries + queries  # in process, then the pages
        assert all(r.median("SQLite") > 0 for r in results)
        assert built in out.getvalue() and "Verdicts:" in out.getvalue()
        assert not results[0].found.startswith("0 things") and results[queries.index("nothing")].found == "0 things, 0 inputs"
        assert list(scratch.iterdir()) == []  # the scratch directory is removed
    assert (cache / "events.db").exists()
