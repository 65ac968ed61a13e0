"""The search index of a PostgreSQL store, in the store's database beside
its log (docs/operations.md, "The search index"): a row per thing and per
input, each with its words as a `tsvector` (made by `array_to_tsvector`
from the words adapters/search/documents.py cut, so PostgreSQL's parser
never splits them otherwise than SQLite's side) under a GIN index, written
by the server that writes the store, never by a follower."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql

from tandem.adapters.search.documents import Batch
from tandem.adapters.search.pool import Pool
from tandem.adapters.search.query import ThingRow, upper_bound
from tandem.adapters.search.sqlite import search_format
from tandem.adapters.store.postgres import serialize_table_creation
from tandem.adapters.store.url import postgres_connect_timeout_s, redacted
from tandem.replay.port import StoreError

schema = "public"  # where eventsourcing's recorder makes the store's tables
application_name = "tandem search index"  # its sessions, as pg_stat_activity shows them

# {s}, {s_things}, …: the events table's name + "_search", "_search_things", ….
CREATE = (
    "CREATE TABLE IF NOT EXISTS {s} (slot smallint PRIMARY KEY CHECK (slot = 1), format integer NOT NULL, head bigint NOT NULL)",
    'CREATE TABLE IF NOT EXISTS {s_things} (n bigserial, kind text COLLATE "C" NOT NULL, id bytea NOT NULL,'
    " first bigint NOT NULL, last bigint NOT NULL, words tsvector NOT NULL,"
    " CONSTRAINT {s_t_pk} PRIMARY KEY (n), CONSTRAINT {s_t_key} UNIQUE (kind, id))",
    "CREATE INDEX IF NOT EXISTS {s_t_id} ON {s_things} (id, kind)",
    "CREATE INDEX IF NOT EXISTS {s_t_words} ON {s_things} USING gin (words)",
    'CREATE TABLE IF NOT EXISTS {s_inputs} (position bigint, last bigint NOT NULL, kind text COLLATE "C" NOT NULL,'
    ' actor text COLLATE "C" NOT NULL, id bytea, words tsvector NOT NULL, CONSTRAINT {s_i_pk} PRIMARY KEY (position))',
    "CREATE INDEX IF NOT EXISTS {s_i_kind} ON {s_inputs} (kind, position)",
    "CREATE INDEX IF NOT EXISTS {s_i_actor} ON {s_inputs} (actor, position)",
    "CREATE INDEX IF NOT EXISTS {s_i_id} ON {s_inputs} (id, position DESC) WHERE id IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS {s_i_words} ON {s_inputs} USING gin (words)",
    "INSERT INTO {s} (slot, format, head) VALUES (1, {format}, 0) ON CONFLICT (slot) DO NOTHING",
)
DROP = tuple(f"DROP TABLE IF EXISTS {{{name}}}" for name in ("s_things", "s_inputs", "s"))
THING = "SELECT kind, id, first, last FROM {s_things} WHERE"
STATEMENTS = {
    "state": "SELECT format, head FROM {s} WHERE slot = 1",
    "exists": "SELECT to_regclass({s_name}) IS NOT NULL",
    "last_input": "SELECT position, last FROM {s_inputs} ORDER BY position DESC LIMIT 1",
    "things_exact": THING + " id = %s AND first <= %s ORDER BY n DESC LIMIT %s",
    "things_prefix": THING + " id > %s AND id < %s AND first <= %s ORDER BY id, kind LIMIT %s",
    "things_prefix_open": THING + " id > %s AND first <= %s ORDER BY id, kind LIMIT %s",
    "things_words": THING + " words @@ %s::tsquery AND first <= %s ORDER BY n DESC LIMIT %s",
    "inputs_id": "SELECT position FROM {s_inputs} WHERE id = %s AND position <= %s ORDER BY position DESC LIMIT %s",
    "inputs_kind": "SELECT position FROM {s_inputs} WHERE kind = %s AND position <= %s ORDER BY position DESC LIMIT %s",
    "inputs_actor": "SELECT position FROM {s_inputs} WHERE actor = %s AND position <= %s ORDER BY position DESC LIMIT %s",
    "inputs_prefix": "SELECT position FROM {s_inputs} WHERE id > %s AND id < %s AND position <= %s"
    " ORDER BY id, position DESC LIMIT %s",
    "inputs_prefix_open": "SELECT position FROM {s_inputs} WHERE id > %s AND position <= %s ORDER BY id, position DESC LIMIT %s",
    "inputs_words": "SELECT position FROM {s_inputs} WHERE words @@ %s::tsquery AND position <= %s ORDER BY position DESC LIMIT %s",
    "input_ends": "SELECT position, last FROM {s_inputs} WHERE position = ANY(%s)",
    # the keeper's
    "head_for_write": "SELECT head FROM {s} WHERE slot = 1 AND format = {format} FOR UPDATE",
    "input_insert": "INSERT INTO {s_inputs} (position, last, kind, actor, id, words)"
    " VALUES (%s, %s, %s, %s, %s, array_to_tsvector(%s::text[]))",
    "input_extend": "UPDATE {s_inputs} SET last = %s WHERE position = %s",
    "thing_upsert": "INSERT INTO {s_things} (kind, id, first, last, words) VALUES (%s, %s, %s, %s, array_to_tsvector(%s::text[]))"
    " ON CONFLICT (kind, id) DO UPDATE SET last = EXCLUDED.last",
    "head_set": "UPDATE {s} SET head = %s WHERE slot = 1",
}
# The tables' names, after the events table's; index and constraint names
# are the schema's, so each carries it too (at most 43 characters + 18).
TABLES = {"s": "_search", "s_things": "_search_things", "s_inputs": "_search_inputs"}
OBJECTS = {key: "_search_" + key[2:] for key in ("s_t_pk", "s_t_key", "s_t_id", "s_t_words", "s_i_pk", "s_i_kind", "s_i_actor", "s_i_id", "s_i_words")}


def tsquery(words: Sequence[str]) -> str:
    """PostgreSQL's query for "every one of these words", each a quoted lexeme (read as it is: no parser)."""
    return " & ".join("'" + word.replace("\\", "\\\\").replace("'", "''") + "'" for word in words)


class PostgresIndex:
    kind = "postgresql"

    def __init__(self, url: str, connect: dict[str, Any], table: str, *, read_only: bool) -> None:
        self.url = url
        self.read_only = read_only
        self._connect = connect
        names: dict[str, Any] = {key: sql.Identifier(schema, table + suffix) for key, suffix in TABLES.items()}
        names |= {key: sql.Identifier(table + suffix) for key, suffix in OBJECTS.items()}
        names["s_name"] = sql.Literal(f"{schema}.{table}{TABLES['s']}")
        names["format"] = sql.Literal(search_format)
        compose = lambda text: sql.SQL(text).format(**names)  # noqa: E731
        self._statements = {name: compose(text) for name, text in STATEMENTS.items()}
        self._create = [compose(text) for text in CREATE]
        self._drop = [compose(text) for text in DROP]
        self._reads = Pool(lambda: self._open(read_only=True), _alive)
        self._writes = Pool(lambda: self._open(read_only=False), _alive)

    def _open(self, *, read_only: bool) -> psycopg.Connection[Any]:
        assert read_only or not self.read_only, "a store opened read-only is never written"
        try:
            connection = psycopg.connect(
                **self._connect, connect_timeout=postgres_connect_timeout_s, autocommit=True, application_name=application_name
            )
        except psycopg.Error as error:
            raise StoreError(f"cannot connect to PostgreSQL at {redacted(self.url)}: {str(error).strip()}") from None
        connection.read_only = read_only
        connection.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ if read_only else psycopg.IsolationLevel.READ_COMMITTED
        return connection

    @contextmanager
    def _guarded(self, pool: Pool, verb: str) -> Iterator[psycopg.Connection[Any]]:
        try:
            with pool.connection() as connection:
                yield connection
        except psycopg.Error as error:
            raise StoreError(f"{verb} the search index of {redacted(self.url)} failed: {str(error).strip()}") from error

    # -- upkeep
    def prepare(self, *, drop: bool = False) -> None:
        """Create the tables (dropping them first when asked, or when they are of another format)."""
        with self._guarded(self._writes, "creating") as connection, connection.transaction(), connection.cursor() as cursor:
            serialize_table_creation(cursor)
            row = cursor.execute(self._statements["exists"]).fetchone()
            if row is not None and row[0]:
                state = cursor.execute(self._statements["state"]).fetchone()
                if drop or (state is not None and state[0] != search_format):
                    for statement in self._drop:
                        cursor.execute(statement)
            for statement in self._create:
                cursor.execute(statement)

    def write(self, batch: Batch) -> bool:
        """One transaction: the batch, if the index's head is still `batch.after` (else False, nothing written)."""
        run = self._statements
        with self._guarded(self._writes, "writing") as connection, connection.transaction(), connection.cursor() as cursor:
            row = cursor.execute(run["head_for_write"]).fetchone()
            if row is None or row[0] != batch.after:
                return False
            inputs = [(d.position, d.last, d.kind, d.actor, _bytes(d.id), d.words) for d in batch.inputs]
            if inputs:
                cursor.executemany(run["input_insert"], inputs)
            if batch.extended is not None:
                cursor.execute(run["input_extend"], (batch.extended[1], batch.extended[0]))
            things = [(d.kind, _bytes(d.id), d.first, d.last, d.words) for d in batch.things.values()]
            if things:
                cursor.executemany(run["thing_upsert"], things)
            cursor.execute(run["head_set"], (batch.head,))
            return True

    def close(self) -> None:
        self._reads.close()
        self._writes.close()

    # -- reads
    @contextmanager
    def session(self) -> Iterator[PostgresReads | None]:
        """The reads of one search in one transaction (REPEATABLE READ: one
        state of the index); None when the store has no index of this format."""
        with self._guarded(self._reads, "reading") as connection, connection.transaction():
            reads = PostgresReads(connection, self._statements)
            yield reads if reads.present() else None


def _alive(connection: psycopg.Connection[Any]) -> None:
    """Raises if the connection's session has ended (one round trip)."""
    connection.execute("SELECT 1")


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8", "surrogatepass")


class PostgresReads:
    def __init__(self, connection: psycopg.Connection[Any], statements: dict[str, Any]) -> None:
        self._connection = connection
        self._statements = statements
        self.head = 0

    def _rows(self, name: str, *parameters: Any) -> list[Any]:
        return self._connection.execute(self._statements[name], parameters).fetchall()

    def present(self) -> bool:
        if not self._rows("exists")[0][0]:
            return False
        row = self._rows("state")
        if not row or row[0][0] != search_format:
            return False
        self.head = row[0][1]
        return True

    def open_input(self) -> int | None:
        """The last input, if its events may go on after the head (the keeper's)."""
        last = self._rows("last_input")
        return last[0][0] if last and last[0][1] == self.head else None

    def things_exact(self, identifier: str, until: int, limit: int) -> list[ThingRow]:
        return _things(self._rows("things_exact", _bytes(identifier), until, limit))

    def things_prefix(self, prefix: str, until: int, limit: int) -> list[ThingRow]:
        low = _bytes(prefix)
        assert low is not None
        high = upper_bound(low)
        if high is None:
            return _things(self._rows("things_prefix_open", low, until, limit))
        return _things(self._rows("things_prefix", low, high, until, limit))

    def things_words(self, words: Sequence[str], until: int, limit: int) -> list[ThingRow]:
        return _things(self._rows("things_words", tsquery(words), until, limit))

    def inputs_where(self, column: str, value: str, until: int, limit: int) -> list[int]:
        parameter: Any = _bytes(value) if column == "id" else value
        return [row[0] for row in self._rows(f"inputs_{column}", parameter, until, limit)]

    def inputs_prefix(self, prefix: str, until: int, limit: int) -> list[int]:
        low = _bytes(prefix)
        assert low is not None
        high = upper_bound(low)
        if high is None:
            return [row[0] for row in self._rows("inputs_prefix_open", low, until, limit)]
        return [row[0] for row in self._rows("inputs_prefix", low, high, until, limit)]

    def inputs_words(self, words: Sequence[str], until: int, limit: int) -> list[int]:
        return [row[0] for row in self._rows("inputs_words", tsquery(words), until, limit)]

    def input_ends(self, positions: Sequence[int]) -> dict[int, int]:
        return dict(self._rows("input_ends", list(positions)))


def _things(rows: list[Any]) -> list[ThingRow]:
    return [ThingRow(kind, bytes(identifier).decode("utf-8", "surrogatepass"), first, last) for kind, identifier, first, last in rows]
