"""The service's index of the log (replay/index.py), for explain and the
console's timeline: built in a background thread after startup, then kept
current by the engine's commits.

The keeper listens to commits before the build reads the store's head, and
holds them while the build runs (at most `buffered_commits_max`; past that it
drops them and reads them from the store instead); the build then applies
them, skipping those the store already gave it, and only then is the index
`ready`. From then on each commit is added as the engine makes it (a few
microseconds an event, in the engine's thread, no I/O). A commit that does
not follow the index's head (one the listener never saw: another writer, a
commit whose listeners did not run) sends the index back to the background
to catch up from the store; meanwhile it is not ready and reads go to the
log. An index past its bounds (`IndexFull`) is dropped for good.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from tandem.replay.commits import Commit
from tandem.replay.index import IndexFull, IndexGap, LogIndex
from tandem.replay.port import EventStore, StoreError

log = logging.getLogger("tandem.serve")

buffered_commits_max = 10_000


class IndexKeeper:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready: LogIndex | None = None
        self._store: EventStore | None = None
        self._working: threading.Thread | None = None
        self._pending: list[tuple[int, list[Any]]] = []  # commits held while the index is being (re)built
        self._overflowed = False
        self._partial: LogIndex | None = None  # an index sent back to catch up
        self.failed: str | None = None  # why there is no index, for good

    @property
    def index(self) -> LogIndex | None:
        """The index, once ready (None before, or while it catches up)."""
        return self._ready

    @property
    def ready(self) -> bool:
        return self._ready is not None

    def start(self, store: EventStore) -> None:
        """Build the index of `store` in a background thread (listen first)."""
        self._store = store
        self._spawn()

    def on_commit(self, commit: Commit) -> None:
        """The engine's listener: every commit, as it is made."""
        with self._lock:
            index = self._ready
            if index is None:
                self._hold(commit.head_before, commit.events)
                return
        try:
            index.add(commit.head_before, commit.events)
        except IndexGap as gap:
            log.warning("the log index is behind the store (%s): catching up", gap)
            with self._lock:
                self._ready, self._partial = None, index
                self._hold(commit.head_before, commit.events)
            self._spawn()
        except IndexFull as full:
            self._drop(str(full))
        except Exception:  # the commit is made: an index's failure never fails it
            log.exception("the log index failed on a commit")
            self._drop("it failed on a commit (see the log)")

    def _hold(self, head_before: int, events: list[Any]) -> None:
        if self.failed is not None:
            return
        if len(self._pending) >= buffered_commits_max:
            self._pending.clear()
            self._overflowed = True  # the build reads them from the store
        if not self._overflowed:
            self._pending.append((head_before, events))

    def _spawn(self) -> None:
        with self._lock:
            if self._working is not None and self._working.is_alive():
                return
            self._working = threading.Thread(target=self._work, name="tandem-log-index", daemon=True)
        self._working.start()

    def _work(self) -> None:
        store = self._store
        assert store is not None
        try:
            index = self._partial or LogIndex()
            self._partial = None
            index.catch_up(store)
            while not self._settle(index):
                pass
        except IndexFull as full:
            self._drop(str(full))
        except StoreError as error:
            self._drop(f"the store could not be read: {error}")
        except Exception:
            log.exception("the log index could not be built")
            self._drop("it could not be built (see the log)")

    def _settle(self, index: LogIndex) -> bool:
        """Apply the commits held meanwhile; True once none is left (then ready)."""
        assert self._store is not None
        with self._lock:
            pending, self._pending = self._pending, []
            overflowed, self._overflowed = self._overflowed, False
            if not pending and not overflowed:
                self._ready = index
                return True
        if overflowed:
            index.catch_up(self._store)
        for head_before, events in pending:
            try:
                index.add(head_before, events)
            except IndexGap:
                index.catch_up(self._store)
                index.add(head_before, events)
        return False

    def _drop(self, reason: str) -> None:
        log.warning("no log index (explain and the timeline read the log): %s", reason)
        with self._lock:
            self.failed = reason
            self._ready = self._partial = None
            self._pending.clear()

    def wait(self, timeout_s: float) -> bool:
        """Wait for the background work (tests); True if the index is ready."""
        working = self._working
        if working is not None:
            working.join(timeout_s)
        return self.ready
