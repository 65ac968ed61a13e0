"""A snapshot checks itself against the fold it came from (issue 22, point 1).

- An engine that kept its views as it committed compares them, before it
  writes, with the fold of the stored events since its newest snapshot: a
  view something wrote into (as the conversations view's render once did) is
  never kept; the engine folds the store again instead and says so.
- A state or views that moved while the snapshot was encoded (two threads on
  one engine) are refused.
- A stored snapshot whose state says another position than its header is
  never used: the engine folds from the snapshot before, or from the start.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import tandem.replay.snapshot as snapshots
from tandem.adapters.store import open_store
from tandem.adapters.trace import parse_trace
from tandem.replay.engine import Engine, ViewsDiverged
from tandem.replay.port import EventStore
from tests.unit.test_render_is_pure import REPO


def lines(name: str = "lost_provider_ack.jsonl") -> list:  # type: ignore[type-arg]
    return parse_trace((REPO / "fixtures" / "traces" / name).read_bytes(), name).lines


@pytest.fixture
def store(tmp_path: Path):  # type: ignore[no-untyped-def]
    opened = open_store(f"sqlite:///{tmp_path / 'events.db'}")
    yield opened
    opened.close()


def test_live_views_that_are_not_the_fold_are_never_kept(store: EventStore, caplog: pytest.LogCaptureFixture) -> None:
    engine = Engine(store, snapshot_every=0)
    for line in lines():
        engine.submit(line.item)
    assert engine.views is not None
    conversations = engine.views.by_name["conversations"]
    conversations.rows["fg"]["state"] = "running"  # what a render used to leave behind
    with pytest.raises(ViewsDiverged, match=r"views.conversations\['rows'\]\['fg'\]\['state'\]: live 'running'"):
        engine.write_snapshot()
    assert store.list_snapshots() == []
    conversations.rows["fg"]["state"] = "failure_held"
    with caplog.at_level(logging.ERROR, logger="tandem.snapshots"):
        assert engine.checkpoint() is None
    assert "not the fold of the stored events" in caplog.text and "folds the store again" in caplog.text
    assert store.list_snapshots() == []
    assert engine.views.by_name["conversations"].rows["fg"]["state"] == "idle"  # folded again: the truth
    assert engine.checkpoint() is not None  # and now it is kept


def test_the_check_covers_only_what_was_applied_live(store: EventStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """An engine whose views came straight from a fold writes without
    folding them again; one that committed since checks from its newest
    snapshot on."""
    engine = Engine(store, snapshot_every=0)
    items = [line.item for line in lines()]
    for item in items[:10]:
        engine.submit(item)
    first = engine.write_snapshot().position
    folds: list[int] = []
    original = snapshots.views_at
    monkeypatch.setattr(snapshots, "views_at", lambda s, position, *a: folds.append(position) or original(s, position, *a))
    reopened = Engine(store, snapshot_every=0)
    for item in items[10:]:
        engine.submit(item)
    engine.write_snapshot()
    assert reopened.snapshot_position == first == reopened.state.position  # opened from the snapshot
    reopened.write_snapshot()  # its views came from the fold: written without folding them again
    assert folds == [engine.state.position]  # only the live engine checked its views


def test_a_state_that_moves_while_it_is_encoded_is_refused(store: EventStore, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = Engine(store, snapshot_every=0)
    for line in lines()[:5]:
        engine.submit(line.item)
    original = snapshots.encode_body

    def moving(position, event_data, state, views):  # type: ignore[no-untyped-def]
        body = original(position, event_data, state, views)
        state.position += 1  # another thread folded meanwhile
        return body

    monkeypatch.setattr(snapshots, "encode_body", moving)
    with pytest.raises(ValueError, match="moved from position"):
        snapshots.write(store, engine.state, engine.views)
    assert store.list_snapshots() == []


def test_a_snapshot_whose_state_is_at_another_position_is_not_used(store: EventStore, caplog: pytest.LogCaptureFixture) -> None:
    engine = Engine(store, snapshot_every=0)
    for line in lines():
        engine.submit(line.item)
    position = engine.state.position
    engine.state.position = position - 1  # pickled so: a state from another position under this header
    event = [data for _, data in store.read_encoded(after=position - 1, until=position)][0]
    body = snapshots.encode_body(position, event, engine.state, engine.views)  # type: ignore[arg-type]
    engine.state.position = position
    store.write_snapshot(position, snapshots.code_fingerprint(), body)
    with caplog.at_level(logging.WARNING, logger="tandem.snapshots"):
        reopened = Engine(store, snapshot_every=0)
    assert f"its state is at position {position - 1}, its header says {position}" in caplog.text
    assert reopened.snapshot_position == 0 and reopened.state.position == position
    assert reopened.views.document() == engine.views.document()  # type: ignore[union-attr]
