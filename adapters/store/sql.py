"""What the SQLite and PostgreSQL stores share, written once: their
statements (the log read straight from the events table in large pages,
the snapshots in `{table}_snapshots`), creating both tables, and opening;
the console's sessions in `{table}_sessions` (`SqlSessionTable`).

Reads go straight to the table: eventsourcing's notification log refuses
pages above `log_section_size` (10 by default), and replay reads the whole
log. Snapshots (`replay/snapshot.py`) live in a second table (fingerprint,
position, body), created with the events table: a cache written beside the
log, never part of it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

from eventsourcing.persistence import PersistenceError

from tandem.adapters.sessions import SessionRow
from tandem.adapters.store.recorder import RecorderStore, log_stream_id, read_page_events_max
from tandem.adapters.store.url import redacted
from tandem.replay.port import StoreError, WriterClaim

_int64_max = 2**63 - 1  # "no upper bound" for a position
# Parameters of one `read_matching` statement (SQLite's oldest limit is 999):
# a filter with more needles is applied in Python.
matching_parameters_max = 900


@dataclasses.dataclass(frozen=True)
class SqlDialect:
    """How the two databases spell what the statements need."""

    placeholder: str  # a parameter: "?" or "%s"
    integer: str  # the type of a position
    blob: str  # the type of a snapshot's body
    # "the position is one of a list", the list being one parameter (a JSON
    # array for SQLite, an array for PostgreSQL): one statement for any length.
    one_of: str
    # A row when the table named by the one parameter exists (a reader's check).
    table_exists: str
    # Appended to a SELECT that reads a row the statement must hold until its
    # transaction ends (PostgreSQL: " FOR UPDATE"; SQLite's writer holds the
    # whole database from its first write).
    for_update: str = ""
    # "the event's bytes contain the parameter's" (`read_matching` filters in
    # the database); None: filtered in Python, as the memory store does.
    contains: str | None = None
    # Appended to CREATE TABLE of a table keyed by its primary key only (SQLite: WITHOUT ROWID).
    keyed_table: str = ""


def statement_templates(dialect: SqlDialect) -> dict[str, str]:
    """Every statement of an SQL store, naming its tables `{events}` and `{snapshots}`."""
    p = dialect.placeholder
    return {
        "head": f"SELECT MAX(originator_version) FROM {{events}} WHERE originator_id={p}",
        "page": f"SELECT originator_version, state FROM {{events}}"
        f" WHERE originator_id={p} AND originator_version>{p} ORDER BY originator_version LIMIT {p}",
        "window": f"SELECT originator_version, state FROM {{events}}"
        f" WHERE originator_id={p} AND originator_version>{p} AND originator_version<={p}"
        f" ORDER BY originator_version LIMIT {p}",
        "positions": f"SELECT originator_version, state FROM {{events}}"
        f" WHERE originator_id={p} AND originator_version {dialect.one_of} ORDER BY originator_version",
        "snapshots_create": f"CREATE TABLE IF NOT EXISTS {{snapshots}} (fingerprint text NOT NULL,"
        f" position {dialect.integer} NOT NULL, body {dialect.blob} NOT NULL, PRIMARY KEY (fingerprint, position))",
        "snapshot_write": f"INSERT INTO {{snapshots}} (fingerprint, position, body) VALUES ({p}, {p}, {p})"
        " ON CONFLICT (fingerprint, position) DO UPDATE SET body = EXCLUDED.body",
        "snapshot_latest": f"SELECT position, body FROM {{snapshots}} WHERE fingerprint={p} AND position<={p}"
        " ORDER BY position DESC LIMIT 1",
        "snapshot_list": "SELECT position, fingerprint, length(body) FROM {snapshots} ORDER BY position, fingerprint",
        "snapshot_delete": f"DELETE FROM {{snapshots}} WHERE fingerprint={p} AND position={p}",
        "table_exists": dialect.table_exists,
        # The fence (writer generations: adapters/store/recorder.py, `claim_writer`).
        "fence_create": f"CREATE TABLE IF NOT EXISTS {{fence}} (slot smallint PRIMARY KEY CHECK (slot = 1),"
        f" generation {dialect.integer} NOT NULL)",
        "claims_create": f"CREATE TABLE IF NOT EXISTS {{claims}} (generation {dialect.integer} PRIMARY KEY,"
        f" after_position {dialect.integer} NOT NULL, pid integer, host text NOT NULL, since text NOT NULL)",
        "fence_ensure": "INSERT INTO {fence} (slot, generation) VALUES (1, 0) ON CONFLICT (slot) DO NOTHING",
        "fence_read": f"SELECT generation FROM {{fence}} WHERE slot = 1{dialect.for_update}",
        "fence_raise": f"UPDATE {{fence}} SET generation = {p} WHERE slot = 1",
        "claim_record": f"INSERT INTO {{claims}} (generation, after_position, pid, host, since) VALUES ({p}, {p}, {p}, {p}, {p})",
        "claims": "SELECT generation, after_position, pid, host, since FROM {claims} ORDER BY generation",
        # The key table (replay/key_table.py) and its mark: (fingerprint, through).
        "keys_create": f"CREATE TABLE IF NOT EXISTS {{keys}} (kind text NOT NULL, ident text NOT NULL,"
        f" position {dialect.integer} NOT NULL, PRIMARY KEY (kind, ident, position)){dialect.keyed_table}",
        "keys_mark_create": f"CREATE TABLE IF NOT EXISTS {{keys_through}} (slot smallint PRIMARY KEY CHECK (slot = 1),"
        f" fingerprint text NOT NULL, through {dialect.integer} NOT NULL)",
        "keys_mark_ensure": "INSERT INTO {keys_through} (slot, fingerprint, through) VALUES (1, '', 0) ON CONFLICT (slot) DO NOTHING",
        "keys_mark": f"SELECT fingerprint, through FROM {{keys_through}} WHERE slot = 1{dialect.for_update}",
        "keys_mark_set": f"INSERT INTO {{keys_through}} (slot, fingerprint, through) VALUES (1, {p}, {p})"
        " ON CONFLICT (slot) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, through = EXCLUDED.through",
        "keys_clear": "DELETE FROM {keys}",
        "keys_insert": f"INSERT INTO {{keys}} (kind, ident, position) VALUES ({p}, {p}, {p})",
        "keys_first": f"SELECT kind, ident, position FROM {{keys}} WHERE position <= {p}"
        f" ORDER BY kind, ident, position LIMIT {p}",
        "keys_page": f"SELECT kind, ident, position FROM {{keys}} WHERE (kind, ident, position) > ({p}, {p}, {p})"
        f" AND position <= {p} ORDER BY kind, ident, position LIMIT {p}",
        "keys_select": f"SELECT position FROM {{keys}} WHERE kind = {p} AND ident = {p} AND position <= {p} ORDER BY position",
        # The console's sessions (adapters/sessions.py): the id's hash, never the id.
        "sessions_create": f"CREATE TABLE IF NOT EXISTS {{sessions}} (id_hash text PRIMARY KEY, actor text NOT NULL,"
        f" csrf text NOT NULL, created_at {dialect.integer} NOT NULL, last_seen_at {dialect.integer} NOT NULL,"
        f" expires_at {dialect.integer} NOT NULL, token_check text NOT NULL)",
        "session_insert": f"INSERT INTO {{sessions}} (id_hash, actor, csrf, created_at, last_seen_at, expires_at, token_check)"
        f" VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p})",
        "session_get": f"SELECT id_hash, actor, csrf, created_at, last_seen_at, expires_at, token_check FROM {{sessions}} WHERE id_hash = {p}",
        "session_touch": f"UPDATE {{sessions}} SET last_seen_at = {p} WHERE id_hash = {p}",
        "session_delete": f"DELETE FROM {{sessions}} WHERE id_hash = {p}",
        "sessions_ended": f"SELECT id_hash FROM {{sessions}} WHERE expires_at <= {p} OR last_seen_at < {p}",
        "sessions_count": "SELECT count(*) FROM {sessions}",
        "sessions_oldest": f"SELECT id_hash FROM {{sessions}} ORDER BY last_seen_at, id_hash LIMIT {p}",
    }


def _matching(dialect: SqlDialect, needles_by_type: Mapping[str, Collection[bytes]]) -> tuple[str, list[Any]]:
    """`read_matching`'s filter: the event's type is one of them, then, by the
    first set of types that holds it (the sets sharing needles, largest
    first: one lookup for most events), its needles (b"": none to hold)."""
    assert dialect.contains is not None
    groups: dict[frozenset[bytes], list[str]] = {}
    for name, needles in needles_by_type.items():
        groups.setdefault(frozenset() if b"" in needles else frozenset(needles), []).append(name)
    if not groups:
        return "1 = 0", []
    cases: list[str] = []
    parameters: list[Any] = [json.dumps(sorted(needles_by_type))]
    for needles, names in sorted(groups.items(), key=lambda group: (-len(group[1]), sorted(group[1]))):
        held = " OR ".join([dialect.contains] * len(needles)) if needles else "1 = 1"
        cases.append(f"WHEN topic {dialect.one_of} THEN ({held})")
        parameters += [json.dumps(sorted(names)), *sorted(needles)]
    return f"topic {dialect.one_of} AND CASE {' '.join(cases)} ELSE 1 = 0 END", parameters


class SqlStore(RecorderStore):
    """A store on an eventsourcing SQL datastore and recorder. A backend
    gives its dialect, how a statement template becomes a statement
    (`compose`: the table names put in), and how to run one (`_execute`,
    `_query`: plain tuples)."""

    dialect: SqlDialect

    def __init__(
        self, url: str, datastore: Any, recorder: Any, compose: Callable[[str], Any], tables: tuple[str, str],
        *, read_only: bool = False,
    ) -> None:  # fmt: skip
        """`tables`: the events, snapshots, claims and key mark tables' names.
        `read_only`: a reader's open, which creates and changes nothing: the
        events table must exist (else this is not a Tandem store), and a
        store without a snapshots (claims) table reads as one with no
        snapshots (no writer's claim)."""
        super().__init__(url, recorder)
        self._datastore = datastore
        self._compose = compose
        self._statements = {name: compose(text) for name, text in statement_templates(self.dialect).items()}
        self._snapshots_present = self._claims_present = self._keys_present = True
        self._read_only = read_only
        if read_only:
            try:
                self._snapshots_present, self._claims_present, self._keys_present = self._check_tables(*tables)
            except BaseException:
                datastore.close()
                raise
        try:
            if not read_only:
                recorder.create_table()
                for name in ("snapshots_create", "fence_create", "claims_create", "keys_create", "keys_mark_create", "sessions_create"):
                    self._execute(name)
            self.head()
        except (PersistenceError, StoreError) as error:
            datastore.close()
            cause = error.__cause__ or error
            raise StoreError(f"cannot open {redacted(url)}: {cause}") from error

    def _check_tables(self, events: str, *others: str) -> tuple[bool, ...]:
        """Whether each of the other tables exists; a StoreError when the events table does not."""
        if not self._query("table_exists", events):
            raise StoreError(f"cannot open {redacted(self.url)}: not a Tandem store (it has no table {events!r})")
        return tuple(bool(self._query("table_exists", table)) for table in others)

    # -- backend hooks
    def _execute(self, name: str, *parameters: Any) -> None:
        raise NotImplementedError

    def _query(self, name: str, *parameters: Any) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _query_statement(self, statement: str, *parameters: Any) -> list[tuple[Any, ...]]:
        """A statement made on the spot (`read_matching`'s), run as `_query` runs one."""
        raise NotImplementedError

    def _write_transaction(self) -> Any:
        """A context manager: one write transaction, giving `run(name,
        *parameters)` (a statement's rows, [] for one that returns none;
        `run(name, rows=ROWS)`: the statement once per row, returning []);
        committed at its end, rolled back on an exception."""
        raise NotImplementedError

    # -- writers (fencing)
    def _claim(self, pid: int | None, host: str, since: str) -> WriterClaim:
        with self._write_transaction() as run:
            run("fence_ensure")
            # Held to the commit: the appends in flight (each holds the fence
            # row as it checks it) end first, later ones see the new generation.
            ((current,),) = run("fence_read")
            head = run("head", log_stream_id)[0][0] or 0
            generation = current + 1
            run("fence_raise", generation)
            run("claim_record", generation, head, pid, host, since)
        self._head_known = None
        return WriterClaim(generation, head, pid, host, since)

    def _claims(self) -> list[tuple[int, int, int | None, str, str]]:
        if not self._claims_present:
            return []
        return [tuple(row) for row in self._query("claims")]  # type: ignore[misc]

    # -- the log
    def _select_head(self) -> int:
        rows = self._query("head", log_stream_id)
        return (rows[0][0] if rows else None) or 0

    def _select_page(self, after: int, until: int | None, limit: int) -> list[tuple[int, bytes]]:
        if until is None:
            return self._query("page", log_stream_id, after, limit)  # type: ignore[return-value]
        return self._query("window", log_stream_id, after, until, limit)  # type: ignore[return-value]

    def read_matching(
        self, needles_by_type: Mapping[str, Collection[bytes]], after: int = 0, until: int | None = None
    ) -> Iterator[tuple[int, bytes]]:
        condition, parameters = _matching(self.dialect, needles_by_type) if self.dialect.contains else ("", [])
        if not condition or len(parameters) > matching_parameters_max:
            yield from super().read_matching(needles_by_type, after, until)
            return
        p = self.dialect.placeholder
        statement = self._compose(
            f"SELECT originator_version, state FROM {{events}} WHERE originator_id={p} AND originator_version>{p}"
            f" AND originator_version<={p} AND ({condition}) ORDER BY originator_version LIMIT {p}"
        )
        end = _int64_max if until is None else until
        while True:
            page = self._guarded(self._query_statement, statement, log_stream_id, after, end, *parameters, read_page_events_max)
            yield from page
            if len(page) < read_page_events_max:
                return
            after = page[-1][0]

    def _select_positions(self, positions: list[int]) -> list[tuple[int, bytes]]:
        # The list as a JSON array (SQLite's json_each); PostgreSQL sends an array.
        return self._query("positions", log_stream_id, json.dumps(positions))  # type: ignore[return-value]

    # -- snapshots
    def _snapshot_write(self, position: int, fingerprint: str, body: bytes) -> None:
        self._execute("snapshot_write", fingerprint, position, body)

    def _snapshot_latest(self, fingerprint: str, until: int | None) -> tuple[int, bytes] | None:
        if not self._snapshots_present:
            return None
        rows = self._query("snapshot_latest", fingerprint, _int64_max if until is None else until)
        return (rows[0][0], bytes(rows[0][1])) if rows else None

    def _snapshot_list(self) -> list[tuple[int, str, int]]:
        if not self._snapshots_present:
            return []
        return [tuple(row) for row in self._query("snapshot_list")]  # type: ignore[misc]

    def _snapshot_delete(self, position: int, fingerprint: str) -> None:
        self._execute("snapshot_delete", fingerprint, position)

    # -- the key table
    def _keys_mark(self) -> tuple[str, int] | None:
        if not self._keys_present:
            return None
        rows = self._query("keys_mark")
        return (rows[0][0], rows[0][1]) if rows else None

    def _keys_select(self, key: tuple[str, str], until: int) -> list[int]:
        if not self._keys_present:
            return []
        return [position for (position,) in self._query("keys_select", key[0], key[1], until)]

    def _keys_page(self, after: tuple[str, str, int] | None, until: int, limit: int) -> list[tuple[str, str, int]]:
        if not self._keys_present:
            return []
        rows = self._query("keys_first", until, limit) if after is None else self._query("keys_page", *after, until, limit)
        return [(kind, ident, position) for kind, ident, position in rows]

    def _keys_write(self, fingerprint: str, after: int, through: int, rows: Sequence[tuple[str, str, int]]) -> bool:
        with self._write_transaction() as run:
            run("keys_mark_ensure")  # a write first: SQLite's writer lock is ours from here to the commit
            marked = run("keys_mark")  # held to the commit (PostgreSQL: FOR UPDATE)
            current = marked[0][1] if marked and marked[0][0] == fingerprint else 0
            if current != after:
                return False
            if marked and marked[0][0] != fingerprint:
                run("keys_clear")
            if rows:
                run("keys_insert", rows=rows)
            run("keys_mark_set", fingerprint, through)
        return True

    # -- the console's sessions
    def session_table(self) -> SqlSessionTable | None:
        """The console's sessions kept in this database (None for a reader's open: it writes nothing)."""
        return None if self._read_only else SqlSessionTable(self)

    def close(self) -> None:
        self._datastore.close()


class SqlSessionTable:
    """The console's sessions in `{table}_sessions` (adapters/sessions.py's
    `SessionTable`): one row per session, under its id's hash."""

    def __init__(self, store: SqlStore) -> None:
        self._store = store

    def insert(self, row: SessionRow, idle_since: int, keep_max: int) -> list[str]:
        return self._store._guarded(self._insert, row, idle_since, keep_max, verb="keeping a console session in")

    def _insert(self, row: SessionRow, idle_since: int, keep_max: int) -> list[str]:
        with self._store._write_transaction() as run:
            removed = [key for (key,) in run("sessions_ended", row.created, idle_since)]
            for key in removed:
                run("session_delete", key)
            ((count,),) = run("sessions_count")
            if count >= keep_max:
                oldest = [key for (key,) in run("sessions_oldest", count - keep_max + 1)]
                for key in oldest:
                    run("session_delete", key)
                removed += oldest
            run("session_insert", row.key, row.actor, row.csrf, row.created, row.last_seen, row.expires, row.token_check)
        return removed

    def get(self, key: str) -> SessionRow | None:
        rows = self._store._guarded(self._store._query, "session_get", key, verb="reading a console session from")
        return SessionRow(*rows[0]) if rows else None

    def touch(self, key: str, last_seen: int) -> bool:
        return self._store._guarded(self._touch, key, last_seen, verb="touching a console session in")

    def _touch(self, key: str, last_seen: int) -> bool:
        with self._store._write_transaction() as run:
            if not run("session_get", key):
                return False
            run("session_touch", last_seen, key)
        return True

    def delete(self, key: str) -> None:
        self._store._guarded(self._store._execute, "session_delete", key, verb="ending a console session in")
