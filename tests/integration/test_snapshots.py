"""Snapshots: a restart folds the tail after the newest usable snapshot and
ends up exactly where a full replay does; a snapshot that cannot be trusted
to match the running code and the log is never used."""

from __future__ import annotations

import gc
import json
import logging
from pathlib import Path

import pytest

import tandem.replay.engine as engine_module
import tandem.replay.snapshot as snapshots
from tandem.adapters.cli import main
from tandem.adapters.ingest import ingest
from tandem.adapters.store import open_store
from tandem.adapters.trace import parse_trace, read_trace
from tandem.replay.engine import Engine, project
from tandem.replay.port import EventStore, StoreError
from tandem.replay.verify import verify
from bench.workload import observation_inputs, observation_trace

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "fixtures" / "gates" / "02_prerequisite_user_away.jsonl"
FIXTURES = sorted(
    p for folder in ("traces", "gates") for p in (REPO / "fixtures" / folder).glob("*.jsonl") if p.with_suffix(".views.json").exists()
)


class Stop(Exception):
    pass


def stop_after_first_batch(done: int) -> None:
    raise Stop


def encoded(store: EventStore) -> list[bytes]:
    return [data for _, data in store.read_encoded()]


def views_state(engine: Engine) -> dict:
    assert engine.views is not None
    return {name: dict(vars(view)) for name, view in engine.views.by_name.items()}


def sqlite(tmp_path: Path, name: str) -> str:
    return f"sqlite:///{tmp_path / name}"


@pytest.mark.parametrize("trace_path", FIXTURES, ids=[f"{p.parent.name}/{p.stem}" for p in FIXTURES])
def test_restarting_from_a_snapshot_after_every_batch_gives_the_uninterrupted_run(
    trace_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_module, "snapshot_bytes_per_event", 10**12)  # no size floor: every commit
    trace = read_trace(str(trace_path))
    whole = Engine(open_store(sqlite(tmp_path, "whole.db")), snapshot_every=0)
    ingest(whole, trace, batch_inputs=4)

    url = sqlite(tmp_path, "restarted.db")
    store = open_store(url)
    restarts = 0
    while True:
        engine = Engine(store, snapshot_every=1)  # a snapshot after every commit
        if restarts:
            assert engine.snapshot_position == engine.state.position == store.head()
        try:
            ingest(engine, trace, batch_inputs=4, on_batch=stop_after_first_batch)
            break
        except Stop:
            restarts += 1
    assert encoded(store) == encoded(whole.store)  # type: ignore[arg-type]
    reopened = Engine(store)
    full = Engine(store, use_snapshots=False)
    assert reopened.snapshot_position == store.head() > 0
    assert reopened.state == full.state
    assert views_state(reopened) == views_state(full) == views_state(whole)
    report = verify(store)
    assert report.ok, report.divergence
    assert report.snapshots_checked == len(store.list_snapshots()) >= 1


def test_an_engine_without_views_writes_snapshots_that_hold_the_views(tmp_path: Path) -> None:
    store = open_store(sqlite(tmp_path, "s.db"))
    trace = parse_trace(observation_trace(600, 7), "obs.jsonl")
    ingest(Engine(store, with_views=False, snapshot_every=100), trace, batch_inputs=50)
    assert len(store.list_snapshots()) == snapshots.snapshots_kept_max
    loaded, full = Engine(store), Engine(store, use_snapshots=False)
    assert 0 < loaded.snapshot_position <= store.head()
    assert loaded.state == full.state
    assert views_state(loaded) == views_state(full)
    assert project(store).document() == project(store, use_snapshots=False).document() == full.views.document()  # type: ignore[union-attr]
    assert verify(store).ok
    # An engine that keeps no views at all folds them from the last snapshot to write one.
    later = [dict(value, at=f"2026-03-02T09:{index // 60:02d}:{index % 60:02d}Z") for index, value in enumerate(observation_inputs(700, 7))]
    more = parse_trace(b"".join(json.dumps(value).encode() + b"\n" for value in later), "more.jsonl")
    bare = Engine(store, with_views=False, snapshot_every=0)
    assert bare.views is None and bare._kept_views is None
    ingest(bare, more, batch_inputs=50)
    assert bare.write_snapshot().position == store.head()
    full = Engine(store, use_snapshots=False)
    assert views_state(Engine(store)) == views_state(full)
    report = verify(store)
    assert report.ok and report.snapshots_checked == snapshots.snapshots_kept_max


def test_the_policy_writes_after_commits_every_n_events_and_keeps_the_newest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_module, "snapshot_bytes_per_event", 10**12)  # the event count alone decides
    store = open_store("memory:")
    engine = Engine(store, snapshot_every=200)
    written = []
    for line in parse_trace(observation_trace(400, 5), "obs.jsonl").lines:
        engine.submit(line.item)
        if engine.last_snapshot is not None and (not written or written[-1] != engine.last_snapshot.position):
            written.append(engine.last_snapshot.position)
    assert len(written) == store.head() // 200
    assert all(later - earlier >= 200 for earlier, later in zip(written, written[1:]))
    assert [info.position for info in store.list_snapshots()] == written[-snapshots.snapshots_kept_max :]
    never = Engine(open_store("memory:"), snapshot_every=0)
    for line in parse_trace(observation_trace(400, 5), "obs.jsonl").lines:
        never.submit(line.item)
    assert never.store.list_snapshots() == []  # type: ignore[union-attr]


def test_a_large_snapshot_is_written_less_often(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_module, "snapshot_bytes_per_event", 1)  # wait a snapshot's size in events
    engine = Engine(open_store("memory:"), snapshot_every=10)
    for line in parse_trace(observation_trace(300, 5), "obs.jsonl").lines:
        engine.submit(line.item)
    assert engine.last_snapshot is not None
    assert engine.last_snapshot.position >= 10 and engine.store.list_snapshots()[0].position == engine.last_snapshot.position  # type: ignore[union-attr]
    assert engine.state.position - engine.snapshot_position < engine.snapshot_size  # not due again yet


def example_store(tmp_path: Path, name: str = "s.db") -> EventStore:
    store = open_store(sqlite(tmp_path, name))
    ingest(Engine(store, snapshot_every=0), read_trace(str(EXAMPLE)), batch_inputs=5)
    return store


def test_snapshots_of_other_code_are_never_used_and_are_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = example_store(tmp_path)
    Engine(store).write_snapshot()
    monkeypatch.setattr(snapshots, "_fingerprint", ["other-code"])
    engine = Engine(store, snapshot_every=1)
    assert engine.snapshot_position == 0
    assert engine.state == Engine(store, use_snapshots=False).state
    report = verify(store)
    assert report.ok and report.snapshots_skipped == 1 and report.snapshots_checked == 0
    assert engine.checkpoint() is not None  # this code's snapshot; the other code's is removed
    assert [info.fingerprint for info in store.list_snapshots()] == ["other-code"]


def test_a_damaged_newest_snapshot_falls_back_to_the_one_before_then_to_a_full_replay(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = example_store(tmp_path)
    full = Engine(store, use_snapshots=False)
    head = store.head()
    # A good snapshot at an input boundary before the head.
    cut = [position for position, event in store.read() if type(event).__name__ == "SourceProgressed"][-2]
    older = Engine(open_store("memory:"))
    older.store.append([event for _, event in store.read(until=cut)], expected_head=0)  # type: ignore[union-attr]
    older = Engine(older.store)
    fingerprint = snapshots.code_fingerprint()
    body = snapshots.encode_body(cut, encoded(store)[cut - 1], older.state, older.views)  # type: ignore[arg-type]
    store.write_snapshot(cut, fingerprint, body)
    store.write_snapshot(head, fingerprint, b"TANDEM-SNAPSHOT\x00garbage")
    with caplog.at_level(logging.WARNING, logger="tandem.snapshots"):
        engine = Engine(store)
    assert engine.snapshot_position == cut
    assert engine.state == full.state and views_state(engine) == views_state(full)
    assert "not used" in caplog.text
    store.write_snapshot(cut, fingerprint, body[:-10])  # now both damaged
    engine = Engine(store)
    assert engine.snapshot_position == 0
    assert engine.state == full.state and views_state(engine) == views_state(full)


def test_a_snapshot_taken_on_another_log_is_not_used(tmp_path: Path) -> None:
    store = example_store(tmp_path, "a.db")
    other = open_store(sqlite(tmp_path, "b.db"))
    ingest(Engine(other, snapshot_every=0), read_trace(str(EXAMPLE), "renamed.jsonl"), batch_inputs=5)
    assert other.head() == store.head()
    foreign = Engine(other).write_snapshot()
    found = other.latest_snapshot(foreign.fingerprint)
    assert found is not None
    store.write_snapshot(found[0], foreign.fingerprint, found[1])
    engine = Engine(store)
    assert engine.snapshot_position == 0  # same position, another event there
    report = verify(store)
    assert not report.ok and report.divergence is not None and "another event" in report.divergence.message


def test_loading_a_snapshot_leaves_the_collector_on_and_the_loaded_state_frozen(tmp_path: Path) -> None:
    store = example_store(tmp_path)
    Engine(store).write_snapshot()
    gc.unfreeze()
    assert gc.isenabled()
    engine = Engine(store)
    assert engine.snapshot_position == store.head()
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0
    gc.unfreeze()


def test_a_failed_snapshot_write_does_not_fail_the_commit(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = open_store("memory:")
    engine = Engine(store, snapshot_every=1)

    def broken(*_: object) -> None:
        raise StoreError("disk full")

    store.write_snapshot = broken  # type: ignore[method-assign]
    lines = parse_trace(observation_trace(3, 1), "obs.jsonl").lines
    with caplog.at_level(logging.WARNING, logger="tandem.snapshots"):
        produced = engine.submit(lines[0].item)
    assert produced and store.head() == len(produced)
    assert "disk full" in caplog.text
    assert engine.last_snapshot is None


def test_checkpoint_writes_only_after_enough_events(tmp_path: Path) -> None:
    store = example_store(tmp_path)
    engine = Engine(store, snapshot_every=0)
    assert engine.checkpoint(min_events=store.head() + 1) is None
    written = engine.checkpoint(min_events=store.head())
    assert written is not None and written.position == store.head()
    assert engine.checkpoint() is None  # nothing new since
    assert Engine(store).snapshot_position == store.head()


def test_time_travel_below_a_snapshot_still_folds_from_the_start(tmp_path: Path) -> None:
    store = example_store(tmp_path)
    Engine(store).write_snapshot()
    for position in range(store.head() + 1):
        assert project(store, until=position).document() == project(store, until=position, use_snapshots=False).document()


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_snapshot_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = sqlite(tmp_path, "s.db")
    code, _, err = run_cli(capsys, "snapshot", "--store", url)
    assert code == 1 and "empty" in err
    store = example_store(tmp_path)
    head = store.head()
    store.close()
    code, out, _ = run_cli(capsys, "snapshot", "--store", url)
    assert code == 0 and out.startswith(f"snapshot at position {head}: ")
    code, out, _ = run_cli(capsys, "snapshot", "--store", url)
    assert code == 0 and "already at the head" in out
    code, out, err = run_cli(capsys, "snapshot", "--store", url, "--list")
    assert code == 0 and out.startswith(f"position {head} ") and "(current code)" in out and "1 snapshot(s)" in err
    code, _, err = run_cli(capsys, "snapshot", "--store", url, "--drop")
    assert code == 0 and "1 snapshot(s) deleted" in err
    assert open_store(url).list_snapshots() == []


def test_a_state_that_grows_with_every_event_stops_getting_snapshots(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.workload import synthetic_trace

    # Every action of the synthetic workload stays in the state (~100 bytes
    # of snapshot per event); the observations' state stays the same size.
    monkeypatch.setattr(engine_module, "snapshot_bytes_per_event", 40)

    def written(data: bytes) -> tuple[list[int], int]:
        engine = Engine(open_store("memory:"), snapshot_every=100)
        positions: list[int] = []
        for line in parse_trace(data, "t.jsonl").lines:
            engine.submit(line.item)
            if engine.last_snapshot is not None and engine.last_snapshot.position not in positions:
                positions.append(engine.last_snapshot.position)
        return positions, engine.state.position

    growing, head = written(synthetic_trace(300))
    assert len(growing) == 2 and head > 5 * growing[-1]  # the two that measure the growth, then none
    steady, head = written(observation_trace(1_500, 5))
    assert len(steady) > 5
