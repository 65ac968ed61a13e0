"""The search index of an SQLite store, in the store's own file beside its
log (docs/operations.md, "The search index"): a row per thing and per
input, and two FTS5 tables of their words (contentless, `detail=none`: only
which rows hold a word), written by the server that writes the store, on a
connection of its own, never by a reader."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from tandem.adapters.search.documents import Batch
from tandem.adapters.search.pool import Pool
from tandem.adapters.search.query import ThingRow, upper_bound
from tandem.adapters.store.sqlite import reader_uri
from tandem.replay.port import StoreError

search_format = 1  # what the tables hold; another format is rebuilt by the writer, unused by readers
busy_timeout_s = 30  # a write waits this long for the store's writer to commit

# {s}: the events table's name + "_search".
CREATE = (
    'CREATE TABLE IF NOT EXISTS "{s}" (slot INTEGER PRIMARY KEY CHECK (slot = 1), format INTEGER NOT NULL, head INTEGER NOT NULL)',
    'CREATE TABLE IF NOT EXISTS "{s}_things" (n INTEGER PRIMARY KEY, kind TEXT NOT NULL, id BLOB NOT NULL,'
    " first INTEGER NOT NULL, last INTEGER NOT NULL, words TEXT NOT NULL, UNIQUE (kind, id))",
    'CREATE INDEX IF NOT EXISTS "{s}_t_id" ON "{s}_things" (id, kind)',
    'CREATE VIRTUAL TABLE IF NOT EXISTS "{s}_thing_words" USING fts5(words, content=\'\', columnsize=0, detail=none, tokenize=\'ascii\')',
    'CREATE TRIGGER IF NOT EXISTS "{s}_t_words" AFTER INSERT ON "{s}_things"'
    ' BEGIN INSERT INTO "{s}_thing_words" (rowid, words) VALUES (new.n, new.words); END',
    'CREATE TABLE IF NOT EXISTS "{s}_inputs" (position INTEGER PRIMARY KEY, last INTEGER NOT NULL, kind TEXT NOT NULL,'
    " actor TEXT NOT NULL, id BLOB)",
    'CREATE INDEX IF NOT EXISTS "{s}_i_kind" ON "{s}_inputs" (kind, position)',
    'CREATE INDEX IF NOT EXISTS "{s}_i_actor" ON "{s}_inputs" (actor, position)',
    'CREATE INDEX IF NOT EXISTS "{s}_i_id" ON "{s}_inputs" (id, position DESC) WHERE id IS NOT NULL',
    'CREATE VIRTUAL TABLE IF NOT EXISTS "{s}_input_words" USING fts5(words, content=\'\', columnsize=0, detail=none, tokenize=\'ascii\')',
    'INSERT INTO "{s}" (slot, format, head) VALUES (1, {format}, 0) ON CONFLICT (slot) DO NOTHING',
)
DROP = tuple(f'DROP TABLE IF EXISTS "{{s}}{suffix}"' for suffix in ("_thing_words", "_input_words", "_things", "_inputs", ""))
THING = "SELECT kind, id, first, last FROM"
STATEMENTS = {
    "state": 'SELECT format, head FROM "{s}" WHERE slot = 1',
    "last_input": 'SELECT position, last FROM "{s}_inputs" ORDER BY position DESC LIMIT 1',
    "things_exact": THING + ' "{s}_things" WHERE id = ? AND first <= ? ORDER BY n DESC LIMIT ?',
    "things_prefix": THING + ' "{s}_things" WHERE id > ? AND id < ? AND first <= ? ORDER BY id, kind LIMIT ?',
    "things_prefix_open": THING + ' "{s}_things" WHERE id > ? AND first <= ? ORDER BY id, kind LIMIT ?',
    "things_words": 'SELECT t.kind, t.id, t.first, t.last FROM "{s}_thing_words" JOIN "{s}_things" t ON t.n = "{s}_thing_words".rowid'
    ' WHERE "{s}_thing_words" MATCH ? AND t.first <= ? ORDER BY "{s}_thing_words".rowid DESC LIMIT ?',
    "inputs_id": 'SELECT position FROM "{s}_inputs" WHERE id = ? AND position <= ? ORDER BY position DESC LIMIT ?',
    "inputs_kind": 'SELECT position FROM "{s}_inputs" WHERE kind = ? AND position <= ? ORDER BY position DESC LIMIT ?',
    "inputs_actor": 'SELECT position FROM "{s}_inputs" WHERE actor = ? AND position <= ? ORDER BY position DESC LIMIT ?',
    "inputs_prefix": 'SELECT position FROM "{s}_inputs" WHERE id > ? AND id < ? AND position <= ? ORDER BY id, position DESC LIMIT ?',
    "inputs_prefix_open": 'SELECT position FROM "{s}_inputs" WHERE id > ? AND position <= ? ORDER BY id, position DESC LIMIT ?',
    "inputs_words": 'SELECT rowid FROM "{s}_input_words" WHERE "{s}_input_words" MATCH ? AND rowid <= ? ORDER BY rowid DESC LIMIT ?',
    "input_ends": 'SELECT position, last FROM "{s}_inputs" WHERE position IN (SELECT value FROM json_each(?))',
    # the keeper's
    "head_for_write": 'SELECT head FROM "{s}" WHERE slot = 1 AND format = {format}',
    "input_insert": 'INSERT INTO "{s}_inputs" (position, last, kind, actor, id) VALUES (?, ?, ?, ?, ?)',
    "input_words_insert": 'INSERT INTO "{s}_input_words" (rowid, words) VALUES (?, ?)',
    "input_extend": 'UPDATE "{s}_inputs" SET last = ? WHERE position = ?',
    "thing_upsert": 'INSERT INTO "{s}_things" (kind, id, first, last, words) VALUES (?, ?, ?, ?, ?)'
    " ON CONFLICT (kind, id) DO UPDATE SET last = excluded.last",
    "head_set": 'UPDATE "{s}" SET head = ? WHERE slot = 1',
}


def match_expression(words: Sequence[str]) -> str:
    """FTS5's query for "every one of these words", each a quoted string."""
    return " ".join('"' + word.replace('"', '""') + '"' for word in words)


class SqliteIndex:
    kind = "sqlite"

    def __init__(self, path: str, table: str, *, read_only: bool) -> None:
        self.path = path
        self.read_only = read_only
        names = {"s": table + "_search", "format": search_format}
        self._statements = {name: text.format(**names) for name, text in STATEMENTS.items()}
        self._create = [text.format(**names) for text in CREATE]
        self._drop = [text.format(**names) for text in DROP]
        self._reads = Pool(self._open_reader)
        self._writes = Pool(self._open_writer)

    def _open_reader(self) -> sqlite3.Connection:
        uri = reader_uri(self.path, os.path.dirname(os.path.abspath(self.path)))
        return sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None, timeout=busy_timeout_s)

    def _open_writer(self) -> sqlite3.Connection:
        assert not self.read_only, "a store opened read-only is never written"
        connection = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=busy_timeout_s)
        # The index is a cache, rebuilt from the log: its commits need not wait for fsync (WAL keeps them whole).
        connection.execute("PRAGMA synchronous=NORMAL")
        return connection

    @contextmanager
    def _guarded(self, pool: Pool, verb: str) -> Iterator[sqlite3.Connection]:
        try:
            with pool.connection() as connection:
                yield connection
        except sqlite3.Error as error:
            raise StoreError(f"{verb} the search index of {self.path!r} failed: {error}") from error

    # -- upkeep
    def prepare(self, *, drop: bool = False) -> None:
        """Create the tables (dropping them first when asked, or when they are of another format)."""
        with self._guarded(self._writes, "creating") as connection:
            connection.execute("BEGIN IMMEDIATE")
            try:
                try:
                    row = connection.execute(self._statements["state"]).fetchone()
                except sqlite3.OperationalError:
                    row = None  # no table yet
                if drop or (row is not None and row[0] != search_format):
                    for statement in self._drop:
                        connection.execute(statement)
                for statement in self._create:
                    connection.execute(statement)
                connection.execute("COMMIT")
            except BaseException:
                connection.rollback()
                raise

    def write(self, batch: Batch) -> bool:
        """One transaction: the batch, if the index's head is still `batch.after` (else False, nothing written)."""
        with self._guarded(self._writes, "writing") as connection:
            connection.execute("BEGIN IMMEDIATE")
            try:
                written = self._write(connection, batch)
                connection.execute("COMMIT" if written else "ROLLBACK")
                return written
            except BaseException:
                connection.rollback()
                raise

    def _write(self, connection: sqlite3.Connection, batch: Batch) -> bool:
        run = self._statements
        row = connection.execute(run["head_for_write"]).fetchone()
        if row is None or row[0] != batch.after:
            return False
        inputs = batch.inputs
        connection.executemany(run["input_insert"], [(d.position, d.last, d.kind, d.actor, _blob(d.id)) for d in inputs])
        connection.executemany(run["input_words_insert"], [(d.position, " ".join(d.words)) for d in inputs])
        if batch.extended is not None:
            connection.execute(run["input_extend"], (batch.extended[1], batch.extended[0]))
        things = [(d.kind, _blob(d.id), d.first, d.last, " ".join(d.words)) for d in batch.things.values()]
        connection.executemany(run["thing_upsert"], things)
        connection.execute(run["head_set"], (batch.head,))
        return True

    def close(self) -> None:
        self._reads.close()
        self._writes.close()

    # -- reads
    @contextmanager
    def session(self) -> Iterator[SqliteReads | None]:
        """The reads of one search, on one connection, in one transaction
        (one state of the index); None when the store has no index of this
        format (not built yet, or by another version)."""
        with self._guarded(self._reads, "reading") as connection:
            connection.execute("BEGIN")
            try:
                reads = SqliteReads(connection, self._statements)
                yield reads if reads.present() else None
            finally:
                connection.execute("ROLLBACK")


def _blob(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8", "surrogatepass")


class SqliteReads:
    def __init__(self, connection: sqlite3.Connection, statements: dict[str, str]) -> None:
        self._connection = connection
        self._statements = statements
        self.head = 0

    def _rows(self, name: str, *parameters: Any) -> list[Any]:
        return self._connection.execute(self._statements[name], parameters).fetchall()

    def present(self) -> bool:
        try:
            row = self._connection.execute(self._statements["state"]).fetchone()
        except sqlite3.OperationalError:
            return False  # no table: not built yet
        if row is None or row[0] != search_format:
            return False
        self.head = row[1]
        return True

    def open_input(self) -> int | None:
        """The last input, if its events may go on after the head (the keeper's)."""
        last = self._rows("last_input")
        return last[0][0] if last and last[0][1] == self.head else None

    def things_exact(self, identifier: str, until: int, limit: int) -> list[ThingRow]:
        return _things(self._rows("things_exact", _blob(identifier), until, limit))

    def things_prefix(self, prefix: str, until: int, limit: int) -> list[ThingRow]:
        low = _blob(prefix)
        assert low is not None
        high = upper_bound(low)
        if high is None:
            return _things(self._rows("things_prefix_open", low, until, limit))
        return _things(self._rows("things_prefix", low, high, until, limit))

    def things_words(self, words: Sequence[str], until: int, limit: int) -> list[ThingRow]:
        return _things(self._rows("things_words", match_expression(words), until, limit))

    def inputs_where(self, column: str, value: str, until: int, limit: int) -> list[int]:
        parameter: Any = _blob(value) if column == "id" else value
        return [row[0] for row in self._rows(f"inputs_{column}", parameter, until, limit)]

    def inputs_prefix(self, prefix: str, until: int, limit: int) -> list[int]:
        low = _blob(prefix)
        assert low is not None
        high = upper_bound(low)
        if high is None:
            return [row[0] for row in self._rows("inputs_prefix_open", low, until, limit)]
        return [row[0] for row in self._rows("inputs_prefix", low, high, until, limit)]

    def inputs_words(self, words: Sequence[str], until: int, limit: int) -> list[int]:
        return [row[0] for row in self._rows("inputs_words", match_expression(words), until, limit)]

    def input_ends(self, positions: Sequence[int]) -> dict[int, int]:
        return dict(self._rows("input_ends", json.dumps(list(positions))))


def _things(rows: list[Any]) -> list[ThingRow]:
    return [ThingRow(kind, bytes(identifier).decode("utf-8", "surrogatepass"), first, last) for kind, identifier, first, last in rows]
