"""Tandem's throughput ratios, measured side by side in one run.

    python bench/run.py            # full sizes, a few minutes
    python bench/run.py --quick    # small sizes, under a minute (smoke run)

Every figure is SQLite in WAL mode with synchronous=FULL, in temporary
directories under --tmp (default: the system temp dir, /tmp), on this machine,
in this process. Each ratio compares the engine with a raw-sqlite3 baseline
measured in the same run, the two measurements alternated (A B B A A B ...)
and reduced to medians, because these 2-core machines are shared and noisy.

The four goals (see bench/README.md for what each one means):

1. engine, one transaction per input   >= 0.7 x raw single-row commits
2. batch ingest (1,000 per transaction) >= 4   x raw single-row commits
3. replay (open an Engine on a store)   >= 0.5 x raw scan + typed decode
   3v. the same with the views' fold    >= 0.5 x raw scan + typed decode
4. engine per input, 100k live actions  >= 0.8 x the same with 1k live

And for the inbox (no goal set for the first; the second must not grow):

5. ingest of observations (100k over 1k causes) vs raw single-row commits
6. the inbox view's memory with 10x more observations of the same causes
   (ratio of the two sizes; >= 0.9 means it did not grow)

And for snapshots (a time ratio, lower is better):

7. restart time of a store of 1M events <= 2 x that of a store of 10k events
   with the same live state, each with a snapshot near its head

With --peers, bench/peers.py's rows follow in the same run: Tandem's durable
inputs beside DBOS's one-step workflows and LangGraph's checkpoint writes, and
a restart that finishes 1,000 open actions beside DBOS's recovery (no goals).
"""

from __future__ import annotations

import dataclasses
import gc
import math
import os
import platform
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # runnable as `python bench/run.py` from anywhere
    sys.path.insert(0, str(ROOT))

from tandem.adapters.ingest import ingest, ingest_batch_inputs_max  # noqa: E402
from tandem.adapters.snapshots_beside import snapshots_beside_for  # noqa: E402
from tandem.adapters.store import log_stream_id, open_store, table_name_default  # noqa: E402
from tandem.adapters.trace import parse_trace  # noqa: E402
from tandem.replay.trace_scan import scan_trace  # noqa: E402
from tandem.domain.events import decode_event  # noqa: E402
from tandem.replay.engine import Engine, Located  # noqa: E402
from tandem.replay.snapshot import Written  # noqa: E402
from bench.workload import alternate, bench_main, observation_trace, synthetic_trace  # noqa: E402
from tandem.projections.inbox import InboxView  # noqa: E402

raw_row_bytes = 200  # the body size of a baseline row: about one stored event
live_setup_batch_inputs = 5_000  # inputs per transaction when loading the live set (untimed)
events_per_action_estimate = 6.5  # synthetic_trace: ~3.1 inputs x ~2.3 events per action (a floor)

GOALS = {
    "single": 0.7,  # issue 15 (was 0.5)
    "ingest": 4.0,  # issue 15 (was 3)
    "replay": 0.5,
    "replay-views": 0.5,  # issue 15: the replay a restart without snapshot does, views included
    "live": 0.8,
    "observe": 0.0,  # reported, no goal
    "inbox-memory": 0.9,
    "restart": 2.0,  # a time ratio: at most
}


@dataclass(frozen=True)
class Sizes:
    repetitions: int  # measured pairs per ratio (medians are reported)
    single_inputs: int  # inputs (and raw rows) per repetition, benchmark 1
    ingest_actions: int  # synthetic_trace(actions=...) ingested per repetition, benchmark 2
    replay_events_min: int  # events in the store opened by benchmark 3
    live_small: int  # live actions, benchmark 4, A
    live_large: int  # live actions, benchmark 4, B
    steady_chunk_inputs: int  # steady-state inputs timed per repetition, benchmark 4
    observations: int  # benchmark 5 (and the larger side of 6)
    observation_causes: int  # benchmarks 5 and 6
    restart_events_large: int  # benchmark 7, A: events in the long store
    restart_events_small: int  # benchmark 7, B: events in the short store
    restart_causes: int  # benchmark 7: the live state (inbox causes), the same in both
    restart_tail_inputs: int  # benchmark 7: inputs after the snapshot, the same in both


FULL = Sizes(
    repetitions=5,
    single_inputs=3_000,
    ingest_actions=10_000,  # ~31k inputs
    replay_events_min=200_000,
    live_small=1_000,
    live_large=100_000,
    steady_chunk_inputs=1_500,
    observations=100_000,
    observation_causes=1_000,
    restart_events_large=1_000_000,
    restart_events_small=10_000,
    restart_causes=1_000,
    restart_tail_inputs=500,
)
QUICK = Sizes(
    repetitions=3,
    single_inputs=600,
    ingest_actions=1_500,
    replay_events_min=20_000,
    live_small=1_000,
    live_large=10_000,
    steady_chunk_inputs=400,
    observations=10_000,
    observation_causes=200,
    restart_events_large=50_000,
    restart_events_small=2_000,
    restart_causes=200,
    restart_tail_inputs=100,
)


# ------------------------------------------------------------------ helpers


class Scratch:
    """Fresh subdirectories of one temporary directory, removed at the end."""

    def __init__(self, parent: str | None = None) -> None:
        self.root = tempfile.mkdtemp(prefix="tandem-bench-", dir=parent)
        self._count = 0

    def fresh(self) -> str:
        self._count += 1
        path = os.path.join(self.root, f"run-{self._count}")
        os.mkdir(path)
        return path

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _sqlite_url(directory: str) -> str:
    return f"sqlite:///{os.path.join(directory, 'events.db')}"  # absolute: sqlite:////...


def _settle() -> None:
    """Start every timed section from the same garbage-collector state."""
    gc.collect()



def lines_of(data: bytes, count: int) -> bytes:
    """The first `count` lines of a JSON Lines trace."""
    end = 0
    for _ in range(count):
        end = data.index(b"\n", end) + 1
    return data[:end]


# ------------------------------------------------------------ the baselines


def raw_single_row_commits(directory: str, rows: int, row_bytes: int = raw_row_bytes) -> float:
    """Rows/s: plain sqlite3, WAL, synchronous=FULL, one INSERT + COMMIT per row."""
    path = os.path.join(directory, "raw.db")
    connection = sqlite3.connect(path, isolation_level=None, cached_statements=64)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=FULL")
        connection.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, body BLOB)")
        bodies = [(index.to_bytes(8, "big") * (row_bytes // 8 + 1))[:row_bytes] for index in range(rows)]
        execute = connection.execute
        started = time.perf_counter()
        for body in bodies:
            execute("BEGIN")
            execute("INSERT INTO rows (body) VALUES (?)", (body,))
            execute("COMMIT")
        elapsed = time.perf_counter() - started
    finally:
        connection.close()
    return rows / elapsed


def raw_scan_decode(database: str, table: str = table_name_default) -> float:
    """Events/s: one plain SELECT of the whole log in log order, `decode_event` on each row."""
    connection = sqlite3.connect(database)
    try:
        started = time.perf_counter()
        count = 0
        for (state,) in connection.execute(
            f"SELECT state FROM {table} WHERE originator_id=? ORDER BY originator_version", (log_stream_id,)
        ):
            decode_event(state)
            count += 1
        elapsed = time.perf_counter() - started
    finally:
        connection.close()
    return count / elapsed


# -------------------------------------------------------- the engine paths


def engine_single_inputs(directory: str, items: Sequence[Located]) -> float:
    """Inputs/s: a fresh SQLite store, `engine.submit` (one transaction) per input."""
    engine = Engine(open_store(_sqlite_url(directory)))
    try:
        submit = engine.submit
        started = time.perf_counter()
        for item in items:
            submit(item)
        elapsed = time.perf_counter() - started
    finally:
        engine.store.close()  # type: ignore[union-attr]
    return len(items) / elapsed


def parse_seconds(data: bytes) -> float:
    started = time.perf_counter()
    parse_trace(data, "bench.jsonl")
    return time.perf_counter() - started


def batch_ingest(directory: str, data: bytes, batch_inputs: int = ingest_batch_inputs_max) -> float:
    """Inputs/s: what `tandem ingest FILE` does, into a fresh SQLite store (no
    views folded): a streaming pass that checks every line of the file
    (`scan_trace`), then `adapters.ingest.ingest`, which reads it again."""
    path = os.path.join(directory, "bench.jsonl")
    with open(path, "wb") as file:  # written before the clock starts
        file.write(data)
    url = _sqlite_url(directory)
    engine = Engine(open_store(url), with_views=False, snapshots_beside=snapshots_beside_for(url))
    try:
        started = time.perf_counter()
        trace = scan_trace(path)
        result = ingest(engine, trace, batch_inputs=batch_inputs)
        engine.collect_beside(wait=True)  # as `tandem ingest` does before it exits
        elapsed = time.perf_counter() - started
    finally:
        engine.store.close()  # type: ignore[union-attr]
    assert result.applied == trace.inputs, result
    return result.applied / elapsed


def build_replay_store(directory: str, events_min: int) -> tuple[str, int]:
    """A store of at least `events_min` events (ingested, untimed): (url, events)."""
    actions = math.ceil(events_min / events_per_action_estimate)
    url = _sqlite_url(directory)
    engine = Engine(open_store(url), snapshot_every=0)  # measurement 3 is a full replay: no snapshot
    try:
        ingest(engine, parse_trace(synthetic_trace(actions), "replay.jsonl"))
        events = engine.store.head()  # type: ignore[union-attr]
    finally:
        engine.store.close()  # type: ignore[union-attr]
    assert events >= events_min, f"built {events} events, wanted {events_min}: raise events_per_action_estimate"
    return url, events


def engine_replay(url: str, with_views: bool = False) -> float:
    """Events/s: `Engine(open_store(url), with_views=...)`: a restart by a
    full replay (read + decode + evolve, and the views' fold too when asked;
    snapshots ignored: measurement 7 is the restart from one)."""
    started = time.perf_counter()
    store = open_store(url)
    engine = Engine(store, with_views=with_views, use_snapshots=False)
    elapsed = time.perf_counter() - started
    events = store.head()
    assert engine.state.position == events, (engine.state.position, events)
    store.close()
    return events / elapsed


def build_restart_store(directory: str, events_min: int, causes: int, tail_inputs: int) -> tuple[str, int, Written]:
    """A store of >= `events_min` events of observations over `causes` causes
    (the live state does not grow with history), ingested as `tandem ingest`
    does, with a snapshot `tail_inputs` inputs before its head: (url, events,
    the snapshot written). Untimed."""
    observations = max(math.ceil(events_min / 2), causes + tail_inputs)  # 2 events per observation
    trace = parse_trace(observation_trace(observations, causes), "restart.jsonl")
    url = _sqlite_url(directory)
    engine = Engine(open_store(url), with_views=False, snapshot_every=0)
    try:
        ingest(engine, dataclasses.replace(trace, lines=trace.lines[:-tail_inputs]))
        snapshot = engine.write_snapshot()
        ingest(engine, trace)  # resumes: the tail
        events = engine.store.head()  # type: ignore[union-attr]
    finally:
        engine.store.close()  # type: ignore[union-attr]
    assert events >= events_min, (events, events_min)
    return url, events, snapshot


def engine_restart_seconds(url: str, use_snapshots: bool = True) -> float:
    """Seconds to open the store and an Engine on it (state and views), from
    its newest snapshot (or, `use_snapshots=False`, by folding the whole log)."""
    started = time.perf_counter()
    store = open_store(url)
    engine = Engine(store, use_snapshots=use_snapshots)
    elapsed = time.perf_counter() - started
    assert engine.state.position == store.head()
    assert (engine.snapshot_position > 0) == use_snapshots, engine.snapshot_position
    store.close()
    return elapsed


class SteadyEngine:
    """An engine whose store already holds `live` live actions, and the
    steady-state inputs that follow them in the same synthetic trace."""

    def __init__(self, directory: str, live: int, steady_inputs: int) -> None:
        actions = steady_inputs // 3 + 2  # ~3.1 inputs per action: a few to spare
        trace = parse_trace(synthetic_trace(actions, live_actions=live), "live.jsonl")
        items = [line.item for line in trace.lines]
        first_steady = next(
            index for index, item in enumerate(items) if getattr(item.input, "operation_id", None) == "op-0"
        )
        self.live = live
        # No automatic snapshot: one of 100k live actions (~3 s) inside a timed
        # chunk would measure the snapshot, not the input (measurement 7 and
        # bench/README.md give the snapshots' costs).
        self.engine = Engine(open_store(_sqlite_url(directory)), snapshot_every=0)
        for begin in range(0, first_steady, live_setup_batch_inputs):
            self.engine.submit_batch(items[begin : min(begin + live_setup_batch_inputs, first_steady)])
        self.steady = items[first_steady:]
        assert len(self.steady) >= steady_inputs, (len(self.steady), steady_inputs)
        self._next = 0

    def time_next(self, count: int) -> float:
        """Inputs/s over the next `count` steady inputs, one transaction each."""
        chunk = self.steady[self._next : self._next + count]
        assert len(chunk) == count, "ran out of steady-state inputs"
        self._next += count
        submit = self.engine.submit
        started = time.perf_counter()
        for item in chunk:
            submit(item)
        return count / (time.perf_counter() - started)

    def close(self) -> None:
        self.engine.store.close()  # type: ignore[union-attr]


# ------------------------------------------------------------- the report


@dataclass
class Ratio:
    number: int | str
    key: str
    title: str
    engine_label: str
    engine_values: list[float]
    baseline_label: str
    baseline_values: list[float]
    unit: str
    extra: list[str]
    lower_is_better: bool = False  # times: the goal is a maximum ratio

    @property
    def engine(self) -> float:
        return statistics.median(self.engine_values)

    @property
    def baseline(self) -> float:
        return statistics.median(self.baseline_values)

    @property
    def ratio(self) -> float:
        return self.engine / self.baseline

    @property
    def goal(self) -> float:
        return GOALS[self.key]

    @property
    def met(self) -> bool:
        return self.ratio <= self.goal if self.lower_is_better else self.ratio >= self.goal

    @property
    def goal_text(self) -> str:
        return f"goal {'<=' if self.lower_is_better else '>='} {self.goal}x"


def _spread(values: Sequence[float], digits: int = 0) -> str:
    return f"min {min(values):,.{digits}f}, max {max(values):,.{digits}f}, n={len(values)}"


def print_ratio(result: Ratio, out=sys.stdout) -> None:
    digits = 1 if result.lower_is_better else 0
    print(f"\n{result.number}. {result.title}", file=out)
    for side, label, value, values in (
        ("A", result.engine_label, result.engine, result.engine_values),
        ("B", result.baseline_label, result.baseline, result.baseline_values),
    ):
        print(f"   {side} {label:<46} {value:>12,.{digits}f} {result.unit}  ({_spread(values, digits)})", file=out)
    for line in result.extra:
        print(f"     {line}", file=out)
    if not result.goal:
        print(f"   A/B = {result.ratio:.2f}x   (no goal set)", file=out)
        return
    verdict = "MET " if result.met else "MISSED"
    print(f"   A/B = {result.ratio:.2f}x   {result.goal_text}   {verdict}", file=out)


def measure_single(scratch: Scratch, sizes: Sizes, trace: bytes) -> Ratio:
    data = lines_of(trace, sizes.single_inputs)
    items = [line.item for line in parse_trace(data, "bench.jsonl").lines]
    parse_times: list[float] = []

    def engine_side() -> float:
        parse_times.append(parse_seconds(data))  # untimed part of the pair, for the with-parsing figure
        return engine_single_inputs(scratch.fresh(), items)

    engine_values, raw_values = alternate(
        engine_side, lambda: raw_single_row_commits(scratch.fresh(), sizes.single_inputs), sizes.repetitions
    )
    with_parsing = [len(items) / (len(items) / rate + seconds) for rate, seconds in zip(engine_values, parse_times)]
    return Ratio(
        1,
        "single",
        f"Durable inputs, one transaction each ({len(items):,} inputs / rows per repetition)",
        "engine.submit(Located) per input, pre-decoded",
        engine_values,
        "raw sqlite3 INSERT+COMMIT per ~200-byte row",
        raw_values,
        "/s",
        [
            f"with trace parsing included: {statistics.median(with_parsing):,.0f} inputs/s"
            f" ({statistics.median(with_parsing) / statistics.median(raw_values):.2f}x raw)"
        ],
    )


def measure_ingest(scratch: Scratch, sizes: Sizes, raw_rows: int) -> Ratio:
    data = synthetic_trace(sizes.ingest_actions)
    inputs = data.count(b"\n")
    ingest_values, raw_values = alternate(
        lambda: batch_ingest(scratch.fresh(), data),
        lambda: raw_single_row_commits(scratch.fresh(), raw_rows),
        sizes.repetitions,
    )
    return Ratio(
        2,
        "ingest",
        f"Batch ingest, {ingest_batch_inputs_max:,} inputs per transaction ({inputs:,} inputs, parsing included)",
        "scan_trace + adapters.ingest.ingest (tandem ingest)",
        ingest_values,
        "raw sqlite3 INSERT+COMMIT per ~200-byte row",
        raw_values,
        "/s",
        [],
    )


def measure_replay(scratch: Scratch, sizes: Sizes) -> list[Ratio]:
    directory = scratch.fresh()
    started = time.perf_counter()
    url, events = build_replay_store(directory, sizes.replay_events_min)
    built_s = time.perf_counter() - started
    database = os.path.join(directory, "events.db")
    size_mb = os.path.getsize(database) / 1e6
    raw_scan_decode(database)  # warm the page cache for both sides
    replay_values, scan_values = alternate(
        lambda: engine_replay(url), lambda: raw_scan_decode(database), sizes.repetitions
    )
    views_values, views_scan_values = alternate(
        lambda: engine_replay(url, with_views=True), lambda: raw_scan_decode(database), sizes.repetitions
    )
    title = f"Replay of a store of {events:,} events ({size_mb:,.0f} MB; built in {built_s:,.0f} s, untimed)"
    scan_label = "raw SELECT state ORDER BY position + decode_event"
    return [
        Ratio(3, "replay", title, "Engine restart: read+decode+evolve (decision state)", replay_values,
              scan_label, scan_values, "events/s", []),
        Ratio("3v", "replay-views", title + ", with the views", "Engine restart with views (tandem replay)",
              views_values, scan_label, views_scan_values, "events/s", []),
    ]  # fmt: skip


def measure_live(scratch: Scratch, sizes: Sizes) -> Ratio:
    steady_needed = sizes.steady_chunk_inputs * (sizes.repetitions + 1)  # +1: a warm-up chunk
    started = time.perf_counter()
    small = SteadyEngine(scratch.fresh(), sizes.live_small, steady_needed)
    large = SteadyEngine(scratch.fresh(), sizes.live_large, steady_needed)
    setup_s = time.perf_counter() - started
    try:
        small.time_next(sizes.steady_chunk_inputs)  # warm-up, not reported
        large.time_next(sizes.steady_chunk_inputs)
        large_values, small_values = alternate(
            lambda: large.time_next(sizes.steady_chunk_inputs),
            lambda: small.time_next(sizes.steady_chunk_inputs),
            sizes.repetitions,
        )
    finally:
        small.close()
        large.close()
    return Ratio(
        4,
        "live",
        f"Steady-state durable inputs with many live actions ({sizes.steady_chunk_inputs:,} inputs per repetition;"
        f" live sets loaded in {setup_s:,.0f} s, untimed)",
        f"engine.submit per input, {sizes.live_large:,} live actions",
        large_values,
        f"engine.submit per input, {sizes.live_small:,} live actions",
        small_values,
        "inputs/s",
        [],
    )


def measure_observations(scratch: Scratch, sizes: Sizes) -> Ratio:
    data = observation_trace(sizes.observations, sizes.observation_causes)
    ingest_values, raw_values = alternate(
        lambda: batch_ingest(scratch.fresh(), data),
        lambda: raw_single_row_commits(scratch.fresh(), sizes.single_inputs),
        max(2, sizes.repetitions - 2),
    )
    return Ratio(
        5,
        "observe",
        f"Ingest of {sizes.observations:,} observations over {sizes.observation_causes:,} causes"
        f" ({ingest_batch_inputs_max:,} per transaction, parsing included)",
        "scan_trace + adapters.ingest.ingest (tandem ingest)",
        ingest_values,
        "raw sqlite3 INSERT+COMMIT per ~200-byte row",
        raw_values,
        "inputs/s",
        [],
    )


def inbox_bytes(data: bytes) -> float:
    """Bytes the inbox view holds after folding `data`'s events (tracemalloc)."""
    import tracemalloc

    engine = Engine(with_views=False)
    events = []
    for line in parse_trace(data, "inbox.jsonl").lines:
        events.extend(engine.decide(line.item))
    del engine
    gc.collect()
    tracemalloc.start()
    try:
        view = InboxView()
        for event in events:
            view.apply(event)
        rows = view.render()
        size = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(rows) == len(view.rows)
    return float(size)


def measure_inbox_memory(scratch: Scratch, sizes: Sizes) -> Ratio:
    causes = sizes.observation_causes
    few = inbox_bytes(observation_trace(sizes.observations // 10, causes))
    many = inbox_bytes(observation_trace(sizes.observations, causes))
    more_causes = inbox_bytes(observation_trace(sizes.observations, causes * 10))
    return Ratio(
        6,
        "inbox-memory",
        f"Inbox view memory: {causes:,} causes, {sizes.observations // 10:,} vs {sizes.observations:,} observations",
        f"{sizes.observations // 10:,} observations (bytes held)",
        [few],
        f"{sizes.observations:,} observations (bytes held)",
        [many],
        "bytes",
        [
            f"{few / causes:,.0f} bytes a cause; with 10x the causes ({causes * 10:,}):"
            f" {more_causes:,.0f} bytes ({more_causes / many:.1f}x: it grows with causes)"
        ],
    )


def measure_restart(scratch: Scratch, sizes: Sizes) -> Ratio:
    started = time.perf_counter()
    large_url, large_events, large_snapshot = build_restart_store(
        scratch.fresh(), sizes.restart_events_large, sizes.restart_causes, sizes.restart_tail_inputs
    )
    small_url, small_events, small_snapshot = build_restart_store(
        scratch.fresh(), sizes.restart_events_small, sizes.restart_causes, sizes.restart_tail_inputs
    )
    built_s = time.perf_counter() - started
    engine_restart_seconds(large_url)  # warm up: page cache, imports, the code fingerprint
    engine_restart_seconds(small_url)
    large_values, small_values = alternate(
        lambda: engine_restart_seconds(large_url) * 1000, lambda: engine_restart_seconds(small_url) * 1000, sizes.repetitions
    )
    full = [engine_restart_seconds(large_url, use_snapshots=False) * 1000 for _ in range(max(1, sizes.repetitions // 2))]
    full_ms = statistics.median(full)
    return Ratio(
        7,
        "restart",
        f"Restart (open an Engine, state and views) of {large_events:,} vs {small_events:,} events, the same live state"
        f" ({sizes.restart_causes:,} inbox causes), each with a snapshot {sizes.restart_tail_inputs:,} inputs"
        f" before its head (stores built in {built_s:,.0f} s, untimed)",
        f"{large_events:,} events, snapshot at {large_snapshot.position:,}",
        large_values,
        f"{small_events:,} events, snapshot at {small_snapshot.position:,}",
        small_values,
        "ms",
        [
            f"tails folded: {large_events - large_snapshot.position:,} and {small_events - small_snapshot.position:,}"
            f" events; snapshots {large_snapshot.size:,} and {small_snapshot.size:,} bytes, written in"
            f" {large_snapshot.seconds * 1000:,.0f} and {small_snapshot.seconds * 1000:,.0f} ms (an engine without"
            " views folds them from the last snapshot, here from the start, to write one)",
            f"for context, a full replay of the {large_events:,} events (no snapshot): {full_ms:,.0f} ms"
            f" ({full_ms / statistics.median(large_values):,.0f}x the restart from the snapshot)",
        ],
        lower_is_better=True,
    )


def run(sizes: Sizes, tmp: str | None = None, out=sys.stdout, peers: bool = False) -> list[Ratio]:
    scratch = Scratch(tmp)
    try:
        print(
            f"Tandem bench: Python {platform.python_version()}, SQLite {sqlite3.sqlite_version},"
            f" {os.cpu_count()} CPUs, scratch {scratch.root}; WAL, synchronous=FULL;"
            f" medians of {sizes.repetitions} alternated repetitions",
            file=out,
        )
        trace = synthetic_trace(sizes.single_inputs // 3 + 10)
        results: list[Ratio] = []
        for measure in (
            lambda: measure_single(scratch, sizes, trace),
            lambda: measure_ingest(scratch, sizes, sizes.single_inputs),
            lambda: measure_replay(scratch, sizes),
            lambda: measure_live(scratch, sizes),
            lambda: measure_observations(scratch, sizes),
            lambda: measure_inbox_memory(scratch, sizes),
            lambda: measure_restart(scratch, sizes),
        ):
            measured = measure()
            for result in measured if isinstance(measured, list) else [measured]:
                print_ratio(result, out)
                out.flush()
                results.append(result)
        if peers:
            from bench import peers as peer_bench

            peer_sizes = peer_bench.FULL if sizes == FULL else peer_bench.QUICK
            results += peer_bench.measure_peers(scratch, peer_sizes, out)
        print("\nVerdicts:", file=out)
        for result in results:
            verdict = f"({result.goal_text}): {'MET' if result.met else 'MISSED'}" if result.goal else "(no goal)"
            print(f"  {str(result.number) + '.':<3} {result.key:<12} {result.ratio:5.2f}x {verdict}", file=out)
        return results
    finally:
        scratch.remove()


def main(argv: Sequence[str] | None = None) -> int:
    flags = {"peers": "then DBOS's and LangGraph's figures beside Tandem's (bench/peers.py; pip install -e '.[peers]')"}
    return bench_main(__doc__, run, FULL, QUICK, "small sizes: a smoke run under a minute", argv, flags)


if __name__ == "__main__":
    sys.exit(main())
