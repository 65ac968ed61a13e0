"""The store contract's key table (replay/port.py, replay/key_table.py), on
every store (memory, SQLite, PostgreSQL): a mark per code fingerprint, rows
added with the mark moved in one transaction only from the mark they expect,
another code's table replaced whole; and its upkeep, `index_keys`, gives
exactly the keys the `LogIndex` of the same log has."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

import tandem.replay.key_table as key_table
from tandem.adapters.store import open_store
from tandem.replay.index import LogIndex, split_key
from tandem.replay.key_table import index_keys
from tandem.replay.port import EventStore
from tests.integration.test_event_digests import traces
from tests.integration.test_explain_digests import stored
from tests.integration.test_key_scan import every_key
from tests.integration.test_store_contract import events

OpenUrl = Callable[[str], EventStore]
ROWS = [("task", "t-1", 2), ("task", "t-1", 5), ("heartbeat", "", 3), ("task", "t-2", 5)]


def test_an_empty_key_table_has_mark_zero_and_no_positions(store: EventStore) -> None:
    store.append(events(6), expected_head=0)
    assert store.keys_through("code-a") == 0
    assert store.read_key_positions([("task", "t-1"), ("heartbeat", "")], 6) == {("task", "t-1"): [], ("heartbeat", ""): []}


def test_written_rows_are_read_by_key_up_to_a_position(store: EventStore) -> None:
    store.append(events(6), expected_head=0)
    assert store.write_keys("code-a", 0, 6, ROWS) is True
    assert store.keys_through("code-a") == 6
    assert store.keys_through("code-b") == 0  # another code's keys are never read
    assert store.read_key_positions([("task", "t-1"), ("heartbeat", ""), ("task", "none")], 6) == {
        ("task", "t-1"): [2, 5], ("heartbeat", ""): [3], ("task", "none"): [],
    }  # fmt: skip
    assert store.read_key_positions([("task", "t-1")], 4) == {("task", "t-1"): [2]}


def test_rows_are_added_only_from_the_mark_they_expect(store: EventStore) -> None:
    store.append(events(10), expected_head=0)
    assert store.write_keys("code-a", 0, 4, [("task", "t-1", 2)])
    assert store.write_keys("code-a", 0, 4, [("task", "t-9", 3)]) is False  # another upkeep got there first
    assert store.write_keys("code-a", 5, 8, [("task", "t-9", 6)]) is False  # a gap
    assert store.write_keys("code-a", 4, 8, [("task", "t-1", 7)])
    assert store.keys_through("code-a") == 8
    assert store.read_key_positions([("task", "t-1"), ("task", "t-9")], 10) == {("task", "t-1"): [2, 7], ("task", "t-9"): []}


def test_another_codes_table_is_replaced_whole(store: EventStore) -> None:
    store.append(events(6), expected_head=0)
    store.write_keys("code-a", 0, 6, ROWS)
    assert store.write_keys("code-b", 3, 6, []) is False  # code-b's mark is 0
    assert store.write_keys("code-b", 0, 4, [("task", "t-3", 4)])
    assert (store.keys_through("code-a"), store.keys_through("code-b")) == (0, 4)
    assert store.read_key_positions([("task", "t-1"), ("task", "t-3")], 6) == {("task", "t-1"): [], ("task", "t-3"): [4]}


@pytest.mark.parametrize(
    ("after", "through", "rows"),
    [(0, 4, [("task", "t-1", 5)]), (2, 4, [("task", "t-1", 2)]), (4, 2, []), (0, 4, [("task", "t-1", 0)])],
)
def test_a_bad_write_is_refused_and_writes_nothing(store: EventStore, after: int, through: int, rows: list) -> None:
    store.append(events(6), expected_head=0)
    store.write_keys("code-a", 0, 2, [("task", "t-0", 1)])
    with pytest.raises(ValueError):
        store.write_keys("code-a", after, through, rows)
    assert store.keys_through("code-a") == 2
    assert store.read_key_positions([("task", "t-1"), ("task", "t-0")], 6) == {("task", "t-1"): [], ("task", "t-0"): [1]}


def test_the_key_table_persists_across_reopen(store_kind: str, store_url: str, open_url: OpenUrl) -> None:
    if store_kind == "memory":
        pytest.skip("a memory store does not outlive its object")
    first = open_url(store_url)
    first.append(events(6), expected_head=0)
    first.write_keys("code-a", 0, 6, ROWS)
    first.close()
    again = open_url(store_url)
    assert again.keys_through("code-a") == 6
    assert again.read_key_positions([("task", "t-2")], 6) == {("task", "t-2"): [5]}


def test_a_reader_of_a_store_without_a_key_table_reads_none(tmp_path: Path) -> None:
    """A store written before the key table existed, opened read-only (which creates nothing)."""
    path = tmp_path / "old.db"
    writer = open_store(f"sqlite:///{path}")
    writer.append(events(4), expected_head=0)
    writer.close()
    with sqlite3.connect(path) as connection:
        connection.execute("DROP TABLE tandem_events_keys")
        connection.execute("DROP TABLE tandem_events_keys_through")
    reader = open_store(f"sqlite:///{path}", read_only=True)
    try:
        assert reader.keys_through("code-a") == 0
        assert reader.read_key_positions([("task", "t-1")], 4) == {("task", "t-1"): []}
    finally:
        reader.close()


@pytest.mark.parametrize("path", traces()[:12], ids=lambda path: path.name)
def test_index_keys_gives_the_log_indexs_keys(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = stored(path)
    monkeypatch.setattr(key_table, "keys_events_per_write_max", 7)  # many parts
    reports: list[tuple[int, int]] = []
    middle = memory.head() // 2
    assert index_keys(memory, "code-a", until=middle) == middle
    assert index_keys(memory, "code-a", progress=lambda through, until: reports.append((through, until))) == memory.head() - middle
    assert index_keys(memory, "code-a") == 0  # already there
    assert memory.keys_through("code-a") == memory.head()
    assert reports and reports[-1] == (memory.head(), memory.head()) and all(b - a <= 7 for (a, _), (b, _) in zip(reports, reports[1:]))
    whole = LogIndex.build(memory)
    keys = every_key(memory)
    table = memory.read_key_positions([split_key(key) for key in keys], memory.head())
    for key in keys:
        assert table[split_key(key)] == list(whole.positions(key)), key


def test_read_key_rows_gives_every_row_in_key_order_across_pages(store: EventStore, monkeypatch: pytest.MonkeyPatch) -> None:
    import tandem.adapters.store.recorder as recorder

    store.append(events(30), expected_head=0)
    rows = [(kind, f"id-{number % 7}", number) for number in range(1, 31) for kind in ("task", "action") if number % 3]
    store.write_keys("code-a", 0, 30, rows)
    monkeypatch.setattr(recorder, "read_page_events_max", 4)  # many pages
    assert list(store.read_key_rows(30)) == sorted(rows)
    assert list(store.read_key_rows(12)) == sorted(row for row in rows if row[2] <= 12)


def test_verify_checks_the_key_table_and_names_a_wrong_row(tmp_path: Path) -> None:
    from tandem.replay.snapshot import code_fingerprint
    from tandem.replay.verify import verify

    url = f"sqlite:///{tmp_path / 'keys.db'}"
    memory = stored(traces()[0])
    store = open_store(url)
    store.append_encoded([data for _, data in memory.read_encoded()], 0)
    index_keys(store, code_fingerprint(), until=store.head() - 3)
    report = verify(store)
    assert report.ok and report.keys_checked == store.head() - 3
    assert report.summary().endswith(f", key table checked to {store.head() - 3:,}")
    ((kind, ident, position),) = [row for row in store.read_key_rows(store.head()) if row[2] > 1][:1]
    with sqlite3.connect(tmp_path / "keys.db") as connection:
        connection.execute("UPDATE tandem_events_keys SET position = position - 1 WHERE kind = ? AND ident = ? AND position = ?", (kind, ident, position))
    report = verify(store)
    assert not report.ok and report.divergence is not None and report.divergence.kind == "keys"
    assert report.divergence.position == position - 1 and "no such key" in report.divergence.message
    store.close()
