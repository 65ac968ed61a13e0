"""Snapshots written by a process beside the writer (adapters/snapshots_beside.py):
the process folds the store as a restart does and writes the snapshot of
the position the writer asked for, the writer goes on meanwhile and never
writes one itself, one process runs at a time, and a process that cannot
write (other code) writes nothing and fails no commit."""

from __future__ import annotations

import datetime
import itertools
import json
import logging
from pathlib import Path

import pytest

import tandem.replay.engine as engine_module
import tandem.replay.snapshot as snapshots
from tandem.adapters.cli import main
from tandem.replay.edge import TokenActor
from tandem.adapters.runtime import Runtime, Settings
from tandem.adapters.ingest import ingest
import tandem.adapters.snapshots_beside as snapshots_beside_module
from tandem.adapters.snapshots_beside import SnapshotsBeside, snapshots_beside_for
from tandem.adapters.store import open_store
from tandem.adapters.trace import parse_trace
from tandem.domain.inputs import accepted_actors
from tandem.replay.engine import Engine
from tandem.replay.index import LogIndex, keys_of, split_key
from tandem.replay.port import EventStore
from bench.workload import synthetic_trace


def views_state(views: object) -> dict:
    return {name: dict(vars(view)) for name, view in views.by_name.items()}  # type: ignore[attr-defined]


def ingested_beside(url: str, actions: int, every: int) -> tuple[Engine, SnapshotsBeside]:
    beside = SnapshotsBeside(url)
    engine = Engine(open_store(url), with_views=False, snapshot_every=every, snapshots_beside=beside)
    ingest(engine, parse_trace(synthetic_trace(actions), "beside.jsonl"), batch_inputs=100)
    engine.collect_beside(wait=True)
    return engine, beside


def assert_snapshot_is_the_fold(store: EventStore, position: int) -> None:
    """The stored snapshot at `position` holds what a full fold of the first `position` events gives."""
    found = store.latest_snapshot(snapshots.code_fingerprint(), until=position)
    assert found is not None and found[0] == position, found
    body = snapshots.decode_body(found[1], position)
    folded = Engine(store, use_snapshots=False, until=position)
    assert folded.state.position == position
    assert body.state() == folded.state
    assert views_state(body.views()) == views_state(folded.views)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_kind(request: pytest.FixtureRequest) -> str:  # store_url's kinds here: another process must open it
    return request.param


def test_the_process_beside_writes_the_snapshot_a_fold_of_the_asked_position_gives(store_url: str) -> None:
    engine, beside = ingested_beside(store_url, actions=300, every=1_000)
    store = engine.store
    assert store is not None
    assert beside.started >= 1 and beside.failed == 0
    written = engine.last_snapshot
    assert written is not None and written.position == beside.started_at_position  # the position asked, not the head
    assert store.head() > written.position
    assert_snapshot_is_the_fold(store, written.position)
    assert_keys_are_the_log_indexs(store, written.position)  # its key table brought up to there too
    reopened = Engine(store)  # a restart uses it, and ends where a full replay does
    assert reopened.snapshot_position == max(info.position for info in store.list_snapshots())
    full = Engine(store, use_snapshots=False)
    assert reopened.state == full.state
    assert views_state(reopened.views) == views_state(full.views)
    store.close()


def test_a_process_of_other_code_writes_nothing_and_fails_no_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    monkeypatch.setattr(snapshots, "code_fingerprint", lambda: "0" * 64)  # the writer's; the process has its own
    with caplog.at_level(logging.WARNING, logger="tandem.snapshots"):
        engine, beside = ingested_beside(url, actions=100, every=200)
    assert beside.started >= 1 and beside.failed == beside.started
    assert engine.store is not None and engine.store.list_snapshots() == []
    assert engine.state.position == engine.store.head() > 0  # every commit stands
    assert "is not the writer's" in caplog.text and "no snapshot written" in caplog.text


class FakeBeside:
    """A snapshot process that finishes when the test says so."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.running = False
        self.report: snapshots.Written | None = None

    def busy(self) -> bool:
        return self.running

    def start(self, position: int) -> None:
        assert not self.running
        self.starts.append(position)
        self.running = True

    def finish(self, size: int) -> None:
        self.running = False
        self.report = snapshots.Written(self.starts[-1], "f" * 64, size, size // 2, size - size // 2, 0.1)

    def collect(self) -> snapshots.Written | None:
        return None if self.running else self._take()

    def _take(self) -> snapshots.Written | None:
        report, self.report = self.report, None
        return report

    def wait(self) -> snapshots.Written | None:
        self.running = False
        return self._take()

    def cancel(self) -> None:
        self.running, self.report = False, None


def test_the_engine_starts_one_process_at_a_time_and_writes_none_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_module, "snapshot_bytes_per_event", 10**6)  # the size floor, large enough
    fake = FakeBeside()
    engine = Engine(open_store(f"sqlite:///{tmp_path}/e.db"), with_views=False, snapshot_every=50, snapshots_beside=fake)
    lines = parse_trace(synthetic_trace(60), "t.jsonl").lines
    for line in lines[:40]:
        engine.submit(line.item)
    assert len(fake.starts) == 1 and fake.running  # due once; the engine wrote nothing itself
    first = fake.starts[0]
    assert first >= 50 and engine.store.list_snapshots() == []  # type: ignore[union-attr]
    for line in lines[40:120]:
        engine.submit(line.item)
    assert len(fake.starts) == 1  # due again, but the first is still running
    fake.finish(size=1_000)
    engine.submit(lines[120].item)
    assert engine.snapshot_position == first and engine.snapshot_size == 1_000  # taken at the next commit
    assert len(fake.starts) == 2 and fake.starts[1] == engine.state.position  # and the next one started
    assert engine._kept_views is None  # it keeps no views for them


def test_a_memory_store_has_no_process_beside() -> None:
    assert snapshots_beside_for("memory:") is None
    assert isinstance(snapshots_beside_for("sqlite:///x.db"), SnapshotsBeside)


def test_tandem_ingest_leaves_the_snapshot_written_beside_it(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    trace = tmp_path / "big.jsonl"
    trace.write_bytes(synthetic_trace(4_500))  # > 50,000 events: one snapshot is due
    url = f"sqlite:///{tmp_path}/events.db"
    assert main(["ingest", str(trace), "--store", url, "--quiet"]) == 0
    store = open_store(url, read_only=True)
    listed = store.list_snapshots()
    assert len(listed) == 1 and engine_module.snapshot_every_events_default <= listed[0].position < store.head()
    assert_snapshot_is_the_fold(store, listed[0].position)
    assert_keys_are_the_log_indexs(store, listed[0].position)
    store.close()


def assert_keys_are_the_log_indexs(store: EventStore, position: int) -> None:
    """The store's key table is this code's, complete to `position`, and holds what a `LogIndex` of the log there holds."""
    assert store.keys_through(snapshots.code_fingerprint()) == position
    whole = LogIndex.build(store, until=position)
    keys = sorted({key for _, event in store.read(until=position) for key in keys_of(event)})
    table = store.read_key_positions([split_key(key) for key in keys], position)
    assert len(keys) > 10
    for key in keys:
        assert table[split_key(key)] == list(whole.positions(key)), key


def test_the_service_writes_its_snapshots_beside_and_its_own_at_the_stop(tmp_path: Path) -> None:
    runtime = Runtime(
        Settings(store_url=f"sqlite:///{tmp_path}/events.db", runtime_inputs=False, snapshot_every=500),
        clock=lambda: datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc),
    )
    runtime.open()
    engine = runtime.engine
    assert engine is not None and engine.store is not None
    beside = engine.snapshots_beside
    assert isinstance(beside, SnapshotsBeside)
    lines = synthetic_trace(400).splitlines(keepends=True)
    actors = [_sender(json.loads(line)) for line in lines]
    for actor, group in itertools.groupby(zip(actors, lines), key=lambda pair: pair[0]):  # a token's batch
        runtime.submit_body(b"".join(line for _, line in group), True, TokenActor(actor))
    assert beside.started == 1  # the engine wrote none itself: only the process's, if it has finished
    assert [info.position for info in engine.store.list_snapshots()] in ([], [beside.started_at_position])
    engine.collect_beside(wait=True)  # (a stop would stop it, unfinished)
    runtime.stop(expected=True)  # writes its own at the head
    assert beside.started >= 1 and beside.failed == 0 and not beside.busy()
    head = engine.store.head()
    positions = [info.position for info in engine.store.list_snapshots()]
    assert positions == [beside.started_at_position, head], (positions, head)
    for position in positions:
        assert_snapshot_is_the_fold(engine.store, position)
    runtime.close()


def _sender(value: dict) -> str:
    return value.get("actor") or accepted_actors(value["type"])[0]


def test_a_process_that_runs_too_long_is_stopped_and_a_stop_cancels_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    engine, _ = ingested_beside(url, actions=50, every=0)  # a store, no snapshot
    now = [0.0]
    beside = SnapshotsBeside(url, clock=lambda: now[0])
    beside.start(engine.state.position)
    assert beside.busy()
    now[0] = snapshots_beside_module.snapshot_process_s_max + 1
    with caplog.at_level(logging.WARNING, logger="tandem.snapshots"):
        assert not beside.busy()  # stopped: it ran over the limit
    assert beside.failed == 1 and beside.process is None and "ran over" in caplog.text
    beside.start(engine.state.position)
    process = beside.process
    beside.cancel()
    assert beside.process is None and process is not None and process.returncode is not None
