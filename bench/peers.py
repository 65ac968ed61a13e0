"""Tandem beside its peers, DBOS and LangGraph, measured in one run.

    python bench/run.py --peers        # the main ratios, then these rows
    python bench/peers.py [--quick]    # these rows alone

The peers are optional (`pip install -e '.[peers]'`: dbos, langgraph,
langgraph-checkpoint-sqlite); a peer whose package is absent is reported as
not measured, and the Tandem side is measured all the same. Everything is a
fresh SQLite file in WAL mode with synchronous=FULL (bench/README.md, "Peers",
says exactly what each peer sets). Three comparisons:

P1. Tandem durable inputs/s (`engine.submit`, one transaction each, ratio 1's
    path) / DBOS one-step workflows/s (started and awaited one at a time)
P2. the same Tandem figure / LangGraph checkpointed invokes/s (a one-node
    graph with SqliteSaver, one invoke per input, each on its own thread_id,
    LangGraph's default durability "async": a checkpoint per step);
    P2x the same with durability "exit" (one checkpoint per invoke)
P3. a restart that finishes 1,000 open actions (a fresh process opens the
    store, then one executor outcome per dispatched action, one transaction
    each) / DBOS's recovery of 1,000 pending one-step workflows left by a
    killed process (a fresh process launches, recovers and finishes them)

P1 and P2 are alternated with each other and with the raw single-row commit
of ratio 1 (the order rotates every repetition); P3's two sides alternate.
Each figure is a median, with its spread. DBOS runs in child processes (it is
one instance per process); so does each restart.
"""

from __future__ import annotations

import importlib.util
import os
import signal
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
if str(ROOT) not in sys.path:  # runnable as `python bench/peers.py` from anywhere
    sys.path.insert(0, str(ROOT))

from bench import run as bench_run  # noqa: E402
from bench.workload import _time, bench_main, heartbeat_every_inputs, synthetic_inputs  # noqa: E402

PEER_PACKAGES = {"dbos": ("dbos",), "langgraph": ("langgraph", "langgraph.checkpoint.sqlite")}
install_hint = "pip install -e '.[peers]'"
child_timeout_s = 600  # a child process that takes longer than this has hung
poll_interval_s = 0.002  # how often the DBOS recovery's end is looked for
warmup_calls = 20  # untimed calls before the timed ones, in each peer's child
result_prefix = "RESULT "


@dataclass(frozen=True)
class PeerSizes:
    repetitions: int  # rotated rounds of P1/P2, medians reported
    tandem_inputs: int  # Tandem durable inputs (and raw rows) per repetition
    dbos_workflows: int  # one-step workflows per repetition
    langgraph_invokes: int  # checkpointed invokes per repetition
    open_actions: int  # P3: open actions / pending workflows at the restart
    recovery_repetitions: int  # P3: alternated pairs


FULL = PeerSizes(5, 3_000, 1_000, 1_000, 1_000, 3)
QUICK = PeerSizes(3, 300, 100, 100, 100, 2)


def missing(peer: str) -> str | None:
    """None when `peer`'s packages are importable; else why it is not measured."""
    absent = [name for name in PEER_PACKAGES[peer] if _find_spec(name) is None]
    return f"not installed ({', '.join(absent)}; {install_hint})" if absent else None


def _find_spec(name: str) -> Any:
    try:
        return importlib.util.find_spec(name)
    except ModuleNotFoundError:  # a parent package is absent
        return None


def sqlite_wal(path: str) -> None:
    """Create `path` in WAL mode (persistent in the file): for a peer that opens
    SQLite with its own defaults (synchronous stays SQLite's default, FULL)."""
    connection = sqlite3.connect(path)
    try:
        assert connection.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    finally:
        connection.close()


# ------------------------------------------------------------ child processes


def child(mode: str, *arguments: str, wait: bool = True) -> Any:
    """Run `python bench/peers.py --child MODE ARGS`; its RESULT line's float
    (or, wait=False, the running process)."""
    command = [sys.executable, str(Path(__file__).resolve()), "--child", mode, *arguments]
    if not wait:
        return subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    done = subprocess.run(command, capture_output=True, text=True, timeout=child_timeout_s)
    results = [line for line in done.stdout.splitlines() if line.startswith(result_prefix)]
    if done.returncode != 0 or not results:
        raise RuntimeError(f"child {mode} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return float(results[-1][len(result_prefix) :])


def _dbos_launch(directory: str, block: bool) -> tuple[Any, Callable[[int], int], str]:
    """DBOS on `directory`/dbos.sqlite with a one-step workflow; its step adds
    one (or, block=True, never returns: the process is killed mid-step)."""
    import threading

    from dbos import DBOS

    path = os.path.join(directory, "dbos.sqlite")
    if not os.path.exists(path):
        sqlite_wal(path)
    never = threading.Event()
    DBOS(config={"name": "tandem-bench", "system_database_url": f"sqlite:///{path}",
                 "application_version": "tandem-bench-1", "log_level": "ERROR"})  # fmt: skip

    @DBOS.step()
    def add_one(value: int) -> int:
        if block:
            never.wait()
        return value + 1

    @DBOS.workflow()
    def one_step(value: int) -> int:
        return add_one(value)

    DBOS.launch()
    return DBOS, one_step, path


def child_dbos_rate(directory: str, workflows: str) -> float:
    """One-step workflows/s, each called (started and awaited) in turn."""
    dbos, one_step, path = _dbos_launch(directory, block=False)
    for value in range(warmup_calls):
        one_step(value)
    count = int(workflows)
    started = time.perf_counter()
    for value in range(count):
        assert one_step(value) == value + 1
    elapsed = time.perf_counter() - started
    assert _journal_mode(path) == "wal"
    dbos.destroy()
    return count / elapsed


def child_dbos_pending(directory: str, workflows: str) -> float:
    """Start `workflows` one-step workflows whose step never returns; report
    when all are PENDING in the system database (the parent then kills -9)."""
    dbos, one_step, path = _dbos_launch(directory, block=True)
    count = int(workflows)
    for value in range(count):
        dbos.start_workflow(one_step, value)
    while _dbos_count(path, "PENDING") < count:
        time.sleep(poll_interval_s)
    return float(count)


def child_dbos_recover(directory: str, workflows: str) -> float:
    """Seconds from constructing DBOS on the killed process's database to all
    `workflows` workflows being SUCCESS (launch recovers pending ones)."""
    path = os.path.join(directory, "dbos.sqlite")
    count = int(workflows)
    assert _dbos_count(path, "PENDING") == count
    started = time.perf_counter()
    dbos, _, _ = _dbos_launch(directory, block=False)
    while _dbos_count(path, "SUCCESS") < count:
        time.sleep(poll_interval_s)
    elapsed = time.perf_counter() - started
    dbos.destroy()
    return elapsed


def _dbos_count(path: str, status: str) -> int:
    connection = sqlite3.connect(path, timeout=30)
    try:
        return connection.execute("SELECT count(*) FROM workflow_status WHERE status=?", (status,)).fetchone()[0]
    except sqlite3.OperationalError:  # the tables are not created yet
        return 0
    finally:
        connection.close()


def _journal_mode(path: str) -> str:
    connection = sqlite3.connect(path)
    try:
        return connection.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        connection.close()


def child_tandem_recover(directory: str, actions: str) -> float:
    """Seconds to open the store (state and views) and submit the outcome of
    every open action, one transaction each; asserts they all succeeded."""
    from tandem.adapters.store import open_store
    from tandem.adapters.trace import parse_trace
    from tandem.replay.engine import Engine

    data = Path(directory, "outcomes.jsonl").read_bytes()
    items = [line.item for line in parse_trace(data, "outcomes.jsonl").lines]  # decoded before, as ratio 1
    started = time.perf_counter()
    engine = Engine(open_store(bench_run._sqlite_url(directory)))
    submit = engine.submit
    for item in items:
        submit(item)
    elapsed = time.perf_counter() - started
    finished = [action for action in engine.state.actions.by_id.values() if action.outcome == "succeeded"]
    assert len(finished) == int(actions), (len(finished), actions)
    engine.store.close()  # type: ignore[union-attr]
    return elapsed


# ------------------------------------------------------------ the Tandem side


def open_actions_traces(actions: int) -> tuple[bytes, bytes]:
    """synthetic_trace's workload split in two: everything up to every action
    proposed, claimed and accepted by its executor (dispatched, unfinished),
    then one `executor.outcome` (succeeded) per action, with the watchdog's
    heartbeats in both; restamped one second apart in that order."""
    import msgspec

    before: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []
    for value in synthetic_inputs(actions):
        (after if value["type"] == "executor.outcome" else before).append(value)
    finishing: list[dict[str, Any]] = []
    for index, outcome in enumerate(after, 1):
        finishing.append(outcome)
        if index % heartbeat_every_inputs == 0:
            finishing.append({"type": "watchdog.heartbeat", "actor": "watchdog", "generation": 1})
    for second, value in enumerate(before + finishing):
        value["at"] = _time(second)
    encode = msgspec.json.encode
    return tuple(b"".join(encode(value) + b"\n" for value in part) for part in (before, finishing))  # type: ignore[return-value]


def build_open_actions(directory: str, actions: int) -> None:
    """A store holding `actions` dispatched, unfinished actions (ingested,
    untimed), and beside it outcomes.jsonl, the inputs that finish them."""
    from tandem.adapters.ingest import ingest
    from tandem.adapters.store import open_store
    from tandem.adapters.trace import parse_trace
    from tandem.replay.engine import Engine

    opening, finishing = open_actions_traces(actions)
    engine = Engine(open_store(bench_run._sqlite_url(directory)), with_views=False)
    try:
        ingest(engine, parse_trace(opening, "open.jsonl"))
        assert len(engine.state.actions.by_id) == actions, len(engine.state.actions.by_id)
        assert not any(action.terminal for action in engine.state.actions.by_id.values())
    finally:
        engine.store.close()  # type: ignore[union-attr]
    Path(directory, "outcomes.jsonl").write_bytes(finishing)


# ------------------------------------------------------------- LangGraph


def child_langgraph_rate(directory: str, invokes: str, durability: str) -> float:
    """Checkpointed invokes/s: a one-node graph compiled with SqliteSaver on a
    fresh file (WAL set by the saver, synchronous=FULL set here), invoked once
    per input with its own thread_id. `durability` is LangGraph's: "async"
    (its default) writes a checkpoint per step, "exit" one when the graph ends.
    In a child process, as DBOS: a fresh heap, whatever ran before it."""
    from typing import TypedDict

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    class Counter(TypedDict):
        value: int

    graph = StateGraph(Counter)
    graph.add_node("add_one", lambda state: {"value": state["value"] + 1})
    graph.add_edge(START, "add_one")
    graph.add_edge("add_one", END)
    connection = sqlite3.connect(os.path.join(directory, "langgraph.sqlite"), check_same_thread=False)
    try:
        connection.execute("PRAGMA synchronous=FULL")
        saver = SqliteSaver(connection)
        saver.setup()
        app = graph.compile(checkpointer=saver)
        invoke, count = app.invoke, int(invokes)
        for value in range(warmup_calls):
            invoke({"value": value}, {"configurable": {"thread_id": f"warm-{value}"}}, durability=durability)
        started = time.perf_counter()
        for value in range(count):
            answer = invoke({"value": value}, {"configurable": {"thread_id": f"t-{value}"}}, durability=durability)
            assert answer["value"] == value + 1
        elapsed = time.perf_counter() - started
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert connection.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    finally:
        connection.close()
    return count / elapsed


def langgraph_rate(directory: str, invokes: int, durability: str, rows: list[float]) -> float:
    """child_langgraph_rate's figure; appends the checkpoint rows written per invoke to `rows`."""
    rate = child("langgraph-rate", directory, str(invokes), durability)
    connection = sqlite3.connect(os.path.join(directory, "langgraph.sqlite"))
    try:
        rows.append(connection.execute("SELECT count(*) FROM checkpoints").fetchone()[0] / (invokes + warmup_calls))
    finally:
        connection.close()
    return rate


# ------------------------------------------------------------- the report


class PeerRatio(bench_run.Ratio):
    """A ratio against a peer: reported, no goal (the goals are the engine's
    against its own baselines, bench/run.py)."""

    @property
    def goal(self) -> float:
        return 0.0


def rotated(sides: Sequence[tuple[str, Callable[[], float]]], repetitions: int) -> dict[str, list[float]]:
    """Each side once per repetition, the order rotating (A B C, B C A, ...):
    alternate's idea for more than two sides. Each side's figures."""
    values: dict[str, list[float]] = {name: [] for name, _ in sides}
    for repetition in range(repetitions):
        shift = repetition % len(sides)
        for name, function in [*sides[shift:], *sides[:shift]]:
            values[name].append(function())
    return values


@dataclass(frozen=True)
class Peer:
    number: str
    package: str  # its key in PEER_PACKAGES
    title: str
    label: str
    rate: Callable[[str], float]  # per second, on a fresh directory


def rate_peers(sizes: PeerSizes, rows: dict[str, list[float]]) -> dict[str, Peer]:
    workflows, invokes = sizes.dbos_workflows, sizes.langgraph_invokes
    return {
        "dbos": Peer("P1", "dbos", f"DBOS one-step workflows ({workflows:,} per repetition)",
                     "DBOS one-step workflow, called in turn",
                     lambda directory: child("dbos-rate", directory, str(workflows))),
        "langgraph": Peer("P2", "langgraph", f"LangGraph checkpointed invokes ({invokes:,} per repetition)",
                          "LangGraph invoke, SqliteSaver, durability async",
                          lambda directory: langgraph_rate(directory, invokes, "async", rows["langgraph"])),
        "langgraph-exit": Peer("P2x", "langgraph", f"LangGraph invokes, durability=exit ({invokes:,} per repetition)",
                               "LangGraph invoke, SqliteSaver, durability exit",
                               lambda directory: langgraph_rate(directory, invokes, "exit", rows["langgraph-exit"])),
    }  # fmt: skip


def measure_rates(scratch: bench_run.Scratch, sizes: PeerSizes) -> tuple[list[bench_run.Ratio], list[str]]:
    """P1, P2, P2x (those whose peer is installed), the Tandem and raw figures
    of the same rounds, and a line per peer not measured."""
    from tandem.adapters.trace import parse_trace
    from bench.workload import synthetic_trace

    data = bench_run.lines_of(synthetic_trace(sizes.tandem_inputs // 3 + 10), sizes.tandem_inputs)
    items = [line.item for line in parse_trace(data, "peers.jsonl").lines]
    sides: list[tuple[str, Callable[[], float]]] = [
        ("tandem", lambda: bench_run.engine_single_inputs(scratch.fresh(), items)),
        ("raw", lambda: bench_run.raw_single_row_commits(scratch.fresh(), sizes.tandem_inputs)),
    ]
    rows: dict[str, list[float]] = {"langgraph": [], "langgraph-exit": []}
    peers = rate_peers(sizes, rows)
    lines = [f"{peer.number}. {name}: not measured, {missing(peer.package)}" for name, peer in peers.items()
             if missing(peer.package)]  # fmt: skip
    sides += [(name, lambda peer=peer: peer.rate(scratch.fresh())) for name, peer in peers.items()
              if not missing(peer.package)]  # fmt: skip
    values = rotated(sides, sizes.repetitions)
    raw, tandem = statistics.median(values["raw"]), statistics.median(values["tandem"])
    lines.insert(0, f"Tandem durable inputs {tandem:,.0f}/s ({bench_run._spread(values['tandem'])}), raw single-row"
                    f" commits {raw:,.0f}/s ({bench_run._spread(values['raw'])}): {tandem / raw:.2f}x raw")  # fmt: skip
    results: list[bench_run.Ratio] = []
    for name, peer in ((name, peer) for name, peer in peers.items() if name in values):
        figure = statistics.median(values[name])
        written = f"; {statistics.median(rows[name]):.0f} checkpoint rows an invoke" if rows.get(name) else ""
        results.append(PeerRatio(
            peer.number, f"vs-{name}", f"Tandem durable inputs ({len(items):,} per repetition) vs {peer.title}",
            "Tandem engine.submit per input (ratio 1)", values["tandem"], peer.label, values[name], "/s",
            [f"raw single-row commits in the same rounds: {raw:,.0f}/s; {name} {figure / raw:.3f}x raw{written}"],
        ))  # fmt: skip
    return results, lines


def dbos_recovery_ms(directory: str, workflows: int) -> float:
    """Leave `workflows` pending (a child killed -9 mid-step), then time a
    fresh child's recovery of all of them, in ms."""
    process = child("dbos-pending", directory, str(workflows), wait=False)
    try:
        for line in process.stdout:
            if line.startswith(result_prefix):
                break
        else:
            raise RuntimeError(f"dbos-pending ended ({process.wait()}) before leaving its workflows pending")
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        process.stdout.close()
    return child("dbos-recover", directory, str(workflows)) * 1000


def tandem_recovery_ms(directory: str, actions: int) -> float:
    build_open_actions(directory, actions)  # untimed
    return child("tandem-recover", directory, str(actions)) * 1000


def measure_recovery(scratch: bench_run.Scratch, sizes: PeerSizes) -> tuple[list[bench_run.Ratio], list[str]]:
    if missing("dbos"):
        return [], [f"P3. dbos recovery: not measured, {missing('dbos')}"]
    from bench.workload import alternate

    count = sizes.open_actions
    tandem_values, dbos_values = alternate(
        lambda: tandem_recovery_ms(scratch.fresh(), count),
        lambda: dbos_recovery_ms(scratch.fresh(), count),
        sizes.recovery_repetitions,
    )
    return [PeerRatio(
        "P3", "vs-dbos-recovery",
        f"Restart that finishes {count:,} open actions vs DBOS's recovery of {count:,} pending workflows"
        " (each in a fresh process, a time)",
        f"Tandem: open the store + {count:,} outcomes", tandem_values,
        f"DBOS: launch, recover, all {count:,} SUCCESS", dbos_values, "ms",
        [f"Tandem {statistics.median(tandem_values) / count * 1000:,.0f} us an action,"
         f" DBOS {statistics.median(dbos_values) / count * 1000:,.0f} us a workflow"],
        lower_is_better=True,
    )], []  # fmt: skip


def measure_peers(scratch: bench_run.Scratch, sizes: PeerSizes, out: Any = sys.stdout) -> list[bench_run.Ratio]:
    """P1-P3, printed as they are measured; the peers not installed are named."""
    results: list[bench_run.Ratio] = []
    print(f"\nPeers (medians of {sizes.repetitions} rotated rounds; P3 {sizes.recovery_repetitions} pairs):", file=out)
    for measure in (measure_rates, measure_recovery):
        measured, lines = measure(scratch, sizes)
        for line in lines:
            print(f"\n{line}", file=out)
        for result in measured:
            bench_run.print_ratio(result, out)
            results.append(result)
        out.flush()
    return results


def run(sizes: PeerSizes, tmp: str | None = None, out: Any = sys.stdout) -> list[bench_run.Ratio]:
    scratch = bench_run.Scratch(tmp)
    try:
        return measure_peers(scratch, sizes, out)
    finally:
        scratch.remove()


CHILDREN: dict[str, Callable[..., float]] = {
    "dbos-rate": child_dbos_rate,
    "dbos-pending": child_dbos_pending,
    "dbos-recover": child_dbos_recover,
    "tandem-recover": child_tandem_recover,
    "langgraph-rate": child_langgraph_rate,
}


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["--child"]:  # internal: one measurement in a process of its own
        mode, *rest = arguments[1:]
        print(f"{result_prefix}{CHILDREN[mode](*rest)!r}", flush=True)
        if mode == "dbos-pending":
            time.sleep(child_timeout_s)  # its workflows stay pending until the parent kills it
        return 0
    return bench_main(__doc__, run, FULL, QUICK, "small sizes: a smoke run", arguments)


if __name__ == "__main__":
    sys.exit(main())
