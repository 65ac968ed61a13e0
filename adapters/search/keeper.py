"""The search index kept by the server that writes the store: a catch-up
projection of the log (docs/operations.md, "The search index").

A background thread indexes the log from the index's head (kept in the
index, in the same transaction as what it indexed) to the store's head, a
page of events a transaction; the engine's commits wake it (`poke`, a
listener of the live engine: no work in the engine's thread), each telling
the head to read to, so a commit costs the store no query of its head. A new index
of an existing store is built so at the first start, its progress logged.
A follower (the store opened read-only) never writes: it searches the
index the writer keeps; a standby starts keeping it once it writes.
A failure (the database away) is logged once and tried again later; the
index is then behind the log, which a search says.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from tandem.adapters.process import log
from tandem.adapters.search.documents import Documents, record_words
from tandem.replay.port import EventStore, StoreError

page_events = 2_000  # events indexed a transaction (a write holds SQLite's lock for ~10 ms)
idle_check_s = 5.0  # with no commit to wake it, it looks again this often (a standby taking over, a failure)
progress_events_min = 20_000  # a catch-up of more than this is logged, with its progress
progress_every_s = 10.0


class SearchKeeper:
    def __init__(self, index: Any, store: EventStore, may_write: Callable[[], bool]) -> None:
        self.index = index
        self.store = store
        self.may_write = may_write
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._prepared = False
        self._announced: int | None = None  # the newest commit's position told by `poke`, not caught up to yet
        self.failing: str | None = None  # the last failure's message, until a catch-up succeeds

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="tandem-search-index", daemon=True)
        self._thread.start()

    def poke(self, commit: Any = None) -> None:
        """A commit was made (an engine listener): catch up to it soon (its
        position is the head to read to: no query of the store's head)."""
        position = getattr(commit, "position", None)
        if position is not None:
            self._announced = max(position, self._announced or 0)
        self._wake.set()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop after the transaction in hand."""
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _run(self) -> None:
        self._wake.set()  # a first catch-up at once
        while not self._stopping:
            self._wake.wait(idle_check_s)
            self._wake.clear()
            if self._stopping or not self.may_write():
                continue
            try:
                self.catch_up()
            except StoreError as error:
                self._failed(str(error))
            except Exception as error:  # the index is a cache: its failure never stops the server
                self._failed(f"{type(error).__name__}: {error}")

    def _failed(self, message: str) -> None:
        if self.failing != message:
            log(f"warning: the search index could not be kept ({message}); searches answer from where it got to, tried again")
        self.failing = message
        self._prepared = False

    def catch_up(self) -> int:
        """Index the log up to the store's head now; the index's new head."""
        if not self._prepared:
            self.index.prepare()
            self._prepared = True
        with self.index.session() as reads:
            assert reads is not None, "prepared, yet no index"
            head, open_input = reads.head, reads.open_input()
        announced, self._announced = self._announced, None
        if announced is not None and head >= announced:
            return head  # there already (a catch-up of the store's head got past it)
        target = announced if announced is not None else self.store.head()
        if head > target:  # not this log's index (the store was replaced, its tables left): a cache, made again
            log(f"the search index reaches position {head:,}, past the log's head {target:,}: building it again")
            self.index.prepare(drop=True)
            return self.catch_up()
        open_words = record_words(self.store.read_positions([open_input])[0][1]) if open_input is not None else None
        documents = Documents(head, open_input, open_words)
        progress = _Progress(head, target) if target - head > progress_events_min else None
        page: list[Any] = []
        for item in self.store.read(after=head, until=target):
            page.append(item)
            if len(page) >= page_events:
                if not self._write(documents, page) or self._stopping:
                    return documents.head
                page = []
                if progress is not None:
                    progress.note(documents.head)
        if page and not self._write(documents, page):
            return documents.head
        if progress is not None:
            progress.done(documents.head)
        if self.failing is not None:
            log(f"the search index is kept again, up to position {documents.head}")
            self.failing = None
        return documents.head

    def _write(self, documents: Documents, page: list[Any]) -> bool:
        """One transaction; False if another keeper moved the index meanwhile (then this round ends)."""
        after = documents.head
        if self.index.write(documents.batch(page)):
            return True
        log(f"the search index moved past position {after} meanwhile (another server keeps it): reading it again")
        self._wake.set()
        return False


class _Progress:
    def __init__(self, head: int, target: int) -> None:
        self.start, self.target = head, target
        self.started = self.said = time.monotonic()
        log(f"building the search index: positions {head + 1:,} to {target:,} of the log")

    def note(self, head: int) -> None:
        now = time.monotonic()
        if now - self.said >= progress_every_s:
            self.said = now
            log(f"search index: {head:,} of {self.target:,} positions ({(head - self.start) * 100 // max(1, self.target - self.start)} %)")

    def done(self, head: int) -> None:
        log(f"search index built up to position {head:,} in {time.monotonic() - self.started:,.1f} s")
