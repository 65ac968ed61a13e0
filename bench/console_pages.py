"""Every console page on a large store against a small one, now and in the
past: bench/console.py's second part (its docstring says what it measures).

The stores hold bench/console_workload.py's team-after-long-use workload,
ingested as bench/console.py's `build` does (no views folded, no snapshot),
with the search index a server's first start builds; then, at every run,
`tandem snapshot` (a snapshot at the head and the key table, of the code
running now). With a cache directory, a built store is kept there, keyed by
its size and a digest of the workload's source, and reused.
"""

from __future__ import annotations

import collections
import hashlib
import http.client
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from tandem.adapters.ingest import ingest
from tandem.adapters.search import SearchKeeper, open_index
from tandem.adapters.store import open_store
from tandem.adapters.tokens import ACTORS, new_token, write_tokens_file
from tandem.domain import events as ev
from tandem.replay.engine import Engine, project
from tandem.replay.snapshot import code_fingerprint
from tandem.replay.trace_scan import scan_trace

from bench.workload import SideBySide, started_serve
from bench.console_workload import (
    LIVE_TASKS,
    console_inputs,
    expected_counts,
    plain_operation,
)

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD_SOURCES = (ROOT / "bench" / "console_workload.py", ROOT / "bench" / "workload.py")  # the trace's code
goal_ratio_max = SideBySide.goal_ratio_max
recent_back = 200  # "recent" past: this many events before the head
sample_s_target = 0.25  # calls of a page a timed sample, about (at most `page_calls`)
row_s_budget = 6.0  # a row takes samples (up to `repetitions`) until it has 3 and has run this long (1, if one did)
first_samples_max = 5  # first visits a row (each a fetch at a position not shown before)
slow_ms = 2_000.0  # a page slower than this: one fetch a sample, and no warm-up before a repeat row
RECORDS = (ev.InputAccepted, ev.InputRejected)


# ------------------------------------------------------------ the server


index_wait_s_max = 120.0
LOOKED = re.compile(r"(\d+) inputs? shown, matching \(looked at (\d+)\)")


class Console:
    """A real `tandem serve` of one store (`side.url`), signed in as the
    human over one keep-alive loopback connection."""

    def __init__(self, side: Any, directory: str) -> None:
        tokens = {actor: new_token() for actor in ACTORS}
        tokens_file = Path(directory) / "tokens.json"
        write_tokens_file(tokens_file, tokens)
        self.process, url = started_serve(["--store", side.url, "--tokens", str(tokens_file)])
        host, port = url.removeprefix("http://").rstrip("/").split(":")
        self.connection = http.client.HTTPConnection(host, int(port), timeout=600)
        self.cookie = self._sign_in(tokens["human"])
        self.last_bytes = 0  # the last page's body, in bytes

    def _sign_in(self, token: str) -> str:
        status, headers, body = self._request("GET", "/login", {})
        check_cookie = _cookie_of(headers, "tandem_login")
        check = re.search(r'name="check" value="([^"]+)"', body.decode()).group(1)  # type: ignore[union-attr]
        form = f"check={check}&next=%2F&token={token}"
        extra = {"Cookie": f"tandem_login={check_cookie}", "Content-Type": "application/x-www-form-urlencoded"}
        status, headers, _ = self._request("POST", "/login", extra, form.encode())
        assert status == 303, status
        return "tandem_session=" + _cookie_of(headers, "tandem_session")

    def _request(self, method: str, path: str, headers: dict[str, str], body: bytes | None = None) -> tuple[int, list[tuple[str, str]], bytes]:
        for attempt in (1, 2):
            try:
                self.connection.request(method, path, body=body, headers={"Accept": "text/html", **headers})
                answer = self.connection.getresponse()
                return answer.status, answer.getheaders(), answer.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # The server closes a connection idle for 5 s (uvicorn's keep-alive), as this one
                # is while the other store's slow page is fetched: open another (~0.1 ms on loopback).
                self.connection.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def get(self, path: str) -> str:
        status, _, body = self._request("GET", path, {"Cookie": self.cookie})
        assert status == 200, (path, status)
        self.last_bytes = len(body)
        return body.decode()

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


# ------------------------------------------------------------ the stores


@dataclass
class Store:
    """One built store of the console workload, and what its pages name."""

    url: str
    tasks: int  # finished tasks
    events: int
    build_s: float | None  # None: reused from the cache
    snapshot_s: float
    operation: str  # a finished operation, a quarter of the way in
    live_task: str = "live-0"
    recent: list[int] = field(default_factory=list)  # input boundaries just before head - recent_back, newest first
    deep: list[int] = field(default_factory=list)  # input boundaries from the middle on
    snapshots: list[int] = field(default_factory=list)  # the positions of the snapshots of the running code

    @property
    def directory(self) -> str:
        return os.path.dirname(self.url.removeprefix("sqlite:///"))


def workload_digest() -> str:
    digest = hashlib.sha256()
    for path in WORKLOAD_SOURCES:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _url(directory: str) -> str:
    return f"sqlite:///{os.path.join(os.path.abspath(directory), 'events.db')}"


def _build(directory: str, tasks: int) -> None:
    """The workload ingested into a fresh store in `directory` (no views, no snapshot), and its search index."""
    trace = os.path.join(directory, "console.jsonl")
    with open(trace, "wb") as file:
        file.writelines(msgspec.json.encode(value) + b"\n" for value in console_inputs(tasks))
    engine = Engine(open_store(_url(directory)), with_views=False, snapshot_every=0)
    try:
        result = ingest(engine, scan_trace(trace, "console.jsonl"))
    finally:
        engine.store.close()  # type: ignore[union-attr]
    os.remove(trace)
    assert result.rejected == 0, result
    store, index = open_store(_url(directory)), open_index(_url(directory), read_only=False)
    try:
        SearchKeeper(index, store, lambda: True).catch_up()  # as a server's first start does
    finally:
        index.close()
        store.close()


def prepared(tasks: int, cache: str | None, scratch: str, out: Any) -> Store:
    """The store of `tasks` finished tasks: from the cache, else built (into it, if given); snapshotted now."""
    name = f"console-{tasks}t-{workload_digest()}"
    directory = os.path.join(cache, name) if cache is not None else os.path.join(scratch, name)
    build_s: float | None = None
    for stale in Path(directory).parent.glob(f"console-{tasks}t-*"):  # of another workload, or a build cut short
        if stale.name not in (name, f"{name}.building"):
            shutil.rmtree(stale, ignore_errors=True)
    if not os.path.exists(os.path.join(directory, "events.db")):
        building = directory + ".building"
        shutil.rmtree(building, ignore_errors=True)
        os.makedirs(building)
        started = time.perf_counter()
        _build(building, tasks)
        build_s = time.perf_counter() - started
        os.rename(building, directory)  # whole or not at all: an interrupted build is never reused
        print(f"  built {name} in {build_s:,.1f} s", file=out, flush=True)
    started = time.perf_counter()
    snapshot = subprocess.run(
        [sys.executable, "-m", "tandem.adapters.cli", "snapshot", "--store", _url(directory)],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    snapshot_s = time.perf_counter() - started
    reader = open_store(_url(directory))
    try:
        store = Store(_url(directory), tasks, reader.head(), build_s, snapshot_s, plain_operation(tasks))
        store.recent = boundaries(reader, store.events - recent_back, -1)
        store.deep = boundaries(reader, store.events // 2, +1)
        mine = code_fingerprint()
        store.snapshots = [info.position for info in reader.list_snapshots() if info.fingerprint == mine]
        check_counts(reader, tasks)
    finally:
        reader.close()
    print(f"  {name}: {store.events:,} events; tandem snapshot {snapshot_s:,.1f} s: {snapshot.stdout.strip().replace(chr(10), '; ')}", file=out)
    return store


boundaries_window = 4_000  # events read for the past positions on each side of each depth


def boundaries(store: Any, start: int, direction: int) -> list[int]:
    """Input boundaries (the views between two inputs) from `start`, going back
    (`direction` -1, newest first) or forward, within `boundaries_window` events."""
    after = max(0, start - boundaries_window) if direction < 0 else start
    until = start if direction < 0 else start + boundaries_window
    found = [position - 1 for position, event in store.read(after=after, until=until) if isinstance(event, RECORDS) and position > 1]
    assert found, f"no input starts near {start}"
    return found[::-1] if direction < 0 else found


def check_counts(reader: Any, tasks: int) -> None:
    """The views at the head hold what the workload says (the live set and the finished counts)."""
    views = project(reader)
    for view, expected in expected_counts(tasks).items():
        counted = collections.Counter(row["state"] for row in views.view(view))
        expected = {state: count for state, count in expected.items() if count}
        assert dict(counted) == expected, (view, dict(counted), expected)


# ------------------------------------------------------------ the pages


# Each page's path, given the store; {op}: a finished operation, {task}: a live task.
PAGES: dict[str, str] = {
    "/": "/",
    "/tasks": "/tasks",
    "/tasks?state=completed": "/tasks?state=completed",
    "/actions": "/actions",
    "/actions?state=succeeded": "/actions?state=succeeded",
    "/actions?held=1": "/actions?held=1",
    "/tasks/{task}": "/tasks/{task}",
    "/actions/{op}": "/actions/{op}",
    "/explain/{op}": "/explain/{op}",
    "/inbox": "/inbox",
    "/questions": "/questions",
    "/alerts": "/alerts",
    "/alerts?state=resolved": "/alerts?state=resolved",
    "/conversations": "/conversations",
    "/timeline": "/timeline",
    "/timeline?id={op}": "/timeline?id={op}",
    "/search?q={op}": "/search?q={op}",
    "/lifecycles": "/lifecycles",
}
WHEN = ("now", "past recent first", "past recent repeat", "past deep first", "past deep repeat")


def page_path(page: str, store: Store, at: int | None = None) -> str:
    path = PAGES[page].format(op=store.operation, task=store.live_task)
    if at is None:
        return path
    return f"{path}{'&' if '?' in path else '?'}at={at}"


class Visits:
    """One side's positions in the past for first visits, each shown once in
    the whole run (on a small store the two depths' positions may meet: none
    is used twice); a repeat visit goes back to the latest first visit's."""

    def __init__(self, store: Store) -> None:
        self._used: set[int] = set()
        self._pools = {"recent": iter(store.recent), "deep": iter(store.deep)}
        self.last: dict[str, int] = {}  # by depth: the latest first visit's position

    def fresh(self, depth: str) -> int:
        for position in self._pools[depth]:
            if position not in self._used:
                self._used.add(position)
                self.last[depth] = position
                return position
        raise RuntimeError(f"no {depth} position left that the server has not shown: fewer pages or samples (--pages)")


@dataclass
class PageResult(SideBySide):
    page: str
    when: str
    large_ms: list[float]
    small_ms: list[float]
    large_bytes: int
    small_bytes: int
    calls: int  # fetches a sample

    @property
    def label(self) -> str:
        return f"{self.page}  {self.when}"

    def line(self) -> str:
        large, small = statistics.median(self.large_ms), statistics.median(self.small_ms)
        return (
            f"  {self.label:<46} {large:10.1f} {small:8.1f} {self.ratio:8.2f}x  {self.verdict:<6}"
            f" {self.large_bytes:>10,} {self.small_bytes:>8,}  {len(self.large_ms)}x{self.calls}"
        )


HEADER = f"  {'page  when':<46} {'large ms':>10} {'small ms':>8} {'ratio':>9}  {'goal':<6} {'large B':>10} {'small B':>8}  samples"


def _timed(console: Console, paths: Iterator[str], calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        console.get(next(paths))
    return (time.perf_counter() - started) * 1000 / calls


def _repeat(path: str) -> Iterator[str]:
    while True:
        yield path


def _fresh(page: str, store: Store, visits: Visits, depth: str) -> Iterator[str]:
    while True:
        yield page_path(page, store, visits.fresh(depth))


def measure_row(page: str, when: str, sides: list[tuple[Console, Store, Visits]], sizes: Any, hint_ms: float | None) -> PageResult:
    """One page at one time, on both sides, alternated (A B, B A, ...): medians
    of samples. A repeat row follows the page's first row at its depth (its
    position is that row's last); `hint_ms`: that row's slower median."""
    depth = None if when == "now" else when.split()[1]
    first = when.endswith("first")
    streams: list[Iterator[str]] = []
    for _, store, visits in sides:
        at = None if depth is None or first else visits.last[depth]
        streams.append(_fresh(page, store, visits, depth) if first and depth is not None else _repeat(page_path(page, store, at)))
    calls = 1  # a first visit, or a slow page: one fetch a sample, no warm-up
    if not first and (hint_ms is None or hint_ms <= slow_ms):
        warm = [_timed(console, stream, 1) for (console, _, _), stream in zip(sides, streams)]
        calls = max(1, min(sizes.page_calls, round(sample_s_target * 1000 / max(max(warm), 0.1))))
    values: list[list[float]] = [[], []]
    started = time.perf_counter()
    for repetition in range(min(sizes.repetitions, first_samples_max) if first else sizes.repetitions):
        for side in (0, 1) if repetition % 2 == 0 else (1, 0):
            values[side].append(_timed(sides[side][0], streams[side], calls))
        if time.perf_counter() - started > row_s_budget and repetition in (0, 2):
            break  # a slow page: 3 samples, or 1 when one took the budget already (its verdict is plain)
    return PageResult(page, when, values[0], values[1], sides[0][0].last_bytes, sides[1][0].last_bytes, calls)


def measure_all(large: Store, small: Store, sizes: Any, scratch: str, pattern: str | None, out: Any) -> list[PageResult]:
    chosen = [page for page in PAGES if pattern is None or re.search(pattern, page)]
    consoles: list[Console] = []
    try:
        for store, name in ((large, "large"), (small, "small")):
            os.makedirs(os.path.join(scratch, f"{name}-pages"))
            started = time.perf_counter()
            consoles.append(Console(store, os.path.join(scratch, f"{name}-pages")))
            consoles[-1].wait_for_index(store.operation)
            print(f"  {name}: tandem serve ready (its index built) in {time.perf_counter() - started:,.1f} s", file=out)
        sides = [(consoles[0], large, Visits(large)), (consoles[1], small, Visits(small))]
        print(f"\n{HEADER}", file=out, flush=True)
        results: list[PageResult] = []
        for page in chosen:
            for when in WHEN:
                hint = max(statistics.median(results[-1].large_ms), statistics.median(results[-1].small_ms)) if when.endswith("repeat") else None
                results.append(measure_row(page, when, sides, sizes, hint))
                print(results[-1].line(), file=out, flush=True)
        return results
    finally:
        for console in consoles:
            console.stop()


def describe(store: Store, label: str, out: Any) -> None:
    built = f"built in {store.build_s:,.0f} s" if store.build_s is not None else "reused from the cache"
    print(
        f"  {label}: {store.events:,} events ({built}), {store.tasks:,} finished tasks and {LIVE_TASKS} live;"
        f" {{op}} = {store.operation}, {{task}} = {store.live_task};"
        f" snapshots at {', '.join(f'{p:,}' for p in store.snapshots) or 'none'};"
        f" past: recent at={store.recent[0]:,} (first visits below it), deep at={store.deep[0]:,} (first visits above it)",
        file=out,
    )


def run_pages(sizes: Any, scratch: str, cache: str | None, pattern: str | None, out: Any) -> list[PageResult]:
    print(
        f"\nEvery page, the console workload (bench/console_workload.py), over HTTP from tandem serve"
        f" (goal <= {goal_ratio_max}x; ms a page, medians):",
        file=out,
    )
    started = time.perf_counter()
    large = prepared(sizes.console_large_tasks, cache, scratch, out)
    small = prepared(sizes.console_small_tasks, cache, scratch, out)
    print(f"  stores ready in {time.perf_counter() - started:,.1f} s", file=out)
    for store, label in ((large, "large"), (small, "small")):
        describe(store, label, out)
    return measure_all(large, small, sizes, scratch, pattern, out)
