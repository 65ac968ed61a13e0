"""The sync client's HTTP: one kept-alive connection, requests written on a
plain socket and answers parsed by httptools (the HTTP parser uvicorn uses),
about half the cost of `http.client` per request, which matters when every
input waits for its commit. A kept-alive connection the server closed while
idle is redialled at once (only when nothing of the answer came back and
the connection had served a request before: the server's idle close).

`exchange` gives the answer, or raises ConnectionError / OSError (a
timeout among them) when the connection failed: whether the request was
served is then unknown.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httptools

from tandem.client.errors import api_error
from tandem.client.protocol import Reply, Request, stream_path
from tandem.client.results import Message
from tandem.client.sse import MessageParser

timeout_s_default = 30.0
receive_bytes = 65_536
answer_bytes_max = 256 * 1_048_576  # a bigger answer is refused, not buffered


@dataclass
class _Answer:
    """httptools' callbacks fill this in."""

    body: list[bytes] = field(default_factory=list)
    size: int = 0
    complete: bool = False
    headers_done: bool = False
    keep_alive: bool = False
    parser: Any = None
    retry_after: bytes | None = None  # the Retry-After header, as sent
    bounded: bool = True  # a stream's body is consumed as it comes: no total to bound

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() == b"retry-after":
            self.retry_after = value

    def on_body(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.bounded and self.size > answer_bytes_max:
            raise ValueError(f"the answer is over {answer_bytes_max} bytes")
        self.body.append(chunk)

    def on_headers_complete(self) -> None:
        self.headers_done = True
        # Asked here: once the answer is complete the parser has moved on.
        self.keep_alive = bool(self.parser is not None and self.parser.should_keep_alive())

    def on_message_complete(self) -> None:
        self.complete = True


class _Closed(Exception):
    """The server closed the connection before answering anything."""


def seconds(value: bytes | str | None) -> float | None:
    """A Retry-After in seconds (its HTTP-date form is not Tandem's: None)."""
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class Connection:
    """One kept-alive connection to `tandem serve` at `url` (http:// only:
    put TLS in front with a proxy), every request with the bearer `token`."""

    def __init__(self, url: str, token: str, timeout_s: float = timeout_s_default) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"not an http:// URL: {url!r} (put TLS in front with a proxy)")
        self.host, self.port = parts.hostname, parts.port or 80
        self.base = parts.path.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s
        self._socket: socket.socket | None = None
        self._host_header = f"{self.host}:{self.port}".encode()

    def _connect(self, timeout_s: float | None = None) -> socket.socket:
        connection = socket.create_connection((self.host, self.port), timeout=self.timeout_s if timeout_s is None else timeout_s)
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection

    def _head(self, method: str, path: str, extra: dict[str, str], length: int | None) -> bytes:
        lines = [f"{method} {self.base}{path} HTTP/1.1".encode(), b"Host: " + self._host_header, b"Authorization: Bearer " + self.token.encode()]
        lines.extend(f"{name}: {value}".encode() for name, value in extra.items())
        if length is not None:
            lines.append(b"Content-Length: %d" % length)
        return b"\r\n".join(lines) + b"\r\n\r\n"

    def exchange(self, request: Request) -> Reply:
        """One request on the kept-alive connection, its answer whatever its status."""
        extra = {"Accept": "application/json", **({"Content-Type": request.content_type} if request.content_type else {})}
        body = request.body
        wire = self._head(request.method, request.path, extra, len(body) if body is not None else (0 if request.method == "POST" else None))
        wire += body or b""
        for attempt in (1, 2):
            reused = self._socket is not None
            connection = self._socket or self._connect()
            self._socket = connection
            try:
                reply, keep = self._exchange(connection, wire)
            except (_Closed, BrokenPipeError, ConnectionResetError):
                self.close()
                if attempt == 2 or not reused:
                    raise ConnectionError(f"the server at {self.host}:{self.port} closed the connection") from None
                continue
            except BaseException:
                self.close()  # a half-read answer leaves the connection unusable
                raise
            if not keep:
                self.close()
            return reply
        raise AssertionError("unreachable")

    @staticmethod
    def _exchange(connection: socket.socket, wire: bytes) -> tuple[Reply, bool]:
        connection.sendall(wire)
        answer = _Answer()
        parser = answer.parser = httptools.HttpResponseParser(answer)
        received = False
        while not answer.complete:
            chunk = connection.recv(receive_bytes)
            if not chunk:
                if not received:
                    raise _Closed
                raise ConnectionError("the server closed the connection mid-answer")
            received = True
            try:
                parser.feed_data(chunk)
            except httptools.HttpParserError as error:
                raise ConnectionError(f"the server's answer is not HTTP: {error}") from None
        return Reply(parser.get_status_code(), b"".join(answer.body), seconds(answer.retry_after)), answer.keep_alive

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def stream(
        self, last_event_id: int | None, views: Iterable[str] | None, timeout_s: float | None, rows: bool = False, keys: bool = False
    ) -> Iterator[Message]:
        """`GET /v1/stream` on a connection of its own: the messages as they
        come (with `rows`, each change's row changes; with `keys`, the keys
        of the rows it changed); an error answer raises ApiError."""
        return self.ticking(last_event_id, views, timeout_s, rows, False, keys)  # type: ignore[return-value]

    def ticking(
        self, last_event_id: int | None, views: Iterable[str] | None, tick_s: float | None, rows: bool, ticks: bool = True,
        keys: bool = False,
    ) -> Iterator[Message | None]:
        """`stream`, yielding None each time `tick_s` passes without a byte
        (with `ticks`), so that a caller can keep its own deadline."""
        extra = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            extra["Last-Event-ID"] = str(last_event_id)
        path = stream_path(views, rows, keys)
        connection = self._connect(tick_s)
        try:
            connection.sendall(self._head("GET", path, extra, None))
            yield from _stream_messages(connection, ticks)
        finally:
            connection.close()


def _stream_messages(connection: socket.socket, ticking: bool = False) -> Iterator[Message | None]:
    """Parse `text/event-stream` from the chunked answer; an error answer
    raises ApiError. `ticking`: a read that times out yields None (a tick:
    the caller looks at its clock) and the stream goes on."""
    answer = _Answer(bounded=False)
    parser = httptools.HttpResponseParser(answer)
    messages = MessageParser()
    while not answer.complete:
        try:
            chunk = connection.recv(receive_bytes)
        except TimeoutError:
            if not ticking:
                raise
            yield None
            continue
        if not chunk:
            return
        parser.feed_data(chunk)
        if answer.headers_done and parser.get_status_code() != 200:
            while not answer.complete and (chunk := connection.recv(receive_bytes)):
                parser.feed_data(chunk)
            raise api_error(parser.get_status_code(), b"".join(answer.body), seconds(answer.retry_after))
        data = b"".join(answer.body)
        answer.body.clear()
        yield from messages.feed(data)
