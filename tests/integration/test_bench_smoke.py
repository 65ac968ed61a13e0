"""bench/run.py works: every measured path runs at tiny sizes and gives a
positive rate. No timing assertions: a figure's size is the benchmark's
business, not the test suite's."""

from __future__ import annotations

import importlib.util
import io
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tandem_bench_run", ROOT / "bench" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up by name
    spec.loader.exec_module(module)
    return module


def positive(value: float) -> bool:
    return isinstance(value, float) and math.isfinite(value) and value > 0


def test_each_path_gives_a_positive_rate(bench: ModuleType, tmp_path: Path) -> None:
    from tandem.adapters.trace import parse_trace
    from bench.workload import synthetic_trace

    def fresh(name: str) -> str:
        path = tmp_path / name
        path.mkdir()
        return str(path)

    data = synthetic_trace(5)
    items = [line.item for line in parse_trace(data, "smoke.jsonl").lines]
    assert positive(bench.raw_single_row_commits(fresh("raw"), 20))
    assert positive(bench.engine_single_inputs(fresh("single"), items))
    assert positive(bench.parse_seconds(data))
    assert positive(bench.batch_ingest(fresh("ingest"), data, batch_inputs=4))

    directory = fresh("replay")
    url, events = bench.build_replay_store(directory, 50)
    assert events >= 50
    assert positive(bench.engine_replay(url))
    assert positive(bench.raw_scan_decode(str(Path(directory) / "events.db")))

    from bench.workload import observation_trace

    assert positive(bench.inbox_bytes(observation_trace(40, 4)))

    url, events, snapshot = bench.build_restart_store(fresh("restart"), 200, causes=4, tail_inputs=5)
    assert events >= 200 and 0 < snapshot.position < events
    assert positive(bench.engine_restart_seconds(url))
    assert positive(bench.engine_restart_seconds(url, use_snapshots=False))

    steady = bench.SteadyEngine(fresh("live"), live=30, steady_inputs=6)
    try:
        assert positive(steady.time_next(3))
    finally:
        steady.close()


def test_the_whole_report_runs_at_tiny_sizes(bench: ModuleType, tmp_path: Path) -> None:
    tiny = bench.Sizes(
        repetitions=2,
        single_inputs=20,
        ingest_actions=10,
        replay_events_min=60,
        live_small=5,
        live_large=20,
        steady_chunk_inputs=5,
        observations=60,
        observation_causes=6,
        restart_events_large=400,
        restart_events_small=100,
        restart_causes=5,
        restart_tail_inputs=10,
    )
    out = io.StringIO()
    results = bench.run(tiny, str(tmp_path), out=out)
    assert [result.number for result in results] == [1, 2, 3, "3v", 4, 5, 6, 7]
    for result in results:
        assert all(positive(value) for value in result.engine_values + result.baseline_values)
        assert positive(result.ratio)
    assert "Verdicts:" in out.getvalue()
    assert list(tmp_path.iterdir()) == []  # the scratch directory is removed


def test_the_row_per_input_prototype_reads_back_every_event(tmp_path: Path) -> None:
    """bench/row_per_input.py (a measurement, not the store's layout) writes
    the same events both ways and reads each table back whole: its own
    assertion fails if either layout loses an event."""
    spec = importlib.util.spec_from_file_location("tandem_bench_rows", ROOT / "bench" / "row_per_input.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    figures = module.run({"actions": 5, "repetitions": 2}, str(tmp_path))
    assert set(figures) == {"per_event read", "per_input read", "per_event append", "per_input append"}
    assert all(positive(value) for value in figures.values())
    assert list(tmp_path.iterdir()) == []  # its scratch directory is removed


def test_a_restart_finishes_the_open_actions(tmp_path: Path) -> None:
    """bench/peers.py's Tandem side of P3 needs no peer: a store of dispatched,
    unfinished actions, then a fresh process that opens it and submits their
    outcomes; the child asserts every action succeeded."""
    from bench import peers

    peers.build_open_actions(str(tmp_path), 12)
    assert positive(peers.child("tandem-recover", str(tmp_path), "12"))
    with pytest.raises(RuntimeError, match="failed"):  # it counts them: 13 is not what it finished
        peers.child("tandem-recover", str(tmp_path), "13")


def test_a_peer_not_installed_is_named_not_measured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The peers are an optional extra: without them the report says so, and
    nothing else fails (the packages are made absent whether or not they are)."""
    from bench import peers

    monkeypatch.setitem(peers.PEER_PACKAGES, "dbos", ("tandem_absent_dbos",))
    monkeypatch.setitem(peers.PEER_PACKAGES, "langgraph", ("langgraph_absent.checkpoint",))
    out = io.StringIO()
    tiny = peers.PeerSizes(repetitions=2, tandem_inputs=10, dbos_workflows=2, langgraph_invokes=2,
                           open_actions=3, recovery_repetitions=1)  # fmt: skip
    assert peers.run(tiny, str(tmp_path), out=out) == []
    text = out.getvalue()
    for line in ("P1. dbos: not measured, not installed (tandem_absent_dbos;", "Tandem durable inputs ",
                 "P2. langgraph: not measured, not installed (langgraph_absent.checkpoint;",
                 "P2x. langgraph-exit: not measured",
                 "P3. dbos recovery: not measured"):  # fmt: skip
        assert line in text, text
    assert list(tmp_path.iterdir()) == []


def test_run_takes_the_peers_flag(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        bench.main(["--help"])
    assert exited.value.code == 0
    assert "--peers" in capsys.readouterr().out
