"""One writer per store: an exclusive writer lock, taken by the commands that
append to a store (`serve`, `daemon`, `ingest`, `replay --store`, `demo`,
`import`) and never by readers.

    memory:       nothing to lock: a memory store is private to its process.
    SQLite:       `flock` on `{database}-writer.lock`, beside the database
                  file (symlinks resolved), and on the database file itself;
                  the lock file holds the holder's pid, host and since, and
                  the database file's device and inode (JSON).
    PostgreSQL:   a session-level advisory lock, keys (tandem's class id,
                  crc32 of the events table), on a connection of its own held
                  open for the lock's life; the holder's pid, host and since
                  are in the one-row table `{table}_writer`.

Either way the holder's death releases the lock, even by SIGKILL: the kernel
drops the `flock` with the process's files, and PostgreSQL drops a session's
advisory locks when its connection closes. Nothing is left to clean up
before a restart.

A refused writer gets `WriterLocked`, whose message is exactly
`store URL is locked by pid N on HOST since T` (T in RFC 3339, UTC, seconds).

SQLite: one lock per database file, whatever name reaches it. A lock file
named after the path alone let a writer in through a symlink or a hard link
beside a running one (issue 22). A symlink can be resolved, so the lock file
sits beside the real file; a hard link cannot (no name is the real one), so
the writer also locks the database file itself, by its identity: `flock` is
kept on the inode, whichever name opened it (adapters/identity_lock.py,
which also says why its descriptor is never closed beside an open store).
That covers a hard link, and a file renamed under its writer, across
processes and containers sharing the file. Chosen over a lock file named
after (device, inode) in a well-known folder, which two users, two mount
namespaces (a private /tmp, a container) or a cleaner of /tmp would each
split in two. A database that does not exist yet is created (empty) by the
lock, locked by its identity, and the path checked to still name it; one
that stays unwritten is removed at release. A refused run (`discard`: the
command failed) removes more, while it still holds the names: the database
it created if the store holds no event, with its `-wal` and `-shm`, and then
the lock file, if that run made it too (a refused command leaves no file).

A file with more than one hard link is refused to every writer, holder or
not: SQLite names its `-wal` and `-shm` after the name it opened (it
resolves symlinks itself), so writers under two names keep two WALs, and
one after the other (a crash leaving the first's WAL behind) they lose each
other's commits; SQLite calls a link count other than 1 undefined behaviour.
While another process holds the file, the refusal names it instead, found by
the file's identity in the lock files of its folder (a name in another
folder leaves the holder unknown: `pid ? on ? since ?`).
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import time
import zlib
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from tandem.adapters.file_lock import ExclusiveLock, LockHeld
from tandem.adapters.identity_lock import Attempt, Identity, identity_locks, identity_of
from tandem.adapters.store import StoreAddress, open_store, parse_store_url, postgres_connect_timeout_s, redacted
from tandem.replay.port import EventStore, StoreError, WriterClaim

writer_lock_file_suffix = "-writer.lock"
writer_table_suffix = "_writer"
# How long a refused writer waits for the holder's record to appear (a holder
# writes it just after it takes the lock), and how often it looks meanwhile.
holder_record_wait_s = 0.5
holder_record_poll_s = 0.02
# A holder found under another name of the file: its lock file is looked for
# among this many entries of the database's folder, at most.
holder_scan_entries_max = 10_000
lock_connect_timeout_s = postgres_connect_timeout_s
# The first key of every tandem advisory lock ("TAND"), so that ours never
# meet another application's; the second is the events table's crc32.
advisory_lock_class_id = 0x54414E44
advisory_key_mask = 0x7FFFFFFF  # keys stay positive int4s (pg_locks shows them as oids)
# The lock's session asks the server to probe an idle client: a holder whose
# machine vanished (no FIN, unlike a killed process) is dropped after about
# idle + interval * count seconds, and its lock with it.
lock_keepalive_idle_s = 10
lock_keepalive_interval_s = 5
lock_keepalive_count_max = 3
postgres_idle_session_timeout_since_version = 140000
# eventsourcing's datastore, and so the store, puts its tables in this schema.
postgres_schema = "public"
unknown = "?"


class WriterHolder(NamedTuple):
    """Who holds a writer lock: their pid and host, and since when (RFC 3339 UTC)."""

    pid: int | None
    host: str
    since: str

    def describe(self) -> str:
        return f"pid {unknown if self.pid is None else self.pid} on {self.host} since {self.since}"


unknown_holder = WriterHolder(None, unknown, unknown)


class WriterLocked(StoreError):
    """Another process holds the store's writer lock."""

    def __init__(self, url: str, holder: WriterHolder) -> None:
        super().__init__(f"store {redacted(url)} is locked by {holder.describe()}")
        self.url = url
        self.holder = holder


class WriterLock:
    """A held writer lock (memory: a no-op). Release it, or leave its `with`."""

    def __init__(self, url: str, location: str) -> None:
        self.url = url
        self.location = location  # where the lock lives, for messages and logs
        self.released = False
        self.holder = this_holder()  # who holds it: this process, since it took it

    def check(self) -> None:
        """Raise StoreError if the lock is no longer ours (for long-running holders)."""

    def discard(self) -> None:
        """A refused run: at release, remove the files this lock created (an
        SQLite database, its `-wal` and `-shm`, the lock file) if the store
        holds no event. Call it once the store is closed. Memory and
        PostgreSQL: nothing to remove."""

    def release(self) -> None:
        """Release the lock; a second call does nothing."""
        self.released = True

    def __enter__(self) -> WriterLock:
        return self

    def __exit__(self, *exception: object) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "released" if self.released else "held"
        return f"<WriterLock {redacted(self.url)} ({self.location}) {state}>"


def claim_store(store: EventStore, lock: WriterLock, *, deferred: bool = False) -> WriterClaim | None:
    """Under the writer lock `lock`, claim `store` (`EventStore.claim_writer`):
    a new writer generation that every append of `store` is checked against,
    so that once another writer claims the store after taking the lock (this
    one's lock session ended, its file was replaced) nothing more of this
    one's is written. Take the lock, open the store, claim it, then fold
    (`deferred`: at the first append, for a command that may write nothing)."""
    holder = lock.holder
    return store.claim_writer(holder.pid, holder.host, holder.since, deferred=deferred)


def acquire_writer_lock(url: str) -> WriterLock:
    """Take the writer lock of the store `url`, without waiting.

    Raises WriterLocked when another process holds it, StoreError when the
    URL is bad or the lock cannot be taken (an unreachable database, a
    folder that does not exist)."""
    address = parse_store_url(url)
    if address.kind == "memory":
        return WriterLock(url, "none: a memory store is private to its process")
    if address.kind == "sqlite":
        return _acquire_until_known(url, lambda: _try_file_lock(url, address))
    return _acquire_postgres(url, address)


def this_holder() -> WriterHolder:
    since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return WriterHolder(os.getpid(), socket.gethostname(), since)


def _acquire_until_known(url: str, attempt: Callable[[], WriterLock | WriterHolder | None]) -> WriterLock:
    """Run `attempt` (the lock, the holder that refused it, or None when the
    holder's record is not readable yet) until it gives the lock or a holder,
    for at most `holder_record_wait_s`."""
    deadline = time.monotonic() + holder_record_wait_s
    while True:
        outcome = attempt()
        if isinstance(outcome, WriterLock):
            return outcome
        if outcome is not None:
            raise WriterLocked(url, outcome)
        if time.monotonic() >= deadline:
            raise WriterLocked(url, unknown_holder)
        time.sleep(holder_record_poll_s)


# ---------------------------------------------------------------- SQLite


def writer_lock_path(database: str) -> Path:
    """The lock file of the SQLite database at `database`: beside the file
    it names, symlinks resolved (every symlink to it shares the one file)."""
    return Path(os.path.realpath(database) + writer_lock_file_suffix)


class _FileWriterLock(WriterLock):
    def __init__(self, url: str, path: Path, lock: ExclusiveLock, database: _HeldDatabase, created: bool) -> None:
        super().__init__(url, f"flock on {path} and on {database.path}")
        self.path = path
        self._lock = lock
        self._database = database
        self._created = created  # the lock file did not exist before this lock
        self._discarding = False

    def check(self) -> None:
        # Someone who deletes or replaces the file lets another writer lock a
        # new one: the lock is ours only while the path is still our file.
        try:
            same = os.stat(self.path).st_ino == os.fstat(self._lock.file.fileno()).st_ino
        except OSError:
            same = False
        if not same:
            raise StoreError(f"the writer lock of {redacted(self.url)} was lost: {self.path} was removed or replaced")

    def discard(self) -> None:
        self._discarding = True

    def release(self) -> None:
        if not self.released:
            try:
                # First: what it made goes while the names are still locked.
                made = self._discarding and self._database.created
                self._database.release(discard=made and _holds_no_event(self.url, self._database.path))
                if self._discarding and self._created and not os.path.exists(self._database.path):
                    _remove_if_same(self.path, os.fstat(self._lock.file.fileno()))
            finally:
                self._lock.release()
        super().release()


def _holds_no_event(url: str, database: str) -> bool:
    """Whether the SQLite store `url` (its file `database`) holds no event:
    an empty file, or a store whose head is 0."""
    if os.path.exists(database) and os.path.getsize(database) == 0:
        return True
    try:
        store = open_store(url, read_only=True)
    except StoreError:
        return False  # not known to be empty: kept
    try:
        return store.head() == 0
    except StoreError:
        return False
    finally:
        store.close()


def _remove_if_same(path: Path | str, status: os.stat_result) -> None:
    """Remove `path` if it still names the file of `status` (not one put in its place)."""
    try:
        if identity_of(os.stat(path)) == identity_of(status):
            os.unlink(path)
    except OSError:
        pass


def _try_file_lock(url: str, address: StoreAddress) -> WriterLock | WriterHolder | None:
    """The name's lock file first (its record names the holder), then the
    database file itself, by identity; the record then names the file too."""
    database = os.path.realpath(address.path)
    path = Path(database + writer_lock_file_suffix)
    holder = this_holder()
    created = not path.exists()
    try:
        lock = ExclusiveLock(path, "the store has a writer", _record(holder))
    except LockHeld as error:
        if error.holder is None:
            raise StoreError(f"cannot lock {redacted(url)} for writing: {error}") from None
        return _holder_from_record(error.holder)
    try:
        outcome = _lock_database(url, database)
    except BaseException:
        lock.release()
        raise
    if not isinstance(outcome, _HeldDatabase):
        lock.release()
        return outcome
    lock.write(_record(holder, outcome.identity))
    return _FileWriterLock(url, path, lock, outcome, created)


class _HeldDatabase:
    """The lock on the database file itself (adapters/identity_lock.py). A
    file this lock created and nobody wrote is removed at release: a writer
    that wrote nothing leaves no store behind, as before the file was locked."""

    def __init__(self, path: str, attempt: Attempt) -> None:
        self.path = path
        self.identity = attempt.identity
        self.created = attempt.created

    def release(self, discard: bool = False) -> None:
        """Unlock; remove the file if this lock created it and it stayed
        unwritten, or, with `discard` (a refused run, the store holding no
        event), whatever it holds, with its `-wal` and `-shm`."""
        if discard and self.created:
            for side in ("-wal", "-shm", "-journal"):
                if os.path.exists(self.path + side):
                    _remove_if_same(self.path + side, os.stat(self.path + side))
        identity_locks.unlock(self.identity, remove=self.path if self.created else None, written_too=discard)


def _lock_database(url: str, database: str) -> _HeldDatabase | WriterHolder | None:
    """Lock the database file at `database` (a resolved path) by its
    identity, creating it if missing: held, or who holds it (None: not known
    yet, or the path was replaced meanwhile: look again). A file with more
    than one name (hard links) is refused: SQLite names its `-wal` after the
    name a writer opens, so each name would keep a WAL of its own."""
    if os.path.isdir(database):
        raise StoreError(f"cannot open {redacted(url)}: {database!r} is a directory")
    try:
        attempt = identity_locks.try_lock(database)
    except OSError as error:
        raise StoreError(f"cannot lock {redacted(url)} for writing: cannot open {database!r}: {error.strerror}") from None
    if not attempt.taken:
        return _holder_by_identity(database, attempt.identity)
    held = _HeldDatabase(database, attempt)
    try:
        now: os.stat_result | None = os.stat(database)
    except OSError:
        now = None
    if now is None or identity_of(now) != attempt.identity:
        held.release()
        return None  # renamed or replaced between the open and the lock
    if now.st_nlink > 1:
        held.release()
        raise StoreError(
            f"cannot lock {redacted(url)} for writing: {database!r} has {now.st_nlink} hard links (SQLite keeps a -wal"
            " beside the name each writer opens, so writers under two names would lose each other's commits): remove its other names"
        )
    return held


def _record(holder: WriterHolder, identity: Identity | None = None) -> str:
    fields: dict[str, Any] = holder._asdict()
    if identity is not None:
        fields["device"], fields["inode"] = identity
    return json.dumps(fields) + "\n"


def _fields(text: str) -> dict[str, Any] | None:
    try:
        fields = json.loads(text)
    except ValueError:
        return None
    return fields if isinstance(fields, dict) else None


def _holder_from_record(text: str) -> WriterHolder | None:
    """The holder a lock file names, or None if it is empty or half written."""
    fields = _fields(text) or {}
    pid, host, since = fields.get("pid"), fields.get("host"), fields.get("since")
    if not isinstance(pid, int) or not isinstance(host, str) or not isinstance(since, str):
        return None
    if pid < 1 or (host == socket.gethostname() and not _process_exists(pid)):
        # A killed holder's record, read in the instant between the new
        # holder's flock and its rewriting the file.
        return None
    return WriterHolder(pid, host, since)


def _holder_by_identity(database: str, identity: Identity) -> WriterHolder | None:
    """The live holder whose record names the database file `identity`,
    whatever name it locked it by: the lock file beside `database` first,
    then the others of its folder (a hard link's, a renamed file's). None
    when none does: not written yet (the holder writes it just after it
    locks the file), or a name in another folder."""
    beside = database + writer_lock_file_suffix
    for candidate in [beside, *(name for name in _lock_files_in(os.path.dirname(database)) if name != beside)]:
        try:
            text = Path(candidate).read_text()
        except OSError:
            continue
        fields = _fields(text) or {}
        if (fields.get("device"), fields.get("inode")) == identity:
            holder = _holder_from_record(text)
            if holder is not None:
                return holder
    return None


def _lock_files_in(folder: str) -> list[str]:
    """The writer lock files among the first `holder_scan_entries_max` entries of `folder`."""
    try:
        with os.scandir(folder) as entries:
            first = itertools.islice(entries, holder_scan_entries_max)
            return [entry.path for entry in first if entry.name.endswith(writer_lock_file_suffix)]
    except OSError:
        return []


def _sqlite_holder(path: str) -> WriterHolder | None:
    """Who holds the SQLite database at `path` (any of its names), if anyone."""
    database = os.path.realpath(path)
    try:
        identity = identity_of(os.stat(database))
    except OSError:
        return None
    return _holder_by_identity(database, identity)


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, and is not ours to signal
    return True


# ------------------------------------------------------------ PostgreSQL


def advisory_lock_keys(table: str) -> tuple[int, int]:
    """The two int4 keys of the advisory lock for the events table `table`."""
    return advisory_lock_class_id & advisory_key_mask, zlib.crc32(table.encode()) & advisory_key_mask


class _PostgresWriterLock(WriterLock):
    def __init__(self, url: str, connection: Any, keys: tuple[int, int]) -> None:
        super().__init__(url, f"PostgreSQL advisory lock {keys}")
        self._connection = connection
        self._keys = keys

    def check(self) -> None:
        import psycopg

        try:
            held = _advisory_holder(self._connection, self._keys) == self._connection.info.backend_pid
        except psycopg.Error as error:
            reason = str(error).strip() or type(error).__name__
            raise StoreError(f"the writer lock of {redacted(self.url)} was lost: {reason}") from None
        if not held:
            raise StoreError(f"the writer lock of {redacted(self.url)} was lost: its session no longer holds it")

    def release(self) -> None:
        if not self.released:
            # Closing the session releases its advisory locks.
            self._connection.close()
        super().release()


def _acquire_postgres(url: str, address: StoreAddress) -> WriterLock:
    import psycopg

    connection = _connect(url, address)
    keys = advisory_lock_keys(address.table)
    table = _holder_table(address.table)
    try:
        _configure_session(connection)
        return _acquire_until_known(url, lambda: _try_advisory_lock(url, connection, keys, table))
    except psycopg.Error as error:
        connection.close()
        reason = str(error).strip() or type(error).__name__
        raise StoreError(f"cannot lock {redacted(url)} for writing: {reason}") from None
    except BaseException:
        connection.close()
        raise


def _connect(url: str, address: StoreAddress, application_name: str = "tandem writer lock") -> Any:
    import psycopg

    try:
        return psycopg.connect(
            **address.connect,
            connect_timeout=lock_connect_timeout_s,
            autocommit=True,
            application_name=application_name,
        )
    except psycopg.Error as error:
        reason = str(error).strip() or type(error).__name__
        raise StoreError(f"cannot connect to PostgreSQL at {redacted(url)}: {reason}") from None


def _configure_session(connection: Any) -> None:
    settings = {
        "tcp_keepalives_idle": lock_keepalive_idle_s,
        "tcp_keepalives_interval": lock_keepalive_interval_s,
        "tcp_keepalives_count": lock_keepalive_count_max,
        # A server-wide idle timeout would end this (idle by design) session and its lock.
        "idle_in_transaction_session_timeout": 0,
    }
    if connection.info.server_version >= postgres_idle_session_timeout_since_version:
        settings["idle_session_timeout"] = 0
    for name, value in settings.items():
        connection.execute("SELECT set_config(%s, %s, false)", (name, str(value)))


def _holder_table(table: str) -> Any:
    from psycopg import sql

    return sql.Identifier(postgres_schema, table + writer_table_suffix)


def _try_advisory_lock(url: str, connection: Any, keys: tuple[int, int], table: Any) -> WriterLock | WriterHolder | None:
    from psycopg import sql

    row = connection.execute("SELECT pg_try_advisory_lock(%s, %s)", keys).fetchone()
    if row[0]:
        holder = this_holder()
        # Only a holder writes the table, so no two sessions race to create it.
        connection.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (slot smallint PRIMARY KEY CHECK (slot = 1), pid integer NOT NULL,"
                " host text NOT NULL, since text NOT NULL, backend_pid integer NOT NULL)"
            ).format(table)
        )
        connection.execute(
            sql.SQL(
                "INSERT INTO {} (slot, pid, host, since, backend_pid) VALUES (1, %s, %s, %s, %s) ON CONFLICT (slot)"
                " DO UPDATE SET pid = EXCLUDED.pid, host = EXCLUDED.host, since = EXCLUDED.since,"
                " backend_pid = EXCLUDED.backend_pid"
            ).format(table),
            (holder.pid, holder.host, holder.since, connection.info.backend_pid),
        )
        return _PostgresWriterLock(url, connection, keys)
    return _read_holder(connection, keys, table)


def _read_holder(connection: Any, keys: tuple[int, int], table: Any) -> WriterHolder | None:
    """The holder named in the table, if the row is the current holder's (a
    former holder's row stays after it is killed)."""
    import psycopg
    from psycopg import sql

    holding = _advisory_holder(connection, keys)
    if holding is None:
        return None  # released meanwhile: the next attempt may take it
    try:
        row = connection.execute(
            sql.SQL("SELECT pid, host, since, backend_pid FROM {} WHERE slot = 1").format(table)
        ).fetchone()
    except psycopg.errors.UndefinedTable:
        return None  # its first holder has not created it yet
    if row is None or row[3] != holding:
        return None
    return WriterHolder(row[0], row[1], row[2])


def _advisory_holder(connection: Any, keys: tuple[int, int]) -> int | None:
    """The server process id of the session holding the lock `keys`, or None."""
    row = connection.execute(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = "
        "(SELECT oid FROM pg_database WHERE datname = current_database())"
        " AND classid = %s::bigint::oid AND objid = %s::bigint::oid AND objsubid = 2",
        keys,
    ).fetchone()
    return None if row is None else row[0]


# --------------------------------------------- standbys and followers


# A standby waiting on a PostgreSQL writer lock waits this long per attempt
# (lock_timeout), then looks whether it was asked to stop, and waits again.
standby_wait_attempt_s = 1.0
standby_poll_s = 0.5  # SQLite: how often a standby tries the flock


def wait_writer_lock(url: str, stop: Any) -> WriterLock | None:
    """Wait for the writer lock of `url` (a standby), until `stop` (a
    threading.Event) is set: the lock, or None when stopped.

    PostgreSQL: a session that blocks in `pg_advisory_lock`, so the lock is
    granted the moment the holder's session ends (a killed holder's
    connection closes with its process); `lock_timeout` wakes it every
    `standby_wait_attempt_s` to look at `stop`. SQLite: the flock is tried
    every `standby_poll_s`. Raises StoreError when the store cannot be
    reached at all (its URL, its server)."""
    address = parse_store_url(url)
    if address.kind != "postgresql":
        while not stop.is_set():
            try:
                return acquire_writer_lock(url)
            except WriterLocked:
                stop.wait(standby_poll_s)
        return None
    return _wait_postgres(url, address, stop)


def _wait_postgres(url: str, address: StoreAddress, stop: Any) -> WriterLock | None:
    import psycopg

    connection = _connect(url, address)
    keys = advisory_lock_keys(address.table)
    try:
        _configure_session(connection)
        connection.execute("SELECT set_config('lock_timeout', %s, false)", (f"{int(standby_wait_attempt_s * 1000)}ms",))
        while not stop.is_set():
            try:
                connection.execute("SELECT pg_advisory_lock(%s, %s)", keys)
            except psycopg.errors.LockNotAvailable:
                continue
            # Held: the same session's try succeeds at once (advisory locks
            # stack; the count is released with the session) and records us.
            lock = _try_advisory_lock(url, connection, keys, _holder_table(address.table))
            assert isinstance(lock, WriterLock), lock
            connection.execute("SELECT set_config('lock_timeout', '0', false)")
            return lock
    except psycopg.Error as error:
        connection.close()
        reason = str(error).strip() or type(error).__name__
        raise StoreError(f"cannot wait for the writer lock of {redacted(url)}: {reason}") from None
    except BaseException:
        connection.close()
        raise
    connection.close()
    return None


class HolderProbe:
    """Who holds the writer lock of `url` now, for a follower's messages
    and health: one session of its own (PostgreSQL), opened when first
    asked and again after a failure; the lock file's record (SQLite)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.address = parse_store_url(url)
        self._connection: Any = None

    def read(self) -> WriterHolder | None:
        """The holder, or None when nobody holds it (or it cannot be told)."""
        if self.address.kind == "sqlite":
            return _sqlite_holder(self.address.path)
        if self.address.kind != "postgresql":
            return None
        import psycopg

        try:
            if self._connection is None:
                self._connection = _connect(self.url, self.address, "tandem follower (who writes)")
            keys = advisory_lock_keys(self.address.table)
            return _read_holder(self._connection, keys, _holder_table(self.address.table))
        except (psycopg.Error, StoreError):
            self.close()
            return None

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
