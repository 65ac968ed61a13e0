"""The console's sessions (adapters/sessions.py): kept in memory, or in a
table that outlives the process (here a dict with the table's contract; the
SQL table itself: tests/integration/test_session_table.py). A restart is a
new `Sessions` over the same table."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from tandem.adapters import sessions as module
from tandem.adapters.tokens import TokenTable, token_digest
from tandem.adapters.sessions import (
    SessionRow,
    Sessions,
    session_idle_max_s,
    session_key,
    token_check,
    session_lifetime_max_s,
    touch_every_s,
)

from tests.client.aio import run

START = 1_800_000_000.0
TOKEN = "t" * 40


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


class DictTable:
    """The SessionTable contract over a dict, counting its writes."""

    def __init__(self) -> None:
        self.rows: dict[str, SessionRow] = {}
        self.touches = 0

    def insert(self, row: SessionRow, idle_since: int, keep_max: int) -> list[str]:
        removed = [key for key, kept in self.rows.items() if kept.expires <= row.created or kept.last_seen < idle_since]
        for key in removed:
            del self.rows[key]
        if len(self.rows) >= keep_max:
            oldest = sorted(self.rows.values(), key=lambda kept: (kept.last_seen, kept.key))[: len(self.rows) - keep_max + 1]
            removed += [kept.key for kept in oldest]
            for kept in oldest:
                del self.rows[kept.key]
        self.rows[row.key] = row
        return removed

    def get(self, key: str) -> SessionRow | None:
        return self.rows.get(key)

    def touch(self, key: str, last_seen: int) -> bool:
        self.touches += 1
        if key not in self.rows:
            return False
        self.rows[key] = dataclasses.replace(self.rows[key], last_seen=last_seen)
        return True

    def delete(self, key: str) -> None:
        self.rows.pop(key, None)


def found(sessions: Sessions, identifier: str | None) -> Any:
    return run(sessions.find(identifier))


@pytest.mark.parametrize("kept", ["memory", "table"])
def test_a_session_is_found_by_its_id_until_sign_out(kept: str) -> None:
    sessions = Sessions(DictTable() if kept == "table" else None, Clock())
    identifier, session = run(sessions.open("human", TOKEN))
    assert found(sessions, identifier) is session and session.actor == "human"
    assert found(sessions, identifier + "x") is None and found(sessions, "") is None and found(sessions, None) is None
    run(sessions.close(identifier))
    assert found(sessions, identifier) is None
    assert sessions.kept_in == kept


def test_a_table_keeps_the_ids_hash_never_the_id_nor_the_token() -> None:
    table = DictTable()
    identifier, session = run(Sessions(table, Clock()).open("human", TOKEN))
    (row,) = table.rows.values()
    assert row.key == session_key(identifier) != identifier and len(row.key) == 64
    assert identifier not in repr(row) and TOKEN not in repr(row) and token_digest(TOKEN).hex() not in repr(row)
    assert (row.actor, row.csrf, row.created, row.last_seen, row.expires, row.token_check) == (
        "human", session.csrf, int(START), int(START), int(START) + session_lifetime_max_s, token_check(identifier, token_digest(TOKEN)),
    )  # fmt: skip


def test_a_restart_keeps_the_session_with_its_actor_and_csrf() -> None:
    table, clock = DictTable(), Clock()
    identifier, session = run(Sessions(table, clock).open("human", TOKEN))
    clock.now += 3600
    again = found(Sessions(table, clock), identifier)  # a new process over the same table
    assert (again.actor, again.csrf) == ("human", session.csrf)


def test_sign_out_is_exact_across_restarts_and_replays() -> None:
    table, clock = DictTable(), Clock()
    first = Sessions(table, clock)
    identifier, _ = run(first.open("human", TOKEN))
    other, _ = run(first.open("human", TOKEN))
    run(first.close(identifier))
    assert found(first, identifier) is None  # the cookie replayed to the same process
    restarted = Sessions(table, clock)
    assert found(restarted, identifier) is None  # and after a restart
    assert found(restarted, other) is not None  # another session of the same actor lives on
    run(restarted.close(other))
    assert table.rows == {}


@pytest.mark.parametrize("kept", ["memory", "table"])
def test_an_idle_session_ends(kept: str) -> None:
    table, clock = DictTable(), Clock()
    sessions = Sessions(table if kept == "table" else None, clock)
    identifier, _ = run(sessions.open("human", TOKEN))
    clock.now += session_idle_max_s - 1
    assert found(sessions, identifier) is not None  # used: idle from now again
    clock.now += session_idle_max_s - 1
    assert found(sessions, identifier) is not None
    clock.now += session_idle_max_s + 1
    assert found(sessions, identifier) is None
    assert table.rows == {}  # ended, and removed from its table
    assert len(sessions) == 0


def test_a_session_ends_at_its_lifetime_however_busy() -> None:
    table, clock = DictTable(), Clock()
    sessions = Sessions(table, clock)
    identifier, _ = run(sessions.open("human", TOKEN))
    while clock.now + 3600 < START + session_lifetime_max_s:
        clock.now += 3600
        assert found(sessions, identifier) is not None
    clock.now = START + session_lifetime_max_s
    assert found(sessions, identifier) is None
    assert found(Sessions(table, clock), identifier) is None


def test_an_expired_row_is_refused_after_a_restart_and_removed() -> None:
    table, clock = DictTable(), Clock()
    identifier, _ = run(Sessions(table, clock).open("human", TOKEN))
    key = session_key(identifier)
    table.rows[key] = dataclasses.replace(table.rows[key], expires=int(clock.now) - 1)
    assert found(Sessions(table, clock), identifier) is None
    assert key not in table.rows
    identifier, _ = run(Sessions(table, clock).open("human", TOKEN))  # idle too long, as the table says
    clock.now += session_idle_max_s + 2
    assert found(Sessions(table, clock), identifier) is None


def test_a_session_is_written_back_at_most_once_a_minute() -> None:
    table, clock = DictTable(), Clock()
    sessions = Sessions(table, clock)
    identifier, _ = run(sessions.open("human", TOKEN))
    for _ in range(10):
        clock.now += 5
        found(sessions, identifier)
    assert table.touches == 0
    clock.now += touch_every_s
    found(sessions, identifier)
    assert table.touches == 1 and table.rows[session_key(identifier)].last_seen == int(clock.now)


def test_at_most_sessions_max_the_least_recently_seen_goes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "sessions_max", 3)
    table, clock = DictTable(), Clock()
    sessions = Sessions(table, clock)
    opened = []
    for _ in range(3):
        clock.now += touch_every_s
        opened.append(run(sessions.open("human", TOKEN))[0])
    clock.now += touch_every_s
    assert found(sessions, opened[0]) is not None  # used again: now the most recent
    clock.now += touch_every_s
    newest, _ = run(sessions.open("human", TOKEN))
    assert [found(sessions, identifier) is not None for identifier in opened] == [True, False, True]
    assert found(sessions, newest) is not None
    assert len(table.rows) == 3 and len(sessions) == 3
    memory = Sessions(None, clock)
    kept = [run(memory.open("human", TOKEN))[0] for _ in range(4)]
    assert [found(memory, identifier) is not None for identifier in kept] == [False, True, True, True]


def test_a_row_deleted_by_hand_ends_its_session_within_a_minute() -> None:
    table, clock = DictTable(), Clock()
    sessions = Sessions(table, clock)
    identifier, _ = run(sessions.open("human", TOKEN))
    table.rows.clear()  # an operator's DELETE FROM TABLE_sessions, the server running
    clock.now += touch_every_s - 1
    assert found(sessions, identifier) is not None  # held in memory until its next write
    clock.now += 1
    assert found(sessions, identifier) is None
    assert found(sessions, identifier) is None and len(sessions) == 0


def test_after_a_restart_a_session_needs_its_token_still_in_the_tokens_file() -> None:
    table, clock = DictTable(), Clock()
    other = "o" * 40
    tokens = TokenTable(((token_digest(TOKEN), "human"), (token_digest(other), "human")))
    kept, _ = run(Sessions(table, clock, tokens).open("human", TOKEN))
    dropped, _ = run(Sessions(table, clock, tokens).open("human", other))
    renamed, _ = run(Sessions(table, clock, tokens).open("human", TOKEN))
    restarted = Sessions(table, clock, TokenTable(((token_digest(TOKEN), "human"),)))  # `other` removed from the file
    assert found(restarted, kept) is not None
    assert found(restarted, dropped) is None and session_key(dropped) not in table.rows
    moved = Sessions(table, clock, TokenTable(((token_digest(TOKEN), "background"),)))  # the token now speaks for another actor
    assert found(moved, renamed) is None and session_key(renamed) not in table.rows
