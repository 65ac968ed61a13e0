"""End to end: the commands that only read (verify, show, export, explain)
create and change nothing (issue 15, "Read commands change stores").

A store URL naming a file that does not exist, an SQLite file of another
program, or a file that is not SQLite at all is an error naming it, exit 1,
and the file system is as it was: no database created, no table added, the
journal mode not switched to WAL. A real store reads the same and keeps its
bytes. On PostgreSQL, a table that does not exist is not created.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from tests.e2e.serving import tandem
from tests.integration.conftest import postgres_url, require_postgres

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO / "fixtures" / "gates" / "01_user_chats_ci_fails.jsonl"
READERS = (("verify",), ("show",), ("export",), ("explain", "r1"))



def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("command", READERS, ids=[c[0] for c in READERS])
def test_a_missing_file_is_named_and_not_created(tmp_path: Path, command: tuple[str, ...]) -> None:
    typo = tmp_path / "typo.db"
    result = tandem(*command, "--store", f"sqlite:///{typo}")
    assert result.returncode == 1, result
    assert f"'{typo}' does not exist" in result.stderr and "creates no store" in result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", READERS, ids=[c[0] for c in READERS])
def test_a_foreign_sqlite_file_is_refused_and_left_as_it_was(tmp_path: Path, command: tuple[str, ...]) -> None:
    foreign = tmp_path / "notes.db"
    with sqlite3.connect(foreign) as connection:
        connection.execute("CREATE TABLE notes (body TEXT)")
        connection.execute("INSERT INTO notes VALUES ('mine')")
    connection.close()
    before = digest(foreign)
    result = tandem(*command, "--store", f"sqlite:///{foreign}")
    assert result.returncode == 1, result
    assert "not a Tandem store (it has no table 'tandem_events')" in result.stderr, result.stderr
    assert digest(foreign) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]  # no -wal, no -shm
    with sqlite3.connect(foreign) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    connection.close()
    assert tables == ["notes"]


def test_a_file_that_is_not_sqlite_is_named(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a database, but someone's notes\n" * 100, encoding="utf-8")
    before = digest(text)
    result = tandem("show", "--store", f"sqlite:///{text}")
    assert result.returncode == 1, result
    assert f"'{text}' is not an SQLite database" in result.stderr and "Traceback" not in result.stderr
    assert digest(text) == before


def test_a_store_reads_the_same_and_keeps_its_bytes(tmp_path: Path) -> None:
    store = tmp_path / "tandem.db"
    url = f"sqlite:///{store}"
    assert tandem("ingest", str(TRACE), "--store", url).returncode == 0
    # The writer checkpointed its WAL on close; its lock file stays (adapters/writer_lock.py).
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tandem.db", "tandem.db-writer.lock"]
    before = digest(store)
    shown = tandem("show", "--store", url, "--json")
    assert shown.returncode == 0, shown.stderr
    assert tandem("replay", str(TRACE), "--json").stdout == shown.stdout
    for command in READERS:
        assert tandem(*command, "--store", url).returncode == 0, command
    assert digest(store) == before
    # A reader of a WAL database needs SQLite's shared-memory index beside it
    # (SQLite makes it, as for any reader; `immutable` would skip it but also
    # the locks a live writer needs): the log itself is untouched, its WAL empty.
    assert {p.name for p in tmp_path.iterdir()} <= {"tandem.db", "tandem.db-writer.lock", "tandem.db-shm", "tandem.db-wal"}
    wal = tmp_path / "tandem.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0


@pytest.mark.postgres
def test_postgres_a_missing_table_is_not_created() -> None:
    require_postgres()  # under CI (TANDEM_REQUIRE_POSTGRES=1) an unreachable server fails
    import psycopg

    table = "tandem_readers_never_create"
    url = f"{postgres_url()}?table={table}"
    result = tandem("verify", "--store", url)
    assert result.returncode == 1, result
    assert f"not a Tandem store (it has no table 'public.{table}')" in result.stderr, result.stderr
    with psycopg.connect(postgres_url()) as connection:
        found = connection.execute("SELECT to_regclass(%s), to_regclass(%s)", (table, table + "_snapshots")).fetchone()
    assert found == (None, None)
