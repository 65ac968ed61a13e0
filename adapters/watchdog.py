"""`tandem watchdog`: an independent process that watches the daemon.

It shares nothing with the daemon but the daemon's published health snapshot
(`adapters/health_file.py`): no store, no socket, no import of its state. Each
interval it

1. writes a heartbeat row to its **own** SQLite file (never the engine's
   database), with a generation that goes up by one every time a watchdog
   process starts on that file, so generations never go backwards;
2. reads the snapshot and judges the daemon: alive (the snapshot's pid exists)
   and fresh (written within `--max-age`), or stopped on purpose (state
   `stopped` with `expected_stop: true`: not a crash);
3. if the daemon is dead or stale, opens one incident row (`daemon_dead-{n}`)
   for that occurrence and notifies through a path that does not depend on
   the daemon (a notify log file and stderr, and `notify-send` when it is on
   PATH); once the daemon is back and fresh, writes a recovery row;
4. with `--providers`, reads the provider snapshot (`adapters/providers_file.py`)
   and writes a readiness row for each provider whose readiness changed (a
   known credential expiry passing included), notifying when one is not ready
   (contract v1.2 section 4.3): an expired login is an incident without the
   daemon.

A heartbeat row carries the time the watchdog wrote it: imported after the
daemon's downtime, it becomes `beat_at`, so it never looks fresh (contract
v1.2 section 4.1).

The daemon imports those rows by id (`read_facts`, read-only, outside its own
transactions): that is how the engine learns of heartbeats and incidents. A
watchdog that stops writing heartbeats makes the engine hold unattended
dispatch (the domain's fail-closed rule); the daemon never invents one.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from tandem.adapters.commands.common import EXIT_USAGE
from tandem.adapters.file_lock import ExclusiveLock, LockHeld
from tandem.adapters.health_file import SnapshotUnreadable, format_time, parse_time, read_snapshot, utc_now
from tandem.adapters.process import ProcessError
from tandem.adapters.providers_file import ProvidersUnreadable, Readiness, read_providers
from tandem.adapters.terminal import printable

watchdog_format = "tandem-watchdog/1"
heartbeats_kept_max = 1_000  # older heartbeat rows are pruned: only the latest matter
facts_read_max = 1_000  # rows a reader takes per call
sqlite_busy_timeout_s = 10
notify_send_timeout_s = 5
sleep_slice_s = 0.05  # how soon a stop is noticed while sleeping
incident_kind = "daemon_dead"


class WatchdogError(ProcessError):
    """The watchdog cannot run (bad option, unusable file); `code` is the exit code."""


class WatchdogUnreadable(Exception):
    """The watchdog's file exists but cannot be read as one (yet)."""


# ---------------------------------------------------------------- the file

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS heartbeats (
    id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, generation INTEGER NOT NULL, at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS incidents (
    id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, incident_id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL, detail TEXT NOT NULL, at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS recoveries (
    id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, incident_id TEXT NOT NULL UNIQUE,
    detail TEXT NOT NULL, at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS readiness (
    id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, provider TEXT NOT NULL, ready INTEGER NOT NULL,
    reason TEXT, auth_expires_at TEXT, at TEXT NOT NULL);
"""


class WatchdogStore:
    """The watchdog's own SQLite file; this process is its only writer.

    Rollback-journal mode (not WAL): a reader opened with `mode=ro` then needs
    nothing but read permission, so the daemon may run as another user. Every
    row takes the next number of one sequence shared by the three tables
    (`seq`), so a reader can replay them in the order they were written."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.connection = sqlite3.connect(path, timeout=sqlite_busy_timeout_s, isolation_level=None)
            self.connection.execute("PRAGMA journal_mode=DELETE")
            self.connection.execute("PRAGMA synchronous=FULL")
            with self._transaction() as cursor:
                for statement in SCHEMA.strip().split(";"):
                    if statement.strip():
                        cursor.execute(statement)
                existing = dict(cursor.execute("SELECT key, value FROM meta").fetchall())
                if not existing:
                    defaults = {
                        "format": watchdog_format,
                        "store_id": uuid.uuid4().hex,
                        "generation": "0",
                        "next_seq": "1",
                        "next_incident": "1",
                    }
                    cursor.executemany("INSERT INTO meta VALUES (?, ?)", sorted(defaults.items()))
                elif existing.get("format") != watchdog_format:
                    raise WatchdogError(f"{path} is not a {watchdog_format} file (format {existing.get('format')!r})")
        except sqlite3.Error as error:
            raise WatchdogError(f"cannot open the watchdog database {path}: {error}") from error

    class _Transaction:
        def __init__(self, connection: sqlite3.Connection) -> None:
            self.connection = connection

        def __enter__(self) -> sqlite3.Cursor:
            self.connection.execute("BEGIN IMMEDIATE")
            return self.connection.cursor()

        def __exit__(self, kind: Any, value: Any, traceback: Any) -> None:
            self.connection.execute("COMMIT" if kind is None else "ROLLBACK")

    def _transaction(self) -> WatchdogStore._Transaction:
        return WatchdogStore._Transaction(self.connection)

    @staticmethod
    def _take(cursor: sqlite3.Cursor, key: str) -> int:
        (value,) = cursor.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        cursor.execute("UPDATE meta SET value = ? WHERE key = ?", (str(int(value) + 1), key))
        return int(value)

    def start_generation(self) -> int:
        """This process's generation: one more than the last process's."""
        with self._transaction() as cursor:
            return self._take(cursor, "generation") + 1

    def heartbeat(self, generation: int, number: int, at: datetime.datetime) -> str:
        row_id = f"watchdog/heartbeat/{generation}/{number}"
        with self._transaction() as cursor:
            seq = self._take(cursor, "next_seq")
            cursor.execute(
                "INSERT INTO heartbeats VALUES (?, ?, ?, ?)", (row_id, seq, generation, format_time(at))
            )
        return row_id

    def open_incident(self, kind: str, detail: str, at: datetime.datetime) -> str:
        with self._transaction() as cursor:
            incident_id = f"{kind}-{self._take(cursor, 'next_incident')}"
            seq = self._take(cursor, "next_seq")
            cursor.execute(
                "INSERT INTO incidents VALUES (?, ?, ?, ?, ?, ?)",
                (f"watchdog/incident/{incident_id}", seq, incident_id, kind, detail, format_time(at)),
            )
        return incident_id

    def recover(self, incident_id: str, detail: str, at: datetime.datetime) -> None:
        with self._transaction() as cursor:
            seq = self._take(cursor, "next_seq")
            cursor.execute(
                "INSERT INTO recoveries VALUES (?, ?, ?, ?, ?)",
                (f"watchdog/recovered/{incident_id}", seq, incident_id, detail, format_time(at)),
            )

    def readiness(self, judged: Readiness, at: datetime.datetime) -> str:
        """A provider's readiness changed (contract v1.2 section 4.3)."""
        with self._transaction() as cursor:
            seq = self._take(cursor, "next_seq")
            row_id = f"watchdog/readiness/{seq}"
            cursor.execute(
                "INSERT INTO readiness VALUES (?, ?, ?, ?, ?, ?, ?)",
                (row_id, seq, judged.provider, int(judged.ready), judged.reason,
                 format_time(judged.auth_expires_at), format_time(at)),
            )
        return row_id

    def latest_readiness(self) -> dict[str, tuple[bool, str | None, str | None]]:
        """Each provider's latest readiness row: (ready, reason, auth_expires_at)."""
        rows = self.connection.execute("SELECT provider, ready, reason, auth_expires_at FROM readiness ORDER BY seq")
        return {provider: (bool(ready), reason, expires) for provider, ready, reason, expires in rows}

    def open_incidents(self) -> list[tuple[str, datetime.datetime]]:
        """Incidents without a recovery, oldest first: (incident_id, opened at)."""
        rows = self.connection.execute(
            "SELECT incident_id, at FROM incidents WHERE incident_id NOT IN (SELECT incident_id FROM recoveries)"
            " ORDER BY seq"
        ).fetchall()
        return [(incident_id, parse_time(at)) for incident_id, at in rows]

    def prune_heartbeats(self, keep: int = heartbeats_kept_max) -> None:
        """Keep the latest `keep` heartbeats: a reader only needs the newest,
        and the file must not grow without bound."""
        with self._transaction() as cursor:
            cursor.execute(
                "DELETE FROM heartbeats WHERE seq < (SELECT MIN(seq) FROM"
                " (SELECT seq FROM heartbeats ORDER BY seq DESC LIMIT ?))",
                (keep,),
            )

    def close(self) -> None:
        self.connection.close()


# ------------------------------------------------------------- the reader


@dataclass(frozen=True, slots=True)
class Fact:
    """One row of the watchdog's file, as the daemon imports it."""

    seq: int
    id: str  # the row's id: the input's idempotency key
    type: str  # the input kind it becomes
    at: str  # when the watchdog wrote it (wall clock), for information
    generation: int | None = None
    incident_id: str | None = None
    kind: str | None = None
    detail: str | None = None
    provider: str | None = None
    ready: bool | None = None
    auth_expires_at: str | None = None

    def input_fields(self) -> dict[str, Any]:
        """The input this row becomes, without `at` (the daemon stamps it):
        a heartbeat's `beat_at` and a readiness row's `observed_at` are when
        the watchdog wrote it."""
        fields: dict[str, Any] = {"type": self.type, "actor": "watchdog", "id": self.id}
        if self.type == "watchdog.heartbeat":
            fields["generation"] = self.generation
            fields["beat_at"] = format_time(parse_time(self.at))
        elif self.type == "provider.readiness":
            fields.update(provider=self.provider, ready=self.ready, observed_at=format_time(parse_time(self.at)))
            if not self.ready:
                fields["reason"] = self.kind
            if self.auth_expires_at is not None:
                fields["auth_expires_at"] = self.auth_expires_at
        elif self.type == "health.incident":
            fields.update(incident_id=self.incident_id, kind=self.kind, detail=self.detail)
        else:
            fields["incident_id"] = self.incident_id
        return fields


def read_facts(path: Path, after_seq: int, limit: int = facts_read_max) -> tuple[str, list[Fact]]:
    """The file's identity and its rows with `seq` > `after_seq`, in `seq` order
    (at most `limit`). Opens the file read-only (`mode=ro`) and holds it only
    for these three queries.

    Raises FileNotFoundError when there is no file and WatchdogUnreadable when
    it cannot be read (locked past the timeout, not created yet, not ours)."""
    if not path.exists():
        raise FileNotFoundError(str(path))
    uri = path.resolve().as_uri() + "?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True, timeout=sqlite_busy_timeout_s)
    except sqlite3.Error as error:
        raise WatchdogUnreadable(f"cannot open {path} read-only: {error}") from error
    try:
        meta = dict(connection.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("format") != watchdog_format:
            raise WatchdogUnreadable(f"{path} is not a {watchdog_format} file")
        rows: list[Fact] = []
        for seq, row_id, generation, at in connection.execute(
            "SELECT seq, id, generation, at FROM heartbeats WHERE seq > ? ORDER BY seq LIMIT ?", (after_seq, limit)
        ):
            rows.append(Fact(seq, row_id, "watchdog.heartbeat", at, generation=generation))
        for seq, row_id, incident_id, kind, detail, at in connection.execute(
            "SELECT seq, id, incident_id, kind, detail, at FROM incidents WHERE seq > ? ORDER BY seq LIMIT ?",
            (after_seq, limit),
        ):
            rows.append(Fact(seq, row_id, "health.incident", at, incident_id=incident_id, kind=kind, detail=detail))
        for seq, row_id, incident_id, at in connection.execute(
            "SELECT seq, id, incident_id, at FROM recoveries WHERE seq > ? ORDER BY seq LIMIT ?", (after_seq, limit)
        ):
            rows.append(Fact(seq, row_id, "health.recovered", at, incident_id=incident_id))
        rows.extend(_readiness_facts(connection, after_seq, limit))
    except sqlite3.Error as error:
        raise WatchdogUnreadable(f"cannot read {path}: {error}") from error
    finally:
        connection.close()
    rows.sort(key=lambda fact: fact.seq)
    # Each table gave at most `limit` rows; the first `limit` of the merge
    # are then exactly the next `limit` rows of the file.
    return meta["store_id"], rows[:limit]


def _readiness_facts(connection: sqlite3.Connection, after_seq: int, limit: int) -> list[Fact]:
    """The readiness rows after `after_seq` (none in a file older than the table)."""
    if not connection.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'readiness'").fetchone():
        return []
    return [
        Fact(seq, row_id, "provider.readiness", at, kind=reason, provider=provider, ready=bool(ready), auth_expires_at=expires)
        for seq, row_id, provider, ready, reason, expires, at in connection.execute(
            "SELECT seq, id, provider, ready, reason, auth_expires_at, at FROM readiness WHERE seq > ? ORDER BY seq LIMIT ?",
            (after_seq, limit),
        )
    ]


# ---------------------------------------------------------- judging the daemon


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists and has not exited (a zombie has)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no procfs: trust kill(0)
    state = stat.rpartition(")")[2].split()[:1]
    return state not in (["Z"], ["X"])


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one look at the snapshot showed."""

    condition: str  # "healthy" | "stopped_expectedly" | "down" | "not_yet_seen"
    detail: str
    written_at: datetime.datetime | None = None


def judge(
    snapshot_path: Path,
    now: datetime.datetime,
    max_age_s: float,
    watching_since: datetime.datetime,
    alive: Callable[[int], bool] = pid_alive,
) -> Verdict:
    """Judge the daemon from its snapshot, wall clock `now`.

    A missing or unreadable snapshot is `down` only once the watchdog has
    watched for `max_age_s` (the daemon may be starting); a snapshot whose
    pid is gone is `down` at once; an old one is `down` once older than
    `max_age_s`, even if its pid lives (a hung daemon is no better than a
    dead one, and the pid may have been reused)."""
    try:
        snapshot = read_snapshot(snapshot_path)
    except SnapshotUnreadable as error:
        snapshot, unreadable = None, str(error)
    else:
        unreadable = None
    if snapshot is None:
        waited = (now - watching_since).total_seconds()
        what = unreadable or f"no health snapshot at {snapshot_path}"
        if waited < max_age_s:
            return Verdict("not_yet_seen", what)
        return Verdict("down", f"{what} after {waited:.0f}s of watching")
    written_at = parse_time(snapshot["written_at"])
    pid, state = snapshot["pid"], snapshot["state"]
    if state == "stopped":
        if snapshot["expected_stop"]:
            return Verdict("stopped_expectedly", f"daemon pid {pid} stopped as asked at {snapshot['written_at']}", written_at)
        return Verdict("down", f"daemon pid {pid} stopped after an error at {snapshot['written_at']}", written_at)
    age = (now - written_at).total_seconds()
    if not alive(pid):
        return Verdict(
            "down", f"daemon pid {pid} is not running (last snapshot {state}, written {age:.1f}s ago)", written_at
        )
    if age > max_age_s:
        return Verdict(
            "down", f"daemon pid {pid} is alive but its snapshot is {age:.1f}s old (max {max_age_s:g}s)", written_at
        )
    return Verdict("healthy", f"daemon pid {pid} {state}, snapshot {age:.1f}s old", written_at)


# ------------------------------------------------------------- notifying


class Notifier:
    """Tells a human, through paths that do not need the daemon: always a line
    in the notify log and on stderr (the log is the record), plus a desktop
    notification when `notify-send` is on PATH (best effort: a headless host
    has no session bus, and that must not stop the rest)."""

    def __init__(self, log_path: Path, notify_send: str | None = None, stderr: TextIO | None = None) -> None:
        self.log_path = log_path
        self.notify_send = notify_send
        self.stderr = stderr if stderr is not None else sys.stderr

    def __call__(self, now: datetime.datetime, title: str, message: str, urgent: bool) -> None:
        title, message = printable(title), printable(message)  # they quote paths and the snapshot's words
        line = f"{format_time(now)} {title}: {message}\n"
        with open(self.log_path, "a", encoding="utf-8") as log:
            log.write(line)
            log.flush()
            os.fsync(log.fileno())
        self.stderr.write(f"tandem watchdog: {line}")
        self.stderr.flush()
        if self.notify_send:
            urgency = "critical" if urgent else "normal"
            try:
                subprocess.run(
                    [self.notify_send, f"--urgency={urgency}", "--app-name=tandem", title, message],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    timeout=notify_send_timeout_s,
                    check=False,
                )
            except (OSError, subprocess.SubprocessError):
                pass


# ---------------------------------------------------------------- the loop


class Watchdog:
    """One watchdog process on one file. `step()` is one round (tests call it
    with their own clock and pid check); `run()` repeats it until SIGTERM."""

    def __init__(
        self,
        store: WatchdogStore,
        health_path: Path,
        max_age_s: float,
        notify: Callable[[datetime.datetime, str, str, bool], None],
        clock: Callable[[], datetime.datetime] = utc_now,
        alive: Callable[[int], bool] = pid_alive,
        providers_path: Path | None = None,
    ) -> None:
        self.store = store
        self.providers_path = providers_path
        self.health_path = health_path
        self.max_age_s = max_age_s
        self.notify = notify
        self.clock = clock
        self.alive = alive
        self.generation = store.start_generation()
        self.watching_since = clock()
        self.beats = 0

    def step(self) -> Verdict:
        now = self.clock()
        self.beats += 1
        self.store.heartbeat(self.generation, self.beats, now)
        if self.beats % 100 == 0:
            self.store.prune_heartbeats()
        verdict = judge(self.health_path, now, self.max_age_s, self.watching_since, self.alive)
        open_incidents = self.store.open_incidents()
        if verdict.condition == "down":
            if not open_incidents:  # once per occurrence
                incident_id = self.store.open_incident(incident_kind, verdict.detail, now)
                self.notify(now, f"Tandem daemon down ({incident_id})", verdict.detail, True)
        elif open_incidents:
            for incident_id, opened_at in open_incidents:
                back = verdict.condition == "healthy" or (
                    # It ran again and stopped cleanly since: it was back.
                    verdict.condition == "stopped_expectedly"
                    and verdict.written_at is not None
                    and verdict.written_at > opened_at
                )
                if back:
                    self.store.recover(incident_id, verdict.detail, now)
                    self.notify(now, f"Tandem daemon back ({incident_id} recovered)", verdict.detail, False)
        if self.providers_path is not None:
            self.check_providers(now)
        return verdict

    def check_providers(self, now: datetime.datetime) -> None:
        """Contract v1.2 section 4.3: one readiness row per change of a
        provider's readiness; a provider not ready is notified (urgent), one
        ready again too. An unreadable snapshot is said once per round and
        changes nothing (a provider is not judged from a file we cannot read)."""
        assert self.providers_path is not None
        try:
            judged = read_providers(self.providers_path, now)
        except ProvidersUnreadable as error:
            self.notify(now, "Tandem provider snapshot unreadable", str(error), False)
            return
        latest = self.store.latest_readiness()
        for readiness in judged:
            expires = format_time(readiness.auth_expires_at)
            if latest.get(readiness.provider) == (readiness.ready, readiness.reason, expires):
                continue
            was_ready = latest.get(readiness.provider, (True, None, None))[0]
            self.store.readiness(readiness, now)
            if not readiness.ready:
                expired = f", credential expired at {expires}" if expires and readiness.reason == "auth_expired" else ""
                title = f"Tandem provider {readiness.provider} not ready ({readiness.reason})"
                self.notify(now, title, f"{readiness.provider}: {readiness.reason}{expired}", True)
            elif not was_ready:
                self.notify(now, f"Tandem provider {readiness.provider} ready again", f"{readiness.provider} is ready", False)

    def run(self, interval_s: float, stopping: Callable[[], bool]) -> None:
        """Rounds every `interval_s` until `stopping()`. Sleeps in short
        slices and polls a flag the signal handler sets: a handler that took a
        lock (an Event's) could deadlock against the code it interrupted."""
        while not stopping():
            self.step()
            deadline = time.monotonic() + interval_s
            while not stopping() and time.monotonic() < deadline:
                time.sleep(min(sleep_slice_s, max(0.0, deadline - time.monotonic())))


# ------------------------------------------------------------------ running


def run(args: argparse.Namespace) -> None:
    """`tandem watchdog`: runs until SIGTERM or SIGINT, then returns (exit 0)."""
    db_path: Path = args.db
    if not db_path.parent.is_dir():
        raise WatchdogError(f"cannot create the watchdog database {db_path}: folder {db_path.parent} does not exist")
    if db_path.is_dir():
        raise WatchdogError(f"--db {db_path} is a directory", EXIT_USAGE)
    if not args.health.parent.is_dir():
        raise WatchdogError(f"--health {args.health}: folder {args.health.parent} does not exist")
    log_path: Path = args.notify_log or db_path.parent / "tandem-watchdog-notify.log"
    try:
        open(log_path, "a").close()
    except OSError as error:
        raise WatchdogError(f"cannot write the notify log {log_path}: {error.strerror}") from error
    try:
        lock = ExclusiveLock(Path(f"{db_path}.lock"), "another watchdog is running on this file")
    except LockHeld as error:
        raise WatchdogError(str(error)) from None
    stop: list[int] = []  # the signals received

    def on_signal(number: int, frame: Any) -> None:
        stop.append(number)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    store = WatchdogStore(db_path)
    try:
        watchdog = Watchdog(
            store, args.health, args.max_age, Notifier(log_path, shutil.which("notify-send")),
            providers_path=getattr(args, "providers", None),
        )  # fmt: skip
        print(
            f"tandem watchdog: generation {watchdog.generation} on {printable(str(db_path))}, watching "
            f"{printable(str(args.health))} (max age {args.max_age:g}s, every {args.interval:g}s), notifying to "
            f"{printable(str(log_path))}",
            file=sys.stderr,
            flush=True,
        )
        watchdog.run(args.interval, lambda: bool(stop))
    except sqlite3.Error as error:
        raise WatchdogError(f"the watchdog database {db_path} failed: {error}") from error
    finally:
        store.close()
        lock.release()
    print("tandem watchdog: stopped", file=sys.stderr, flush=True)
