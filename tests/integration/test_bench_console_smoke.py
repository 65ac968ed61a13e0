"""bench/console.py works: every read runs on tiny stores, with and without
the index, the two operations explained have the same history, and the
pages are fetched from two real `tandem serve` once their index is built;
its second part measures the console workload's pages, now and in the past,
on stores it keeps in a cache. No timing assertions (a figure is the
benchmark's business)."""

from __future__ import annotations

import importlib.util
import io
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _load() -> Any:
    spec = importlib.util.spec_from_file_location("tandem_bench_console", ROOT / "bench" / "console.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # dataclasses look the module up by name
    spec.loader.exec_module(bench)
    return bench


def test_the_console_bench_runs(tmp_path: Path) -> None:
    bench = _load()
    out = io.StringIO()
    sizes = bench.Sizes(repetitions=2, calls=2, plain_calls=1, large_actions=120, small_actions=82, page_calls=2)
    results = bench.run(sizes, str(tmp_path), out)
    reads = [(name, indexed) for indexed in (True, False) for name in bench.READS]
    assert [(r.read, r.indexed) for r in results] == reads + [(page, True) for page in bench.PAGES]
    assert all(r.ratio > 0 for r in results)
    assert "Verdicts:" in out.getvalue()
    assert list(tmp_path.iterdir()) == []  # the scratch stores are removed


def test_every_page_of_the_console_workload_is_measured(tmp_path: Path) -> None:
    """The second part: the console workload's stores built into the cache
    (their views hold the live and finished counts the workload says), each
    chosen page fetched now and at both depths of the past, first and repeat
    visits, every answer a 200 with a body; a second run reuses the stores."""
    bench = _load()
    from bench import console_pages

    sizes = bench.Sizes(repetitions=2, calls=1, plain_calls=1, large_actions=120, small_actions=82, page_calls=2,
                        console_large_tasks=24, console_small_tasks=10)  # fmt: skip
    cache, scratch = tmp_path / "cache", tmp_path / "scratch"
    scratch.mkdir()
    pattern = "^/tasks/|^/search"
    out = io.StringIO()
    results = bench.run(sizes, str(scratch), out, cache=str(cache), pages=pattern)
    pages = [page for page in console_pages.PAGES if re.search(pattern, page)]
    assert pages == ["/tasks/{task}", "/search?q={op}"]
    assert [(r.page, r.when) for r in results] == [(page, when) for page in pages for when in console_pages.WHEN]
    assert all(r.ratio > 0 and r.large_bytes > 0 and r.small_bytes > 0 for r in results)
    assert "reused from the cache" not in out.getvalue()
    assert sorted(path.name.split("-")[1] for path in cache.iterdir()) == ["10t", "24t"]
    again = io.StringIO()
    bench.run(sizes, str(scratch), again, cache=str(cache), pages="^/lifecycles$")
    assert again.getvalue().count("reused from the cache") == 2
    assert list(scratch.iterdir()) == []  # the scratch stores are removed, the cache kept
