"""The console's sessions in the store's own database (`{table}_sessions`,
adapters/store/sql.py), on SQLite and PostgreSQL: they outlive the store
object (a restart), hold the id's hash only, end exactly at sign-out, and a
reader's open keeps none."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

import pytest
from tandem.adapters import sessions as module
from tandem.adapters.sessions import Sessions, session_key
from tandem.adapters.store import open_store, parse_store_url
from tandem.replay.port import EventStore

from tests.client.aio import run


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_kind(request: pytest.FixtureRequest) -> str:
    return request.param


def all_rows(store_url: str) -> list[tuple[Any, ...]]:
    """The sessions table's rows, read with the database's own client."""
    address = parse_store_url(store_url)
    statement = f"SELECT id_hash, actor, csrf, created_at, last_seen_at, expires_at, token_check FROM {address.table}_sessions ORDER BY id_hash"
    if address.kind == "sqlite":
        with sqlite3.connect(address.path) as connection:
            return connection.execute(statement).fetchall()
    import psycopg

    with psycopg.connect(**address.connect) as connection:
        return connection.execute(statement).fetchall()


def test_sessions_outlive_the_store_object_and_end_at_sign_out(store_url: str, open_url: Callable[[str], EventStore]) -> None:
    first = Sessions(open_url(store_url).session_table())  # type: ignore[attr-defined]
    identifier, session = run(first.open("human", "h" * 40))
    other, _ = run(first.open("background", "b" * 40))
    reopened = open_url(store_url)
    again = run(Sessions(reopened.session_table()).find(identifier))  # type: ignore[attr-defined]
    assert (again.actor, again.csrf) == ("human", session.csrf)
    rows = all_rows(store_url)
    assert sorted(row[0] for row in rows) == sorted([session_key(identifier), session_key(other)])
    assert not any(secret in str(value) for secret in (identifier, other, "h" * 40, "b" * 40) for row in rows for value in row)
    run(first.close(identifier))
    assert run(Sessions(open_url(store_url).session_table()).find(identifier)) is None  # type: ignore[attr-defined]
    assert [row[0] for row in all_rows(store_url)] == [session_key(other)]


def test_the_table_keeps_at_most_sessions_max_and_drops_the_ended(
    store_url: str, open_url: Callable[[str], EventStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(module, "sessions_max", 2)
    now = [1_800_000_000.0]
    sessions = Sessions(open_url(store_url).session_table(), lambda: now[0])  # type: ignore[attr-defined]
    opened = []
    for _ in range(3):
        opened.append(run(sessions.open("human", "h" * 40))[0])
        now[0] += 61
    assert [run(sessions.find(identifier)) is not None for identifier in opened] == [False, True, True]
    now[0] += module.session_idle_max_s + 1  # both idle: the next sign-in removes them
    newest, _ = run(sessions.open("human", "h" * 40))
    assert [row[0] for row in all_rows(store_url)] == [session_key(newest)]


def test_a_readers_open_keeps_no_session(store_url: str, open_url: Callable[[str], EventStore]) -> None:
    open_url(store_url)  # the tables made
    reader = open_store(store_url, read_only=True)
    try:
        assert reader.session_table() is None  # type: ignore[attr-defined]
    finally:
        reader.close()


def test_a_row_deleted_by_hand_ends_its_session_at_its_next_touch(store_url: str, open_url: Callable[[str], EventStore]) -> None:
    now = [1_800_000_000.0]
    sessions = Sessions(open_url(store_url).session_table(), lambda: now[0])  # type: ignore[attr-defined]
    identifier, _ = run(sessions.open("human", "h" * 40))
    kept = open_url(store_url).session_table()  # type: ignore[attr-defined]
    now[0] += module.touch_every_s
    assert run(sessions.find(identifier)) is not None
    assert kept.get(session_key(identifier)).last_seen == int(now[0])
    kept.delete(session_key(identifier))
    now[0] += module.touch_every_s
    assert run(sessions.find(identifier)) is None
