"""The service's log index (adapters/log_index.py): built in the background
while commits keep coming, none lost or doubled; behind the store after a
commit it never saw, it catches up; past its bounds it is dropped."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

import tandem.adapters.log_index as keeper_module
import tandem.replay.index as index_module
from tandem.adapters.ingest import ingest
from tandem.adapters.log_index import IndexKeeper
from tandem.replay.commits import Commit
from tandem.adapters.store import open_store
from tandem.adapters.trace import parse_trace
from tandem.replay.engine import Engine
from tandem.replay.index import LogIndex
from tandem.replay.port import EventStore
from bench.workload import synthetic_trace


class Held:
    """A store whose reads wait until released (a build in progress)."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.reading = threading.Event()
        self.release = threading.Event()

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)

    def read_encoded(self, after: int = 0, until: int | None = None) -> Iterator[tuple[int, bytes]]:
        self.reading.set()
        assert self.release.wait(10)
        yield from self.store.read_encoded(after, until)


def committing(engine: Engine, listener: object) -> None:
    """Tell `listener` of every commit the engine makes (as a LiveEngine does)."""
    submit = engine.submit_batch

    def submit_batch(items, trailer=()):  # type: ignore[no-untyped-def]
        head = engine.state.position
        produced = submit(items, trailer)
        listener(Commit(head, produced))  # type: ignore[operator]
        return produced

    engine.submit_batch = submit_batch  # type: ignore[method-assign]


def same(index: LogIndex, store: EventStore) -> None:
    whole = LogIndex.build(store)
    assert index.head == whole.head == store.head()
    assert list(index.records()) == list(whole.records())
    for position in range(1, whole.head + 1):
        assert index.type_at(position) is whole.type_at(position)
    for key in (("heartbeat",), ("action", "op-1"), ("action", "op-30"), ("task", "work"), ("update", "cause:op-30")):
        assert list(index.positions(key)) == list(whole.positions(key)), key


def engine_with(actions: int) -> Engine:
    engine = Engine(open_store("memory:"), with_views=False, snapshot_every=0)
    ingest(engine, parse_trace(synthetic_trace(actions), "first.jsonl"))
    return engine


def more(engine: Engine, name: str, day: int, batch: int = 5) -> None:
    """More commits (the same workload a day later: its repeats are refused, still commits)."""
    trace = parse_trace(synthetic_trace(40).replace(b"2026-03-01", f"2026-03-{day:02}".encode()), name)
    ingest(engine, trace, batch_inputs=batch)


@pytest.mark.parametrize("held_max", [10_000, 3])
def test_commits_during_the_build_are_neither_lost_nor_doubled(monkeypatch: pytest.MonkeyPatch, held_max: int) -> None:
    monkeypatch.setattr(keeper_module, "buffered_commits_max", held_max)  # 3: they overflow, read back from the store
    engine = engine_with(20)
    assert engine.store is not None
    keeper = IndexKeeper()
    committing(engine, keeper.on_commit)
    held = Held(engine.store)
    keeper.start(held)  # type: ignore[arg-type]
    assert held.reading.wait(10)
    more(engine, "during.jsonl", 2)  # ~25 commits while the build waits
    assert not keeper.ready and keeper.index is None
    held.release.set()
    assert keeper.wait(10)
    more(engine, "after.jsonl", 3)
    assert keeper.index is not None
    same(keeper.index, engine.store)


def test_a_commit_it_never_saw_sends_it_back_to_catch_up(caplog: pytest.LogCaptureFixture) -> None:
    engine = engine_with(20)
    assert engine.store is not None
    keeper = IndexKeeper()
    listening = [True]
    committing(engine, lambda commit: keeper.on_commit(commit) if listening[0] else None)
    keeper.start(engine.store)
    assert keeper.wait(10)
    listening[0] = False
    more(engine, "unseen.jsonl", 2)  # commits the keeper is not told of
    listening[0] = True
    more(engine, "seen.jsonl", 3)  # the first of these does not follow the index's head
    assert keeper.wait(10)
    assert "catching up" in caplog.text
    assert keeper.index is not None and keeper.failed is None
    same(keeper.index, engine.store)


def test_past_its_bounds_it_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_module, "keys_max", 10)
    engine = engine_with(20)
    assert engine.store is not None
    keeper = IndexKeeper()
    committing(engine, keeper.on_commit)
    keeper.start(engine.store)
    assert not keeper.wait(10)
    assert keeper.index is None and keeper.failed is not None and "keys" in keeper.failed
    more(engine, "later.jsonl", 2)  # commits are ignored, not held
    assert keeper.index is None and not keeper._pending
