"""Every route `/openapi.json` marks as needing a bearer token refuses a
request without one: `401 unauthenticated`, on a real `tandem serve`
(docs/api.md, "Authentication and authority"). The document is the list,
so a route added later is covered without naming it here."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.serving import Served

# A value for each path parameter, and a query every read would answer: the
# token is checked first.
PARAMETER = "x"
QUERY = "?q=x"
request_timeout_s = 10


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    directory = tmp_path_factory.mktemp("routes-need-a-token")
    with Served(directory, f"sqlite:///{directory}/events.db", "--no-runtime-inputs") as served:
        yield served


def guarded_routes(server: Served) -> list[tuple[str, str]]:
    """(method, path) of every operation the document says needs a token."""
    with urllib.request.urlopen(server.url + "/openapi.json", timeout=request_timeout_s) as answer:
        document: dict[str, Any] = json.load(answer)
    routes = [
        (method.upper(), re.sub(r"\{[^}]+\}", PARAMETER, path))
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if operation.get("security")
    ]
    assert len(routes) >= 10, routes  # the document lists the API, not a stub
    return routes


def status_without_token(server: Served, method: str, path: str) -> tuple[int, dict[str, Any]]:
    data = b"{}" if method in ("POST", "PUT", "PATCH") else None
    request = urllib.request.Request(server.url + path + ("" if data else QUERY), method=method, data=data, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=request_timeout_s) as answer:
            return answer.status, {}
    except urllib.error.HTTPError as error:
        body = error.read()
        return error.code, json.loads(body) if body.startswith(b"{") else {}


def test_every_guarded_route_refuses_a_request_without_a_token(server: Served) -> None:
    answered = {f"{method} {path}": status_without_token(server, method, path) for method, path in guarded_routes(server)}
    assert "GET /v1/search" in answered  # the route once served without its token
    wrong = {route: got for route, got in answered.items() if got[0] != 401}
    assert not wrong, wrong
    codes = {route: got[1].get("error", {}).get("code") for route, got in answered.items()}
    assert set(codes.values()) == {"unauthenticated"}, codes
