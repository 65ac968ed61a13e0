"""What a start rebuilds for the stream's resume ring (replay/commits.py,
adapters/serve.py): the last commits, read back within `tail_events_max`
events, so that a log of big commits (an ingest's, of 1,000 inputs each)
costs a bounded read, not the log; and their keys for every commit, their
row changes only from `rows_from` on (rendering is what costs)."""

from __future__ import annotations

import json

import pytest

from bench.workload import synthetic_trace
from tandem.adapters.ingest import ingest
from tandem.adapters.runtime import LiveEngine
from tandem.adapters.store import open_store
from tandem.adapters.trace import parse_trace
from tandem.replay import commits as commits_module
from tandem.replay.commits import refoldable, tail_commits, with_changed_views
from tandem.replay.engine import Engine

TICK = '{{"type": "tick", "actor": "daemon", "at": "2026-03-02T09:00:{second:02d}Z"}}'


class Counting:
    """A store that counts the events read from it."""

    def __init__(self, store: object) -> None:
        self.store, self.read_events = store, 0

    def read(self, after: int = 0, until: int | None = None):  # type: ignore[no-untyped-def]
        for item in self.store.read(after=after, until=until):  # type: ignore[attr-defined]
            self.read_events += 1
            yield item


def test_a_long_log_of_big_commits_is_read_back_only_so_far(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commits_module, "tail_events_max", 2_048)
    monkeypatch.setattr(commits_module, "tail_window_events_first", 512)
    engine = Engine(open_store("memory:"), snapshot_every=0)
    ingest(engine, parse_trace(synthetic_trace(1_000), "one-file.jsonl"))
    assert engine.store is not None
    head = engine.store.head()
    assert head > 4 * 2_048
    counting = Counting(engine.store)
    found = tail_commits(counting, head, 1_000)  # type: ignore[arg-type]
    assert counting.read_events <= 2_048 + 4 * 512  # the windows read, the last one bounded
    # The whole commits that fit (an ingest's transactions: 1,000 inputs each), none beyond the bound.
    assert found and len(found) < 10 and found[0].after >= head - 2_048 and found[-1].position == head


def test_the_start_renders_rows_of_the_newest_commits_only() -> None:
    engine = LiveEngine(open_store("memory:"))
    for second in range(8):
        (line,) = parse_trace(TICK.format(second=second).encode(), f"http@{second}").lines
        engine.commit([line.item])
    assert engine.store is not None
    kept = tail_commits(engine.store, engine.store.head(), 8)
    assert len(kept) == 8
    rebuilt = with_changed_views(engine.store, kept, rows_from=5)
    assert [summary.rows is not None for summary in rebuilt] == [False] * 5 + [True] * 3
    assert all(summary.keys is not None and set(json.loads(summary.keys)) == set(summary.views or ()) for summary in rebuilt)


def test_a_start_keeps_the_commits_it_can_refold_from_a_snapshot_near_them() -> None:
    """Without a snapshot near the kept commits, a start would fold the whole
    log before them: it keeps those within `fold_events_max` of the newest
    snapshot at or before them (or of the log's start), none otherwise."""
    engine = LiveEngine(open_store("memory:"), snapshot_every=0)

    def ticks(seconds: range) -> None:
        for second in seconds:
            (line,) = parse_trace(TICK.format(second=second).encode(), f"http@{second}").lines
            engine.commit([line.item])

    ticks(range(15))
    assert engine.store is not None
    kept = tail_commits(engine.store, engine.store.head(), 10)
    first = kept[0].after
    assert refoldable(engine.store, kept, fold_events_max=first) == kept  # from the log's start
    assert refoldable(engine.store, kept, fold_events_max=first - 1) == []  # no snapshot: too far
    snapshot_at = engine.write_snapshot().position
    ticks(range(15, 30))
    engine.write_snapshot()  # at the head: no help for commits before it
    kept = tail_commits(engine.store, engine.store.head(), 10)
    first = kept[0].after
    assert snapshot_at < first and refoldable(engine.store, kept, fold_events_max=first - snapshot_at) == kept
    assert refoldable(engine.store, kept, fold_events_max=first - snapshot_at - 1) == []
