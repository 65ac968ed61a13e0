"""`sqlite:///...`: the embedded default, a single file in WAL mode, on
eventsourcing's SQLite recorder (its table and statements) with a durable
pool and one writer connection; an append is one `executemany` of the
recorder's INSERT between BEGIN and COMMIT on that connection."""

from __future__ import annotations

import os
import sqlite3
import threading
import urllib.parse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from eventsourcing.persistence import IntegrityError, InterfaceError, OperationalError
from eventsourcing.sqlite import (
    SQLITE3_DEFAULT_LOCK_TIMEOUT,
    SQLiteApplicationRecorder,
    SQLiteConnection,
    SQLiteConnectionPool,
    SQLiteCursor,
    SQLiteDatastore,
    SQLiteTransaction,
)

from tandem.adapters.store.sql import SqlDialect, SqlStore
from tandem.adapters.store.recorder import fenced_marker
from tandem.adapters.store.url import (
    claims_table_suffix,
    fence_table_suffix,
    keys_table_suffix,
    keys_through_table_suffix,
    sessions_table_suffix,
    snapshot_table_suffix,
)
from tandem.replay.port import Fenced, StoreError


class _DurableSQLiteConnectionPool(SQLiteConnectionPool):
    """eventsourcing's SQLite pool with two changes to each new connection.

    - `PRAGMA synchronous=FULL`, explicitly. In WAL mode SQLite's usual advice
      is NORMAL, which can lose the last commits on power loss; an appended
      event is a fact others acted on, so every commit waits for fsync. It is
      a per-connection setting, hence here.
    - A statement cache of 64. eventsourcing passes `cached_statements=True`,
      which sqlite3 reads as a cache of ONE statement: "BEGIN" and the INSERT
      evict each other and every append re-prepares both (measured: about a
      fifth of the recorder's overhead per single-event append).

    Otherwise the same as `SQLiteConnectionPool._create_connection` (9.5.6).
    """

    read_only = False  # a reader's pool: its database opened mode=ro, its journal mode left alone

    def _create_connection(self) -> SQLiteConnection:
        try:
            connection = sqlite3.connect(
                database=self.db_name,
                uri=True,
                check_same_thread=False,
                isolation_level=None,  # autocommit; the recorder issues BEGIN
                cached_statements=64,
                timeout=self.lock_timeout or SQLITE3_DEFAULT_LOCK_TIMEOUT,
            )
        except (sqlite3.Error, TypeError) as error:
            raise InterfaceError(error) from error
        if not self.is_sqlite_memory_mode and not self.read_only:
            mode = connection.execute("PRAGMA journal_mode").fetchone()[0]
            if mode.lower() != "wal":
                connection.execute("PRAGMA journal_mode=WAL")
                self.journal_mode_was_changed_to_wal = True
            self.is_journal_mode_wal = True
        connection.execute("PRAGMA synchronous=FULL")
        connection.row_factory = sqlite3.Row  # the recorder reads rows by name
        return SQLiteConnection(sqlite_conn=connection, max_age=self.max_age)


class _DurableSQLiteDatastore(SQLiteDatastore):
    """eventsourcing's SQLite datastore with our pool and one writer connection.

    The recorder's `insert_events` asks `transaction(commit=True)`. The stock
    path takes a connection from the pool through three nested context
    managers, a semaphore, a condition and the pool's writer lock, then
    returns it: about 25 us of Python per append, as much as the INSERT and
    BEGIN themselves. A store object writes from one engine loop, so it keeps
    one writer connection behind a lock instead. Reads still use the pool.
    """

    def __init__(self, db_name: str, *, read_only: bool = False, **options: Any) -> None:
        super().__init__(db_name, **options)
        # The parent made a plain pool; it has no connections yet (they are
        # created on first use), so swapping it loses nothing.
        self.pool = _DurableSQLiteConnectionPool(db_name=db_name)
        self.pool.read_only = read_only
        self._writer_lock = threading.Lock()
        self._writer: SQLiteConnection | None = None

    @contextmanager
    def transaction(self, *, commit: bool) -> Iterator[SQLiteCursor]:
        if not commit:
            with super().transaction(commit=False) as cursor:
                yield cursor
            return
        with self._writer_lock:
            if self._writer is None:
                self._writer = self.pool._create_connection()
            with SQLiteTransaction(self._writer, commit=True) as cursor, cursor:
                yield cursor

    @contextmanager
    def immediate(self) -> Iterator[sqlite3.Cursor]:
        """A write transaction on the writer connection begun IMMEDIATE: the
        database's write lock is taken at its start (waiting the lock timeout
        for another writer, such as the search index's keeper), so a
        transaction that reads before it writes never fails at its first
        write because another writer committed since its read (SQLite's
        SQLITE_BUSY_SNAPSHOT, which no wait helps). Committed at its end,
        rolled back on an exception; errors raised as eventsourcing's."""
        with self._writer_lock:
            if self._writer is None:
                self._writer = self.pool._create_connection()
            connection = self._writer._sqlite_conn
            cursor = connection.cursor()
            cursor.row_factory = None
            try:
                connection.execute("BEGIN IMMEDIATE")
                yield cursor
                connection.execute("COMMIT")
            except BaseException as error:
                if connection.in_transaction:
                    try:
                        connection.rollback()
                    except sqlite3.Error:
                        pass  # the first error is the one to report
                if isinstance(error, sqlite3.Error):
                    raise (IntegrityError if isinstance(error, sqlite3.IntegrityError) else OperationalError)(error) from error
                raise
            finally:
                cursor.close()

    def insert_rows(self, statement: str, rows: Sequence[tuple[Any, ...]], fence: tuple[str, int] | None = None) -> None:
        """`BEGIN`, one `executemany`, `COMMIT` on the writer connection: what
        `transaction(commit=True)` and the recorder's `insert_events` do, with
        no context manager or wrapper object between (they cost about as much
        CPU as the INSERT of a single input's events). Errors are raised as
        eventsourcing's (IntegrityError for a taken position), after a rollback.
        `fence`: (the statement reading the store's writer generation, ours):
        read first, in the same transaction (BEGIN IMMEDIATE: the database is
        ours from then to the commit), and the rows are not written (Fenced)
        unless it is ours."""
        with self._writer_lock:
            if self._writer is None:
                self._writer = self.pool._create_connection()
            connection = self._writer._sqlite_conn
            try:
                if fence is None:
                    connection.execute("BEGIN")
                else:
                    connection.execute("BEGIN IMMEDIATE")
                    _check_fence(connection, *fence)
                connection.executemany(statement, rows)
                connection.execute("COMMIT")
            except Fenced:
                connection.rollback()
                raise
            except sqlite3.Error as error:
                if connection.in_transaction:
                    try:
                        connection.rollback()
                    except sqlite3.Error:
                        pass  # the first error is the one to report; SQLite rolls back a failed commit itself
                kind = IntegrityError if isinstance(error, sqlite3.IntegrityError) else OperationalError
                raise kind(error) from error

    def close(self) -> None:
        # Also called by the parent's __del__, perhaps on a half-built object.
        with getattr(self, "_writer_lock", threading.Lock()):
            if getattr(self, "_writer", None) is not None:
                self._writer.close()
                self._writer = None
        super().close()


def _check_fence(connection: sqlite3.Connection, statement: str, generation: int) -> None:
    row = connection.execute(statement).fetchone()
    current = None if row is None else row[0]
    if current != generation:
        raise Fenced(f"{fenced_marker}writer generation {generation} was fenced off: generation {current} writes the store now")


def reader_uri(path: str, directory: str) -> str:
    """A reader's URI: mode=ro, and immutable=1 where no writer can be live.
    A WAL store's readers write its shared-memory index beside it, which a
    read-only file system, or a folder the reader may not write, refuses.
    On a read-only file system nobody can be writing; in a folder without
    `PATH-wal`, no writer is (a WAL writer keeps that file while it runs).
    There SQLite may read the file as it is, without locks (elsewhere it
    must not: a live writer needs them)."""
    uri = f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro"
    read_only_fs = bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    if read_only_fs or (not os.access(directory, os.W_OK) and not os.path.exists(path + "-wal")):
        uri += "&immutable=1"
    return uri


def _why_not_writable(path: str, directory: str) -> str | None:
    """What keeps a writer from writing the store at `path`, if it is the file system's permissions."""
    if not os.access(directory, os.W_OK):
        return f"directory {directory!r} is not writable (a writer keeps {os.path.basename(path)}-wal and -shm beside the store)"
    if os.path.exists(path) and not os.access(path, os.W_OK):
        return f"{path!r} is not writable"
    return None


class SQLiteStore(SqlStore):
    dialect = SqlDialect(
        placeholder="?", integer="INTEGER", blob="BLOB", one_of="IN (SELECT value FROM json_each(?))",
        table_exists="SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", contains="instr(state, ?) > 0",
        keyed_table=" WITHOUT ROWID",
    )  # fmt: skip

    def __init__(self, url: str, path: str, table: str, *, read_only: bool = False) -> None:
        """`read_only`: a reader's open (contract of `open_store`): the file
        must exist and be a Tandem store, and is opened mode=ro."""
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise StoreError(f"cannot open {url}: directory {directory!r} does not exist")
        if os.path.isdir(path):
            raise StoreError(f"cannot open {url}: {path!r} is a directory")
        if read_only and not os.path.isfile(path):
            raise StoreError(f"cannot open {url}: {path!r} does not exist (a command that only reads creates no store)")
        refused = None if read_only else _why_not_writable(path, directory)
        if refused is not None:
            raise StoreError(f"cannot open {url} for writing: {refused}")
        name = reader_uri(path, directory) if read_only else path
        datastore = _DurableSQLiteDatastore(name, read_only=read_only, originator_id_type="text")
        recorder = SQLiteApplicationRecorder(datastore, events_table_name=table)  # its table and INSERT statement
        suffixes = (
            snapshot_table_suffix, fence_table_suffix, claims_table_suffix, keys_table_suffix, keys_through_table_suffix,
            sessions_table_suffix,
        )  # fmt: skip
        snapshots, fence, claims, keys, keys_through, sessions = (table + suffix for suffix in suffixes)
        compose = lambda text: text.format(  # noqa: E731
            events=table, snapshots=snapshots, fence=fence, claims=claims, keys=keys, keys_through=keys_through, sessions=sessions
        )
        try:
            super().__init__(url, datastore, recorder, compose, (table, snapshots, claims, keys_through), read_only=read_only)
        except sqlite3.DatabaseError as error:
            datastore.close()
            if "file is not a database" in str(error):
                raise StoreError(f"cannot open {url}: {path!r} is not an SQLite database ({error})") from None
            raise StoreError(f"cannot open {url}: {error}") from None

    def _write_rows(self, rows: list[tuple[str, int, str, bytes]]) -> None:
        fence = None if self._generation is None else (self._statements["fence_read"], self._generation)
        self._datastore.insert_rows(self._recorder.insert_events_statement, rows, fence)

    @contextmanager
    def _write_transaction(self) -> Iterator[Any]:
        with self._datastore.immediate() as raw:

            def run(name: str, *parameters: Any, rows: Sequence[tuple[Any, ...]] | None = None) -> list[tuple[Any, ...]]:
                if rows is not None:
                    raw.executemany(self._statements[name], rows)
                    return []
                raw.execute(self._statements[name], parameters)
                return raw.fetchall()

            yield run

    def _execute(self, name: str, *parameters: Any) -> None:
        with self._datastore.transaction(commit=True) as cursor:
            cursor.sqlite_cursor.execute(self._statements[name], parameters)

    def _query(self, name: str, *parameters: Any) -> list[tuple[Any, ...]]:
        return self._query_statement(self._statements[name], *parameters)

    def _query_statement(self, statement: str, *parameters: Any) -> list[tuple[Any, ...]]:
        with self._datastore.transaction(commit=False) as cursor:
            raw = cursor.sqlite_cursor
            raw.row_factory = None  # plain tuples: faster than sqlite3.Row
            raw.execute(statement, parameters)
            return raw.fetchall()
