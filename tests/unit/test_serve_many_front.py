"""The front of `tandem serve --stores` (adapters/serve_many.py), with fakes
for the stores' services and apps: what it answers itself, and where it
sends the rest."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tandem.adapters.sessions import Sessions
from tandem.adapters.serve_many import Member, StoresFront, shared_tokens
from tandem.adapters.side_files import SideFiles
from tandem.adapters.tokens import TokenTable, _digest


def member(name: str, token: str, stale: bool = False) -> tuple[Member, list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        message = await receive()
        seen.append({"path": scope["path"], "body": message.get("body", b"")})
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    engine = SimpleNamespace(stale=stale, committed=7)
    side_files = SideFiles(lambda: "2026-03-01T09:00:00Z", lambda: 0.0)
    runtime = SimpleNamespace(engine=engine, side_files=side_files)
    service = SimpleNamespace(runtime=runtime, tokens=TokenTable(((_digest(token), "human"),)), sessions=Sessions())
    return Member(name, service, app), seen  # type: ignore[arg-type]


def call(front: StoresFront, path: str, method: str = "GET", headers: list[tuple[bytes, bytes]] = (), body: bytes = b"") -> tuple[int, bytes]:
    sent: list[dict[str, Any]] = []
    chunks = [{"type": "http.request", "body": body[:10], "more_body": len(body) > 10}, {"type": "http.request", "body": body[10:], "more_body": False}]

    async def receive() -> dict[str, Any]:
        return chunks.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "path": path, "method": method, "headers": list(headers)}
    # In a thread of its own: the browser tests' session keeps an event loop running in this one.
    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        thread.submit(asyncio.run, front(scope, receive, send)).result()
    return sent[0]["status"], b"".join(message.get("body", b"") for message in sent[1:])


def test_health_without_a_token_answers_for_every_store_and_names_those_down() -> None:
    (up, _), (down, _) = member("alpha", "a" * 40), member("beta", "b" * 40, stale=True)
    status, body = call(StoresFront([up, down]), "/v1/health")
    answer = json.loads(body)
    assert status == 503 and answer["error"]["code"] == "store_unavailable" and "beta" in answer["error"]["message"]
    assert answer["stores"]["alpha"] == {"status": "ok", "position": 7, "writer": True}
    assert answer["stores"]["beta"]["status"] == "store_unavailable"
    assert call(StoresFront([up]), "/v1/health", "HEAD") == (200, b"")


def test_health_without_a_token_lists_each_stores_degraded_side_files(capsys) -> None:  # type: ignore[no-untyped-def]
    (alpha, _), (beta, _) = member("alpha", "a" * 40), member("beta", "b" * 40)

    def full() -> None:
        raise OSError(28, "No space left on device")

    beta.service.runtime.side_files.write("health_file", Path("/srv/beta/health.json"), full)
    status, body = call(StoresFront([alpha, beta]), "/v1/health")
    answer = json.loads(body)
    assert status == 200 and answer["stores"]["alpha"] == {"status": "ok", "position": 7, "writer": True}
    assert answer["stores"]["beta"]["degraded"] == [
        {"what": "health_file", "path": "/srv/beta/health.json", "reason": "No space left on device", "since": "2026-03-01T09:00:00Z"}
    ]
    assert "cannot write the health file /srv/beta/health.json" in capsys.readouterr().err


def test_a_request_goes_to_its_tokens_store_its_sessions_or_its_sign_ins() -> None:
    (alpha, to_alpha), (beta, to_beta) = member("alpha", "a" * 40), member("beta", "b" * 40)
    front = StoresFront([alpha, beta])
    call(front, "/v1/views", headers=[(b"authorization", b"Bearer " + b"b" * 40)])
    call(front, "/v1/views", headers=[(b"authorization", b"Bearer unknown")])  # the first store says 401
    with concurrent.futures.ThreadPoolExecutor(1) as thread:  # a loop of its own, as `call`'s
        session, _ = thread.submit(asyncio.run, beta.service.sessions.open("human", "b" * 40)).result()
    call(front, "/", headers=[(b"cookie", f"other=1; tandem_session={session}".encode())])
    form = b"check=x&token=" + b"b" * 40 + b"&next=%2F"
    call(front, "/login", "POST", body=form)
    assert [seen["path"] for seen in to_beta] == ["/v1/views", "/", "/login"]
    assert to_beta[-1]["body"] == form[:10]  # the form's first part handed on as it came (the rest follows)
    assert [seen["path"] for seen in to_alpha] == ["/v1/views"]


def test_two_stores_sharing_a_token_are_found() -> None:
    one, two = TokenTable(((_digest("x" * 40), "human"),)), TokenTable(((_digest("x" * 40), "daemon"),))
    assert shared_tokens([("a", one), ("b", two)]) == ("a", "b")
    assert shared_tokens([("a", one), ("b", TokenTable(((_digest("y" * 40), "human"),)))]) is None
