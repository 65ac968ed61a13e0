"""The first Python client of `tandem serve`, kept for its users: dicts in,
the decoded JSON answers out, no ids added, nothing retried. New code uses
`tandem.client` (docs/api.md, "The Python client"): typed inputs and
results, ids, retries, `Rejected`.

    from tandem.adapters.client import Client, ApiError
    tandem = Client("http://127.0.0.1:8765", token)
    result = tandem.submit({"type": "human.message", "conversation_id": "fg", "message_id": "m1", "text": "hi"})
    tandem.view("actions")["rows"]

A thin shim over tandem.client's connection (client/transport.py): the same
socket, the same `ApiError` and `Message` classes. A rejected input comes
back as a 200 answer whose result says `accepted: false`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import quote

from tandem.client.errors import ApiError, api_error
from tandem.client.protocol import JSON, NDJSON, Request, query
from tandem.client.results import Message
from tandem.client.transport import Connection, timeout_s_default

__all__ = ["ApiError", "Client", "Message"]


class Client:
    def __init__(self, url: str, token: str, timeout_s: float = timeout_s_default) -> None:
        self.connection = Connection(url, token, timeout_s)

    def request(self, method: str, path: str, body: bytes | None = None, content_type: str | None = None) -> Any:
        """One request: the decoded JSON answer, or ApiError."""
        reply = self.connection.exchange(Request(method, path, body, content_type))
        if not 200 <= reply.status < 300:
            raise api_error(reply.status, reply.body, reply.retry_after_s)
        try:
            return json.loads(reply.body) if reply.body else None
        except ValueError:
            return None

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exception: object) -> None:
        self.close()

    def submit(self, value: dict[str, Any]) -> dict[str, Any]:
        """One input (`at` and `actor` may be left out): {position, results}."""
        return self.request("POST", "/v1/inputs", json.dumps(value).encode(), JSON)

    def submit_batch(self, values: Iterable[dict[str, Any]]) -> dict[str, Any]:
        """Several inputs in one transaction: all of them are recorded, or none."""
        body = b"".join(json.dumps(value).encode() + b"\n" for value in values)
        return self.request("POST", "/v1/inputs", body, NDJSON)

    def views(self, at: int | None = None) -> dict[str, Any]:
        return self.request("GET", "/v1/views" + query(at=at))

    def view(self, name: str, at: int | None = None) -> dict[str, Any]:
        return self.request("GET", f"/v1/views/{quote(name, safe='')}" + query(at=at))

    def events(self, after: int = 0, limit: int | None = None) -> dict[str, Any]:
        return self.request("GET", "/v1/events" + query(after=after, limit=limit))

    def explain(self, thing: str, kind: str | None = None) -> dict[str, Any]:
        return self.request("GET", f"/v1/explain/{quote(thing, safe='')}" + query(kind=kind))

    def health(self) -> dict[str, Any]:
        try:
            return self.request("GET", "/v1/health")
        except ApiError as error:
            if error.status == 503:
                return {"status": error.code}
            raise

    def stream(
        self,
        last_event_id: int | None = None,
        views: Iterable[str] | None = None,
        timeout_s: float | None = None,
        rows: bool = False,
    ) -> Iterator[Message]:
        """Messages as they come (a connection of its own; comment lines are
        skipped). Resume with the last `id` you saw. With `rows`, each
        `change` holds its row changes (`?rows=1`; tandem.client.replica
        applies them)."""
        return self.connection.stream(last_event_id, views, timeout_s, rows)
