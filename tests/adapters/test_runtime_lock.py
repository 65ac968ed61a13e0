"""A runtime keeps the store's writer lock or stops writing: a lock file
removed under it is taken again; one another writer took meanwhile (the lock
file removed and the database file replaced: the file itself is locked too)
stops it."""

from __future__ import annotations

import datetime
import os
import sqlite3
from pathlib import Path

import pytest

from tandem.adapters.runtime import LockLost, Runtime, Settings
from tandem.adapters.writer_lock import WriterLocked, acquire_writer_lock, writer_lock_path

T0 = datetime.datetime(2026, 3, 1, 9, 0, tzinfo=datetime.timezone.utc)


def runtime_on(tmp_path: Path) -> tuple[Runtime, Path]:
    database = tmp_path / "store.db"
    runtime = Runtime(Settings(store_url=f"sqlite:///{database}", tick_s=0), clock=lambda: T0, monotonic=lambda: 0.0)
    runtime.open()
    runtime.start()
    return runtime, writer_lock_path(str(database))


def replace_with_a_copy(database: Path) -> None:
    """Put a copy of the store (SQLite's backup) in place of its file: a new file, the same events."""
    copy = database.with_name("copy.db")
    with sqlite3.connect(database) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    os.replace(copy, database)


def test_a_removed_lock_file_is_taken_again(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runtime, lock_file = runtime_on(tmp_path)
    try:
        lock_file.unlink()
        runtime.round()
        assert lock_file.exists() and runtime.lock is not None
        runtime.lock.check()  # ours again
        assert "taken again" in capsys.readouterr().err
    finally:
        runtime.close()


def test_a_lock_another_writer_took_stops_the_runtime(tmp_path: Path) -> None:
    runtime, lock_file = runtime_on(tmp_path)
    try:
        lock_file.unlink()
        # The database file itself stays locked: its lock file removed, no other writer gets in...
        with pytest.raises(WriterLocked):
            acquire_writer_lock(runtime.settings.store_url)
        # ... unless the database file is replaced too: a new file, locked on a new lock file.
        replace_with_a_copy(tmp_path / "store.db")
        other = acquire_writer_lock(runtime.settings.store_url)  # another writer, on a new lock file
        try:
            with pytest.raises(LockLost, match="is locked by pid"):
                runtime.round()
            assert runtime.lock is None
            head = runtime.engine.store.head()  # type: ignore[union-attr]
            runtime.stop(expected=True)  # records nothing without the lock
            assert runtime.engine.store.head() == head  # type: ignore[union-attr]
        finally:
            other.release()
    finally:
        runtime.close()
