"""A snapshot is a cache: whatever exception its write raises, the commit
before it stands, the failure is a logged warning, and later commits go on
(retrying the snapshot after as many events, not at every commit)."""

from __future__ import annotations

import logging
import pickle
from pathlib import Path

import pytest

import tandem.replay.engine as engine_module
import tandem.replay.snapshot as snapshots
from tandem.adapters.store import open_store
from tandem.adapters.trace import TraceLine, parse_trace
from tandem.replay.engine import Engine
from tandem.replay.port import EventStore
from bench.workload import observation_trace

FAILURES = [
    RecursionError("maximum recursion depth exceeded while pickling an object"),
    pickle.PicklingError("Can't pickle <function <lambda>>"),
    TypeError("cannot pickle '_thread.lock' object"),
]


def trace_lines(count: int) -> list[TraceLine]:
    return parse_trace(observation_trace(count, 2), "obs.jsonl").lines


class BrokenWrite:
    """Stands in for `replay.snapshot.write`; records the positions asked for."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.positions: list[int] = []

    def __call__(self, store: EventStore, state, views) -> snapshots.Written:
        self.positions.append(state.position)
        raise self.error


@pytest.fixture
def store(tmp_path: Path):
    opened = open_store(f"sqlite:///{tmp_path / 'events.db'}")
    yield opened
    opened.close()


@pytest.mark.parametrize("error", FAILURES, ids=lambda e: type(e).__name__)
def test_a_snapshot_write_failing_with_any_exception_does_not_fail_the_commit(
    store: EventStore, error: Exception, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(engine_module, "snapshot_bytes_per_event", 10**12)  # no size floor
    broken = BrokenWrite(error)
    monkeypatch.setattr(snapshots, "write", broken)
    engine = Engine(store, snapshot_every=1)
    lines = trace_lines(4)
    with caplog.at_level(logging.WARNING, logger="tandem.snapshots"):
        produced = engine.submit(lines[0].item)
    assert produced and store.head() == len(produced) == engine.state.position
    assert broken.positions == [store.head()]
    assert f"snapshot at position {store.head()} not written ({type(error).__name__}: {error})" in caplog.text
    assert engine.last_snapshot is None

    for line in lines[1:]:  # the next commits succeed, each retrying the snapshot
        before = store.head()
        assert engine.submit(line.item)
        assert store.head() > before
    assert len(broken.positions) == len(lines)
    assert caplog.text.count("not written") == len(lines)
    assert Engine(store, snapshot_every=0).state.position == store.head()  # what was committed is all there


def test_after_a_failure_the_snapshot_is_retried_after_as_many_events(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_module, "snapshot_bytes_per_event", 10**12)
    real_write = snapshots.write
    broken = BrokenWrite(RecursionError("too deep"))
    monkeypatch.setattr(snapshots, "write", broken)
    every = 20
    engine = Engine(store, snapshot_every=every)
    lines = trace_lines(80)
    for line in lines[:40]:
        engine.submit(line.item)
    assert len(broken.positions) >= 2
    assert all(later - earlier >= every for earlier, later in zip([0, *broken.positions], broken.positions))

    monkeypatch.setattr(snapshots, "write", real_write)  # the cause goes away
    for line in lines[40:]:
        engine.submit(line.item)
    assert engine.last_snapshot is not None and engine.last_snapshot.position > broken.positions[-1]
    assert Engine(store).snapshot_position == engine.last_snapshot.position


@pytest.mark.parametrize("error", FAILURES, ids=lambda e: type(e).__name__)
def test_a_checkpoint_failing_with_any_exception_is_logged(
    store: EventStore, error: Exception, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    engine = Engine(store, snapshot_every=0)
    engine.submit(trace_lines(1)[0].item)
    monkeypatch.setattr(snapshots, "write", BrokenWrite(error))
    with caplog.at_level(logging.WARNING, logger="tandem.snapshots"):
        assert engine.checkpoint() is None
    assert f"snapshot at position {store.head()} not written ({type(error).__name__}" in caplog.text


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_during_a_snapshot_still_propagates(
    store: EventStore, interrupt: type[BaseException], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_module, "snapshot_bytes_per_event", 10**12)
    monkeypatch.setattr(snapshots, "write", BrokenWrite(interrupt()))
    engine = Engine(store, snapshot_every=1)
    with pytest.raises(interrupt):
        engine.submit(trace_lines(1)[0].item)
    assert store.head() == engine.state.position > 0  # the commit came first and stands
    with pytest.raises(interrupt):
        engine.checkpoint()
