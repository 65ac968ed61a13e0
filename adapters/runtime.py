"""The runtime: one engine over one store, its single writer, and the duties
a live engine has besides deciding (`tandem daemon` and `tandem serve` are
this same runtime; serve adds HTTP in front of it).

It applies inputs from four places:

* **HTTP clients** (`tandem serve`, through adapters/service.py): `submit_bodies`,
  several requests in one transaction (adapters/group_commit.py);
* **the spool folder** (`adapters/spool.py`): trace files renamed into it,
  applied in name order exactly once, speaking only for `--spool-actors`;
* **the watchdog's SQLite file**, read-only: each heartbeat, incident and
  recovery row becomes one input whose `id` is the row's id, imported once.
  No file, no heartbeat: the engine stays fail-closed;
* **itself** — `daemon.start` when it starts, `daemon.stop` (`expected: true`)
  when asked to stop, a `tick` when nothing else came for `tick_s` seconds.
  Waiting spool files are applied first, so a file written just before a
  tick is not refused for an `at` the tick moved past; before `daemon.start`
  the spool is scanned again until a scan finds nothing new, so a file
  renamed in while the start applied the others goes first too. On a store
  with no input yet, `daemon.start` waits for the first input from outside
  (so that input may be `engine.configure`, which must come first).

A spool file refused for an `at` behind the store's head (it came after
the store took something newer) is refused whole, as any bad trace, and the
runtime records a `health.incident` naming it (`spool_file_late/{n}`), so
that an alert says what a log line alone would not (docs/operations.md).

The inputs it makes itself carry `at` from the wall clock, read here at the
adapter edge (the domain never reads it): the current second in UTC, never
earlier than the store's last input. With `runtime_inputs=False` it makes
none (no start, stop or tick): for a store fed recorded traces with their own
times. The caller serialises calls: the runtime is one thread's at a time.
"""

from __future__ import annotations

import datetime
import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tandem.adapters.process import ProcessError, log
from tandem.adapters.group_commit import Body, commit_bodies
from tandem.adapters.health_file import format_time, read_snapshot, utc_now, write_snapshot
from tandem.adapters.ingest import ingest_batch_inputs_max
from tandem.adapters.side_files import SideFiles
from tandem.adapters.snapshots_beside import snapshots_beside_for
from tandem.adapters.spool import Spool, SpoolApplied, SpoolLate
from tandem.adapters.store import open_store, redacted
from tandem.adapters.terminal import printable
from tandem.adapters.watchdog import WatchdogUnreadable, facts_read_max, read_facts
from tandem.adapters.writer_lock import WriterLock, WriterLocked, acquire_writer_lock, claim_store
from tandem.domain import events as ev
from tandem.domain.inputs import decode_input
from tandem.replay.commits import Commit, encoded_row_changes, encoded_touched_keys
from tandem.replay.edge import SPOOL_ACTORS_DEFAULT, Credential, LiveEdge
from tandem.replay.engine import Engine, Located
from tandem.replay.port import Fenced, StoreError, WriterClaim
from tandem.replay.traces import Trace, parse_single, parse_trace

# At a stop, a snapshot is written when at least this many events came since
# the last one (a shorter tail folds in milliseconds at the next start).
stop_snapshot_events_min = 1_000
# Before daemon.start, the spool is scanned again after every scan that found
# something (its files took time to apply, and writers kept renaming theirs
# in), until one finds nothing new: at most this many scans, then the start
# is recorded and what still comes is applied after it (said in the log).
start_spool_scans_max = 100
# The incident a spool file refused for lines behind the store's head raises
# (`spool_file_late/{n}`): the file is kept, but nothing of it is applied.
late_file_incident_kind = "spool_file_late"


class LockLost(ProcessError):
    """Another writer holds the store's writer lock now: stop writing."""


class ReadOnly(Exception):
    """This runtime follows the store (`tandem serve --follow`, or a standby
    not yet the writer): it records nothing; the message names the writer."""


# ------------------------------------------------------------ the engine


class LiveEngine(Engine):
    """An engine that tells listeners of every commit, and that knows when its
    state ran ahead of a store that failed (`stale`): it folds the store
    again before the next use, and says StoreError while it cannot.

    `committed` is the store's head as of the last commit or fold: what may
    be read without holding the engine while a batch is being decided in a
    worker thread (`state.position` moves with every event decided, before
    anything is committed).

    `rows_wanted` says whether a commit's row changes are to be rendered
    (the stream's hub answers it: a stream asked for them, or may resume
    asking); a commit carries them then, encoded, else None."""

    def __init__(self, store: Any, **options: Any) -> None:
        self.listeners: list[Callable[[Commit], None]] = []
        self.stale = False
        self.committed = 0
        self.rows_wanted: Callable[[], bool] = _never
        super().__init__(store, **options)

    def _rebuild(self) -> None:
        self.stale = True
        super()._rebuild()
        self.committed = self.state.position
        self.stale = False
        if self.views is not None:
            self.views.take_changed()  # a fold is no change to tell

    def reload(self) -> None:
        """Fold the store again (another writer may have appended)."""
        self._rebuild()

    def ensure_current(self) -> None:
        """Fold the store again if a failed commit left the state ahead of it."""
        if self.stale:
            self._rebuild()

    def commit(self, items: Sequence[Located], trailer: Any = ()) -> Commit:
        """Decide and commit `items` (and `trailer`) in one transaction: the
        one `Commit` it makes, told to every listener and returned to the
        caller (empty, and told to none, when nothing was produced)."""
        self.ensure_current()
        head = self.state.position
        produced = super().submit_batch(items, trailer)
        self.committed = self.state.position
        if not produced:
            return Commit(head, produced)
        commit = Commit(head, produced, *self.take_changes())
        for listener in self.listeners:
            listener(commit)
        return commit

    def take_changes(self) -> tuple[list[str], bytes | None, bytes | None]:
        """The views changed since the last take, in document order, their
        row changes when wanted (else None) and the keys of the rows they
        changed (always: they cost no rendering); then they start over."""
        views = self.views
        if views is None:
            return [], None, None
        rows = encoded_row_changes(views) if self.rows_wanted() else None
        keys = encoded_touched_keys(views)
        return views.take_changed(), rows, keys

    def commit_parts(self, parts: Iterable[Sequence[Located]]) -> list[Commit]:
        """Decide and commit `parts` (Engine.submit_parts) in one
        transaction: a `Commit` per part, each with the views it changed
        (and their row changes, when wanted), told to every listener in
        order (as if each were committed alone)."""
        self.ensure_current()
        commits: list[Commit] = []
        head = self.state.position

        def settled(events: list[ev.Event]) -> None:
            before = commits[-1].position if commits else head
            commits.append(Commit(before, events, *self.take_changes()))

        self.submit_parts(parts, settled)
        self.committed = self.state.position
        for commit in commits:
            if commit.events:
                for listener in self.listeners:
                    listener(commit)
        return commits

    def submit_batch(self, items: Sequence[Located], trailer: Any = ()) -> list[ev.Event]:
        return self.commit(items, trailer).events


def _never() -> bool:
    return False


# --------------------------------------------------------- watchdog import


class WatchdogImport:
    """Reads the watchdog's file after the last row taken, by its `seq`.

    The position is kept in memory only: after a restart the runtime reads
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
            log(f"reading the watchdog's file {printable(str(self.path))} now")
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
            where = printable(str(self.path))
            self._say(f"no watchdog file at {where} (yet): no heartbeat, unattended dispatch stays held")
            return []
        except WatchdogUnreadable as error:
            self._say(f"{printable(str(error))}; will retry")
            return []
        self._say(None)
        self.store_id = store_id
        self.more = len(facts) >= self.limit
        if facts:
            self.after_seq = facts[-1].seq
        return [fact.input_fields() for fact in facts if not recorded(fact.id)]


# ------------------------------------------------------------- settings


@dataclass(frozen=True, slots=True)
class Settings:
    store_url: str
    spool: Path | None = None
    health: Path | None = None
    watchdog_db: Path | None = None
    interval_s: float = 1.0
    publish_interval_s: float = 5.0
    tick_s: float = 30.0  # 0: never tick
    batch: int = ingest_batch_inputs_max
    spool_actors: tuple[str, ...] = SPOOL_ACTORS_DEFAULT
    runtime_inputs: bool = True  # record daemon.start, daemon.stop and ticks
    snapshot_every: int | None = None  # None: the engine's default


# --------------------------------------------------------------- runtime


@dataclass
class Runtime:
    """One runtime process. The wall clock (`clock`) and the monotonic clock
    are injected so that its decisions can be driven in tests."""

    settings: Settings
    clock: Callable[[], datetime.datetime] = utc_now
    monotonic: Callable[[], float] = time.monotonic
    engine: LiveEngine | None = None
    lock: WriterLock | None = None
    relock: bool = False  # the lock was lost: take it again before anything more is written
    stopping: bool = False
    started: bool = False  # daemon.start recorded by this process
    running: bool = False  # start() done: the rounds go on
    start_deferred: bool = False  # daemon.start waits for the first input from outside
    waiting: int = 0  # ready spool files seen at the last scan
    last_ingestion: dict[str, Any] | None = None
    listeners: list[Callable[[Commit], None]] = field(default_factory=list)
    # Set while this runtime only follows the store: why a write is refused
    # (adapters/follow.py), raised as ReadOnly before anything is read.
    read_only: Callable[[], str] | None = None
    claim: WriterClaim | None = None  # this writer's claim of the store (its generation), once it has one

    def __post_init__(self) -> None:
        self.side_files = SideFiles(lambda: format_time(self.clock()) or "", self.monotonic)
        self.spool = Spool(self.settings.spool, self.settings.spool_actors, self.side_files) if self.settings.spool else None
        self.importer = WatchdogImport(self.settings.watchdog_db) if self.settings.watchdog_db else None
        self.started_at = self.clock()
        self.last_activity = self.monotonic()  # last input submitted, for idle ticks
        self.last_published = float("-inf")
        self._draining = False
        previous = self._previous_snapshot()
        if previous is not None and isinstance(previous.get("last_ingestion"), dict):
            self.last_ingestion = previous["last_ingestion"]

    def _previous_snapshot(self) -> dict[str, Any] | None:
        if self.settings.health is None:
            return None
        try:
            return read_snapshot(self.settings.health)
        except Exception:  # an unreadable old snapshot is replaced, not fatal
            return None

    # --------------------------------------------------------------- time

    def now(self) -> datetime.datetime:
        """The wall clock's current second (UTC), never earlier than the
        store's last input: the `at` of what the runtime stamps."""
        now = self.clock().astimezone(datetime.timezone.utc).replace(microsecond=0)
        last = self.engine.last_at if self.engine is not None else None
        return last if last is not None and now < last else now

    def stamp(self) -> str:
        return format_time(self.now()) or ""

    def edge(self, credential: Credential) -> LiveEdge:
        """The live edge's rules now, as data for the parser: this clock,
        this store's last input and the input ids it holds."""
        assert self.engine is not None
        return LiveEdge(self.now(), self.engine.last_at, credential, self.engine.state.idempotency)

    # ------------------------------------------------------------- inputs

    def make(self, fields: dict[str, Any], at: str | None = None) -> Located:
        """Build an input the way a trace line is read (`decode_input`), so it
        is validated exactly like one."""
        body = {"at": at or self.stamp(), **fields}
        return Located(decode_input(json.dumps(body).encode()))

    def submit(self, inputs: list[dict[str, Any]]) -> None:
        """Record inputs the runtime makes (its own, and the watchdog's rows):
        waiting spool files go first, and a deferred daemon.start."""
        assert self.engine is not None
        if not inputs:
            return
        self.drain_spool()
        if self.start_deferred:  # the runtime's first input of its own: the start goes first
            self.start_deferred = False
            self._record_start()
        at = self.stamp()
        self.engine.submit_batch([self.make(fields, at) for fields in inputs])
        self.last_activity = self.monotonic()

    def submit_body(self, data: bytes, batch: bool, credential: Credential) -> Commit:
        """Inputs from an HTTP client (or the console's form): validated
        whole (TraceInvalid, or EdgeRefused, and nothing written), then one
        transaction, its one `Commit` returned. Their recorded `file` is
        `http@{head before}`: every input of one request shares it, so the
        log keeps where each request began and ended."""
        (outcome,) = self.submit_bodies([Body(data, batch, credential)])
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def submit_bodies(self, bodies: Sequence[Body]) -> list[Commit | Exception]:
        """The inputs of several requests in one transaction, each its own
        (adapters/group_commit.py, `commit_bodies`): what each is answered,
        in order. A failure of the transaction is raised: nothing written."""
        if self.read_only is not None:
            raise ReadOnly(self.read_only())
        assert self.engine is not None
        self.engine.ensure_current()
        outcomes = commit_bodies(self.engine, bodies, self._parse)
        self.last_activity = self.monotonic()
        try:
            self._record_deferred_start()
        except StoreError as error:  # the requests' inputs are recorded: say so; the start comes next time
            log(f"daemon.start not recorded yet ({error}); it is recorded with the next input")
        return outcomes

    def _parse(self, body: Body, head: int) -> Trace:
        """A request's inputs by the live edge's rules, its file `http@{head}`."""
        name = f"http@{head}"
        edge = self.edge(body.credential)
        return parse_trace(body.data, name, name, live=edge) if body.batch else parse_single(body.data, name, edge)

    def _start_due(self) -> bool:
        """Whether a deferred daemon.start is to be recorded now: the store holds an input."""
        return self.start_deferred and self.engine is not None and self.engine.state.position > 0

    def _record_deferred_start(self) -> None:
        if self._start_due():
            self._record_start()
            self.start_deferred = False

    def _record_start(self, at: str | None = None) -> None:
        assert self.engine is not None
        self.engine.submit_batch([self.make({"type": "daemon.start", "actor": "daemon"}, at)])
        self.started = True
        self.last_activity = self.monotonic()

    # ---------------------------------------------------------- the rounds

    def drain_spool(self) -> None:
        """Apply the spool's ready files. A deferred daemon.start goes after
        every file waiting, not after the first: stamped with the clock, it
        would refuse a waiting file's earlier `at` (at_before_head)."""
        if self._scan_spool() and self._start_due():
            at = self._settled(watchdog=False)
            if at is not None and self._start_due():
                self.start_deferred = False
                self._record_start(at)

    def _scan_spool(self) -> int:
        """Apply the ready files of one scan of the spool, in name order; how many it found."""
        if self.spool is None or self._draining or self.engine is None:
            return 0
        self._draining = True
        try:
            files = self.spool.ready()
            self.waiting = len(files)
            for path in files:
                if self.stopping:
                    break
                self._apply(path)
                self.waiting -= 1
        finally:
            self._draining = False
        return len(files)

    def _settled(self, watchdog: bool) -> str | None:
        """Apply what waits, scan after scan, until one finds nothing new:
        the files renamed into the spool while the scan before was applied
        came before the start too. With `watchdog`, the watchdog's new rows
        once the spool is quiet (they are stamped with the clock), then the
        spool again. The stamp read just before that last, empty scan:
        daemon.start's `at` (nothing waiting was older); None when a stop
        was asked for. At most `start_spool_scans_max` scans."""
        assert self.engine is not None
        for _ in range(start_spool_scans_max):
            at = self.stamp()
            head = self.engine.state.position
            found = self._scan_spool()
            if watchdog and not found and not self.stopping:
                self.import_watchdog()
            if self.stopping:
                return None
            if not found and self.engine.state.position == head:
                return at
        log(
            f"the spool still had new files after {start_spool_scans_max} scans: daemon.start is recorded now, "
            "and the files still coming are applied after it"
        )
        if watchdog:
            self.import_watchdog()
        return None if self.stopping else self.stamp()

    def _apply(self, path: Path) -> None:
        assert self.engine is not None and self.spool is not None
        applied = self.spool.apply(path, self.engine, self.settings.batch, self.now, self._between_batches)
        if isinstance(applied, SpoolApplied):
            self.last_activity = self.monotonic()
            self.last_ingestion = applied.summary(format_time(self.clock()))
        elif isinstance(applied, SpoolLate) and self.settings.runtime_inputs:
            self._raise_late(applied)
        self.publish_if_due()

    def _raise_late(self, late: SpoolLate) -> None:
        """A file refused for lines behind the store's head lost nothing (it
        is kept in rejected/) but none of it is applied: a human must act, so
        an incident (`spool_file_late/{n}`), whose alert names the file."""
        assert self.engine is not None
        prefix = f"{late_file_incident_kind}/"
        number = 1 + sum(1 for incident_id in self.engine.state.alerts.incidents if incident_id.startswith(prefix))
        fields = {
            "type": "health.incident", "actor": "daemon", "incident_id": f"{prefix}{number}",
            "kind": late_file_incident_kind, "detail": late.detail(),
        }  # fmt: skip
        self.engine.submit_batch([self.make(fields)])
        self.last_activity = self.monotonic()

    def _between_batches(self) -> bool:
        """Between two committed batches of a spool file: go on?"""
        self.publish_if_due()
        return not self.stopping

    def import_watchdog(self) -> None:
        if self.importer is None or self.engine is None:
            return
        while not self.stopping:
            self.submit(self.importer.take(self.engine.state.idempotency.__contains__))
            if not self.importer.more:
                return

    def tick_if_idle(self) -> None:
        tick_s = self.settings.tick_s
        if self.settings.runtime_inputs and tick_s and self.monotonic() - self.last_activity >= tick_s:
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
            "store": redacted(self.settings.store_url),
            "spool": str(self.settings.spool) if self.settings.spool else None,
            "watchdog_db": str(self.settings.watchdog_db) if self.settings.watchdog_db else None,
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
        if self.settings.health is None:
            return
        if state is None:
            state = "running" if self.running else "starting"
        path, snapshot = self.settings.health, self.snapshot(state, expected_stop)
        # A snapshot that cannot be written is a fact, never an exit (adapters/side_files.py);
        # the next try is at the next interval.
        self.side_files.write("health_file", path, lambda: write_snapshot(path, snapshot))
        self.last_published = self.monotonic()

    def publish_if_due(self) -> None:
        if self.monotonic() - self.last_published >= self.settings.publish_interval_s:
            self.publish()

    # ------------------------------------------------------------ lifetime

    def ask_to_stop(self, number: int = 0, frame: Any = None) -> None:
        """Signal handler: only sets a flag; the loop stops between inputs."""
        self.stopping = True

    def lock_store(self) -> None:
        """Take the store's writer lock (one writer per store), at once or
        never: a second writer is refused with who holds it."""
        if self.lock is None:
            try:
                self.lock = acquire_writer_lock(self.settings.store_url)
            except StoreError as error:
                raise ProcessError(str(error)) from error

    def open(self) -> None:
        """Take the store's writer lock (if not yet held), then fold the store."""
        self.publish("starting")
        self.lock_store()
        try:
            options = {} if self.settings.snapshot_every is None else {"snapshot_every": self.settings.snapshot_every}
            # Snapshots by a process beside it: none stalls the inputs (adapters/snapshots_beside.py).
            beside = snapshots_beside_for(self.settings.store_url)
            store = open_store(self.settings.store_url)
            assert self.lock is not None
            try:
                self.claim = claim_store(store, self.lock)  # before the fold: all that stands is in it
            except BaseException:
                store.close()
                raise
            self.engine = LiveEngine(store, snapshots_beside=beside, **options)
        except StoreError as error:
            raise ProcessError(str(error)) from error
        self.engine.listeners.extend(self.listeners)

    def start(self) -> None:
        """Apply what waited in the spool, import the watchdog, scanning again
        until a scan finds nothing new (`_settled`), then record
        `daemon.start` (deferred on a store with no input yet). The backlog
        goes first because it was written before this start."""
        try:
            at = self._settled(watchdog=True)
            if at is None:
                return
            assert self.engine is not None
            if self.settings.runtime_inputs:
                if self.engine.state.position == 0:
                    self.start_deferred = True
                else:
                    self._record_start(at)
        except Fenced as fenced:
            raise self.fenced_off(fenced) from None
        self.running = True
        where = f", spool {printable(str(self.settings.spool))}" if self.settings.spool else ""
        generation = f", writer generation {self.claim.generation}" if self.claim is not None else ""
        log(f"started: pid {os.getpid()}, store {redacted(self.settings.store_url)}{where}{generation}")
        self.publish()

    def keep_lock(self) -> None:
        """Check that the store's writer lock is still ours (its PostgreSQL
        session ends when the server restarts or the session is terminated;
        its file can be removed): if not, take it again, folding the store
        anew if anything was written meanwhile. While the store cannot be
        reached the lock stays lost and this raises StoreError (the request is
        503, the round skipped, the next one tries again); if another writer
        holds it now, LockLost: write nothing more."""
        if self.lock is not None:
            try:
                self.lock.check()
                return
            except StoreError as lost:
                log(f"{lost}; taking it again")
            self.lock.release()
            self.lock = None
            self.relock = True
        if not self.relock:
            return
        try:
            self.lock = acquire_writer_lock(self.settings.store_url)
        except WriterLocked as error:
            raise LockLost(f"lost the store's writer lock and cannot take it again: {error}") from None
        except StoreError as error:
            raise StoreError(f"the store's writer lock was lost and cannot be taken again yet: {error}") from None
        if self.engine is not None and self.engine.store is not None:
            self.claim = claim_store(self.engine.store, self.lock)  # a new generation: whoever wrote meanwhile is fenced off
            if self.engine.store.head() != self.engine.state.position:
                self.engine.reload()
        self.relock = False
        log(f"writer lock taken again (writer generation {self.claim.generation if self.claim else '?'})")

    def fenced_off(self, fenced: Fenced) -> LockLost:
        """Another writer claimed the store since this runtime did (its lock
        was lost, another took it): nothing more is written from here, not
        even `daemon.stop`. The LockLost to raise."""
        if self.lock is not None:
            self.lock.release()
            self.lock = None
        self.relock = False
        return LockLost(f"{fenced}; another writer holds the store now: nothing more is written from here")

    def _take_waiting(self) -> bool:
        """Apply the waiting spool files, then the watchdog's new rows; False
        when a stop was asked for meanwhile."""
        self.drain_spool()
        if self.stopping:
            return False
        self.import_watchdog()
        return not self.stopping

    def round(self) -> None:
        try:
            self.keep_lock()
            if not self._take_waiting():
                return
            self.tick_if_idle()
        except Fenced as fenced:
            raise self.fenced_off(fenced) from None
        self.publish_if_due()

    def stop(self, expected: bool) -> None:
        """Record `daemon.stop` (if this process recorded a start), write a
        snapshot at the head, and publish the final health snapshot."""
        if self.started and self.engine is not None and self.lock is not None:
            self.engine.submit_batch(
                [self.make({"type": "daemon.stop", "actor": "daemon", "expected": expected})]
            )
        if self.engine is not None:
            # A snapshot at the head: the next start folds (almost) nothing;
            # one being written beside, of an earlier position, is not waited for.
            self.engine.cancel_beside()
            self.engine.checkpoint(min_events=stop_snapshot_events_min)
        self.publish("stopped", expected_stop=expected)

    def close(self, refused: bool = False) -> None:
        """Close the store, release its lock. `refused`: the start (or the
        run) failed, so a store this run created and left without an event
        goes, with its lock file (`WriterLock.discard`)."""
        if self.engine is not None and self.engine.store is not None:
            self.engine.store.close()
        if self.lock is not None:
            if refused:
                self.lock.discard()
            self.lock.release()
            self.lock = None
