"""`tandem daemon`: the long-running engine.

A live daemon is a replay of inputs as they come (DESIGN.md): it opens the
store, folds its log, and then applies inputs from three places, one writer
for the store:

* **the spool folder** — JSON Lines trace files that writers drop there under
  a temporary name (starting with "." or not ending in ".jsonl") and then
  rename to `NAME.jsonl`. Ready files are applied in name order through the
  resumable ingest (`adapters/ingest.py`: keyed by file name and SHA-256,
  progress committed in the same transaction as the inputs), so a crash at
  any point, even between applying a file and moving it, applies nothing
  twice. An applied file moves to `done/`; a file with schema errors moves to
  `rejected/` next to `NAME.jsonl.error` (its `line N: ...` messages), and the
  daemon goes on.
* **the watchdog's SQLite file**, read-only and outside the store's
  transactions: each heartbeat, incident and recovery row becomes one input
  whose `id` is the row's id, imported once (rows already recorded are
  skipped; a re-import would be `duplicate_input`). No file, no heartbeat:
  the engine stays fail-closed; the daemon never invents one.
* **itself** — `daemon.start` when it starts, `daemon.stop` (`expected: true`)
  on SIGTERM or SIGINT, and a `tick` when nothing else came for `--tick`
  seconds, so time rules (stale watchdog, due obligations, resurfacing
  questions) run while idle.

The inputs it makes itself carry `at` from the wall clock, read here at the
adapter edge (the domain never reads it): the current second in UTC, but
never earlier than the store's last input, because `at` must not go back.
Every `--publish-interval` it rewrites the health snapshot
(`adapters/health_file.py`), the only thing the watchdog reads.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.process import ExclusiveLock, LockHeld, batch_size, positive_seconds
from adapters.health_file import format_time, read_snapshot, utc_now, write_atomically, write_snapshot
from adapters.ingest import TraceMismatch, ingest, ingest_batch_inputs_max
from adapters.store import _redacted, open_store
from adapters.trace import TraceInvalid, read_trace
from adapters.watchdog import WatchdogUnreadable, facts_read_max, read_facts
from domain.inputs import decode_input
from replay.engine import Engine, Located
from replay.port import ConcurrencyError, StoreError

EXIT_FAILED, EXIT_USAGE = 1, 2
spool_suffix = ".jsonl"
# At a stop, a snapshot is written when at least this many events came since
# the last one (a shorter tail folds in milliseconds at the next start).
stop_snapshot_events_min = 1_000
error_suffix = ".error"
lock_name = ".tandem-daemon.lock"


class DaemonError(Exception):
    """The daemon cannot start or had to stop; `code` is the exit code."""

    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.code = code


class _Interrupted(Exception):
    """A stop was asked for between two committed batches of a spool file."""


def log(message: str) -> None:
    print(f"tandem daemon: {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ spool


def is_ready(name: str) -> bool:
    """A spool entry to apply: `NAME.jsonl`, not a hidden (temporary) name."""
    return name.endswith(spool_suffix) and not name.startswith(".") and len(name) > len(spool_suffix)


def _free_path(folder: Path, name: str) -> Path:
    """`folder/name`, or `name.2`, `name.3`... if taken: a file dropped again
    under a used name never overwrites the earlier one."""
    candidate, number = folder / name, 1
    while candidate.exists():
        number += 1
        candidate = folder / f"{name}.{number}"
    return candidate


class Spool:
    """The spool folder and its `done/` and `rejected/` subfolders."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.done = folder / "done"
        self.rejected = folder / "rejected"

    def prepare(self) -> None:
        try:
            self.folder.mkdir(exist_ok=True)
            self.done.mkdir(exist_ok=True)
            self.rejected.mkdir(exist_ok=True)
        except OSError as error:
            raise DaemonError(f"cannot use the spool folder {self.folder}: {error.strerror}") from error
        if not os.access(self.folder, os.R_OK | os.W_OK | os.X_OK):
            raise DaemonError(f"cannot use the spool folder {self.folder}: it must be readable and writable")

    def ready(self) -> list[Path]:
        """Files to apply, in name order."""
        with os.scandir(self.folder) as entries:
            names = [entry.name for entry in entries if is_ready(entry.name) and entry.is_file()]
        return [self.folder / name for name in sorted(names)]

    def finish(self, path: Path) -> Path:
        target = _free_path(self.done, path.name)
        os.replace(path, target)
        return target

    def reject(self, path: Path, reasons: list[str]) -> Path:
        """Move `path` to `rejected/` with its reasons beside it. The reasons
        are written first: a crash in between leaves the file in the spool,
        to be judged (and rejected) again."""
        target = _free_path(self.rejected, path.name)
        write_atomically(target.with_name(target.name + error_suffix), ("\n".join(reasons) + "\n").encode())
        os.replace(path, target)
        return target


def _reasons(invalid: TraceInvalid) -> list[str]:
    reasons = [str(error) for error in invalid.errors]
    if invalid.total > len(invalid.errors):
        reasons.append(f"... and {invalid.total - len(invalid.errors)} more bad line(s)")
    return reasons


# --------------------------------------------------------- watchdog import


class WatchdogImport:
    """Reads the watchdog's file after the last row taken, by its `seq`.

    The position is kept in memory only: after a restart the daemon reads
    the file from the start and skips every row whose id the store already
    recorded. A file recreated under the same path (another `store_id`) is
    read from the start again."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.after_seq = 0
        self.store_id: str | None = None
        self.more = False  # the last read stopped at its limit: more rows wait
        self.limit = facts_read_max  # rows a read takes
        self._said: str | None = None  # the last problem logged, to log each once

    def _say(self, message: str | None) -> None:
        if message is not None and message != self._said:
            log(message)
        elif message is None and self._said is not None:
            log(f"reading the watchdog's file {self.path} now")
        self._said = message

    def take(self, recorded: Callable[[str], bool]) -> list[dict[str, Any]]:
        """The inputs (without `at`) of rows not recorded yet, in file order."""
        self.more = False
        try:
            store_id, facts = read_facts(self.path, self.after_seq, self.limit)
            if store_id != self.store_id and self.after_seq:
                self.after_seq = 0
                store_id, facts = read_facts(self.path, 0, self.limit)
        except FileNotFoundError:
            self._say(f"no watchdog file at {self.path} (yet): no heartbeat, unattended dispatch stays held")
            return []
        except WatchdogUnreadable as error:
            self._say(f"{error}; will retry")
            return []
        self._say(None)
        self.store_id = store_id
        self.more = len(facts) >= self.limit
        if facts:
            self.after_seq = facts[-1].seq
        return [fact.input_fields() for fact in facts if not recorded(fact.id)]


# ---------------------------------------------------------------- daemon


@dataclass(frozen=True, slots=True)
class Settings:
    store_url: str
    spool: Path
    health: Path
    watchdog_db: Path
    interval_s: float = 1.0
    publish_interval_s: float = 5.0
    tick_s: float = 30.0
    batch: int = ingest_batch_inputs_max


class Daemon:
    """One daemon process. The wall clock (`clock`) and the monotonic clock are
    injected so the loop's decisions can be driven in tests."""

    def __init__(
        self,
        settings: Settings,
        clock: Callable[[], datetime.datetime] = utc_now,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.monotonic = monotonic
        self.spool = Spool(settings.spool)
        self.importer = WatchdogImport(settings.watchdog_db)
        self.engine: Engine | None = None
        self.stopping = False
        self.started = False  # daemon.start recorded by this process
        self.started_at = clock()
        self.last_activity = monotonic()  # last input submitted, for idle ticks
        self.last_published = float("-inf")
        self.last_ingestion: dict[str, Any] | None = None
        self.waiting = 0  # ready spool files seen at the last scan
        try:
            previous = read_snapshot(settings.health)
        except Exception:  # an unreadable old snapshot is replaced, not fatal
            previous = None
        if previous is not None and isinstance(previous.get("last_ingestion"), dict):
            self.last_ingestion = previous["last_ingestion"]

    # ------------------------------------------------------------- inputs

    def stamp(self) -> str:
        """`at` for an input the daemon makes: the wall clock's current second
        (UTC), never earlier than the store's last input."""
        now = self.clock().astimezone(datetime.timezone.utc).replace(microsecond=0)
        last = self.engine.last_at if self.engine is not None else None
        if last is not None and now < last:
            now = last
        return format_time(now) or ""

    def make(self, fields: dict[str, Any], at: str | None = None) -> Located:
        """Build an input the way a trace line is read (`decode_input`), so it
        is validated exactly like one."""
        body = {"at": at or self.stamp(), **fields}
        return Located(decode_input(json.dumps(body).encode()))

    def submit(self, inputs: list[dict[str, Any]]) -> None:
        assert self.engine is not None
        if not inputs:
            return
        at = self.stamp()
        self.engine.submit_batch([self.make(fields, at) for fields in inputs])
        self.last_activity = self.monotonic()

    # ---------------------------------------------------------- the rounds

    def drain_spool(self, only: list[Path] | None = None) -> None:
        files = self.spool.ready() if only is None else only
        self.waiting = len(files)
        for path in files:
            if self.stopping:
                return
            self.apply_file(path)
            self.waiting -= 1

    def apply_file(self, path: Path) -> None:
        assert self.engine is not None
        try:
            trace = read_trace(str(path))
            result = ingest(self.engine, trace, batch_inputs=self.settings.batch, on_batch=self._between_batches)
        except _Interrupted:
            log(f"{path.name}: stopping mid-file; the rest is applied at the next start")
            return
        except FileNotFoundError as error:
            if path.exists():  # unreadable: it would fail every round
                self._reject(path, [str(error)])
            return  # taken away meanwhile
        except TraceInvalid as invalid:
            self._reject(path, _reasons(invalid))
            return
        except TraceMismatch as mismatch:
            self._reject(path, [str(mismatch)])
            return
        except ConcurrencyError as error:
            # The engine reloaded the store; ingest resumes where it stands.
            log(f"{path.name}: another writer appended to the store meanwhile ({error}); retrying")
            return
        self.spool.finish(path)
        self.last_activity = self.monotonic()
        self.last_ingestion = {
            "file": path.name,
            "at": format_time(self.clock()),
            "inputs": result.applied,
            "rejected": result.rejected,
            "already_applied": result.skipped,
        }
        log(
            f"{path.name}: {result.applied} input(s) applied ({result.rejected} rejected), "
            f"{result.skipped} already in the store; moved to done/"
        )
        self.publish_if_due()

    def _reject(self, path: Path, reasons: list[str]) -> None:
        target = self.spool.reject(path, reasons)
        log(f"{path.name}: rejected, nothing of it applied; moved to {target} ({reasons[0]})")

    def _between_batches(self, done: int) -> None:
        self.publish_if_due()
        if self.stopping:
            raise _Interrupted

    def import_watchdog(self) -> None:
        assert self.engine is not None
        while not self.stopping:
            self.submit(self.importer.take(self.engine.state.idempotency.__contains__))
            if not self.importer.more:
                return

    def tick_if_idle(self) -> None:
        if self.monotonic() - self.last_activity >= self.settings.tick_s:
            self.submit([{"type": "tick", "actor": "daemon"}])

    # ------------------------------------------------------------- health

    def snapshot(self, state: str, expected_stop: bool) -> dict[str, Any]:
        engine = self.engine
        health = engine.views.view("health") if engine is not None and engine.views is not None else None
        return {
            "pid": os.getpid(),
            "state": state,
            "expected_stop": expected_stop,
            "written_at": format_time(self.clock()),
            "started_at": format_time(self.started_at),
            "store": _redacted(self.settings.store_url),
            "spool": str(self.settings.spool),
            "watchdog_db": str(self.settings.watchdog_db),
            "publish_interval_s": self.settings.publish_interval_s,
            "last_input": None
            if engine is None or engine.last_at is None
            else {"seq": engine.state.seq, "at": format_time(engine.last_at), "position": engine.state.position},
            "last_ingestion": self.last_ingestion,
            "spool_waiting": self.waiting,
            "open_incidents": health["open_incidents"] if health else None,
            "watchdog_fresh": health["watchdog_fresh"] if health else None,
            "unattended_dispatch": health["unattended_dispatch"] if health else None,
        }

    def publish(self, state: str | None = None, expected_stop: bool = False) -> None:
        if state is None:
            state = "running" if self.started else "starting"
        write_snapshot(self.settings.health, self.snapshot(state, expected_stop))
        self.last_published = self.monotonic()

    def publish_if_due(self) -> None:
        if self.monotonic() - self.last_published >= self.settings.publish_interval_s:
            self.publish()

    # ------------------------------------------------------------ lifetime

    def ask_to_stop(self, number: int = 0, frame: Any = None) -> None:
        """Signal handler: only sets a flag; the loop stops between inputs."""
        self.stopping = True

    def open(self) -> None:
        self.publish("starting")
        try:
            store = open_store(self.settings.store_url)
            self.engine = Engine(store)
        except StoreError as error:
            raise DaemonError(str(error)) from error

    def start(self) -> None:
        """Apply what waited in the spool, import the watchdog, then record
        `daemon.start`. The backlog goes first because it was written before
        this start: its `at`s are earlier than the wall clock now."""
        self.drain_spool()
        if self.stopping:
            return
        self.import_watchdog()
        if self.stopping:
            return
        self.submit([{"type": "daemon.start", "actor": "daemon"}])
        self.started = True
        log(f"started: pid {os.getpid()}, store {_redacted(self.settings.store_url)}, spool {self.settings.spool}")
        self.publish()

    def round(self) -> None:
        self.drain_spool()
        if self.stopping:
            return
        self.import_watchdog()
        if self.stopping:
            return
        self.tick_if_idle()
        self.publish_if_due()

    def stop(self, expected: bool) -> None:
        """Record `daemon.stop` (if this process recorded a start) and publish
        the final snapshot."""
        if self.started and self.engine is not None:
            self.submit([{"type": "daemon.stop", "actor": "daemon", "expected": expected}])
        if self.engine is not None:
            # A snapshot at the head: the next start folds (almost) nothing.
            self.engine.checkpoint(min_events=stop_snapshot_events_min)
        self.publish("stopped", expected_stop=expected)

    def run(self, sleep: Callable[[float], None]) -> None:
        self.open()
        if not self.stopping:
            self.start()
        while not self.stopping:
            self.round()
            if not self.stopping:
                sleep(self.settings.interval_s)
        self.stop(expected=True)
        log("stopped as asked (daemon.stop expected)")

    def close(self) -> None:
        if self.engine is not None and self.engine.store is not None:
            self.engine.store.close()


# ------------------------------------------------------------------ command


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store", required=True, metavar="URL", help="the event store to run on (sqlite:///..., postgresql://...)"
    )
    parser.add_argument(
        "--spool",
        required=True,
        type=Path,
        metavar="DIR",
        help="folder where writers drop traces: write a temporary name (starting with '.' or ending '.tmp'), "
        "then rename to NAME.jsonl; applied in name order, then moved to DIR/done/, or to DIR/rejected/ "
        "with NAME.jsonl.error if a line is bad (created if missing)",
    )
    parser.add_argument(
        "--health",
        type=Path,
        metavar="FILE",
        help="the health snapshot the daemon publishes for the watchdog (default: tandem-health.json "
        "in the spool's parent folder)",
    )
    parser.add_argument(
        "--watchdog-db",
        type=Path,
        metavar="FILE",
        help="the watchdog's SQLite file (its --db), read-only, to import heartbeats and incidents "
        "(default: tandem-watchdog.db in the spool's parent folder; missing = no heartbeat, dispatch held)",
    )
    parser.add_argument(
        "--interval",
        type=positive_seconds,
        default=1.0,
        metavar="SECONDS",
        help="pause between rounds (spool scan, watchdog import, idle tick) (default 1)",
    )
    parser.add_argument(
        "--publish-interval",
        type=positive_seconds,
        default=5.0,
        metavar="SECONDS",
        help="how often the health snapshot is rewritten (default 5)",
    )
    parser.add_argument(
        "--tick",
        type=positive_seconds,
        default=30.0,
        metavar="SECONDS",
        help="record a `tick` when no input came for this long, so time rules run while idle (default 30)",
    )
    parser.add_argument(
        "--batch",
        type=batch_size,
        default=ingest_batch_inputs_max,
        metavar="N",
        help=f"spool inputs per transaction (default {ingest_batch_inputs_max})",
    )


def settings_from(args: argparse.Namespace) -> Settings:
    spool: Path = args.spool.absolute()
    if spool.exists() and not spool.is_dir():
        raise DaemonError(f"--spool {spool} is not a folder", EXIT_USAGE)
    if not spool.parent.is_dir():
        raise DaemonError(f"cannot create the spool folder {spool}: folder {spool.parent} does not exist")
    health: Path = args.health or spool.parent / "tandem-health.json"
    if not health.parent.is_dir():
        raise DaemonError(f"--health {health}: folder {health.parent} does not exist")
    if health.is_dir():
        raise DaemonError(f"--health {health} is a folder", EXIT_USAGE)
    return Settings(
        store_url=args.store,
        spool=spool,
        health=health,
        watchdog_db=args.watchdog_db or spool.parent / "tandem-watchdog.db",
        interval_s=args.interval,
        publish_interval_s=args.publish_interval,
        tick_s=args.tick,
        batch=args.batch,
    )


class _Sleeper:
    """Sleeps between rounds, cut short by a stop: a signal interrupts
    `time.sleep` only to run the handler, so sleep in short slices."""

    slice_s = 0.05

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon

    def __call__(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self.daemon.stopping:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, self.slice_s))


def run(args: argparse.Namespace) -> None:
    """`tandem daemon`: runs until SIGTERM or SIGINT (returns: exit 0), or
    raises DaemonError (exit 1 or 2)."""
    settings = settings_from(args)
    spool = Spool(settings.spool)
    spool.prepare()
    try:
        lock = ExclusiveLock(settings.spool / lock_name, "another daemon is running on this spool")
    except LockHeld as error:
        raise DaemonError(str(error)) from None
    daemon = Daemon(settings)
    signal.signal(signal.SIGTERM, daemon.ask_to_stop)
    signal.signal(signal.SIGINT, daemon.ask_to_stop)
    try:
        daemon.run(_Sleeper(daemon))
    except DaemonError:
        _stop_after_error(daemon)
        raise
    except Exception as error:
        traceback.print_exc()
        _stop_after_error(daemon)
        raise DaemonError(f"stopped after an error: {type(error).__name__}: {error}") from error
    finally:
        daemon.close()
        lock.release()


def _stop_after_error(daemon: Daemon) -> None:
    """Best effort: record an unexpected `daemon.stop` and say so in the
    snapshot, so the watchdog raises an incident at once."""
    try:
        daemon.stop(expected=False)
    except Exception as error:  # the store may be what failed
        log(f"could not record daemon.stop ({type(error).__name__}: {error})")
        try:
            daemon.publish("stopped", expected_stop=False)
        except Exception:
            pass
