"""`AsyncClient`: the client of `tandem serve` for asyncio, on httpx, with
the sync `Client`'s surface (docs/api.md, "The Python client").

    async with AsyncClient("http://127.0.0.1:8765", token) as tandem:
        result = await tandem.submit(inputs.HumanMessage(conversation_id="fg", message_id="m3", text="ship it"))
        async for message in tandem.stream(last_event_id=result.position):
            ...

httpx keeps a pool of connections: several calls may be in flight at once
from one AsyncClient. What each call does is client/protocol.py's, as for
the sync client; this module only drives it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any

import httpx

from tandem.client import protocol, replica
from tandem.client.errors import api_error
from tandem.client.inputs import Input
from tandem.client.protocol import Lost, Pause, Reply, Request, RetryPolicy, Steps, T
from tandem.client.replica import Change, Clock, wait_s_default
from tandem.client.results import BatchResult, EventPage, Explained, Health, Message, Result, View, Views, Work
from tandem.client.sse import MessageParser
from tandem.client.transport import seconds, timeout_s_default


class AsyncClient:
    """`url` (http:// or https://), `token` (the bearer token: it is the
    actor); `timeout_s` for each request; `retry`, how calls retry."""

    def __init__(self, url: str, token: str, *, timeout_s: float = timeout_s_default, retry: RetryPolicy = RetryPolicy()) -> None:
        parsed = httpx.URL(url)
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ValueError(f"not an http:// or https:// URL: {url!r}")
        self.http = httpx.AsyncClient(
            base_url=url.rstrip("/"), headers={"Authorization": f"Bearer {token}"}, timeout=timeout_s, trust_env=False
        )
        self.retry = retry
        self.head_seen = 0  # the highest head an answer showed this client

    async def _exchange(self, request: Request) -> Reply | Lost:
        headers = {"Accept": "application/json", **({"Content-Type": request.content_type} if request.content_type else {})}
        try:
            response = await self.http.request(request.method, request.path, content=request.body, headers=headers)
        except httpx.TransportError as error:  # refused, reset, closed, timed out
            return Lost(f"{type(error).__name__}: {error}")
        return Reply(response.status_code, response.content, seconds(response.headers.get("retry-after")))

    async def _run(self, steps: Steps[T]) -> T:
        reply: Reply | Lost | None = None
        while True:
            try:
                step = steps.send(reply)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            if isinstance(step, Pause):
                await asyncio.sleep(step.seconds)
                reply = None
            else:
                reply = await self._exchange(step)

    def _saw(self, position: int | None) -> None:
        if position is not None and position > self.head_seen:
            self.head_seen = position

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exception: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------- inputs

    async def submit(self, input: Input | Mapping[str, Any]) -> Result:
        """One input, given an `id` if it has none, resent with it until
        answered: its Result when accepted; Rejected when recorded as rejected."""
        batch = await self._run(protocol.submitting([protocol.typed(input)], False, self.retry, self.head_seen))
        self._saw(batch.position)
        return protocol.single(batch)

    async def submit_batch(self, inputs: Iterable[Input | Mapping[str, Any]]) -> BatchResult:
        """Inputs in one transaction (application/x-ndjson), each given an
        `id` if it has none: all recorded, or none. Rejected inputs do not
        raise: see BatchResult.rejected and raise_for_rejections()."""
        batch = await self._run(protocol.submitting(protocol.batch_of(inputs), True, self.retry, self.head_seen))
        self._saw(batch.position)
        return batch

    # ------------------------------------------------------------ reading

    async def views(self, at: int | None = None) -> Views:
        return await self._run(protocol.views_steps(at, self.retry))

    async def view(self, name: str, at: int | None = None) -> View:
        return await self._run(protocol.view_steps(name, at, self.retry))

    async def row(self, view: str, key: str | tuple[str, ...], at: int | None = None) -> dict[str, Any] | None:
        """The row of `view` keyed `key` (results.ROW_KEYS; a tuple for
        `questions`: task_id, question_key), or None."""
        return await self._run(protocol.row_steps(view, key, at, self.retry))

    async def events(self, after: int = 0, limit: int | None = None) -> EventPage:
        return await self._run(protocol.events_page(after, limit, self.retry))

    async def explain(self, id: str, kind: str | None = None) -> Explained:
        return await self._run(protocol.explain_steps(id, kind, self.retry))

    async def health(self) -> Health:
        health = await self._run(protocol.health_steps())
        self._saw(health.position)
        return health

    # ------------------------------------------------------------- stream

    async def stream(
        self,
        last_event_id: int | None = None,
        views: Iterable[str] | None = None,
        timeout_s: float | None = None,
        rows: bool = False,
        keys: bool = False,
    ) -> AsyncIterator[Message]:
        """The live stream's messages as they come; resume with the last
        `id` you saw. Not retried: on a lost connection, call it again with
        that id. `timeout_s`: the longest wait for a byte (None: no limit).
        `rows`: each change carries its row changes (`?rows=1`); `keys`:
        the keys of the rows it changed instead (`?rows=keys`)."""
        headers = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        path = protocol.stream_path(views, rows, keys)
        async with self.http.stream("GET", path, headers=headers, timeout=httpx.Timeout(timeout_s)) as response:
            if response.status_code != 200:
                body = await response.aread()
                raise api_error(response.status_code, body, seconds(response.headers.get("retry-after")))
            parser = MessageParser()
            async for chunk in response.aiter_raw():
                for message in parser.feed(chunk):
                    yield message

    # -------------------------------------------------- waiting on changes

    async def work(self, runtime_id: str | None = None) -> Work:
        """The work queue (`GET /v1/work`), as Client.work."""
        return await self._run(protocol.work_steps(runtime_id, self.retry))

    async def watch(self, views: Iterable[str] | None = None, *, timeout_s: float | None = None) -> AsyncIterator[Change]:
        """The views as they change, commit by commit: as Client.watch."""
        async for change in self._watch(views, timeout_s, None):
            yield change

    async def wait_for(
        self,
        view: str,
        predicate: Callable[[Any], bool] = lambda row: True,
        *,
        key: str | tuple[str, ...] | None = None,
        timeout_s: float = wait_s_default,
    ) -> Any:
        """Wait until `view` has a row that passes `predicate`: as Client.wait_for."""
        deadline = time.monotonic() + timeout_s
        async for change in self._watch([view], None, deadline):
            match = replica.found(change, view, predicate, key)
            if match is not replica.NOTHING:
                return match
        raise AssertionError("watch ends only by raising")  # pragma: no cover

    async def _watch(self, views: Iterable[str] | None, idle_s: float | None, deadline: float | None) -> AsyncIterator[Change]:
        names = list(views) if views is not None else None
        kept = replica.Replica(await self.views())
        yield replica.reloaded(kept)
        clock = Clock(idle_s, deadline)
        lost = 0
        while True:
            messages: asyncio.Queue[Message | BaseException] = asyncio.Queue()
            reader = asyncio.create_task(self._read(kept.position, names, messages))
            try:
                while True:
                    try:
                        message = await asyncio.wait_for(messages.get(), clock.tick_s)
                    except TimeoutError:
                        message = None
                    if isinstance(message, BaseException):
                        raise message
                    clock.check(message is not None)
                    if message is None:
                        continue
                    lost = 0
                    if message.event == "reset":
                        kept = replica.Replica(await self.views())
                        yield replica.reloaded(kept)
                    elif message.event == "change" and kept.apply(message.data):
                        yield replica.changed(kept.position, message.data, kept)
            except (ConnectionError, TimeoutError, httpx.TransportError) as error:
                if isinstance(error, TimeoutError) and clock.expired():
                    raise
                lost += 1
                if lost >= self.retry.attempts_max:
                    raise
                await asyncio.sleep(self.retry.delay_first_s)
            finally:
                reader.cancel()

    async def _read(self, after: int, names: list[str] | None, into: asyncio.Queue[Message | BaseException]) -> None:
        """The rows stream's messages into `into`; how it ended, last."""
        try:
            async for message in self.stream(after, names, None, rows=True):
                await into.put(message)
            await into.put(ConnectionError("the stream ended"))
        except Exception as error:  # handed to the waiting side
            await into.put(error)
