"""The store port's snapshot table and `append_encoded`, on memory, SQLite
and PostgreSQL (the fixtures of conftest.py: each case a fresh store)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tandem.domain.events import Event, InputAccepted, SourceProgressed, encode_event
from tandem.domain.inputs import decode_input
from tandem.replay.port import ConcurrencyError, EventStore, SnapshotInfo

OpenUrl = Callable[[str], EventStore]


def events(count: int) -> list[Event]:
    """`count` distinct events, two kinds."""
    tick = decode_input(b'{"type":"tick","at":"2024-05-01T12:00:00Z"}')
    return [
        InputAccepted(seq=index, file="trace.jsonl", line=index, input=tick)
        if index % 2
        else SourceProgressed(file="trace.jsonl", line=index, offset=index * 10, digest=f"d{index}")
        for index in range(1, count + 1)
    ]


def test_no_snapshot_in_a_fresh_store(store: EventStore) -> None:
    assert store.list_snapshots() == []
    assert store.latest_snapshot("f") is None


def test_snapshots_are_found_by_fingerprint_and_position(store: EventStore) -> None:
    store.append(events(6), expected_head=0)
    store.write_snapshot(2, "code-a", b"two")
    store.write_snapshot(5, "code-a", b"five")
    store.write_snapshot(4, "code-b", b"\x00\xffbinary")
    assert store.latest_snapshot("code-a") == (5, b"five")
    assert store.latest_snapshot("code-a", until=4) == (2, b"two")
    assert store.latest_snapshot("code-a", until=1) is None
    assert store.latest_snapshot("code-b") == (4, b"\x00\xffbinary")
    assert store.latest_snapshot("code-c") is None
    assert store.list_snapshots() == [
        SnapshotInfo(2, "code-a", 3),
        SnapshotInfo(4, "code-b", 8),
        SnapshotInfo(5, "code-a", 4),
    ]
    # The log is untouched by snapshots.
    assert [position for position, _ in store.read()] == [1, 2, 3, 4, 5, 6]


def test_a_snapshot_is_replaced_and_deleted(store: EventStore) -> None:
    store.append(events(3), expected_head=0)
    store.write_snapshot(3, "code", b"old")
    store.write_snapshot(3, "code", b"new")
    assert store.latest_snapshot("code") == (3, b"new")
    assert len(store.list_snapshots()) == 1
    store.delete_snapshot(3, "code")
    store.delete_snapshot(3, "code")  # none there: nothing happens
    assert store.list_snapshots() == []


@pytest.mark.parametrize("position", [0, -1, 4])
def test_a_snapshot_must_be_at_a_position_of_the_log(store: EventStore, position: int) -> None:
    store.append(events(3), expected_head=0)
    with pytest.raises(ValueError):
        store.write_snapshot(position, "code", b"body")
    assert store.list_snapshots() == []


def test_snapshots_outlive_the_store_object(store_kind: str, store_url: str, open_url: OpenUrl) -> None:
    if store_kind == "memory":
        pytest.skip("a memory store does not outlive its object")
    first = open_url(store_url)
    first.append(events(2), expected_head=0)
    first.write_snapshot(2, "code", b"kept")
    first.close()
    assert open_url(store_url).latest_snapshot("code") == (2, b"kept")


def test_append_encoded_stores_the_bytes_as_given(store: EventStore) -> None:
    values = events(4)
    # Valid JSON for the same events, but not what encode_event writes: key order and spacing differ.
    unusual = [encode_event(value).replace(b",", b", ") for value in values]
    assert store.append_encoded(unusual[:2], expected_head=0) == 2
    assert store.append_encoded(unusual[2:], expected_head=2) == 4
    assert [data for _, data in store.read_encoded()] == unusual
    assert [event for _, event in store.read()] == values


def test_append_encoded_refuses_a_bad_item_and_writes_nothing(store: EventStore) -> None:
    good = [encode_event(value) for value in events(3)]
    with pytest.raises(ValueError, match="item 2"):
        store.append_encoded([good[0], b'{"event": "NoSuchEvent"}', good[2]], expected_head=0)
    assert store.head() == 0
    with pytest.raises(ConcurrencyError):
        store.append_encoded(good, expected_head=1)
    assert store.head() == 0


def test_an_engine_restarts_from_a_snapshot_on_every_store(store: EventStore) -> None:
    from pathlib import Path

    from tandem.adapters.ingest import ingest
    from tandem.adapters.trace import read_trace
    from tandem.replay.engine import Engine
    from tandem.replay.verify import verify

    example = Path(__file__).resolve().parents[2] / "fixtures" / "gates" / "02_prerequisite_user_away.jsonl"
    ingest(Engine(store, snapshot_every=0), read_trace(str(example)), batch_inputs=6)
    written = Engine(store).write_snapshot()
    assert written.position == store.head()
    reopened, full = Engine(store), Engine(store, use_snapshots=False)
    assert reopened.snapshot_position == store.head() and full.snapshot_position == 0
    assert reopened.state == full.state
    assert reopened.views is not None and full.views is not None
    assert reopened.views.document() == full.views.document()
    report = verify(store)
    assert report.ok and report.snapshots_checked == 1
