"""`tandem serve --github-secret-file F`: POST /v1/sources/github on a real
server process (tests/e2e/serving.py), deliveries signed with a real
HMAC-SHA256 (adapters/github_webhook.py, docs/sources.md).

1. the fixture's deliveries, posted in delivered_at order, are recorded as
   `source` observations: GET /v1/views shows the causes, revisions, repeats,
   out of order and latest states `tandem replay` shows for the converted
   trace (only the times differ: the server stamps `at`); the redelivery is a
   recorded duplicate_input;
2. refusals record nothing (the store's head, from the server and from the
   store itself, does not move): a missing or wrong signature (401
   bad_signature), malformed JSON, bytes not UTF-8, a lone surrogate escape,
   a missing pull_request, a missing header (400 invalid_delivery), another
   content type (415), a body over the limit (413); ping, an event or an
   action not mapped are 200 and recorded as ignored observations (never 422);
3. without --github-secret-file the route is 404, and an unsafe or empty
   secret file stops the server before it listens;
4. fixtures/github/events.jsonl (pull requests, pushes, workflows, a
   requested action, issues, an installation), posted the same way to a
   server of its own: every delivery 200 and observed, none 422, and the
   inbox the one `tandem replay` shows for the converted trace.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tandem.adapters.github import Delivery, map_delivery, payload_bytes_max
from tests.e2e.serving import Served, store_head, tandem

ROOT = Path(__file__).resolve().parents[2]
DELIVERIES = ROOT / "fixtures" / "github" / "deliveries.jsonl"
TRACE = ROOT / "fixtures" / "traces" / "github_sources.jsonl"
EVENTS = ROOT / "fixtures" / "github" / "events.jsonl"
EVENTS_TRACE = ROOT / "fixtures" / "traces" / "github_events.jsonl"
# The views besides the inbox that the events fixture leaves empty, on the server as in the trace.
LISTS = ("tasks", "actions", "questions", "alerts", "cards", "rejections", "investigations")
SECRET = b"a webhook secret, as set on GitHub"
ROUTE = "/v1/sources/github"
TIMEOUT_S = 20.0
TIMES = ("first_seen_at", "last_seen_at")


@dataclass
class Reply:
    status: int
    data: bytes

    @property
    def body(self) -> Any:
        return json.loads(self.data)


def request(server: Served, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> Reply:
    parts = urlsplit(server.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=TIMEOUT_S)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return Reply(response.status, response.read())
    finally:
        connection.close()


def signed(body: bytes, event: str, guid: str, secret: bytes = SECRET) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": guid,
        "X-Hub-Signature-256": "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest(),
    }


def deliver(server: Served, event: str, guid: str, body: bytes) -> Reply:
    return request(server, "POST", ROUTE, body, signed(body, event, guid))


def head(server: Served) -> int:
    """The head, from the server and from the store: they agree."""
    reply = request(server, "GET", "/v1/health")
    assert reply.status == 200, reply
    assert store_head(server.store_url) == reply.body["position"]
    return reply.body["position"]


def views(server: Served) -> dict[str, Any]:
    reply = request(server, "GET", "/v1/views", headers={"Authorization": f"Bearer {server.tokens['human']}"})
    assert reply.status == 200, reply
    return reply.body


def fixture_deliveries(path: Path = DELIVERIES) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_bytes().splitlines()]
    return sorted(rows, key=lambda row: row["delivered_at"])  # stable: as `tandem github convert` orders them


def post_fixture(server: Served, row: dict[str, Any]) -> Reply:
    """One fixture delivery, posted as GitHub would: its payload, signed with the server's secret."""
    body = json.dumps(row["request"]["payload"], ensure_ascii=False).encode()
    return deliver(server, row["event"], row["guid"], body)


def assert_inbox_as_converted(server: Served, trace: Path) -> None:
    """The served inbox is the converted trace's, row by row, times of delivery aside."""
    served = {row["cause_key"]: row for row in views(server)["inbox"]}
    expected = {row["cause_key"]: row for row in json.loads(trace.with_suffix(".views.json").read_text(encoding="utf-8"))["inbox"]}
    assert served.keys() == expected.keys()
    for key, row in expected.items():
        assert {k: v for k, v in served[key].items() if k not in TIMES} == {k: v for k, v in row.items() if k not in TIMES}, key


def secret_file(directory: Path, data: bytes = SECRET + b"\n", mode: int = 0o600) -> Path:
    path = directory / "github-secret"
    path.write_bytes(data)
    os.chmod(path, mode)
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    directory = tmp_path_factory.mktemp("github-webhook")
    with Served(directory, f"sqlite:///{directory}/events.db", "--github-secret-file", str(secret_file(directory)), "--no-runtime-inputs") as served:
        yield served


def test_the_fixture_deliveries_are_recorded_as_the_converted_trace_says(server: Served) -> None:
    before = head(server)
    answers = []
    for row in fixture_deliveries():
        reply = post_fixture(server, row)
        assert reply.status == 200, (row["guid"], reply)  # never 422: what is not mapped is recorded as ignored
        mapped = map_delivery(Delivery(row["guid"], row["event"], None, row["request"]["payload"]))
        assert reply.body["note"] == (None if mapped.note is None else mapped.note), row["guid"]
        answers.append((row, reply.body))
    recorded = [result for _, answer in answers for result in answer["results"]]
    assert len(recorded) == 29 and head(server) > before
    ping = next(answer for row, answer in answers if row["event"] == "ping")
    assert [result["accepted"] for result in ping["results"]] == [True] and ping["note"].endswith("ping (hook 109948940): recorded as ignored")
    fanned = next(answer for row, answer in answers if len(answer["results"]) == 2)
    assert fanned["event"] == "check_run" and [result["accepted"] for result in fanned["results"]] == [True, True]
    redelivered = [answer for row, answer in answers if row["redelivery"]]
    assert [result["reason"] for answer in redelivered for result in answer["results"]] == ["duplicate_input"]
    assert_inbox_as_converted(server, TRACE)
    events = request(server, "GET", f"/v1/events?after={before}&limit=5", headers={"Authorization": f"Bearer {server.tokens['human']}"})
    inputs = [event["body"]["input"] for event in events.body["events"] if event["type"] == "InputAccepted"]
    assert inputs and all(value["actor"] == "source" and value["type"] == "observe" for value in inputs)


def test_the_events_an_orchestrator_acts_on_are_recorded_as_the_converted_trace_says(tmp_path: Path) -> None:
    """fixtures/github/events.jsonl (pull request, push, workflow run and job,
    requested action, issues, installation), live on a server of its own: every
    delivery 200 and observed, the inbox the converted trace's."""
    with Served(tmp_path, f"sqlite:///{tmp_path}/events.db", "--github-secret-file", str(secret_file(tmp_path)), "--no-runtime-inputs") as served:
        rows = fixture_deliveries(EVENTS)
        replies = [post_fixture(served, row) for row in rows]
        assert [reply.status for reply in replies] == [200] * len(rows) == [200] * 16, [r.data for r in replies if r.status != 200]
        assert [(reply.body["event"], reply.body["note"]) for reply in replies] == [(row["event"], None) for row in rows]
        results = [result for reply in replies for result in reply.body["results"]]
        assert len(results) == 16 and all(result["accepted"] for result in results), results
        assert_inbox_as_converted(served, EVENTS_TRACE)
        shown = views(served)
        expected = json.loads(EVENTS_TRACE.with_suffix(".views.json").read_text(encoding="utf-8"))
        assert {key: shown[key] for key in LISTS} == {key: expected[key] for key in LISTS}  # nothing else recorded: no task, no rejection


def _payload(name: str) -> bytes:
    return (ROOT / "fixtures" / "github" / "payload-examples" / name).read_bytes()


COMMENT = _payload("issue_comment/created.payload.json")
REFUSED: dict[str, tuple[dict[str, str], bytes, int, str]] = {
    "no signature": ({"Content-Type": "application/json", "X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": "r-1"}, COMMENT, 401, "bad_signature"),
    "a wrong signature": (signed(COMMENT, "issue_comment", "r-2", secret=b"another secret"), COMMENT, 401, "bad_signature"),
    "a signature of another body": (signed(COMMENT + b" ", "issue_comment", "r-3"), COMMENT, 401, "bad_signature"),
    "malformed JSON": (signed(b'{"action": "created",', "issue_comment", "r-6"), b'{"action": "created",', 400, "invalid_delivery"),
    "not UTF-8": (signed(b'{"action": "\xff"}', "issue_comment", "r-7"), b'{"action": "\xff"}', 400, "invalid_delivery"),
    "a lone surrogate escape": (signed(b'{"action": "\\ud800"}', "issue_comment", "r-8"), b'{"action": "\\ud800"}', 400, "invalid_delivery"),
    "not an object": (signed(b"[1, 2]", "issue_comment", "r-9"), b"[1, 2]", 400, "invalid_delivery"),
    "no pull_request": (
        signed(b'{"action": "submitted", "review": {"id": 1, "state": "approved"}}', "pull_request_review", "r-10"),
        b'{"action": "submitted", "review": {"id": 1, "state": "approved"}}',
        400,
        "invalid_delivery",
    ),
    "no X-GitHub-Event": ({**signed(COMMENT, "x", "r-11"), "X-GitHub-Event": ""}, COMMENT, 400, "invalid_delivery"),
    "another content type": ({**signed(COMMENT, "issue_comment", "r-12"), "Content-Type": "application/x-www-form-urlencoded"}, COMMENT, 415, "unsupported_media_type"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_refused_delivery_records_nothing(server: Served, case: str) -> None:
    headers, body, status, code = REFUSED[case]
    before = head(server)
    reply = request(server, "POST", ROUTE, body, headers)
    assert reply.status == status, (case, reply)
    assert set(reply.body) == {"error"} and reply.body["error"]["code"] == code, reply.body
    assert reply.body["error"]["message"], reply.body
    assert head(server) == before


def test_the_messages_name_the_delivery(server: Served) -> None:
    body = b'{"action": "submitted", "review": {"id": 1, "state": "approved"}}'
    reply = deliver(server, "pull_request_review", "guid-named", body)
    assert reply.body["error"]["message"] == "delivery guid-named (pull_request_review.submitted): payload.pull_request is missing"
    unmapped = deliver(server, "star", "guid-star", b"{}")
    assert unmapped.status == 200 and unmapped.body["note"].startswith("delivery guid-star (star): not mapped: event 'star'")


@pytest.mark.parametrize(
    ("event", "body", "cause"),
    [
        ("star", b'{"action": "created", "sender": {"login": "octocat"}}', "github:https://github.com/octocat:star.created"),
        ("pull_request", _payload("pull_request/assigned.payload.json"), "github:https://github.com/Codertocat/Hello-World:pull_request.assigned"),
    ],
    ids=["an event not mapped", "an action not mapped"],
)
def test_an_unmapped_delivery_is_recorded_as_ignored_never_422(server: Served, event: str, body: bytes, cause: str) -> None:
    before = head(server)
    reply = deliver(server, event, f"ignored-{event}", body)
    assert reply.status == 200, reply
    assert "not mapped" in reply.body["note"] and reply.body["note"].endswith(": recorded as ignored")
    assert [result["accepted"] for result in reply.body["results"]] == [True] and reply.body["position"] == head(server) > before
    row = {row["cause_key"]: row for row in views(server)["inbox"]}[cause]
    assert (row["revision"], row["triage_state"], row["ignored"], row["retained"]) == (0, None, 1, False)
    again = deliver(server, event, f"ignored-{event}", body)  # GitHub's redelivery: the same guid
    assert [r["reason"] for r in again.body["results"]] == ["duplicate_input"]


def test_a_body_over_the_limit_is_413_before_it_is_read(server: Served) -> None:
    before = head(server)
    parts = urlsplit(server.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=TIMEOUT_S)
    try:
        connection.putrequest("POST", ROUTE)
        for name, value in {**signed(b"{}", "ping", "big"), "Content-Length": str(payload_bytes_max + 1)}.items():
            connection.putheader(name, value)
        connection.endheaders()
        response = connection.getresponse()
        status, data = response.status, response.read()
    finally:
        connection.close()
    assert status == 413 and json.loads(data)["error"]["code"] == "too_large"
    assert head(server) == before


def test_ping_answers_200_and_is_recorded_as_ignored(server: Served) -> None:
    before = head(server)
    reply = deliver(server, "ping", "ping-guid", _payload("ping/payload.json"))
    assert reply.status == 200
    answer = dict(reply.body)
    (result,) = answer.pop("results")
    assert result["accepted"] is True and [event["type"] for event in result["events"]] == ["InputAccepted", "ObservationRecorded"]
    assert answer == {
        "delivery": "ping-guid",
        "event": "ping",
        "action": None,
        "position": head(server),
        "note": "delivery ping-guid (ping): ping (hook 109948940): recorded as ignored",
    }
    assert head(server) > before


def test_a_delivery_is_recorded_as_source_with_the_servers_time(server: Served) -> None:
    before = head(server)
    body = json.dumps(json.loads(COMMENT) | {"comment": json.loads(COMMENT)["comment"] | {"id": 99, "body": "new"}}).encode()
    reply = deliver(server, "issue_comment", "live-guid", body)
    assert reply.status == 200, reply
    (result,) = reply.body["results"]
    assert result["accepted"] is True and result["line"] == 1
    assert reply.body["position"] == head(server) > before
    page = request(server, "GET", f"/v1/events?after={before}", headers={"Authorization": f"Bearer {server.tokens['human']}"})
    (accepted,) = [event for event in page.body["events"] if event["type"] == "InputAccepted"]
    value = accepted["body"]["input"]
    assert (value["id"], value["actor"], value["at"]) == ("live-guid", "source", result["at"])  # the server's clock
    assert value["source_id"] == "github:Codertocat/Hello-World:issue_comment:99" and value["text"] == "new"
    again = deliver(server, "issue_comment", "live-guid", body)  # GitHub's redelivery: the same guid
    assert [r["reason"] for r in again.body["results"]] == ["duplicate_input"]


def test_without_a_secret_the_route_is_404(tmp_path: Path) -> None:
    with Served(tmp_path, f"sqlite:///{tmp_path}/events.db", "--no-runtime-inputs") as served:
        reply = deliver(served, "ping", "g", b"{}")
        assert reply.status == 404 and reply.body["error"]["code"] == "not_found"
        assert "--github-secret-file" in reply.body["error"]["message"]
        document = request(served, "GET", "/openapi.json").body
        operation = document["paths"][ROUTE]["post"]
        assert "security" not in operation or operation["security"] == []
        assert {p["name"] for p in operation["parameters"]} >= {"X-Hub-Signature-256", "X-GitHub-Event", "X-GitHub-Delivery"}


@pytest.mark.parametrize(
    ("data", "mode", "expected"),
    [
        (SECRET, 0o640, "readable or writable by group or others (mode 0640)"),
        (SECRET, 0o604, "readable or writable by group or others (mode 0604)"),
        (b"\n", 0o600, "the secret is empty"),
        (b"", 0o600, "the secret is empty"),
    ],
    ids=["group-readable", "others-readable", "a newline", "empty"],
)
def test_an_unsafe_or_empty_secret_file_is_refused_before_anything_listens(tmp_path: Path, data: bytes, mode: int, expected: str) -> None:
    path = secret_file(tmp_path, data, mode)
    tokens = Served(tmp_path, "memory:").tokens_file
    database = tmp_path / "events.db"
    done = tandem("serve", "--store", f"sqlite:///{database}", "--tokens", str(tokens), "--github-secret-file", str(path), "--listen", "127.0.0.1:0", timeout_s=60)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stdout == "" and f"GitHub secret file {path}" in done.stderr and expected in done.stderr, done.stderr
    assert not database.exists()
