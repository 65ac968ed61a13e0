"""The console's reads on a large store against a small one, side by side in one run.

    python bench/console.py --cache DIR   # part 1: 100k vs 1k events; part 2: ~1M vs ~1k, the stores kept in DIR
    python bench/console.py --pages RE    # part 2 alone, only the pages matching RE (re.search)
    python bench/console.py --quick       # 10k vs 1k events (a smoke run)
    python bench/console.py --tmp DIR     # put the scratch stores under DIR

A page of the console must cost what it shows, not the log's length. Two
SQLite stores (WAL, synchronous=FULL) hold bench/workload.py's synthetic
steady state, ~100,000 and ~1,000 events, each ending with a heartbeat past
`fallback_after_s`, so that the operation explained (the middle one of each)
has the same history in both: proposed, claimed, accepted, succeeded, its
obligation opened and fallen due. Each store is read through its own reader
store and a LogIndex built from it (replay/index.py), as `tandem serve` does.

Three reads, each timed on the large store (A) and the small one (B),
alternated (A B, B A, ...), each figure the median time of one read:

1. explain of the operation: `encode_json(document(store, id, index=...))`;
2. the timeline's first page of inputs filtered by the operation's id
   (replay/input_timeline.py);
3. the timeline's first page, unfiltered.

With the index the goal is A/B <= 2x (about the same). For context, the
same reads without the index (explain reads the whole log; a filtered
timeline page scans back at most `scan_events_max` events).

Then the pages themselves: each store served by a real `tandem serve`,
signed in through /login as the human, and the console's pages fetched over
loopback (the whole round trip: rendering, headers, the body read): the
timeline's first page, the operation's action page (its explain chain
inside), the timeline filtered by its id. Timed once the server's index is
built (the filtered timeline says it looked at exactly the inputs it shows).

Part 2 (bench/console_pages.py): every page of the console, now and in the
past (`?at=`, a recent and a deep position, first visits apart from repeat
visits), on bench/console_workload.py's stores of ~1,000,000 and ~1,000
events (a team's store after long use: the same live set, a finished
history that grows), each with the page's bytes on both sides. The stores
take minutes to build: `--cache DIR` keeps them. docs/performance.md says
what each row measures.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # runnable as `python bench/console.py` from anywhere
    sys.path.insert(0, str(ROOT))

from tandem.adapters.ingest import ingest  # noqa: E402
from tandem.adapters.store import open_store  # noqa: E402
from tandem.adapters.trace import parse_trace  # noqa: E402
from tandem.domain.inputs import format_at  # noqa: E402
from tandem.domain.records import Config  # noqa: E402
from tandem.replay.engine import Engine  # noqa: E402
from tandem.replay.explain import document, encode_json  # noqa: E402
from tandem.replay.index import LogIndex  # noqa: E402
from tandem.replay.input_timeline import Chosen, input_timeline  # noqa: E402
from tandem.replay.port import EventStore  # noqa: E402

# Console: bench/search.py imports it from here too.
from bench.console_pages import Console, PageResult, run_pages  # noqa: E402
from bench.workload import SideBySide, alternate, synthetic_trace  # noqa: E402

goal_ratio_max = SideBySide.goal_ratio_max


@dataclass(frozen=True)
class Sizes:
    repetitions: int  # alternated pairs per read (medians are reported)
    calls: int  # reads per timed sample, with the index
    plain_calls: int  # the same without it (explain then reads the whole log)
    large_actions: int  # synthetic_trace(actions): ~12 events an action
    small_actions: int
    page_calls: int = 20  # page fetches per timed sample, at most (0: no pages parts)
    console_large_tasks: int = 0  # bench/console_workload.py's finished tasks: ~76 events a task (0: no such part)
    console_small_tasks: int = 10  # + ~244 events of setup and live set


FULL = Sizes(repetitions=7, calls=40, plain_calls=1, large_actions=8_250, small_actions=82, console_large_tasks=13_050)
QUICK = Sizes(repetitions=3, calls=10, plain_calls=1, large_actions=825, small_actions=82, page_calls=10, console_large_tasks=128)


@dataclass
class Side:
    """One store, read as the service reads it."""

    store: EventStore
    index: LogIndex
    operation: str
    build_s: float
    url: str  # its sqlite:/// URL

    @property
    def events(self) -> int:
        return self.index.head


def build(directory: str, actions: int) -> Side:
    url = f"sqlite:///{os.path.join(directory, 'events.db')}"
    engine = Engine(open_store(url), with_views=False, snapshot_every=0)
    ingest(engine, parse_trace(synthetic_trace(actions), "synthetic.jsonl"))
    assert engine.last_at is not None and engine.store is not None
    # Past every obligation's fallback: each operation's history ends the same way.
    late = engine.last_at + datetime.timedelta(seconds=Config().fallback_after_s + 60)
    heartbeat = f'{{"type":"watchdog.heartbeat","at":"{format_at(late)}","actor":"watchdog","generation":1}}\n'
    ingest(engine, parse_trace(heartbeat.encode(), "late.jsonl"))
    engine.store.close()
    reader = open_store(url)
    started = time.perf_counter()
    index = LogIndex.build(reader)
    return Side(reader, index, f"op-{actions // 2}", time.perf_counter() - started, url)


READS: dict[str, Callable[[Side, LogIndex | None], Any]] = {
    "explain": lambda side, index: encode_json(document(side.store, side.operation, index=index)),
    "timeline by id": lambda side, index: input_timeline(side.store, chosen=Chosen(identifier=side.operation), index=index),
    "timeline": lambda side, index: input_timeline(side.store, index=index),
}


def per_read_ms(read: Callable[[Side, LogIndex | None], Any], side: Side, indexed: bool, calls: int) -> float:
    index = side.index if indexed else None
    started = time.perf_counter()
    for _ in range(calls):
        read(side, index)
    return (time.perf_counter() - started) * 1000 / calls



@dataclass
class Result(SideBySide):
    read: str
    indexed: bool
    large_ms: list[float]
    small_ms: list[float]

    def line(self) -> str:
        large, small = statistics.median(self.large_ms), statistics.median(self.small_ms)
        spread = f"(large {min(self.large_ms):.3f}-{max(self.large_ms):.3f}, small {min(self.small_ms):.3f}-{max(self.small_ms):.3f})"
        verdict = self.verdict if self.indexed else "(context)"
        return f"  {self.read:<18} {large:9.3f} ms vs {small:7.3f} ms   {self.ratio:7.2f}x  {verdict}  {spread}"


def measure(large: Side, small: Side, sizes: Sizes, indexed: bool) -> list[Result]:
    results = []
    calls = sizes.calls if indexed else sizes.plain_calls
    for name, read in READS.items():
        for side in (large, small):  # warm: the page cache, the decoders
            per_read_ms(read, side, indexed, 1)
        a, b = alternate(
            lambda read=read: per_read_ms(read, large, indexed, calls),
            lambda read=read: per_read_ms(read, small, indexed, calls),
            sizes.repetitions,
        )
        results.append(Result(name, indexed, a, b))
    return results


# ------------------------------------------------------------------ the pages

PAGES: dict[str, Callable[[str], str]] = {
    "/timeline": lambda operation: "/timeline",
    "/actions/{op}": lambda operation: f"/actions/{operation}",
    "/timeline?id={op}": lambda operation: f"/timeline?id={operation}",
}


def per_page_ms(console: Console, path: str, calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        console.get(path)
    return (time.perf_counter() - started) * 1000 / calls


def measure_pages(large: Side, small: Side, sizes: Sizes, root: str) -> list[Result]:
    consoles: list[Console] = []
    try:
        for side, name in ((large, "large-serve"), (small, "small-serve")):
            os.mkdir(os.path.join(root, name))
            consoles.append(Console(side, os.path.join(root, name)))
            consoles[-1].wait_for_index(side.operation)
        results = []
        for name, page in PAGES.items():
            a_path, b_path = page(large.operation), page(small.operation)
            per_page_ms(consoles[0], a_path, 2)
            per_page_ms(consoles[1], b_path, 2)
            a, b = alternate(
                lambda a_path=a_path: per_page_ms(consoles[0], a_path, sizes.page_calls),
                lambda b_path=b_path: per_page_ms(consoles[1], b_path, sizes.page_calls),
                sizes.repetitions,
            )
            results.append(Result(name, True, a, b))
        return results
    finally:
        for console in consoles:
            console.stop()


def shape(side: Side) -> list[tuple[str, str, int]]:
    """What the explained operation's document holds: (kind, state, links) per match."""
    return [(match.kind, match.state, len(match.steps)) for match in document(side.store, side.operation, index=side.index).matches]


def report_stores(large: Side, small: Side, out: Any) -> None:
    for label, side in (("large", large), ("small", small)):
        print(
            f"{label}: {side.events:,} events, index built in {side.build_s * 1000:,.0f} ms"
            f" ({side.build_s * 1e6 / side.events:.1f} us an event), {side.index.bytes_used() / side.events:.0f} bytes an event;"
            f" explained {side.operation}: {shape(side)}",
            file=out,
        )
    assert shape(large) == shape(small), "the explained operations' histories differ"


def run(
    sizes: Sizes, tmp: str | None = None, out: Any = sys.stdout, cache: str | None = None, pages: str | None = None
) -> list[Result | PageResult]:
    """Both parts (`pages`: only the second, only the pages matching it);
    `cache`: keep the second part's stores there and reuse them."""
    root = tempfile.mkdtemp(prefix="tandem-bench-console-", dir=tmp)
    try:
        print(
            f"Tandem console bench: Python {platform.python_version()}, SQLite {sqlite3.sqlite_version},"
            f" {os.cpu_count()} CPUs; medians of up to {sizes.repetitions} alternated repetitions",
            file=out,
        )
        first: list[Result] = [] if pages is not None else run_reads(sizes, root, out)
        every: list[PageResult] = []
        if sizes.console_large_tasks and sizes.page_calls:
            every = run_pages(sizes, root, cache, pages, out)
        print("\nVerdicts:", file=out)
        for result in first:
            if result.indexed:
                print(f"  {result.read:<46} {result.ratio:7.2f}x (goal <= {goal_ratio_max}x): {result.verdict}", file=out)
        for row in every:
            print(f"  {row.label:<46} {row.ratio:7.2f}x (goal <= {goal_ratio_max}x): {row.verdict}", file=out)
        if every:
            print(f"  every page: {sum(row.met for row in every)} of {len(every)} MET", file=out)
        return [*first, *every]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_reads(sizes: Sizes, root: str, out: Any) -> list[Result]:
    """The first part: the reads and three pages on bench/workload.py's synthetic stores."""
    os.mkdir(os.path.join(root, "large"))
    os.mkdir(os.path.join(root, "small"))
    large = build(os.path.join(root, "large"), sizes.large_actions)
    small = build(os.path.join(root, "small"), sizes.small_actions)
    try:
        report_stores(large, small, out)
        print(f"\nwith the index (A large / B small, goal <= {goal_ratio_max}x):", file=out)
        results = measure(large, small, sizes, indexed=True)
        for result in results:
            print(result.line(), file=out)
        out.flush()
        print("\nwithout the index (context):", file=out)
        plain = measure(large, small, sizes, indexed=False)
        for result in plain:
            print(result.line(), file=out)
        pages: list[Result] = []
        if sizes.page_calls:
            print(f"\nthe pages, over HTTP from tandem serve (goal <= {goal_ratio_max}x):", file=out)
            pages = measure_pages(large, small, sizes, root)
            for result in pages:
                print(result.line(), file=out)
        out.flush()
        return results + plain + pages
    finally:
        large.store.close()
        small.store.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10k vs 1k events: a smoke run")
    parser.add_argument("--tmp", default=None, metavar="DIR", help="parent of the scratch directory (default: system temp dir)")
    parser.add_argument("--cache", default=None, metavar="DIR", help="keep the console workload's stores here and reuse them")
    parser.add_argument("--pages", default=None, metavar="REGEX", help="only the console workload's pages matching REGEX (re.search)")
    arguments = parser.parse_args(argv)
    started = time.perf_counter()
    run(QUICK if arguments.quick else FULL, arguments.tmp, cache=arguments.cache, pages=arguments.pages)
    print(f"\n({time.perf_counter() - started:,.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
