"""A Python client for `tandem serve` (API.md): what an orchestrator imports.

Standard library only (`http.client`), one keep-alive connection per client,
reconnected once when the server closed an idle one.

    from adapters.client import Client, ApiError
    tandem = Client("http://127.0.0.1:8765", token)
    result = tandem.submit({"type": "human.message", "conversation_id": "fg", "message_id": "m1", "text": "hi"})
    tandem.view("actions")["rows"]
    for message in tandem.stream(last_event_id=result["position"]):
        ...                                   # Message(id, event, data)

Errors the server sends come back as `ApiError` (status, code, message,
errors); a 503 `store_unavailable` is safe to retry with the same input `id`s.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

timeout_s_default = 30.0
stream_line_bytes_max = 16 * 1_048_576


class ApiError(Exception):
    """An error response: `status`, `code` (API.md), `message`, and for 400
    the bad lines (`errors`: [{line, message}])."""

    def __init__(self, status: int, code: str, message: str, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message, self.errors = status, code, message, errors or []


@dataclass(frozen=True, slots=True)
class Message:
    """One Server-Sent Events message: `id` (the position after the commit),
    `event` (`change` or `reset`) and `data` (decoded JSON)."""

    id: int | None
    event: str
    data: dict[str, Any]


class Client:
    def __init__(self, url: str, token: str, timeout_s: float = timeout_s_default) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.scheme, self.host, self.port = parts.scheme, parts.hostname, parts.port
        self.base = parts.path.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s
        self._connection: http.client.HTTPConnection | None = None

    # ---------------------------------------------------------- transport

    def _connect(self, timeout_s: float | None = None) -> http.client.HTTPConnection:
        kind = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        return kind(self.host, self.port, timeout=self.timeout_s if timeout_s is None else timeout_s)

    def _headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", "Accept": "application/json", **(extra or {})}

    def request(self, method: str, path: str, body: bytes | None = None, content_type: str | None = None) -> Any:
        """One request on the kept-alive connection; the decoded JSON body,
        or ApiError. A connection the server closed meanwhile is redialled
        once (only when nothing of the request could have been taken)."""
        headers = self._headers({"Content-Type": content_type} if content_type else None)
        for attempt in (1, 2):
            connection = self._connection or self._connect()
            self._connection = connection
            try:
                connection.request(method, self.base + path, body=body, headers=headers)
                response = connection.getresponse()
                data = response.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.close()
                if attempt == 2:
                    raise
                continue
            if response.getheader("connection", "").lower() == "close":
                self.close()
            return _decoded(response.status, data)
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

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
        self, last_event_id: int | None = None, views: Iterable[str] | None = None, timeout_s: float | None = None
    ) -> Iterator[Message]:
        """Messages as they come (a connection of its own; keep-alive
        comments are skipped). Resume with the last `id` you saw."""
        connection = self._connect(timeout_s)
        headers = self._headers({"Accept": "text/event-stream"})
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        query = _query(views=",".join(views) if views is not None else None)
        try:
            connection.request("GET", self.base + "/v1/stream" + query, headers=headers)
            response = connection.getresponse()
            if response.status != 200:
                _decoded(response.status, response.read())
            yield from _messages(response)
        finally:
            connection.close()


def _query(**parameters: Any) -> str:
    given = {name: value for name, value in parameters.items() if value is not None}
    return "?" + urlencode(given) if given else ""


def _decoded(status: int, data: bytes) -> Any:
    try:
        body = json.loads(data) if data else None
    except ValueError:
        body = None
    if 200 <= status < 300:
        return body
    error = (body or {}).get("error", {}) if isinstance(body, dict) else {}
    errors = body.get("errors") if isinstance(body, dict) else None
    raise ApiError(status, error.get("code", "http_error"), error.get("message", data[:200].decode(errors="replace")), errors)


def _messages(response: http.client.HTTPResponse) -> Iterator[Message]:
    """Parse `text/event-stream` (the fields Tandem sends: id, event, data)."""
    fields: dict[str, str] = {}
    data: list[str] = []
    while True:
        raw = response.readline(stream_line_bytes_max)
        if not raw:
            return
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line:
            if data:
                identifier = fields.get("id")
                yield Message(int(identifier) if identifier and identifier.isdigit() else None, fields.get("event", "message"), json.loads("\n".join(data)))
            fields, data = {}, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        else:
            fields[name] = value
