"""Issue 26 (point 7) over HTTP: the same words as a trace's errors, on a
real `tandem serve`: an unknown field or view names the closest known one,
a body cut short says so with where (line and column of a pretty-printed
body), and nothing is recorded."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.e2e.serving import Served


def request(server: Served, method: str, path: str, body: bytes | None = None) -> tuple[int, Any]:
    parts = urlsplit(server.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    headers = {"Authorization": f"Bearer {server.tokens['human']}", "Content-Type": "application/json"}
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_http_errors_name_the_closest_names_and_the_place(tmp_path: Path) -> None:
    with Served(tmp_path, "memory:") as server:
        status, body = request(server, "GET", "/v1/views/taks")
        assert status == 404 and body["error"]["code"] == "unknown_view", body
        assert body["error"]["message"].startswith("no view 'taks' (did you mean `tasks`?); views: tasks, ")
        status, body = request(server, "GET", "/v1/stream?views=tasks,healt")
        assert status == 404, body
        assert body["error"]["message"].startswith("?views='tasks,healt': no view healt (did you mean `health`?); views: ")

        field = b'{"type": "human.message", "conversation": "fg", "message_id": "m1", "text": "hi"}'
        status, body = request(server, "POST", "/v1/inputs", field)
        assert status == 400 and body["errors"] == [
            {"line": 1, "message": "Object contains unknown field `conversation` (did you mean `conversation_id`?)"}
        ], body
        cut = b'{\n  "type": "human.message",\n  "conversation_id": "fg",\n  "text": "hi'
        status, body = request(server, "POST", "/v1/inputs", cut)
        message = 'bad JSON: it ends too soon, at byte 69 (line 4, column 14): a line cut short, or a closing `"`, `}` or `]` missing?'
        assert status == 400 and body["errors"] == [{"line": 1, "message": message}], body
        status, body = request(server, "GET", "/v1/views/tasks")
        assert status == 200 and body["position"] == 0, body  # nothing recorded
