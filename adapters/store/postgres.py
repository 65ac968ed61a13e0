"""`postgresql://...`: the store several engine processes share, through
eventsourcing's PostgreSQL recorder (psycopg 3)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from eventsourcing.persistence import InterfaceError, OperationalError
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from psycopg import sql
from psycopg.rows import tuple_row

from tandem.adapters.store.recorder import fenced_marker, log_stream_id
from tandem.adapters.store.sql import SqlDialect, SqlStore
from tandem.adapters.store.url import (
    claims_table_suffix,
    fence_table_suffix,
    keys_table_suffix,
    keys_through_table_suffix,
    postgres_connect_timeout_s,
    redacted,
    sessions_table_suffix,
    snapshot_table_suffix,
)
from tandem.replay.port import CommitUnknown, StoreError

# Every creation of Tandem's tables in a database waits for this advisory
# lock (transaction-level, one bigint key: "TAND-DDL", a key space apart from
# the writer locks' two int4 keys, adapters/writer_lock.py).
table_creation_lock_key = 0x54414E442D44444C


def serialize_table_creation(cursor: Any) -> None:
    """Wait, in the cursor's transaction, until no other session of the
    database creates Tandem's tables: concurrent DDL on one catalog row (the
    recorder's shared function, a new type) fails `tuple concurrently
    updated` or a duplicate key. Held until the transaction ends."""
    cursor.execute("SELECT pg_advisory_xact_lock(%s)", (table_creation_lock_key,))


class _LogPostgresRecorder(PostgresApplicationRecorder):
    """eventsourcing's PostgreSQL application recorder, inserting once: its
    `insert_events` retries a lost connection ten times, each waiting for the
    pool, which keeps a writer from answering for about a minute while the
    server is away; and a retried commit whose first outcome is unknown
    would be refused by the positions' key anyway. Here the append fails at
    once and the store asks what happened (`RecorderStore.outcome`).

    With `fence=(statement, generation)` the append's transaction first runs
    the fence's check (pipelined with the insert: no round trip more), which
    fails the transaction unless the store's writer generation is ours."""

    def insert_events(self, stored_events: Any, **options: Any) -> None:
        """One transaction, pipelined (one round trip): the fence's check, if
        any, then what eventsourcing's recorder does (the table lock, the
        NOTIFY, the rows). Errors come as eventsourcing's (its datastore
        translates them), the first failed statement's: eventsourcing's own
        method reports the pipeline's later "pipeline aborted" instead."""
        fence = options.get("fence")
        with (
            self.datastore.get_connection() as connection,
            connection.pipeline() as pipeline,
            connection.transaction(),
            connection.cursor() as cursor,
        ):
            if fence is not None:
                statement, generation = fence
                cursor.execute(statement, (generation, generation), prepare=True)
            self._insert_stored_events(cursor, stored_events)
            pipeline.sync()

    def create_table(self) -> None:
        """eventsourcing's creation (its row type, the events table, its
        index and the `es_insert_events_*` function every recorder of the
        database replaces), in one transaction that holds the table-creation
        lock: two stores opened at once, on two tables, no longer collide."""
        with self.datastore.transaction(commit=True) as cursor:
            serialize_table_creation(cursor)
            for statement in self.sql_create_statements:
                if "CREATE TYPE" in statement.as_string():  # no IF NOT EXISTS: a savepoint for "it exists"
                    with contextlib.suppress(psycopg.errors.DuplicateObject), cursor.connection.transaction():
                        cursor.execute(statement, prepare=False)
            self._create_table(cursor)
        self.datastore.register_type_adapters()


class PostgresStore(SqlStore):
    dialect = SqlDialect(
        placeholder="%s", integer="bigint", blob="bytea", one_of="= ANY(%s)",
        table_exists="SELECT 1 WHERE to_regclass(%s) IS NOT NULL",  # a schema-qualified name
        for_update=" FOR UPDATE",
    )  # fmt: skip

    def __init__(self, url: str, table: str, connect: dict[str, Any], *, read_only: bool = False) -> None:
        self._connect = connect
        self._table = table
        self._broken = False
        self._renewing = threading.Lock()
        datastore, recorder = self._open(url)
        names = {"events": table, "snapshots": table + snapshot_table_suffix, "fence": table + fence_table_suffix,
                 "claims": table + claims_table_suffix, "keys": table + keys_table_suffix,
                 "keys_through": table + keys_through_table_suffix, "sessions": table + sessions_table_suffix}  # fmt: skip
        identifiers = {key: sql.Identifier(datastore.schema, name) for key, name in names.items()}
        compose = lambda text: sql.SQL(text).format(**identifiers)  # noqa: E731
        tables = tuple(f"{datastore.schema}.{names[key]}" for key in ("events", "snapshots", "claims", "keys_through"))
        super().__init__(url, datastore, recorder, compose, tables, read_only=read_only)  # type: ignore[arg-type]
        # The fence's check in an append's transaction: a statement cannot
        # raise by itself, so a generation not ours casts the refusal's text
        # to an integer, and the error quotes it (`fenced_message`).
        self._fence_check = compose(
            "SELECT CASE WHEN g.generation = %s THEN 0 ELSE ('" + fenced_marker + "writer generation ' || %s::text"
            " || ' was fenced off: generation ' || g.generation::text || ' writes the store now')::integer END"
            " FROM (SELECT generation FROM {fence} WHERE slot = 1 FOR SHARE) g"
        )
        # eventsourcing's recorder NOTIFYs this channel in every append's
        # transaction (delivered at its commit): what a follower LISTENs to.
        self.notify_channel: str = recorder.channel_name

    def _open(self, url: str) -> tuple[PostgresDatastore, _LogPostgresRecorder]:
        """A datastore and recorder on a new pool. Probes first: the pool
        would retry in the background and report a timeout, not the reason."""
        connect = self._connect
        try:
            psycopg.connect(**connect, connect_timeout=postgres_connect_timeout_s).close()
        except psycopg.Error as error:
            reason = str(error).strip() or type(error).__name__
            raise StoreError(f"cannot connect to PostgreSQL at {redacted(url)}: {reason}") from None
        datastore = PostgresDatastore(
            dbname=connect["dbname"],
            host=connect["host"],
            port=connect["port"],
            user=connect["user"],
            password=connect["password"],
            connect_timeout=postgres_connect_timeout_s,
            # No open timeout: eventsourcing would open the pool with it on
            # every use, and psycopg's pool, not full within it (the server
            # restarting), closes itself for good.
            pool_open_timeout=None,
            originator_id_type="text",
        )
        return datastore, _LogPostgresRecorder(datastore, events_table_name=self._table)

    # -- a lost connection: a new pool and one more try; a lost server: fail at once
    def _guarded(self, function: Any, *arguments: Any, verb: str = "reading") -> Any:
        return self._once_more(super()._guarded, function, *arguments, verb=verb)

    def _insert(self, stored: list[Any], expected_head: int) -> int:
        """Once; after a lost connection (a server restart, a terminated
        session, perhaps at COMMIT) the store was asked what happened
        (`RecorderStore.outcome`, on a new pool): stored, the append stands;
        nothing stored, it is tried once more on the new pool; the store
        unreachable, CommitUnknown (never tried again: it may be stored)."""
        return self._once_more(super()._insert, stored, expected_head)

    def _once_more(self, operation: Any, *arguments: Any, **options: Any) -> Any:
        """`operation`; after a lost connection (a server restart, a
        terminated session: the pool's connections are dead) once more on a
        new pool, which fails at once while the server is away. Readers may
        run it from several threads at once: the pool is renewed once, by
        the first to find it broken, and only a failure on the current pool
        marks it broken (not one on a pool already replaced)."""
        for attempt in (1, 2):
            datastore = self._current_datastore()
            try:
                return operation(*arguments, **options)
            except StoreError as error:
                if attempt == 2 or isinstance(error, CommitUnknown) or not _connection_lost(error):
                    raise
                with self._renewing:
                    self._broken = self._broken or self._datastore is datastore
        raise AssertionError("unreachable")

    def _current_datastore(self) -> PostgresDatastore:
        """The datastore, on a new pool if the current one's connections
        were lost: the old pool's connections are dead, and psycopg's pool
        reconnects only after a back-off that grows with each failure.
        StoreError while the server is away."""
        old = None
        with self._renewing:
            if self._broken:
                datastore, recorder = self._open(self.url)
                old, self._datastore, self._recorder = self._datastore, datastore, recorder
                self._broken = False
            current = self._datastore
        if old is not None:
            old.close()  # a query in flight on it finishes; its connection is closed when returned
        return current

    def _insert_options(self) -> dict[str, Any]:
        return {} if self._generation is None else {"fence": (self._fence_check, self._generation)}

    @contextmanager
    def _write_transaction(self) -> Iterator[Any]:
        with self._current_datastore().transaction(commit=True) as cursor:

            def run(name: str, *parameters: Any, rows: Sequence[tuple[Any, ...]] | None = None) -> list[tuple[Any, ...]]:
                if rows is not None:
                    cursor.executemany(self._statements[name], rows)
                    return []
                cursor.execute(self._statements[name], parameters)
                return [tuple(row.values()) if isinstance(row, dict) else tuple(row) for row in cursor.fetchall()] if cursor.description else []

            yield run

    def _select_page(self, after: int, until: int | None, limit: int) -> list[tuple[int, bytes]]:
        # Binary results: bytea arrives as raw bytes, not hex text to decode
        # (measured: ~1.6x faster page reads). Always a bounded window:
        # positions are dense (1..head), so (after, after+limit] is the same
        # page as LIMIT, and the planner never sorts the rest of the log for
        # it (without statistics, as after a bulk import, it chose a bitmap
        # scan of every later row and an external sort per page: ~0.3 s a
        # page at 700k events).
        upper = after + limit if until is None else min(until, after + limit)
        rows = self._query("window", log_stream_id, after, upper, limit)
        return [(position, state if isinstance(state, bytes) else bytes(state)) for position, state in rows]

    def _select_positions(self, positions: list[int]) -> list[tuple[int, bytes]]:
        rows = self._query("positions", log_stream_id, positions)  # a list is sent as an array
        return [(position, state if isinstance(state, bytes) else bytes(state)) for position, state in rows]

    def _execute(self, name: str, *parameters: Any) -> None:
        with self._current_datastore().transaction(commit=True) as cursor:
            cursor.execute(self._statements[name], parameters)

    def _query(self, name: str, *parameters: Any) -> list[tuple[Any, ...]]:
        with (
            self._datastore.get_connection() as connection,
            connection.cursor(row_factory=tuple_row, binary=True) as cursor,
        ):
            cursor.execute(self._statements[name], parameters)
            return cursor.fetchall()


def _connection_lost(error: StoreError) -> bool:
    """Whether a store error was a lost or unobtainable connection."""
    return isinstance(error.__cause__, (OperationalError, InterfaceError))
