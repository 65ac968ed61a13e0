"""Deadlines for slow clients: uvicorn's HTTP protocol (httptools), with a
request's head and body each given a time to arrive.

uvicorn closes a kept-alive connection idle between requests, but nothing
else: a connection that sends half a request head, or nothing, or a body a
byte at a time, was held for ever (500 such held, none closed; issue 22).
Here, per connection:

- the head (request line and headers) must arrive within `head_timeout_s`
  of the connection's start, or of the first byte of the next request on a
  kept-alive connection; else the connection is closed, unanswered;
- the body must arrive within `body_timeout_s` of the end of its head; else
  `408 request_timeout` (docs/api.md's error body) if nothing was answered
  yet, and the connection is closed. The application's next `receive` is a
  disconnect: the request is dropped whole, nothing recorded.

A response lasts as long as it needs: the live stream (`GET /v1/stream`)
has no body to wait for, and its deadline ends with its head. While the
server itself holds reading back (uvicorn pauses a pipelined request, or a
body the application has not consumed yet), the client is not the slow
one: the deadline starts again.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol, RequestResponseCycle

from tandem.adapters.api_schema import error_body


def deadlined_protocol(head_timeout_s: float, body_timeout_s: float) -> type[HttpToolsProtocol]:
    """The protocol class for `uvicorn.Config(http=...)`, with these deadlines (seconds)."""
    return type("DeadlinedProtocol", (DeadlinedProtocol,), {"head_timeout_s": head_timeout_s, "body_timeout_s": body_timeout_s})


class DeadlinedProtocol(HttpToolsProtocol):
    head_timeout_s: float
    body_timeout_s: float

    def __init__(self, *arguments: Any, **options: Any) -> None:
        super().__init__(*arguments, **options)
        self._head_deadline: asyncio.TimerHandle | None = None
        self._body_deadline: asyncio.TimerHandle | None = None
        self._body_cycle: RequestResponseCycle | None = None

    # -- the head: from the connection's start, or the next request's first byte

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_deadline = self.loop.call_later(self.head_timeout_s, self._head_late)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._head_deadline is None:
            self._head_deadline = self.loop.call_later(self.head_timeout_s, self._head_late)

    def on_headers_complete(self) -> None:
        self._cancel_head()
        super().on_headers_complete()

    def _head_late(self) -> None:
        self._head_deadline = None
        if self.flow.read_paused:  # held back by the server: not the client's delay
            self._head_deadline = self.loop.call_later(self.head_timeout_s, self._head_late)
        elif not self.transport.is_closing():
            self.transport.close()

    # -- the body: from the end of its head (its request started) to its last byte

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        super()._start_asgi_task(cycle, app)
        if cycle.more_body:
            self._cancel_body()
            self._body_cycle = cycle
            self._body_deadline = self.loop.call_later(self.body_timeout_s, self._body_late)

    def on_message_complete(self) -> None:
        if self.cycle is self._body_cycle:
            self._cancel_body()
        super().on_message_complete()

    def _body_late(self) -> None:
        self._body_deadline = None
        cycle = self._body_cycle
        if cycle is None or not cycle.more_body or cycle.disconnected or self.transport.is_closing():
            return
        if self.flow.read_paused:  # the application has not consumed what came: not the client's delay
            self._body_deadline = self.loop.call_later(self.body_timeout_s, self._body_late)
            return
        if not cycle.response_started:
            self.transport.write(self._answer_408())
        cycle.disconnected = True  # the application's next receive is a disconnect; its answer goes nowhere
        cycle.message_event.set()
        self.transport.close()

    def _answer_408(self) -> bytes:
        body = error_body(
            "request_timeout",
            f"the request's body did not arrive within {self.body_timeout_s:g} s of its head; nothing was recorded",
        )  # fmt: skip
        head = [STATUS_LINE[408]]
        for name, value in self.server_state.default_headers:
            head.append(name + b": " + value + b"\r\n")
        head += [b"content-type: application/json\r\n", b"content-length: %d\r\n" % len(body), b"connection: close\r\n\r\n"]
        return b"".join(head) + body

    # -- the end

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head()
        self._cancel_body()
        super().connection_lost(exc)

    def _cancel_head(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _cancel_body(self) -> None:
        if self._body_deadline is not None:
            self._body_deadline.cancel()
            self._body_deadline = None
        self._body_cycle = None
