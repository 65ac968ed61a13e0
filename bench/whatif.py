"""A what-if near the head of a large store against `tandem show --at` there, side by side in one run.

    python bench/whatif.py               # a store of ~1M events (built in ~30 s), 5 rounds
    python bench/whatif.py --quick       # ~25k events, 3 rounds (a smoke run)
    python bench/whatif.py --cache DIR   # keep the built store in DIR and reuse it next time
    python bench/whatif.py --tmp DIR     # put the scratch store under DIR

Issue 27's goal: a one-input edit near the head of a 1M-event store answers
in <= 2x the time of `tandem show --at` at the same position. The store is
bench/workload.py's observation workload (CI observations of a fixed set of
causes, 2 events each), ingested as `tandem ingest` does (bench/run.py's
`batch_ingest`: 1,000 inputs a transaction, a snapshot every ~50,000 events
written by a process beside it, the last one waited for; that process also
keeps the store's key table, replay/key_table.py, up to its snapshot, so
the what-if scans only the log past the newest snapshot to explain what
differs). N is the input
`near_head_inputs` inputs before the head, P the position just before its
record: the views `tandem show --at P` prints are those before input N, and
the fork of `tandem whatif --drop N` starts there too.

Both commands are timed as a user runs them, each a fresh process
(`python -m tandem.adapters.cli ...`, output to /dev/null), alternated (A B,
B A, ...) after one warm-up each, medians reported; then the same two
commands in this process (`cli.main`: no interpreter start, no imports),
alternated again, for context. The ratio is what-if / show: the goal is
<= 2x. Where P lies from the newest snapshot at or before it matters (both
commands fold from there): the sizes put it about half a snapshot's spacing
past it, the average distance; the report prints it.
"""

from __future__ import annotations

import contextlib
import io
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # runnable as `python bench/whatif.py` from anywhere
    sys.path.insert(0, str(ROOT))

from bench.run import Scratch, batch_ingest  # noqa: E402
from bench.workload import alternate, bench_main, observation_trace  # noqa: E402
from tandem.adapters import cli  # noqa: E402
from tandem.adapters.store import open_store  # noqa: E402
from tandem.adapters.whatif_store import _position_of_input  # noqa: E402
from tandem.domain import events as ev  # noqa: E402
from tandem.replay.snapshot import code_fingerprint  # noqa: E402

goal_ratio_max = 2.0
EXIT_DIFFERENT = 1  # `tandem whatif`: the runs differ


@dataclass(frozen=True)
class Sizes:
    repetitions: int  # alternated pairs, each way of timing (medians are reported)
    observations: int  # inputs of the store (2 events each, and a SourceProgressed per 1,000)
    causes: int  # the sources observed (the live state)
    near_head_inputs: int  # N: this many inputs before the head


# 512,500 observations: ~1,025,500 events; the newest snapshot (every 50,025
# events: 25 batches) at 1,000,500, so P is ~25,000 events past it.
FULL = Sizes(repetitions=5, observations=512_500, causes=1_000, near_head_inputs=100)
QUICK = Sizes(repetitions=3, observations=12_500, causes=200, near_head_inputs=100)


@dataclass
class Store:
    url: str
    head: int
    snapshots: list[int]  # positions
    keys_through: int  # the key table's mark (this code's)
    input_n: int  # N
    position: int  # P
    build_s: float | None  # None: reused from the cache

    @property
    def snapshot_before(self) -> int:
        return max((s for s in self.snapshots if s <= self.position), default=0)


def _url(directory: str) -> str:
    return f"sqlite:///{os.path.join(os.path.abspath(directory), 'events.db')}"


def build(directory: str, sizes: Sizes) -> float:
    """The store, ingested as `tandem ingest` does (its snapshots too): seconds taken."""
    started = time.perf_counter()
    batch_ingest(directory, observation_trace(sizes.observations, sizes.causes))
    os.remove(os.path.join(directory, "bench.jsonl"))
    return time.perf_counter() - started


def locate(url: str, sizes: Sizes, build_s: float | None) -> Store:
    """N (the input `near_head_inputs` before the head) and P (just before its record)."""
    store = open_store(url)
    try:
        head = store.head()
        last = max(e.seq for _, e in store.read(after=max(0, head - 20)) if type(e) in (ev.InputAccepted, ev.InputRejected))  # type: ignore[union-attr]
        input_n = last - sizes.near_head_inputs
        record = _position_of_input(store, input_n, head)
        assert record is not None, input_n
        snapshots = [info.position for info in store.list_snapshots()]
        keys_through = store.keys_through(code_fingerprint())
    finally:
        store.close()
    return Store(url, head, snapshots, keys_through, input_n, record - 1, build_s)


def prepared(sizes: Sizes, scratch: Scratch, cache: str | None) -> Store:
    """The store: from the cache when it holds one of these sizes, else built (into the cache, if given)."""
    directory = cache if cache is not None else scratch.fresh()
    os.makedirs(directory, exist_ok=True)
    stamp = Path(directory, "sizes.txt")
    key = f"{sizes.observations} {sizes.causes}\n"
    if cache is not None and stamp.exists() and stamp.read_text() == key and Path(directory, "events.db").exists():
        return locate(_url(directory), sizes, None)
    for name in ("events.db", "events.db-wal", "events.db-shm", "sizes.txt"):
        Path(directory, name).unlink(missing_ok=True)
    build_s = build(directory, sizes)
    stamp.write_text(key)
    return locate(_url(directory), sizes, build_s)


def commands(store: Store) -> tuple[list[str], list[str]]:
    show = ["show", "--store", store.url, "--at", str(store.position)]
    whatif = ["whatif", "--store", store.url, "--drop", str(store.input_n)]
    return show, whatif


def process_ms(argv: list[str], expected: int) -> float:
    """A fresh `tandem` process, its output to /dev/null: milliseconds."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "tandem.adapters.cli", *argv], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
    )
    elapsed = (time.perf_counter() - started) * 1000
    assert done.returncode == expected, (argv, done.returncode, done.stderr[-2000:])
    return elapsed


def in_process_ms(argv: list[str], expected: int) -> float:
    """`cli.main` in this process, its output discarded: milliseconds."""
    sink = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(io.StringIO()):
        code = cli.main(argv)
    elapsed = (time.perf_counter() - started) * 1000
    assert code == expected, (argv, code)
    return elapsed


@dataclass
class Result:
    way: str
    whatif_ms: list[float]
    show_ms: list[float]

    @property
    def ratio(self) -> float:
        return statistics.median(self.whatif_ms) / statistics.median(self.show_ms)

    @property
    def met(self) -> bool:
        return self.ratio <= goal_ratio_max

    def lines(self) -> list[str]:
        spread = lambda values: f"(min {min(values):,.0f}, max {max(values):,.0f}, n={len(values)})"  # noqa: E731
        return [
            f"  {self.way}:",
            f"    A what-if --drop N        {statistics.median(self.whatif_ms):9,.0f} ms  {spread(self.whatif_ms)}",
            f"    B show --at P             {statistics.median(self.show_ms):9,.0f} ms  {spread(self.show_ms)}",
            f"    A/B = {self.ratio:.2f}x   goal <= {goal_ratio_max}x   {'MET' if self.met else 'MISSED'}",
        ]


def measure(store: Store, sizes: Sizes, way: str, timed: Callable[[list[str], int], float]) -> Result:
    show, whatif = commands(store)
    timed(show, 0)  # warm: the page cache, imports, the code fingerprint
    timed(whatif, EXIT_DIFFERENT)
    a, b = alternate(lambda: timed(whatif, EXIT_DIFFERENT), lambda: timed(show, 0), sizes.repetitions)
    return Result(way, a, b)


def report_store(store: Store, out: Any) -> None:
    built = f"built in {store.build_s:,.0f} s" if store.build_s is not None else "reused from the cache"
    print(f"store: {store.head:,} events ({built}), snapshots at {', '.join(f'{s:,}' for s in store.snapshots) or 'none'}", file=out)
    print(f"key table complete to {store.keys_through:,} (the what-if scans the log after it)", file=out)
    print(
        f"N = input {store.input_n:,}, P = {store.position:,}: {store.position - store.snapshot_before:,} events past the"
        f" newest snapshot at or before it ({store.snapshot_before:,}), {store.head - store.position:,} before the head",
        file=out,
    )
    show, whatif = commands(store)
    print(f"A: tandem {' '.join(whatif)}\nB: tandem {' '.join(show)}", file=out)


def run(sizes: Sizes, tmp: str | None = None, out: Any = sys.stdout, cache: str | None = None) -> list[Result]:
    scratch = Scratch(tmp)
    try:
        print(
            f"Tandem what-if bench: Python {platform.python_version()}, SQLite {sqlite3.sqlite_version},"
            f" {os.cpu_count()} CPUs; medians of {sizes.repetitions} alternated repetitions",
            file=out,
        )
        store = prepared(sizes, scratch, cache)
        report_store(store, out)
        results = []
        for way, timed in (("commands, each a fresh process", process_ms), ("in this process (cli.main)", in_process_ms)):
            results.append(measure(store, sizes, way, timed))
            print("\n".join(results[-1].lines()), file=out)
            out.flush()
        print("\nVerdicts:", file=out)
        for result in results:
            print(f"  {result.way:<32} {result.ratio:5.2f}x (goal <= {goal_ratio_max}x): {'MET' if result.met else 'MISSED'}", file=out)
        return results
    finally:
        scratch.remove()


def main(argv: Sequence[str] | None = None) -> int:
    options = {"cache": "keep the built store in this directory and reuse it when its sizes match"}
    return bench_main(__doc__, run, FULL, QUICK, "~25k events: a smoke run", argv, options=options)


if __name__ == "__main__":
    sys.exit(main())
