"""The application service of `tandem serve`: what its doors share — the HTTP
API (adapters/http_api.py, adapters/http_inputs.py, the GitHub webhook) and
the console (adapters/console/) — with no web framework in it.

It holds the runtime (adapters/runtime.py: the store's single writer, whose
rounds also apply the spool and the watchdog's rows, as `tandem daemon`'s
do), the reader store, the tokens, the console's sessions, the live
stream's hub and the log's index; and it does what every door asks:

* `submit`: live inputs parsed with the live edge's rules (replay/traces.py,
  replay/edge.py) and committed, with the requests that came meanwhile, in
  one transaction (adapters/group_commit.py), its own `Commit` back;
* `views` (live, or `?at=`), `events`, `explain`, `whatif`: reads;
* `with_engine`: any use of the engine, one at a time (`engine_lock`, an
  asyncio lock: in order); small work on the event loop, big batches and a
  remote store's commits in a worker thread, so that the loop keeps serving
  streams and reads meanwhile. Reads that need no live state use the reader
  store, opened read-only by use, in worker threads, and never wait for the
  writer;
* `on_commit`: the engine's listener that feeds the stream's hub.

Refusals are `ApiError`s: a status and a code of docs/api.md, which every
door says in its own way (a JSON error body, a console page, a flash).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import msgspec

from tandem.adapters.past_folds import PastFolds
from tandem.adapters.follow import Follower
from tandem.adapters.log_index import IndexKeeper
from tandem.adapters.group_commit import Body, GroupCommit, Outcome
from tandem.adapters.runtime import LiveEngine, LockLost, ReadOnly, Runtime
from tandem.adapters.search import Searching
from tandem.adapters.sessions import Sessions
from tandem.adapters.stream import Hub
from tandem.adapters.tokens import TokenTable
from tandem.adapters.whatif_store import whatif_store
from tandem.projections.rows import VALUE_VIEWS
from tandem.projections.work import WorkBody, work_items
from tandem.replay.commits import Commit, EventRow, events_page, summarize
from tandem.replay.edge import Credential
from tandem.replay.engine import input_boundary, project
from tandem.replay.explain import ExplainError, document, encode_json
from tandem.replay.index import LogIndex
from tandem.replay.port import CommitUnknown, ConcurrencyError, EventStore, Fenced, StoreError
from tandem.replay.whatif.edits import Edit, EditInvalid
from tandem.replay.whatif.model import WhatIf

log = logging.getLogger("tandem.serve")

reader_threads_max = 4
whatifs_at_once = 1  # what-ifs read in one reader thread at most: the other reads never wait behind them
inline_body_bytes_max = 65_536  # bigger bodies are decided in a worker thread
# A 503 says when to try again (`Retry-After`, seconds): a store that failed
# is folded again at the next request, and a standby takes over in well under
# a second (docs/operations.md).
retry_after_s = 1
# What a 503 commit_unknown asks of its client (docs/api.md, "Errors").
commit_unknown_advice = (
    "resend the same input(s) with the same id(s): one already recorded is answered duplicate_input, never applied "
    "twice (an input without an id may be applied twice)"
)

T = TypeVar("T")


class ApiError(Exception):
    """A refusal as docs/api.md says it: a status, a code, a message (and,
    for a 400 of bad lines, the lines)."""

    def __init__(self, status: int, code: str, message: str, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.errors = status, code, message, errors

    def __reduce__(self) -> tuple[Any, ...]:  # copied as it was made (each request of a failed group gets one)
        return (ApiError, (self.status, self.code, self.message, self.errors))

    def headers(self) -> dict[str, str]:
        """The headers the error adds: `Retry-After` on every 503."""
        return {"Retry-After": str(retry_after_s)} if self.status == 503 else {}


async def to_thread_to_the_end(work: Callable[[], T]) -> T:
    """`work()` in a worker thread, awaited to its end even when the caller
    is cancelled (the cancellation is raised once the thread has finished).

    What holds the engine must hold it until the work on it has ended: a
    cancelled `anyio.to_thread.run_sync` or `asyncio.to_thread` returns at
    once while its thread goes on, and the caller's `async with` lets go of
    `Service.engine_lock` under it (a stopping server cancels its rounds,
    then stopped beside a round still committing: issue 22)."""
    future = asyncio.get_running_loop().run_in_executor(None, contextvars.copy_context().run, work)
    cancelled: asyncio.CancelledError | None = None
    while not future.done():
        try:
            await asyncio.wait((future,))  # never cancels the future it waits for
        except asyncio.CancelledError as error:
            cancelled = error
    if cancelled is not None:
        if not future.cancelled() and future.exception() is not None:
            log.warning("work finished after its caller was cancelled, failing: %r", future.exception())
        raise cancelled
    return future.result()


def view_body(value: Any, name: str | None, position: int) -> dict[str, Any]:
    """A view's answer (`/v1/views/NAME`), or the whole document's (`name` None)."""
    if name is None:
        return {**value, "position": position}
    return {"position": position, ("value" if name in VALUE_VIEWS else "rows"): value}


@dataclass
class Service:
    """What the doors share: the runtime (its engine is the writer), the
    reader store, the tokens, the sessions and the live stream's hub."""

    runtime: Runtime
    reader: EventStore
    tokens: TokenTable
    hub: Hub | None = None
    engine_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    reader_limiter: anyio.CapacityLimiter = field(default_factory=lambda: anyio.CapacityLimiter(reader_threads_max))
    whatif_limiter: anyio.CapacityLimiter = field(default_factory=lambda: anyio.CapacityLimiter(whatifs_at_once))
    rendered: dict[str, tuple[int, bytes]] = field(default_factory=dict)  # live views by name, at a position (one per view)
    stop_server: Callable[[], None] | None = None  # ends the server (the writer lock was lost)
    # The server's way to drop a request's connection at once (by its ASGI
    # scope), for a stream whose client stopped reading (adapters/stream.py).
    connection_aborter: Callable[[dict[str, Any]], Callable[[], None] | None] | None = None
    # How many requests the server has read and not answered yet (None: unknown): group commit's hint.
    requests_under_way: Callable[[], int] | None = None
    lock_lost: str | None = None  # why, once it was
    commits_inline: bool = True  # the store is local (SQLite, memory): small commits on the loop
    sessions: Sessions = field(default_factory=Sessions)  # the console's signed-in browsers
    # The log's index (adapters/log_index.py), built after startup and kept by the commits.
    indexing: IndexKeeper = field(default_factory=IndexKeeper)
    # The GitHub webhook's secret (--github-secret-file); None: POST /v1/sources/github is 404.
    github_secret: bytes | None = None
    # A follower or standby (adapters/follow.py); None: this server is the store's writer.
    follower: Follower | None = None
    # The search index and its keeper (adapters/search/), once the server started.
    searching: Searching | None = None
    past: PastFolds = field(default_factory=PastFolds)  # the console's last views of the past (adapters/past_folds.py)
    grouping: GroupCommit = field(init=False)  # the requests' inputs, committed in groups

    def __post_init__(self) -> None:
        self.grouping = GroupCommit(self.commit_group, alone=lambda: self.runtime.start_deferred, crowded=self._crowded)

    def _crowded(self) -> bool:
        """Whether another request than the caller's is under way in the server (unknown: yes)."""
        return self.requests_under_way is None or self.requests_under_way() > 1

    @property
    def engine(self) -> LiveEngine:
        assert self.runtime.engine is not None
        return self.runtime.engine

    @property
    def index(self) -> LogIndex | None:
        """The LogIndex of the reader store's log once it is ready, else None
        (pass it as `index=` to explain's `document` and `replay.timeline`)."""
        return self.indexing.index

    @property
    def index_ready(self) -> bool:
        return self.indexing.ready

    # ------------------------------------------------------------- the engine

    async def with_engine(self, work: Callable[[], T], inline: bool = True) -> T:
        """Run `work` holding the engine (one at a time); a store that fails
        is 503 `store_unavailable`, and the engine folds it again next time.
        Work is done on the event loop only when asked and when the store is
        local (a PostgreSQL commit may wait on the network: in a thread)."""
        async with self.engine_lock:
            try:
                if self.runtime.relock or self.engine.stale:
                    # The store failed, or the writer lock is to be taken
                    # again (its session ended): nothing is written without it.
                    if await to_thread_to_the_end(self._lock_lost_check):
                        raise ApiError(503, "store_unavailable", f"{self.lock_lost}; nothing was recorded")
                self.engine.ensure_current()
                if inline and self.commits_inline:
                    return work()
                return await to_thread_to_the_end(work)
            except ReadOnly as refused:
                raise ApiError(409, "read_only", str(refused)) from None
            except Fenced as fenced:
                # Another writer claimed the store: this one writes nothing more.
                raise self._stopped_writing(self.runtime.fenced_off(fenced)) from None
            except LockLost as lost:
                raise self._stopped_writing(lost) from None
            except ConcurrencyError:
                # Another writer appended: the writer lock was lost. Nothing of
                # this request was written; see whether the lock is still ours.
                await to_thread_to_the_end(self._lock_lost_check)
                raise ApiError(503, "store_unavailable", "another writer appended to the store; nothing was recorded, retry") from None
            except CommitUnknown as unknown:
                raise ApiError(503, "commit_unknown", f"{unknown}: {commit_unknown_advice}") from None
            except StoreError as error:
                said = str(error) if "nothing was recorded" in str(error) else f"{error}; nothing was recorded"
                raise ApiError(503, "store_unavailable", f"the store failed: {said}, retry") from None

    def _stopped_writing(self, lost: LockLost) -> ApiError:
        """This server lost the store to another writer: it stops (its
        clients go to the writer that holds the store now)."""
        self.lock_lost = str(lost)
        if self.stop_server is not None:
            self.stop_server()
        return ApiError(503, "store_unavailable", f"{lost}; nothing of this request was recorded: send it to the store's writer")

    def _lock_lost_check(self) -> bool:
        """Keep the writer lock (StoreError while the store is away); True,
        and the server stopping, when another writer holds it now."""
        try:
            self.runtime.keep_lock()
        except LockLost as lost:
            self.lock_lost = str(lost)
            if self.stop_server is not None:
                self.stop_server()
            return True
        return False

    async def reading(self, work: Callable[[], T]) -> T:
        """Run `work` on the reader store in a worker thread (never waiting for the writer)."""
        try:
            return await anyio.to_thread.run_sync(work, limiter=self.reader_limiter)
        except StoreError as error:
            raise ApiError(503, "store_unavailable", f"the store cannot be read: {error}") from None

    # ------------------------------------------------------------- inputs

    async def submit(self, data: bytes, batch: bool, credential: Credential) -> Commit:
        """Live inputs (one, or a batch of lines) from `credential`: parsed
        and checked whole by the live edge's rules, then committed, with the
        requests that came meanwhile, in one transaction (adapters/group_commit.py);
        its own `Commit`. Raises TraceInvalid or EdgeRefused (nothing of it
        written), or ApiError (the store, the writer lock: nothing of its group written)."""
        return await self.grouping.submit(Body(data, batch, credential))

    async def commit_group(self, bodies: list[Body]) -> list[Outcome]:
        """Decide and commit a group of requests, holding the engine: on the
        event loop when their bodies are small together (as one small body
        is), else in a worker thread, so that the loop serves reads meanwhile."""
        inline = sum(len(body.data) for body in bodies) <= inline_body_bytes_max
        return await self.with_engine(lambda: self.runtime.submit_bodies(bodies), inline=inline)

    async def position(self) -> int:
        """The engine's position now (what a request that records nothing answers)."""
        return await self.with_engine(lambda: self.engine.state.position)

    def on_commit(self, commit: Commit) -> None:
        """The engine's listener: every commit, to the live stream."""
        if self.hub is not None:
            self.hub.publish_from_any_thread(summarize(commit.head_before, commit.events, commit.views, commit.rows, commit.keys))

    # -------------------------------------------------------------- reads

    async def views(self, name: str | None, at: int | None) -> bytes:
        """The views (one, or the whole document when `name` is None),
        encoded: live, or as they were after the first `at` events."""
        if at is None:
            return await self.with_engine(lambda: self.rendered_view(name))

        def fold() -> bytes:
            head = self.reader.head()
            if at > head:
                raise ApiError(400, "invalid_query", f"?at={at} is past the store's last event ({head})")
            boundary = input_boundary(self.reader, at)
            views = project(self.reader, until=boundary)
            return msgspec.json.encode(view_body(views.document() if name is None else views.view(name), name, boundary))

        return await self.reading(fold)

    def rendered_view(self, name: str | None) -> bytes:
        """The live views (one, or the whole document when `name` is None),
        encoded once per position."""
        key = name or ""
        position = self.engine.state.position
        cached = self.rendered.get(key)
        if cached is not None and cached[0] == position:
            return cached[1]
        views = self.engine.views
        assert views is not None
        body = msgspec.json.encode(view_body(views.document() if name is None else views.view(name), name, position))
        self.rendered[key] = (position, body)
        return body

    async def work(self, runtime_id: str | None) -> bytes:
        """The work queue (projections/work.py) at the engine's position, encoded."""

        def work() -> bytes:
            views = self.engine.views
            assert views is not None
            actions = views.by_name["actions"]
            return msgspec.json.encode(WorkBody(position=self.engine.state.position, items=work_items(actions, runtime_id)))  # type: ignore[arg-type]

        return await self.with_engine(work)

    async def events(self, after: int, limit: int) -> tuple[list[EventRow], int | None]:
        """Up to `limit` events after `after`, and where the next page starts."""
        return await self.reading(lambda: events_page(self.reader, after, limit))

    async def explain(self, thing: str, kind: str | None) -> bytes:
        """Why `thing` is as it is (`tandem explain --json`), encoded; 404
        `unknown_id` when the log knows no such thing."""

        def explain() -> bytes:
            try:
                return encode_json(document(self.reader, thing, kind=kind, index=self.index))
            except ExplainError as error:
                raise ApiError(404, "unknown_id", str(error)) from None

        return await self.reading(explain)

    async def whatif(self, edits: list[Edit], until: int | None) -> WhatIf:
        """`tandem whatif --store` of the served store (adapters/whatif_store.py),
        as of its head when it starts: on the reader store in a worker thread,
        as every read, so the engine is never held and the writer never waits;
        the fork is in memory; the log read through its index once ready. 422 `bad_edit` for an edit that cannot be applied."""

        def whatif() -> WhatIf:
            try:
                return whatif_store(self.reader, self.runtime.settings.store_url, edits, until, index=self.index)
            except EditInvalid as invalid:
                raise ApiError(422, "bad_edit", str(invalid)) from None

        async with self.whatif_limiter:
            return await self.reading(whatif)


__all__ = ["ApiError", "Service", "to_thread_to_the_end", "view_body"]
