"""The console's reads on a large store against a small one, side by side in one run.

    python bench/console.py            # 100k vs 1k events, well under a minute
    python bench/console.py --quick    # 10k vs 1k events (a smoke run)
    python bench/console.py --tmp DIR  # put the scratch stores under DIR

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
"""

from __future__ import annotations

import datetime
import http.client
import re
import subprocess
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
from tandem.adapters.tokens import ACTORS, new_token, write_tokens_file  # noqa: E402
from tandem.adapters.store import open_store  # noqa: E402
from tandem.adapters.trace import parse_trace  # noqa: E402
from tandem.domain.inputs import format_at  # noqa: E402
from tandem.domain.records import Config  # noqa: E402
from tandem.replay.engine import Engine  # noqa: E402
from tandem.replay.explain import document, encode_json  # noqa: E402
from tandem.replay.index import LogIndex  # noqa: E402
from tandem.replay.port import EventStore  # noqa: E402
from tandem.replay.input_timeline import Chosen, input_timeline  # noqa: E402
from bench.workload import alternate, bench_main, synthetic_trace  # noqa: E402

goal_ratio_max = 2.0


@dataclass(frozen=True)
class Sizes:
    repetitions: int  # alternated pairs per read (medians are reported)
    calls: int  # reads per timed sample, with the index
    plain_calls: int  # the same without it (explain then reads the whole log)
    large_actions: int  # synthetic_trace(actions): ~12 events an action
    small_actions: int
    page_calls: int = 20  # page fetches per timed sample (0: no pages part)


FULL = Sizes(repetitions=7, calls=40, plain_calls=1, large_actions=8_250, small_actions=82)
QUICK = Sizes(repetitions=3, calls=10, plain_calls=1, large_actions=825, small_actions=82, page_calls=10)


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
class Result:
    read: str
    indexed: bool
    large_ms: list[float]
    small_ms: list[float]

    @property
    def ratio(self) -> float:
        return statistics.median(self.large_ms) / statistics.median(self.small_ms)

    @property
    def met(self) -> bool:
        return self.ratio <= goal_ratio_max

    def line(self) -> str:
        large, small = statistics.median(self.large_ms), statistics.median(self.small_ms)
        spread = f"(large {min(self.large_ms):.3f}-{max(self.large_ms):.3f}, small {min(self.small_ms):.3f}-{max(self.small_ms):.3f})"
        verdict = ("MET" if self.met else "MISSED") if self.indexed else "(context)"
        return f"  {self.read:<18} {large:9.3f} ms vs {small:7.3f} ms   {self.ratio:7.2f}x  {verdict}  {spread}"


def measure(large: Side, small: Side, sizes: Sizes, indexed: bool) -> list[Result]:
    results = []
    calls = sizes.calls if indexed else sizes.plain_calls
    for name, read in READS.items():
        for side in (large, small):  # warm: the page cache, the decoders
            per_read_ms(read, side, indexed, 1)
        a, b = alternate(
            lambda: per_read_ms(read, large, indexed, calls),
            lambda: per_read_ms(read, small, indexed, calls),
            sizes.repetitions,
        )
        results.append(Result(name, indexed, a, b))
    return results


# ------------------------------------------------------------------ the pages

index_wait_s_max = 60.0
LOOKED = re.compile(r"(\d+) inputs? shown, matching \(looked at (\d+)\)")


class Console:
    """A real `tandem serve` of one store, signed in as the human over one
    keep-alive loopback connection."""

    def __init__(self, side: Side, directory: str) -> None:
        tokens = {actor: new_token() for actor in ACTORS}
        tokens_file = Path(directory) / "tokens.json"
        write_tokens_file(tokens_file, tokens)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tandem.adapters.cli", "serve", "--store", side.url, "--tokens", str(tokens_file),
             "--listen", "127.0.0.1:0", "--no-runtime-inputs"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        line = self.process.stdout.readline() if self.process.stdout else ""
        if not line.startswith("listening on "):
            self.process.kill()
            raise RuntimeError(f"tandem serve did not start: {line!r}")
        host, port = line.split()[-1].removeprefix("http://").rstrip("/").split(":")
        self.connection = http.client.HTTPConnection(host, int(port), timeout=60)
        self.cookie = self._sign_in(tokens["human"])

    def _sign_in(self, token: str) -> str:
        status, headers, body = self._request("GET", "/login", {})
        check_cookie = _cookie_of(headers, "tandem_login")
        check = re.search(r'name="check" value="([^"]+)"', body).group(1)  # type: ignore[union-attr]
        form = f"check={check}&next=%2F&token={token}"
        extra = {"Cookie": f"tandem_login={check_cookie}", "Content-Type": "application/x-www-form-urlencoded"}
        status, headers, _ = self._request("POST", "/login", extra, form.encode())
        assert status == 303, status
        return "tandem_session=" + _cookie_of(headers, "tandem_session")

    def _request(self, method: str, path: str, headers: dict[str, str], body: bytes | None = None) -> tuple[int, list[tuple[str, str]], str]:
        self.connection.request(method, path, body=body, headers={"Accept": "text/html", **headers})
        answer = self.connection.getresponse()
        return answer.status, answer.getheaders(), answer.read().decode()

    def get(self, path: str) -> str:
        status, _, body = self._request("GET", path, {"Cookie": self.cookie})
        assert status == 200, (path, status)
        return body

    def wait_for_index(self, operation: str) -> None:
        deadline = time.monotonic() + index_wait_s_max
        while time.monotonic() < deadline:
            shown = LOOKED.search(self.get(f"/timeline?id={operation}"))
            assert shown is not None, "the filtered timeline says no counts"
            if shown.group(1) == shown.group(2):  # the index: it looks only at what it shows
                return
            time.sleep(0.1)
        raise RuntimeError(f"the server's index was not ready after {index_wait_s_max:.0f} s")

    def stop(self) -> None:
        self.connection.close()
        self.process.terminate()
        self.process.wait(timeout=30)


def _cookie_of(headers: list[tuple[str, str]], name: str) -> str:
    for key, value in headers:
        if key.lower() == "set-cookie" and value.startswith(name + "="):
            return value.split(";", 1)[0].split("=", 1)[1]
    raise AssertionError(f"no {name} cookie set")


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
                lambda: per_page_ms(consoles[0], a_path, sizes.page_calls),
                lambda: per_page_ms(consoles[1], b_path, sizes.page_calls),
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


def run(sizes: Sizes, tmp: str | None = None, out: Any = sys.stdout) -> list[Result]:
    root = tempfile.mkdtemp(prefix="tandem-bench-console-", dir=tmp)
    try:
        print(
            f"Tandem console bench: Python {platform.python_version()}, SQLite {sqlite3.sqlite_version},"
            f" {os.cpu_count()} CPUs; medians of {sizes.repetitions} alternated repetitions",
            file=out,
        )
        os.mkdir(os.path.join(root, "large"))
        os.mkdir(os.path.join(root, "small"))
        large = build(os.path.join(root, "large"), sizes.large_actions)
        small = build(os.path.join(root, "small"), sizes.small_actions)
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
        print("\nVerdicts:", file=out)
        for result in results + pages:
            print(f"  {result.read:<18} {result.ratio:5.2f}x (goal <= {goal_ratio_max}x): {'MET' if result.met else 'MISSED'}", file=out)
        large.store.close()
        small.store.close()
        return results + plain + pages
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(__doc__, run, FULL, QUICK, "10k vs 1k events: a smoke run", argv)


if __name__ == "__main__":
    sys.exit(main())
