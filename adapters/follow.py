"""Followers and standbys: `tandem serve --follow` and `tandem serve --standby`.

A **follower** serves the read routes and the live stream from a store it
never writes: it opens the store read-only, takes no writer lock, folds the
log, then tails it. Every write route answers 409 `read_only`, naming the
writer (the holder of the store's writer lock, adapters/writer_lock.py).

Tailing: eventsourcing's PostgreSQL recorder NOTIFYs a channel named after
the events table in every append's transaction, so the notification arrives
when the writer's commit does; the follower LISTENs on it (`Tail`, a thread
with a session of its own) and reads the events after its position. A
notification sent while the listening session was being (re)opened is lost,
so the follower also reads the store's head every `--interval` seconds: the
poll bounds how late it can be. (An SQLite store has no notifications: a
follower there polls only.)

The new events are folded as the writer folded them (`evolve`, then the
views), one commit at a time (`replay.commits.split_commits`: the commit
boundaries recoverable from the log), and each commit goes to the engine's
listeners: the stream's hub (the same `change` messages a resumed stream
gets from the writer) and the log's index. At position P a follower's views
are the writer's at P: both are the fold of the same first P events.

A **standby** is a follower that waits on the writer lock meanwhile
(`writer_lock.wait_writer_lock`: granted as soon as the holder's session
ends, as when its process is killed). Holding it, the standby reads the
store up to its head (nobody else can append now), swaps its read-only store
for a writable one and folds it again (exactly what a restart does), then
starts as a writer: the spool's lock, the waiting spool files, the
watchdog's rows, `daemon.start`. Fencing: every append carries the head it
was decided on (`RecorderStore.append`'s `expected_head`), so a writer that
lost its lock but not its connections can never append over the new
writer's events, nor the new writer over a stale head.
"""

from __future__ import annotations

import asyncio
import threading
import time
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

from tandem.adapters import daemon
from tandem.adapters.process import ProcessError, log
from tandem.adapters.runtime import LiveEngine, Runtime
from tandem.adapters.snapshots_beside import snapshots_beside_for
from tandem.adapters.terminal import printable_lines
from tandem.adapters.store import open_store, parse_store_url, postgres_connect_timeout_s, redacted
from tandem.adapters.writer_lock import HolderProbe, WriterHolder, WriterLock, claim_store, wait_writer_lock
from tandem.domain.rules import evolve
from tandem.replay.commits import Commit, split_commits
from tandem.replay.engine import settle_folded
from tandem.replay.port import ConcurrencyError, StoreError

# A catch-up reads at most this many events at a time (then the next page).
follow_page_events_max = 10_000
# Who holds the writer lock is read again at most this often (for 409s and health).
holder_refresh_s = 1.0
tail_wait_s = 1.0  # the listening session looks whether it should stop this often
tail_reconnect_s = 1.0  # after the listening session failed, wait this long before the next
open_wait_s = 10.0  # a follower started just before its writer waits this long for the store's table
open_retry_s = 0.2
takeover_start_attempts_max = 3  # a start refused as fenced is tried again on a new fold, this often

FOLLOWER, STANDBY, WRITER = "follower", "standby", "writer"


# ----------------------------------------------------------------- tail


class Tail(threading.Thread):
    """LISTEN on the store's channel; `wake()` at every notification, and
    once after each (re)connection (what was sent meanwhile is lost)."""

    def __init__(self, url: str, channel: str, wake: Callable[[], None]) -> None:
        super().__init__(name="tandem-follow-tail", daemon=True)
        self.url = url
        self.channel = channel
        self.wake = wake
        self.stop = threading.Event()
        self.connected = False

    def run(self) -> None:
        import psycopg
        from psycopg import sql

        connect = parse_store_url(self.url).connect
        failed = False
        while not self.stop.is_set():
            try:
                with psycopg.connect(
                    **connect, autocommit=True, connect_timeout=postgres_connect_timeout_s, application_name="tandem follower"
                ) as connection:
                    connection.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                    self.connected = True
                    if failed:
                        log("follower: listening again for the writer's commits")
                    failed = False
                    self.wake()
                    while not self.stop.is_set():
                        for _ in connection.notifies(timeout=tail_wait_s, stop_after=1):
                            self.wake()
            except psycopg.Error as error:
                self.connected = False
                if not failed:
                    log(f"follower: listening for commits failed ({str(error).strip() or type(error).__name__}); polling meanwhile")
                failed = True
                self.stop.wait(tail_reconnect_s)


# ------------------------------------------------------------- follower


class Follower:
    """The follower (or standby) side of one `tandem serve`: its engine is
    `runtime.engine`, over a read-only store; `catch_up` folds what the
    writer appended since. The caller holds the engine while it runs."""

    def __init__(self, runtime: Runtime, role: str, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.runtime = runtime
        self.role = role
        self.monotonic = monotonic
        self.url = runtime.settings.store_url
        self.probe = HolderProbe(self.url)
        self.holder: WriterHolder | None = None
        self.holder_read_at = float("-inf")
        self.store_head = 0
        self.looked_at = float("-inf")  # the last read of the store's head
        self.caught_up_at = float("-inf")  # the last time the position was the store's head
        self.tail: Tail | None = None
        self.stop = threading.Event()
        self.lock: WriterLock | None = None  # a standby's, once granted
        self.took_over_at: float | None = None
        self.spool_lock: Any = None  # taken at a takeover

    @property
    def engine(self) -> LiveEngine:
        assert self.runtime.engine is not None
        return self.runtime.engine

    @property
    def writing(self) -> bool:
        return self.role == WRITER

    def open(self) -> None:
        """Open the store read-only and fold it; wait up to `open_wait_s`
        for a writer that is creating its tables."""
        deadline = self.monotonic() + open_wait_s
        while True:
            try:
                store = open_store(self.url, read_only=True)
                break
            except StoreError as error:
                waiting = "has no table" in str(error) or "does not exist" in str(error)  # its writer creates it
                if not waiting or self.monotonic() >= deadline:
                    raise ProcessError(str(error)) from error
                time.sleep(open_retry_s)
        self.runtime.engine = LiveEngine(store)
        self.runtime.engine.listeners.extend(self.runtime.listeners)
        self.runtime.read_only = self.refusal
        self.store_head = self.engine.committed
        self.looked_at = self.caught_up_at = self.monotonic()
        self.refresh_holder(force=True)

    # ------------------------------------------------------------ refusal

    def refusal(self) -> str:
        """Why a write is refused here: who writes instead."""
        holder = self.holder
        where = f"the writer is {holder.describe()}" if holder else "no writer holds the store's writer lock now"
        what = "a standby (it writes once it takes the writer lock)" if self.role == STANDBY else "a follower"
        return f"this server is {what} of {redacted(self.url)} and records nothing; {where}: send writes there"

    def refresh_holder(self, force: bool = False) -> None:
        if force or self.monotonic() - self.holder_read_at >= holder_refresh_s:
            self.holder = self.probe.read()
            self.holder_read_at = self.monotonic()

    # ----------------------------------------------------------- catch up

    def catch_up(self) -> int:
        """Fold the events the writer appended since our position, one
        commit at a time, telling the engine's listeners; the events folded."""
        with self.engine.exclusive():
            return self._catch_up()

    def _catch_up(self) -> int:
        engine = self.engine
        store = engine.store
        assert store is not None
        head = store.head()
        self.store_head, self.looked_at = head, self.monotonic()
        if head < engine.committed:
            log(f"follower: the store's head {head} is behind our position {engine.committed}; folding it again")
            engine.reload()
            return 0
        folded = 0
        while engine.committed < head:
            base = engine.committed
            page = follow_page_events_max
            while True:
                upper = min(head, base + page)
                positioned = list(store.read(after=base, until=upper))
                commits = list(split_commits(positioned))
                if upper == head:
                    break
                if len(commits) > 1:
                    commits = commits[:-1]  # may go on past the page: read it whole next
                    break
                page *= 2  # one commit longer than the page: read it whole
            for summary in commits:
                self._apply(summary.after, [event for _, event in positioned[summary.after - base : summary.position - base]])
                folded += summary.position - summary.after
        settle_folded(engine.state)
        self.caught_up_at = self.monotonic()
        self.refresh_holder()
        return folded

    def _apply(self, after: int, events: list[Any]) -> None:
        engine = self.engine
        state, views = engine.state, engine.views
        assert state.position == after and views is not None, (state.position, after)
        for event in events:
            evolve(state, event)
            views.apply(event)
        engine.committed = state.position
        commit = Commit(after, events, *engine.take_changes())
        for listener in engine.listeners:
            listener(commit)

    # ------------------------------------------------------------- health

    def health(self) -> dict[str, Any]:
        """The fields /v1/health adds on a follower (docs/api.md)."""
        now = self.monotonic()
        position = self.engine.committed
        holder = self.holder
        return {
            "role": self.role,
            "store_head": self.store_head,
            "lag_events": max(0, self.store_head - position),
            "caught_up_s_ago": round(max(0.0, now - self.caught_up_at), 3),
            "looked_s_ago": round(max(0.0, now - self.looked_at), 3),
            "listening": self.tail is not None and self.tail.connected,
            "writer_holder": holder.describe() if holder else None,
        }

    # ------------------------------------------------------------ takeover

    def take_over(self) -> None:
        """Holding the writer lock: claim the store (a new writer generation:
        from its commit on the old writer, if it still runs, appends nothing;
        its appends in flight end first), read to the head, then become the
        writer (a writable store folded again, the spool's lock, runtime.start)."""
        assert self.lock is not None
        runtime = self.runtime
        writable = self._claimed()
        self.catch_up()  # all the old writer committed, told to the stream: nothing more can come
        engine = self.engine
        old, engine.store = engine.store, writable
        engine.snapshots_beside = snapshots_beside_for(self.url)  # a writer's snapshots, as `Runtime.open` gives it
        try:
            engine.reload()
        except StoreError as error:
            raise ProcessError(f"standby: cannot fold {redacted(self.url)} to write it: {error}") from error
        finally:
            if old is not None:
                old.close()
        runtime.lock, self.lock = self.lock, None
        self.spool_lock = daemon.spool_lock(runtime.settings)
        runtime.read_only = None
        self.role = WRITER
        self.took_over_at = self.monotonic()
        generation = runtime.claim.generation if runtime.claim is not None else "?"
        log(f"standby: took the writer lock at position {engine.committed} (writer generation {generation}); writing from now on")
        for _ in range(takeover_start_attempts_max):
            try:
                runtime.start()
                return
            except ConcurrencyError:
                # The old writer, cut from its lock but not from the store,
                # appended after our fold: ours was refused whole (fenced).
                log("standby: another process appended after the takeover's fold; nothing of ours recorded, folding again")
        raise ProcessError("standby: the store keeps moving under our writer lock: another process writes it without the lock")

    def _claimed(self) -> Any:
        """The store opened for writing and claimed under our lock."""
        assert self.lock is not None
        try:
            writable = open_store(self.url)
        except StoreError as error:
            raise ProcessError(f"standby: cannot open {redacted(self.url)} for writing: {error}") from error
        try:
            self.runtime.claim = claim_store(writable, self.lock)
        except StoreError as error:
            writable.close()
            raise ProcessError(f"standby: cannot claim {redacted(self.url)}: {error}") from error
        return writable

    def close(self) -> None:
        self.stop.set()
        if self.tail is not None:
            self.tail.stop.set()
        self.probe.close()
        if self.lock is not None:
            self.lock.release()
            self.lock = None
        if self.spool_lock is not None:
            self.spool_lock.release()
            self.spool_lock = None


# ----------------------------------------------------------------- loop


async def follow(
    follower: Follower, hold: Callable[[Callable[[], Any]], Awaitable[Any]], as_writer: Callable[[], Awaitable[None]],
    on_fatal: Callable[[str], None],
) -> None:
    """The follower's duty beside HTTP: catch up when notified, and every
    `interval_s` anyway; a standby also waits for the writer lock, takes
    over once it has it, then runs `as_writer` (the writer's rounds).
    `hold(work)` runs work in a thread holding the engine."""
    loop = asyncio.get_running_loop()
    wake = asyncio.Event()

    def wake_soon() -> None:
        loop.call_soon_threadsafe(wake.set)

    store = follower.engine.store
    channel = getattr(store, "notify_channel", None)
    if channel is not None:
        follower.tail = Tail(follower.url, channel, wake_soon)
        follower.tail.start()
    if follower.role == STANDBY:
        threading.Thread(target=_wait_lock, args=(follower, wake_soon), name="tandem-standby", daemon=True).start()
    interval_s = follower.runtime.settings.interval_s
    while not follower.stop.is_set():
        try:
            await asyncio.wait_for(wake.wait(), interval_s)
        except asyncio.TimeoutError:
            pass
        wake.clear()
        try:
            if follower.lock is not None:
                await hold(follower.take_over)
                if follower.tail is not None:
                    follower.tail.stop.set()
                await as_writer()
                return
            await hold(follower.catch_up)
        except ProcessError as error:
            on_fatal(str(error))
            return
        except StoreError as error:
            if follower.writing:  # its start failed half way: stop, as a writer that cannot start does
                on_fatal(f"standby: the start after the takeover failed: {error}")
                return
            log(f"follower: reading the store failed ({error}); will retry")
        except Exception:  # a follower is never stopped by what it read
            log("follower: catching up failed:\n" + printable_lines(traceback.format_exc()))


def _wait_lock(follower: Follower, wake: Callable[[], None]) -> None:
    """The standby's thread: block on the writer lock, then wake the loop."""
    while not follower.stop.is_set():
        try:
            lock = wait_writer_lock(follower.url, follower.stop)
        except StoreError as error:
            log(f"standby: {error}; trying again")
            follower.stop.wait(tail_reconnect_s)
            continue
        if lock is not None:
            log(f"standby: the writer lock of {redacted(follower.url)} is ours")
            follower.lock = lock
            wake()
        return
