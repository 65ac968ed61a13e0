"""A Python client for `tandem serve` (docs/api.md): what an orchestrator imports.

One kept-alive connection per client: requests are written on a plain
socket and answers parsed by httptools (the HTTP parser uvicorn uses), about
half the cost of `http.client` per request, which matters when every input
waits for its commit. A connection the server closed while idle is redialled
once (only when nothing of the answer came back).

    from tandem.adapters.client import Client, ApiError
    tandem = Client("http://127.0.0.1:8765", token)
    result = tandem.submit({"type": "human.message", "conversation_id": "fg", "message_id": "m1", "text": "hi"})
    tandem.view("actions")["rows"]
    for message in tandem.stream(last_event_id=result["position"]):
        ...                                   # Message(id, event, data)
    # A copy of the views kept by the row changes: adapters/replica.py.

Errors the server sends come back as `ApiError` (status, code, message,
errors); a 503 `store_unavailable` is safe to retry with the same input `id`s.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import httptools

timeout_s_default = 30.0
receive_bytes = 65_536
answer_bytes_max = 256 * 1_048_576  # a bigger answer is refused, not buffered


class ApiError(Exception):
    """An error response: `status`, `code` (docs/api.md), `message`, and for 400
    the bad lines (`errors`: [{line, message}])."""

    def __init__(
        self, status: int, code: str, message: str, errors: list[dict[str, Any]] | None = None, retry_after_s: float | None = None
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message, self.errors = status, code, message, errors or []
        self.retry_after_s = retry_after_s  # the answer's Retry-After (every 503 has one), seconds


@dataclass(frozen=True, slots=True)
class Message:
    """One Server-Sent Events message: `id` (the position after the commit),
    `event` (`change` or `reset`) and `data` (decoded JSON)."""

    id: int | None
    event: str
    data: dict[str, Any]


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
    _header: bytes = b""

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header = name.lower()
        if self._header == b"retry-after":
            self.retry_after = value

    def on_body(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > answer_bytes_max:
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


class Client:
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

    # ---------------------------------------------------------- transport

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

    def request(self, method: str, path: str, body: bytes | None = None, content_type: str | None = None) -> Any:
        """One request on the kept-alive connection: the decoded JSON answer,
        or ApiError."""
        extra = {"Accept": "application/json", **({"Content-Type": content_type} if content_type else {})}
        wire = self._head(method, path, extra, len(body) if body is not None else (0 if method == "POST" else None))
        wire += body or b""
        for attempt in (1, 2):
            reused = self._socket is not None
            connection = self._socket or self._connect()
            self._socket = connection
            try:
                status, data, keep, retry_after = self._exchange(connection, wire)
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
            return _decoded(status, data, retry_after)
        raise AssertionError("unreachable")

    @staticmethod
    def _exchange(connection: socket.socket, wire: bytes) -> tuple[int, bytes, bool, float | None]:
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
            parser.feed_data(chunk)
        return parser.get_status_code(), b"".join(answer.body), answer.keep_alive, _seconds(answer.retry_after)

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exception: object) -> None:
        self.close()

    # ------------------------------------------------------------- inputs

    def submit(self, value: dict[str, Any]) -> dict[str, Any]:
        """One input (`at` and `actor` may be left out): {position, results}."""
        return self.request("POST", "/v1/inputs", json.dumps(value).encode(), "application/json")

    def submit_batch(self, values: Iterable[dict[str, Any]]) -> dict[str, Any]:
        """Several inputs in one transaction: all of them are recorded, or none."""
        body = b"".join(json.dumps(value).encode() + b"\n" for value in values)
        return self.request("POST", "/v1/inputs", body, "application/x-ndjson")

    # ------------------------------------------------------------ reading

    def views(self, at: int | None = None) -> dict[str, Any]:
        return self.request("GET", "/v1/views" + _query(at=at))

    def view(self, name: str, at: int | None = None) -> dict[str, Any]:
        return self.request("GET", f"/v1/views/{quote(name, safe='')}" + _query(at=at))

    def events(self, after: int = 0, limit: int | None = None) -> dict[str, Any]:
        return self.request("GET", "/v1/events" + _query(after=after, limit=limit))

    def explain(self, thing: str, kind: str | None = None) -> dict[str, Any]:
        return self.request("GET", f"/v1/explain/{quote(thing, safe='')}" + _query(kind=kind))

    def health(self) -> dict[str, Any]:
        try:
            return self.request("GET", "/v1/health")
        except ApiError as error:
            if error.status == 503:
                return {"status": error.code}
            raise

    # ------------------------------------------------------------- stream

    def stream(
        self,
        last_event_id: int | None = None,
        views: Iterable[str] | None = None,
        timeout_s: float | None = None,
        rows: bool = False,
    ) -> Iterator[Message]:
        """Messages as they come (a connection of its own; comment lines are
        skipped). Resume with the last `id` you saw. With `rows`, each
        `change` holds its row changes (`?rows=1`; adapters/replica.py
        applies them)."""
        extra = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            extra["Last-Event-ID"] = str(last_event_id)
        query = _query(views=",".join(views) if views is not None else None, rows=1 if rows else None)
        connection = self._connect(timeout_s)
        try:
            connection.sendall(self._head("GET", "/v1/stream" + query, extra, None))
            yield from _stream_messages(connection)
        finally:
            connection.close()


def _query(**parameters: Any) -> str:
    given = {name: value for name, value in parameters.items() if value is not None}
    return "?" + urlencode(given) if given else ""


def _seconds(value: bytes | None) -> float | None:
    """A Retry-After in seconds (its HTTP-date form is not Tandem's: None)."""
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _decoded(status: int, data: bytes, retry_after_s: float | None = None) -> Any:
    try:
        body = json.loads(data) if data else None
    except ValueError:
        body = None
    if 200 <= status < 300:
        return body
    error = (body or {}).get("error", {}) if isinstance(body, dict) else {}
    errors = body.get("errors") if isinstance(body, dict) else None
    raise ApiError(status, error.get("code", "http_error"), error.get("message", data[:200].decode(errors="replace")), errors, retry_after_s)


class _StreamAnswer(_Answer):
    def on_body(self, chunk: bytes) -> None:
        self.body.append(chunk)  # consumed as it comes: no total to bound


def _stream_messages(connection: socket.socket) -> Iterator[Message]:
    """Parse `text/event-stream` (the fields Tandem sends: id, event, data)
    from the chunked answer; an error answer raises ApiError."""
    answer = _StreamAnswer()
    parser = httptools.HttpResponseParser(answer)
    pending = b""
    while not answer.complete:
        chunk = connection.recv(receive_bytes)
        if not chunk:
            return
        parser.feed_data(chunk)
        if answer.headers_done and parser.get_status_code() != 200:
            while not answer.complete and (chunk := connection.recv(receive_bytes)):
                parser.feed_data(chunk)
            _decoded(parser.get_status_code(), b"".join(answer.body))
        pending += b"".join(answer.body)
        answer.body.clear()
        while b"\n\n" in pending:
            block, pending = pending.split(b"\n\n", 1)
            message = _message_of(block.decode("utf-8"))
            if message is not None:
                yield message


def _message_of(block: str) -> Message | None:
    fields: dict[str, str] = {}
    data: list[str] = []
    for line in block.split("\n"):
        if not line or line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        else:
            fields[name] = value
    if not data:
        return None
    identifier = fields.get("id")
    return Message(int(identifier) if identifier and identifier.isdigit() else None, fields.get("event", "message"), json.loads("\n".join(data)))
