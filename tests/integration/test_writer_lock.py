"""One writer per store (adapters/writer_lock.py), on SQLite and PostgreSQL.

The holder is a real process (`python -c`, printing "held" once it holds the
lock), so refusals name another pid, and SIGKILL is a real SIGKILL.
"""

from __future__ import annotations

import os
import re
import secrets
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tandem.adapters.store.url import side_table_suffixes
from tandem.adapters.cli import main
from tandem.adapters.store import open_store, redacted
from tandem.adapters.writer_lock import WriterLocked, acquire_writer_lock, writer_lock_path
from tandem.replay.port import StoreError
from tests.integration.conftest import postgres_url, require_postgres

repository = Path(__file__).resolve().parents[2]
fixture_trace = repository / "fixtures" / "gates" / "02_prerequisite_user_away.jsonl"
other_trace = repository / "fixtures" / "gates" / "01_user_chats_ci_fails.jsonl"
holder_start_timeout_s = 15
holder_sleep_s = 120  # the holder's life if nobody kills it (every test kills it)
lock_free_deadline_s = 3
lock_free_poll_s = 0.05
command_timeout_s = 30
since_slack_s = 120
unreachable_postgres_url = "postgresql://postgres:secret@127.0.0.1:1/test"

holder_script = f"""
import sys, time
from tandem.adapters.writer_lock import acquire_writer_lock
lock = acquire_writer_lock(sys.argv[1])
print("held", flush=True)
time.sleep({holder_sleep_s})
"""
locked_message = re.compile(
    r"store (?P<url>\S+) is locked by pid (?P<pid>\d+) on (?P<host>\S+) since "
    r"(?P<since>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)"
)


def _drop_postgres_tables(table: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(postgres_url(), autocommit=True) as connection:
        for name in (table, *(table + suffix for suffix in side_table_suffixes)):
            connection.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(name)))


@pytest.fixture
def postgres_lock_url() -> Iterator[str]:
    """A PostgreSQL store URL with a table of its own (dropped afterwards, with its companions)."""
    require_postgres()
    table = f"tandem_test_{secrets.token_hex(6)}"
    separator = "&" if "?" in postgres_url() else "?"
    yield f"{postgres_url()}{separator}table={table}"
    _drop_postgres_tables(table)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def lock_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/events.db"
    return request.getfixturevalue("postgres_lock_url")


@pytest.fixture
def start_holder() -> Iterator[Callable[[str], subprocess.Popen[str]]]:
    """Starts processes that take a store's writer lock and hold it; kills them at teardown."""
    started: list[subprocess.Popen[str]] = []

    def start(url: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-c", holder_script, url],
            cwd=repository,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        ready, _, _ = select.select([process.stdout], [], [], holder_start_timeout_s)
        assert ready, f"the holder did not take the lock within {holder_start_timeout_s} s"
        line = process.stdout.readline()  # type: ignore[union-attr]
        if line != "held\n":
            process.wait(timeout=command_timeout_s)
            pytest.fail(f"the holder failed: {process.stderr.read()}")  # type: ignore[union-attr]
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=command_timeout_s)
        process.stdout.close()  # type: ignore[union-attr]
        process.stderr.close()  # type: ignore[union-attr]


def assert_names_holder(message: str, url: str, pid: int) -> None:
    match = locked_message.fullmatch(message)
    assert match, message
    assert match["url"] == redacted(url)
    assert int(match["pid"]) == pid
    assert match["host"] == socket.gethostname()
    since = datetime.strptime(match["since"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert abs(datetime.now(UTC) - since) < timedelta(seconds=since_slack_s)


def acquire_within_deadline(url: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + lock_free_deadline_s
    while True:
        try:
            return acquire_writer_lock(url)
        except WriterLocked:
            if time.monotonic() >= deadline:
                raise
            time.sleep(lock_free_poll_s)


def head_of(url: str) -> int:
    store = open_store(url)
    try:
        return store.head()
    finally:
        store.close()


# ------------------------------------------------------------------ the lock


def test_a_second_writer_is_refused_naming_the_holder(lock_url: str, start_holder) -> None:  # type: ignore[no-untyped-def]
    holder = start_holder(lock_url)
    with pytest.raises(WriterLocked) as refused:
        acquire_writer_lock(lock_url)
    assert_names_holder(str(refused.value), lock_url, holder.pid)
    assert refused.value.holder.pid == holder.pid


def test_a_holder_killed_by_sigkill_leaves_no_lock_behind(lock_url: str, start_holder) -> None:  # type: ignore[no-untyped-def]
    holder = start_holder(lock_url)
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=command_timeout_s)
    lock = acquire_within_deadline(lock_url)
    try:
        # The killed holder's record is still there; a refusal names the new holder.
        with pytest.raises(WriterLocked) as refused:
            acquire_writer_lock(lock_url)
        assert_names_holder(str(refused.value), lock_url, os.getpid())
    finally:
        lock.release()


def test_release_frees_the_lock(lock_url: str) -> None:
    lock = acquire_writer_lock(lock_url)
    lock.check()
    with pytest.raises(WriterLocked):
        acquire_writer_lock(lock_url)  # the same process is a second writer too
    lock.release()
    lock.release()  # twice is harmless
    with acquire_writer_lock(lock_url) as again:
        again.check()
    acquire_writer_lock(lock_url).release()


def test_memory_needs_no_lock() -> None:
    with acquire_writer_lock("memory:"), acquire_writer_lock("memory:") as second:
        second.check()


def test_a_bad_url_is_refused_as_the_store_refuses_it() -> None:
    with pytest.raises(StoreError, match="unknown scheme"):
        acquire_writer_lock("mysql://x")


def test_sqlite_lock_file_lives_beside_the_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    with acquire_writer_lock(url) as lock:
        assert writer_lock_path(f"{tmp_path}/events.db") == tmp_path / "events.db-writer.lock"
        assert (tmp_path / "events.db-writer.lock").exists()
        (tmp_path / "events.db-writer.lock").unlink()
        with pytest.raises(StoreError, match="was lost"):
            lock.check()


def test_sqlite_in_a_missing_folder_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot lock .* for writing: cannot open the lock file") as refused:
        acquire_writer_lock(f"sqlite:///{tmp_path}/missing/events.db")
    assert not isinstance(refused.value, WriterLocked)


def test_unreachable_postgres_is_a_store_error_without_the_password() -> None:
    with pytest.raises(StoreError, match=r"^cannot connect to PostgreSQL at postgresql://postgres:\*\*\*@") as refused:
        acquire_writer_lock(unreachable_postgres_url)
    assert "secret" not in str(refused.value)


@pytest.mark.postgres
def test_postgres_lock_lost_with_its_session_is_noticed(postgres_lock_url: str) -> None:
    import psycopg

    lock_url = postgres_lock_url
    lock = acquire_writer_lock(lock_url)
    try:
        with psycopg.connect(postgres_url(), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (lock._connection.info.backend_pid,))  # type: ignore[attr-defined]
        with pytest.raises(StoreError, match="was lost"):
            lock.check()
        acquire_within_deadline(lock_url).release()
    finally:
        lock.release()


# -------------------------------------------------------------- the commands


def test_ingest_is_refused_while_another_writer_holds_the_lock(lock_url: str, start_holder) -> None:  # type: ignore[no-untyped-def]
    assert main(["ingest", "--quiet", "--store", lock_url, str(fixture_trace)]) == 0
    head = head_of(lock_url)
    holder = start_holder(lock_url)
    ingest = subprocess.run(
        [sys.executable, "-m", "tandem.adapters.cli", "ingest", "--store", lock_url, str(other_trace)],
        cwd=repository,
        capture_output=True,
        text=True,
        timeout=command_timeout_s,
    )
    assert ingest.returncode == 1, ingest.stderr
    assert ingest.stderr.startswith("tandem: ") and ingest.stderr.endswith("\n"), ingest.stderr
    assert_names_holder(ingest.stderr.removeprefix("tandem: ").removesuffix("\n"), lock_url, holder.pid)
    assert head_of(lock_url) == head
    # Readers never need the lock.
    show = subprocess.run(
        [sys.executable, "-m", "tandem.adapters.cli", "show", "health", "--store", lock_url, "--json"],
        cwd=repository,
        capture_output=True,
        text=True,
        timeout=command_timeout_s,
    )
    assert show.returncode == 0, show.stderr
    assert '"watchdog_generation"' in show.stdout


@pytest.mark.parametrize("command", ["replay", "demo", "import"])
def test_every_writing_command_is_refused_while_locked(  # type: ignore[no-untyped-def]
    lock_url: str, start_holder, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ingest", "--quiet", "--store", lock_url, str(fixture_trace)]) == 0
    exported = tmp_path / "events.jsonl"
    assert main(["export", "--store", lock_url, "--output", str(exported)]) == 0
    head = head_of(lock_url)
    arguments = {
        "replay": ["replay", str(other_trace), "--store", lock_url],
        "demo": ["demo", "--store", lock_url],
        "import": ["import", str(exported), "--store", lock_url],
    }[command]
    holder = start_holder(lock_url)
    capsys.readouterr()
    assert main(arguments) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert_names_holder(captured.err.removeprefix("tandem: ").removesuffix("\n"), lock_url, holder.pid)
    assert head_of(lock_url) == head
    for reader in (["verify", "--store", lock_url], ["export", "--store", lock_url, "--output", str(exported)]):
        assert main(reader) == 0, reader


# ------------------------------------------- SQLite: one lock per file, not per name


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


@pytest.fixture
def aliases(tmp_path: Path) -> dict[str, Path]:
    """A store, `s.db`, and two more names for it: a symlink and a hard link
    (made after the store, as an operator would beside a running writer)."""
    database = tmp_path / "s.db"
    assert main(["ingest", "--quiet", "--store", sqlite_url(database), str(fixture_trace)]) == 0
    (tmp_path / "sym.db").symlink_to("s.db")
    return {"file": database, "symlink": tmp_path / "sym.db", "hard link": tmp_path / "hard.db"}


@pytest.mark.parametrize("alias", ["symlink", "hard link"])
def test_sqlite_another_name_of_a_locked_file_is_refused_naming_the_holder(  # type: ignore[no-untyped-def]
    aliases: dict[str, Path], start_holder, alias: str
) -> None:
    holder = start_holder(sqlite_url(aliases["file"]))
    os.link(aliases["file"], aliases["hard link"])
    url = sqlite_url(aliases[alias])
    with pytest.raises(WriterLocked) as refused:
        acquire_writer_lock(url)
    assert_names_holder(str(refused.value), url, holder.pid)


@pytest.mark.parametrize("alias", ["symlink", "hard link"])
def test_sqlite_one_process_locking_a_file_under_two_names_is_refused(aliases: dict[str, Path], alias: str) -> None:
    with acquire_writer_lock(sqlite_url(aliases["file"])):
        os.link(aliases["file"], aliases["hard link"])
        url = sqlite_url(aliases[alias])
        with pytest.raises(WriterLocked) as refused:
            acquire_writer_lock(url)
        assert_names_holder(str(refused.value), url, os.getpid())
    aliases["hard link"].unlink()
    # And the other way round: held under the symlink, the file's own name is refused.
    if alias == "symlink":
        with acquire_writer_lock(sqlite_url(aliases["symlink"])), pytest.raises(WriterLocked) as refused:
            acquire_writer_lock(sqlite_url(aliases["file"]))
        assert_names_holder(str(refused.value), sqlite_url(aliases["file"]), os.getpid())


def test_sqlite_a_file_with_two_hard_links_is_refused_to_every_writer(aliases: dict[str, Path]) -> None:
    # SQLite names its -wal after the name it opened: two names, two WALs.
    os.link(aliases["file"], aliases["hard link"])
    for name in ("file", "hard link"):
        with pytest.raises(StoreError, match="has 2 hard links") as refused:
            acquire_writer_lock(sqlite_url(aliases[name]))
        assert not isinstance(refused.value, WriterLocked)
    aliases["hard link"].unlink()
    acquire_writer_lock(sqlite_url(aliases["file"])).release()


def test_sqlite_a_renamed_file_is_still_locked_by_its_holder(aliases: dict[str, Path], start_holder) -> None:  # type: ignore[no-untyped-def]
    holder = start_holder(sqlite_url(aliases["file"]))
    moved = aliases["file"].with_name("moved.db")
    aliases["file"].rename(moved)
    with pytest.raises(WriterLocked) as refused:
        acquire_writer_lock(sqlite_url(moved))
    assert_names_holder(str(refused.value), sqlite_url(moved), holder.pid)


def test_sqlite_a_new_store_is_locked_under_every_name_and_left_absent_if_unused(tmp_path: Path) -> None:
    (tmp_path / "sym.db").symlink_to("new.db")  # dangling: the first writer creates new.db
    with acquire_writer_lock(sqlite_url(tmp_path / "sym.db")):
        with pytest.raises(WriterLocked):
            acquire_writer_lock(sqlite_url(tmp_path / "new.db"))
        os.link(tmp_path / "new.db", tmp_path / "hard.db")
        with pytest.raises(WriterLocked):
            acquire_writer_lock(sqlite_url(tmp_path / "hard.db"))
        (tmp_path / "hard.db").unlink()
    # Nothing was written: the lock leaves no empty database behind (a reader says it does not exist).
    assert not (tmp_path / "new.db").exists()
    with acquire_writer_lock(sqlite_url(tmp_path / "new.db")):
        store = open_store(sqlite_url(tmp_path / "new.db"))
        store.close()
    assert head_of(sqlite_url(tmp_path / "sym.db")) == 0
