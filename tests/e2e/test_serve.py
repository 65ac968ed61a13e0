"""`tandem serve` as a real process on a free loopback port (API.md).

Every test talks to a `tandem serve` started by tests/e2e/serving.py, with the
Python client (adapters/client.py) where it fits and raw `http.client` where
the exact status, headers or bytes matter. One server serves a whole group of
assertions; the groups:

1. the bundled example POSTed input by input gives the views
   `tandem replay EXAMPLE --json` gives (SQLite and PostgreSQL);
2. `?at=` and `/v1/explain` agree with `tandem show --at` and `tandem explain`
   on the same store, ids with `//` percent-encoded included;
3. authority: the token is the actor, reserved kinds and ids, 401s;
4. the server's clock: `at` stamped, `at_in_future`, `at_before_head`, and
   `tandem verify` clean after a session of stamped inputs;
5. batches: one transaction, a bad line refuses the whole, idempotent ids;
6. the live stream: one message per commit, resume by Last-Event-ID (also
   after a restart, rebuilt from the log), filters, reset, keep-alive, the
   stream limit;
7. one writer per store (SQLite and PostgreSQL), SIGKILL leaves no lock;
8. SIGTERM: exit 0, streams end, `daemon.stop` recorded; SIGKILL then
   restart raises `incident:daemon_crash/1`;
9. a tokens file that is not safe is refused before anything listens;
10. errors: one body shape, the codes of API.md, and nothing written.

Every refusal checks that the store's head did not move (the server's
`/v1/health` and the store read directly).
"""

from __future__ import annotations

import contextlib
import datetime
import http.client
import io
import itertools
import json
import os
import queue
import re
import secrets
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import msgspec
import pytest

from tandem.adapters.store.url import side_table_suffixes
from tandem.adapters.cli import main
from tandem.adapters.commands.demo import EXAMPLE
from tandem.adapters.client import ApiError
from tandem.adapters.store import open_store, redacted
from tandem.adapters.tokens import new_token
from tandem.domain import events as ev
from tandem.domain.inputs import accepted_actors
from tests.e2e.serving import Served, store_head, tandem
from tests.integration.conftest import postgres_url, require_postgres

NO_RUNTIME = "--no-runtime-inputs"
WAIT_S = 20.0  # the longest any wait polls; nothing here asserts a speed
QUIET_S = 0.5  # how long "no more messages" is watched for
in_flight_lines = 20_000  # a batch that takes a while to decide: SIGTERM comes in the middle
LOCKED = re.compile(
    r"store (?P<url>\S+) is locked by pid (?P<pid>\d+) on (?P<host>\S+) since "
    r"(?P<since>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)"
)
URGENT_TRACE = Path(__file__).resolve().parents[2] / "fixtures" / "gates" / "13_two_urgent_causes_one_pr.jsonl"


# ------------------------------------------------------------------ stores


def _drop_postgres_tables(table: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(postgres_url(), autocommit=True) as connection:
        for name in (table, *(table + suffix for suffix in side_table_suffixes)):
            connection.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(name)))


class Stores:
    """Store URLs for one test (or module); PostgreSQL tables dropped at the end."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.tables: list[str] = []

    def url(self, kind: str, name: str = "events") -> str:
        if kind == "sqlite":
            return f"sqlite:///{self.directory}/{name}.db"
        require_postgres()
        table = f"tandem_test_{secrets.token_hex(6)}"
        self.tables.append(table)
        separator = "&" if "?" in postgres_url() else "?"
        return f"{postgres_url()}{separator}table={table}"

    def drop(self) -> None:
        for table in self.tables:
            _drop_postgres_tables(table)


KINDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[Stores]:
    made = Stores(tmp_path)
    yield made
    made.drop()



# ------------------------------------------------------------------ traces


def trace_inputs(path: Path) -> list[dict[str, Any]]:
    """The inputs of a trace file, in order (comments and blank lines skipped)."""
    lines = path.read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip() and not line.lstrip().startswith("//")]


def sender(value: dict[str, Any]) -> str:
    """Who sends an input: its `actor`, else its kind's first accepted actor."""
    return value.get("actor") or accepted_actors(value["type"])[0]


def without_at(value: dict[str, Any]) -> dict[str, Any]:
    return {key: item for key, item in value.items() if key != "at"}


def post_each(server: Served, values: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """POST every input on its own, each with its sender's token."""
    clients = {actor: server.client(actor) for actor in server.tokens}
    try:
        return [clients[sender(value)].submit(value) for value in values]
    finally:
        for client in clients.values():
            client.close()


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def cli(*arguments: str) -> Done:
    """A reading `tandem` command (show, explain, replay) run in this process:
    the same `main` as the executable, without a Python start per call."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(arguments))
    return Done(code, out.getvalue(), err.getvalue())


def cli_json(*arguments: str) -> Any:
    done = cli(*arguments)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# -------------------------------------------------------------------- HTTP


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    data: bytes

    @property
    def body(self) -> Any:
        return json.loads(self.data)

    @property
    def code(self) -> str:
        return self.body["error"]["code"]


def raw(server: Served, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> Reply:
    """One request on a fresh connection, exactly these headers (no token unless given)."""
    parts = urlsplit(server.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=WAIT_S)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
    finally:
        connection.close()


def bearer(server: Served, actor: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.tokens[actor]}"}


def post_json(server: Served, actor: str, value: dict[str, Any]) -> Reply:
    return raw(server, "POST", "/v1/inputs", json.dumps(value).encode(), {**bearer(server, actor), "Content-Type": "application/json"})


def post_ndjson(server: Served, actor: str, values: list[dict[str, Any]] | bytes) -> Reply:
    data = values if isinstance(values, bytes) else b"".join(json.dumps(value).encode() + b"\n" for value in values)
    return raw(server, "POST", "/v1/inputs", data, {**bearer(server, actor), "Content-Type": "application/x-ndjson"})


def health_position(server: Served) -> int:
    reply = raw(server, "GET", "/v1/health")
    assert reply.status == 200, reply
    return reply.body["position"]


def assert_error(reply: Reply, status: int, code: str) -> dict[str, Any]:
    """The error body of API.md: {"error": {"code", "message"}} (plus `errors` for 400)."""
    assert reply.status == status, (reply.status, reply.data)
    assert reply.headers.get("content-type", "").startswith("application/json"), reply.headers
    body = reply.body
    assert set(body) <= {"error", "errors"}, body
    assert set(body["error"]) == {"code", "message"}, body
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"], body
    assert ("errors" in body) == (code == "invalid_input"), body
    return body


class Head:
    """The store's head, from the server and from the store itself: a refusal moves neither."""

    def __init__(self, server: Served) -> None:
        self.server = server
        self.position = self.now()

    def now(self) -> int:
        served = health_position(self.server)
        assert store_head(self.server.store_url) == served
        return served

    def unchanged(self) -> None:
        assert self.now() == self.position

    def moved(self) -> int:
        self.position = self.now()
        return self.position


def events(server: Served, after: int = 0) -> list[dict[str, Any]]:
    """Every event after `after`, through /v1/events pages."""
    found: list[dict[str, Any]] = []
    client = server.client("human")
    try:
        while True:
            page = client.events(after=after, limit=1000)
            found += page["events"]
            if page["next_after"] is None:
                return found
            after = page["next_after"]
    finally:
        client.close()


def records(server: Served, after: int = 0) -> list[dict[str, Any]]:
    """The input records (accepted or rejected) after `after`."""
    return [event for event in events(server, after) if event["type"] in ("InputAccepted", "InputRejected")]


def wait_for(what: str, check: Callable[[], Any], server: Served | None = None) -> Any:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}" + (f"\n{server.log()}" if server else ""))


def utc(text: str) -> datetime.datetime:
    assert text.endswith("Z"), text
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def rfc3339(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ------------------------------------------------------------------ stream


@dataclass(frozen=True)
class Sse:
    """One Server-Sent Events item: a message (id, event, data) or a comment."""

    id: int | None
    event: str
    data: dict[str, Any] | None = None
    comment: str | None = None


class Stream:
    """A raw `/v1/stream` connection, read by a thread into a queue, so a test
    can wait for messages with a deadline and see the comment lines too."""

    end = Sse(None, "end")

    def __init__(self, server: Served, actor: str = "human", last_event_id: int | str | None = None, query: str = "") -> None:
        parts = urlsplit(server.url)
        self.connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=WAIT_S * 3)
        headers = {**bearer(server, actor), "Accept": "text/event-stream"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        self.connection.request("GET", "/v1/stream" + query, headers=headers)
        self.response = self.connection.getresponse()
        self.status = self.response.status
        self.items: queue.Queue[Sse] = queue.Queue()
        self.ended = False
        if self.status != 200:
            self.error = Reply(self.status, {k.lower(): v for k, v in self.response.getheaders()}, self.response.read())
            self.connection.close()
            return
        assert self.response.getheader("content-type", "").startswith("text/event-stream")
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        fields: dict[str, str] = {}
        data: list[str] = []
        try:
            for raw_line in iter(self.response.readline, b""):
                line = raw_line.decode().rstrip("\r\n")
                if not line:
                    if data:
                        identifier = fields.get("id")
                        self.items.put(Sse(int(identifier) if identifier else None, fields.get("event", "message"), json.loads("\n".join(data))))
                    fields, data = {}, []
                elif line.startswith(":"):
                    self.items.put(Sse(None, "comment", comment=line[1:].strip()))
                else:
                    name, _, value = line.partition(":")
                    value = value[1:] if value.startswith(" ") else value
                    if name == "data":
                        data.append(value)
                    else:
                        fields[name] = value
        except (OSError, ValueError, http.client.HTTPException):
            pass
        finally:
            self.items.put(self.end)

    def next(self, timeout_s: float = WAIT_S, comments: bool = False) -> Sse:
        """The next message (comments skipped unless asked); `end` once the stream ended."""
        deadline = time.monotonic() + timeout_s
        while not self.ended:
            try:
                item = self.items.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no stream message within {timeout_s} s") from None
            if item is self.end:
                self.ended = True
                return item
            if comments or item.event != "comment":
                return item
        return self.end

    def messages(self, count: int) -> list[Sse]:
        found = [self.next() for _ in range(count)]
        assert self.end not in found, found
        return found

    def quiet(self, seconds: float = QUIET_S) -> None:
        """No message (comments aside) arrives for `seconds`."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                item = self.items.get(timeout=left)
            except queue.Empty:
                return
            assert item.event == "comment", item

    def close(self) -> None:
        """Disconnect; the reader thread ends before the connection is closed."""
        if self.status == 200:
            sock = self.response.fp.raw._sock if self.response.fp is not None else None  # type: ignore[union-attr]
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            self.thread.join(WAIT_S)
            assert not self.thread.is_alive(), "the stream's reader did not end"
        self.connection.close()

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exception: object) -> None:
        self.close()


# ================================================ 1, 2: the example over HTTP


@dataclass
class ExampleServed:
    server: Served
    values: list[dict[str, Any]]
    replies: list[dict[str, Any]]


@pytest.fixture(scope="module", params=KINDS)
def example(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ExampleServed]:
    """The bundled example POSTed input by input, each with its sender's token
    (its past `at`s given, so the runtime records nothing of its own)."""
    made = Stores(tmp_path_factory.mktemp(f"example-{request.param}"))
    try:
        server = Served(made.directory, made.url(request.param), NO_RUNTIME).start()
        try:
            values = trace_inputs(EXAMPLE)
            yield ExampleServed(server, values, post_each(server, values))
        finally:
            assert server.stop() == 0, server.log()
    finally:
        made.drop()


def test_the_example_posted_input_by_input_gives_the_views_replay_gives(example: ExampleServed) -> None:
    replies = example.replies
    assert len(replies) == len(example.values) == 23
    head = 0
    for value, reply in zip(example.values, replies):
        (result,) = reply["results"]
        assert result["line"] == 1 and result["accepted"] is True and result["reason"] is None, (value, reply)
        assert result["at"] == value["at"]
        positions = [event["position"] for event in result["events"]]
        assert positions == list(range(head + 1, reply["position"] + 1)), reply
        assert result["events"][0]["type"] == "InputAccepted"
        head = reply["position"]

    expected = cli_json("replay", str(EXAMPLE), "--json")
    served = example.server.client("human").views()
    assert served.pop("position") == head
    assert list(served) == list(expected)
    for name in expected:  # every view, one by one, so a difference names its view
        assert served[name] == expected[name], name
    # The example has no rejection, so the `rejections` views are equal as they
    # are, `file` stripped from nothing. (A rejection over HTTP names its
    # `file`, `http@N`, and its line in the body: every request is a trace of
    # its own; test_explain_an_id_with_a_double_slash compares such rows.)
    assert expected["rejections"] == []
    for name in expected:
        one = example.server.client("human").view(name)
        assert one["position"] == head
        assert one["value" if name in ("health", "usage") else "rows"] == expected[name], name

    # The live views are the views at the head.
    assert example.server.client("human").views(at=head) == {**served, "position": head}

    # The recorded inputs carry their file `http@{head before}` and line 1;
    # pages of /v1/events that begin inside an input still name it.
    whole = events(example.server)
    assert [event["position"] for event in whole] == list(range(1, head + 1))
    paged: list[dict[str, Any]] = []
    after: int | None = 0
    client = example.server.client("human")
    while after is not None:
        page = client.events(after=after, limit=7)
        paged += page["events"]
        after = page["next_after"]
    assert paged == whole
    found = records(example.server)
    assert [(record["input"]["file"], record["input"]["line"]) for record in found] == [
        (f"http@{before}", 1) for before in [0, *(reply["position"] for reply in replies[:-1])]
    ]


def _show_at(url: str, at: int, view: str | None = None) -> tuple[Any, int]:
    """`tandem show --json --at P [VIEW]`: the document and where it snapped to."""
    done = cli("show", "--store", url, "--json", "--at", str(at), *([view] if view else []))
    assert done.returncode == 0, done.stderr
    snapped = re.search(r"showing the views before that input \(position (\d+)\)", done.stderr)
    return json.loads(done.stdout), int(snapped[1]) if snapped else at


def test_views_at_a_position_equal_show_at_and_snap_back_alike(example: ExampleServed) -> None:
    server, replies = example.server, example.replies
    client = server.client("human")
    boundaries = [reply["position"] for reply in replies]
    # Inputs of several events: a position inside one snaps back to its start.
    inside = [before + 1 for before, after in zip([0, *boundaries], boundaries) if after - before > 1]
    assert len(inside) >= 3
    points = [0, boundaries[0], inside[0], inside[len(inside) // 2], boundaries[12], inside[-1], boundaries[-1]]
    for at in points:
        shown, snapped = _show_at(server.store_url, at)
        served = client.views(at=at)
        assert served.pop("position") == snapped, at
        assert snapped in (0, *boundaries), at
        assert snapped == max(b for b in (0, *boundaries) if b <= at), at
        assert served == shown, at
    for at, name in [(inside[1], "actions"), (inside[-1], "tasks"), (boundaries[5], "health"), (inside[2], "usage")]:
        shown, snapped = _show_at(server.store_url, at, name)
        served = client.view(name, at=at)
        assert served == {"position": snapped, ("value" if name in ("health", "usage") else "rows"): shown}, (at, name)
    # Past the head is a bad query, not the head's views.
    with pytest.raises(ApiError) as refused:
        client.views(at=boundaries[-1] + 1)
    assert (refused.value.status, refused.value.code) == (400, "invalid_query")


def _explain_cli(url: str, identifier: str) -> bytes:
    done = cli("explain", identifier, "--store", url, "--json")
    assert done.returncode == 0, done.stderr
    return done.stdout.encode()


def test_explain_equals_tandem_explain(example: ExampleServed) -> None:
    server = example.server
    client = server.client("human")
    for identifier in ("op-api", "op-form", "op-it", "op-api/a1", "fg/d2", "fallback_delivery:op-api", "signup"):
        served = raw(server, "GET", "/v1/explain/" + quote(identifier, safe=""), headers=bearer(server, "human"))
        assert served.status == 200, (identifier, served.data)
        shown = _explain_cli(server.store_url, identifier)
        assert served.body == json.loads(shown), identifier
        assert served.data == shown.rstrip(b"\n"), identifier  # the same bytes, too
        assert client.explain(identifier) == served.body
    assert client.explain("op-api/a1", kind="attempt") == cli_json(
        "explain", "op-api/a1", "--kind", "attempt", "--store", server.store_url, "--json"
    )
    for missing in ("op-nope", "op-api/a9", "fg/d99"):
        assert_error(raw(server, "GET", "/v1/explain/" + quote(missing, safe=""), headers=bearer(server, "human")), 404, "unknown_id")
    assert_error(raw(server, "GET", "/v1/explain/op-api?kind=nope", headers=bearer(server, "human")), 400, "invalid_query")


def test_explain_an_id_with_a_double_slash(tmp_path: Path) -> None:
    """The example names nothing with `//` in it; gate 13 has `urgent:` alerts
    and `ci:`/`review:` causes on https://scm/pr/7. POSTed input by input too."""
    values = trace_inputs(URGENT_TRACE)
    with Served(tmp_path, f"sqlite:///{tmp_path}/events.db", NO_RUNTIME) as server:
        replies = post_each(server, values)
        client = server.client("human")
        for identifier in ("urgent:ci:https://scm/pr/7", "ci:https://scm/pr/7", "urgent:review:https://scm/pr/7"):
            shown = json.loads(_explain_cli(server.store_url, identifier))
            assert [match["id"] for match in shown["matches"]] == [identifier], shown
            assert client.explain(identifier) == shown, identifier  # percent-encoded: %2F%2F
            # Raw, the slashes as they are: the router must not fold `//` into `/`.
            path = "/v1/explain/" + quote(identifier, safe="/:")
            assert "//" in path
            plain = raw(server, "GET", path, headers=bearer(server, "human"))
            assert plain.status == 200 and plain.body == shown, (identifier, plain.data)
        missing = raw(server, "GET", "/v1/explain/" + quote("urgent:ci:https://scm/pr/9", safe=""), headers=bearer(server, "human"))
        assert_error(missing, 404, "unknown_id")

        # This trace has rejections: over HTTP each input is line 1 of a file
        # of its own (`http@{head before}`), so the `rejections` rows name that
        # file and line where replay names the trace's line; the rest is equal.
        expected = cli_json("replay", str(URGENT_TRACE), "--json")
        served = client.views()
        served.pop("position")
        for name in expected:
            if name != "rejections":
                assert served[name] == expected[name], name
        before = dict(zip(range(len(values)), [0, *(reply["position"] for reply in replies[:-1])]))
        lines = [number for number, line in enumerate(URGENT_TRACE.read_text().splitlines(), start=1) if line.strip() and not line.startswith("//")]
        assert len(expected["rejections"]) == 2
        assert served["rejections"] == [
            {"line": 1, "type": row["type"], "reason": row["reason"], "file": f"http@{before[lines.index(row['line'])]}"}
            for row in expected["rejections"]
        ]


# ===================================================== 3, 4, 5, 10: one server


DELEGATE = {
    "type": "task.delegate",
    "task_id": "t-http",
    "conversation_id": "fg",
    "message_refs": ["m1"],
    "goal": "Over HTTP",
    "done_when": ["it works"],
    "grant": {"grant_id": "g-http", "allowed_operations": ["worker.start"], "write_roots": ["/repo"]},
}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server on SQLite fed the example's first seven inputs without their
    `at` (stamped by the server's clock)."""
    directory = tmp_path_factory.mktemp("live")
    server = Served(directory, f"sqlite:///{directory}/events.db", NO_RUNTIME).start()
    try:
        post_each(server, [without_at(value) for value in trace_inputs(EXAMPLE)[:7]])
        yield server
    finally:
        assert server.stop() == 0, server.log()


def test_the_token_is_the_actor(live: Served) -> None:
    head = Head(live)
    # A background token sending a human-only input: recorded, rejected not_authorized.
    reply = post_json(live, "background", DELEGATE)
    assert reply.status == 200, reply.data
    (result,) = reply.body["results"]
    assert (result["accepted"], result["reason"]) == (False, "not_authorized")
    assert [event["type"] for event in result["events"]] == ["InputRejected"]
    before = head.position
    assert head.moved() == reply.body["position"] == before + 1
    (record,) = records(live, before)
    assert record["type"] == "InputRejected" and record["body"]["input"]["actor"] == "background"
    rejections = live.client("human").view("rejections")["rows"]
    # HTTP inputs name their file (`http@{head before}`): every request is a trace of its own.
    assert rejections[-1] == {"line": 1, "type": "task.delegate", "reason": "not_authorized", "file": f"http@{before}"}

    # ... and cannot say it is the human: 403, nothing recorded.
    body = assert_error(post_json(live, "background", {**DELEGATE, "actor": "human"}), 403, "actor_mismatch")
    assert "line 1" in body["error"]["message"]
    head.unchanged()
    # Within a batch too: the whole batch is refused.
    assert_error(post_ndjson(live, "background", [{"type": "tick", "actor": "daemon"}, {**DELEGATE, "actor": "human"}]), 403, "actor_mismatch")
    head.unchanged()

    # What the runtime records about itself: reserved for every token (the
    # daemon's naming itself, the others leaving `actor` out).
    for actor in live.tokens:
        for value in ({"type": "daemon.start"}, {"type": "daemon.stop", "expected": True}, {"type": "daemon.stop", "expected": False}):
            sent = {**value, "actor": "daemon"} if actor == "daemon" else value
            assert_error(post_json(live, actor, sent), 403, "reserved")
            assert_error(post_ndjson(live, actor, [sent]), 403, "reserved")
    for identifier in ("watchdog/heartbeat/1", "watchdog/incident/x-1", "watchdog/"):
        assert_error(post_json(live, "watchdog", {"type": "watchdog.heartbeat", "generation": 1, "id": identifier}), 403, "reserved")
        assert_error(post_ndjson(live, "daemon", [{"type": "tick"}, {"type": "tick", "id": identifier}]), 403, "reserved")
    head.unchanged()
    # A watchdog token may post heartbeats under any other id.
    assert post_json(live, "watchdog", {"type": "watchdog.heartbeat", "generation": 1, "id": "hb-http-1"}).body["results"][0]["accepted"]
    head.moved()


def test_authentication(live: Served) -> None:
    head = Head(live)
    tick = json.dumps({"type": "tick"}).encode()
    token = live.tokens["daemon"]
    refusals = [
        {},
        {"Authorization": "Bearer " + new_token()},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer "},
        {"Authorization": "Bearer " + token[:-1]},
        {"Authorization": "Basic " + token},
        {"Authorization": token},
    ]
    for headers in refusals:
        for method, path, body in [("POST", "/v1/inputs", tick), ("GET", "/v1/views", None), ("GET", "/v1/views/tasks", None),
                                   ("GET", "/v1/events", None), ("GET", "/v1/explain/op-api", None), ("GET", "/v1/stream", None)]:  # fmt: skip
            sent = {**headers, "Content-Type": "application/json"} if body else headers
            assert_error(raw(live, method, path, body, sent), 401, "unauthenticated")
    # A token in the URL is refused even with a valid header: URLs end up in logs.
    header = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
    human = live.tokens["human"]
    queries = [
        f"?token={token}", f"?access_token={token}", "?token=x", f"?note={token}", f"?after=0&q={human}",
        # The token as the name, or as a word of a value: the URL is logged all the same.
        f"?{token}", f"?{token}=1", f"?after=0&{human}", f"?x=Bearer%20{token}", f"?x=%20{token}%20",
    ]  # fmt: skip
    for query in queries:
        for reply in (
            raw(live, "POST", "/v1/inputs" + query, tick, header),
            raw(live, "GET", "/v1/views" + query, None, header),
            raw(live, "GET", "/v1/events" + query, None, header),
            Stream(live, "daemon", query=query).error,
        ):
            assert_error(reply, 401, "unauthenticated")
            assert token.encode() not in reply.data and human.encode() not in reply.data  # never said back
    head.unchanged()
    # Health needs no token.
    reply = raw(live, "GET", "/v1/health")
    assert reply.status == 200 and reply.body == {"status": "ok", "position": head.position, "writer": True}
    # A plain query value is no token: fine.
    assert raw(live, "GET", "/v1/events?after=0&limit=1", None, header).status == 200


def test_the_server_stamps_at_and_refuses_times_it_cannot_take(live: Served) -> None:
    head = Head(live)
    before = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    reply = post_json(live, "daemon", {"type": "tick"})
    after = datetime.datetime.now(datetime.UTC)
    assert reply.status == 200, reply.data
    (result,) = reply.body["results"]
    stamped = utc(result["at"])
    assert before <= stamped <= after and stamped.microsecond == 0, (before, result["at"], after)
    (record,) = records(live, head.position)
    assert record["body"]["input"]["at"] == result["at"]  # recorded with the stamp: replay sees it
    assert record["body"]["input"]["actor"] == "daemon"  # left out: the token's
    head.moved()

    now = datetime.datetime.now(datetime.UTC)
    body = assert_error(post_json(live, "daemon", {"type": "tick", "at": rfc3339(now + datetime.timedelta(seconds=301))}), 409, "at_in_future")
    assert "300 s" in body["error"]["message"]
    assert_error(post_ndjson(live, "daemon", [{"type": "tick"}, {"type": "tick", "at": rfc3339(now + datetime.timedelta(seconds=400))}]), 409, "at_in_future")
    head.unchanged()
    body = assert_error(post_json(live, "daemon", {"type": "tick", "at": rfc3339(stamped - datetime.timedelta(seconds=1))}), 409, "at_before_head")
    assert result["at"] in body["error"]["message"]
    assert_error(post_json(live, "daemon", {"type": "tick", "at": "2026-03-01T09:00:00Z"}), 409, "at_before_head")
    head.unchanged()
    # At the head's own time is fine (time must not go backwards, it may stand still).
    assert post_json(live, "daemon", {"type": "tick", "at": result["at"]}).status == 200
    head.moved()

    # Ahead by less than the limit is taken; what is stamped next is never before it.
    ahead = rfc3339(datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=240))
    assert post_json(live, "daemon", {"type": "tick", "at": ahead}).status == 200
    assert post_json(live, "daemon", {"type": "tick"}).body["results"][0]["at"] == ahead
    head.moved()

    # A session of stamped inputs verifies clean: replay is byte-identical.
    done = tandem("verify", "--store", live.store_url)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_batch_is_one_transaction(live: Served) -> None:
    head = Head(live)
    batch = [
        {"type": "human.message", "conversation_id": "fg", "message_id": "m-batch-1", "text": "one"},
        {"type": "human.message", "conversation_id": "fg", "message_id": "m-batch-2", "text": "two"},
        {"type": "human.message", "conversation_id": "fg", "message_id": "m-batch-3", "text": "three"},
    ]
    reply = post_ndjson(live, "human", batch)
    assert reply.status == 200, reply.data
    results = reply.body["results"]
    assert [result["line"] for result in results] == [1, 2, 3]
    assert all(result["accepted"] for result in results), results
    positions = [event["position"] for result in results for event in result["events"]]
    assert positions == list(range(head.position + 1, reply.body["position"] + 1))
    before = head.position
    assert head.moved() == reply.body["position"]
    assert {(record["input"]["file"], record["input"]["line"]) for record in records(live, before)} == {
        (f"http@{before}", 1), (f"http@{before}", 2), (f"http@{before}", 3)
    }  # fmt: skip

    # Lines count as in a trace: blank lines and `//` comments included.
    reply = post_ndjson(live, "daemon", b'// a comment\n\n{"type":"tick"}\n{"type":"tick"}')
    assert [result["line"] for result in reply.body["results"]] == [3, 4], reply.data
    head.moved()
    typed = raw(live, "POST", "/v1/inputs", b'{"type":"tick"}', {**bearer(live, "daemon"), "Content-Type": "application/json; charset=utf-8"})
    assert typed.status == 200, typed.data
    head.moved()

    # One bad line: the whole batch refused, naming the line; nothing recorded.
    bad = b"".join(json.dumps(value).encode() + b"\n" for value in batch[:2]) + b'{"type": "human.message", "conversation_id": "fg"}\n' + b'{"type":"tick"}\n'
    body = assert_error(post_ndjson(live, "human", bad), 400, "invalid_input")
    assert [error["line"] for error in body["errors"]] == [3]
    assert "message_id" in body["errors"][0]["message"]
    assert "line 3" in body["error"]["message"]
    body = assert_error(post_ndjson(live, "human", b'{"type":"tick"}\nnot json\n\n{"type":"nope"}\n'), 400, "invalid_input")
    assert [error["line"] for error in body["errors"]] == [2, 4]
    body = assert_error(post_json(live, "human", {"type": "human.message"}), 400, "invalid_input")
    assert [error["line"] for error in body["errors"]] == [1]
    head.unchanged()

    # An id retried: a recorded duplicate_input, never a second effect (the
    # retry's stamped `at` differs: the same body apart from `at`).
    message = {"type": "human.message", "conversation_id": "fg", "message_id": "m-once", "text": "once", "id": "retry-1"}
    first = post_json(live, "human", message).body
    assert first["results"][0]["accepted"] is True
    views_before = live.client("human").views()
    head.moved()
    for _ in range(2):
        again = post_json(live, "human", message).body
        (result,) = again["results"]
        assert (result["accepted"], result["reason"]) == (False, "duplicate_input")
        assert [event["type"] for event in result["events"]] == ["InputRejected"]
        head.moved()
    views_after = live.client("human").views()
    for name in views_before:
        if name not in ("rejections", "position"):
            assert views_after[name] == views_before[name], name
    assert [row["reason"] for row in views_after["rejections"][-2:]] == ["duplicate_input", "duplicate_input"]
    # The same id with another body: a recorded idempotency_conflict, no effect either.
    conflict = post_json(live, "human", {**message, "text": "twice?"}).body
    assert [(result["accepted"], result["reason"]) for result in conflict["results"]] == [(False, "idempotency_conflict")]
    head.moved()
    assert live.client("human").view("conversations")["rows"] == views_after["conversations"]
    # Inside one batch, the second copy is the duplicate.
    twice = post_ndjson(live, "human", [{**message, "id": "retry-2", "message_id": "m-twice"}] * 2).body
    assert [(result["accepted"], result["reason"]) for result in twice["results"]] == [(True, None), (False, "duplicate_input")]
    head.moved()


def test_errors_have_one_shape_and_write_nothing(live: Served) -> None:
    head = Head(live)
    token = bearer(live, "human")
    json_type = {**token, "Content-Type": "application/json"}
    cases = [
        (raw(live, "GET", "/nope", headers=token), 404, "not_found"),
        (raw(live, "GET", "/v1/nope", headers=token), 404, "not_found"),
        (raw(live, "POST", "/v1/nope", b"{}", json_type), 404, "not_found"),
        (raw(live, "DELETE", "/v1/views", headers=token), 405, "method_not_allowed"),
        (raw(live, "GET", "/v1/inputs", headers=token), 405, "method_not_allowed"),
        (raw(live, "PUT", "/v1/inputs", b'{"type":"tick"}', json_type), 405, "method_not_allowed"),
        (raw(live, "POST", "/v1/inputs", b'{"type":"tick","actor":"human"}', {**token, "Content-Type": "text/plain"}), 415, "unsupported_media_type"),
        (raw(live, "POST", "/v1/inputs", b'{"type":"tick"}', token), 415, "unsupported_media_type"),
        (raw(live, "GET", "/v1/views/nope", headers=token), 404, "unknown_view"),
        (raw(live, "GET", "/v1/views?at=x", headers=token), 400, "invalid_query"),
        (raw(live, "GET", "/v1/views?at=-1", headers=token), 400, "invalid_query"),
        (raw(live, "GET", "/v1/views/tasks?at=1.5", headers=token), 400, "invalid_query"),
        (raw(live, "GET", "/v1/views?at=%C2%B2", headers=token), 400, "invalid_query"),  # ², a digit to str.isdigit
        (raw(live, "GET", "/v1/views/tasks?at=%D9%A3", headers=token), 400, "invalid_query"),  # ٣, an Arabic-Indic 3
        (raw(live, "GET", "/v1/views?at=" + "9" * 5_000, headers=token), 400, "invalid_query"),
        (raw(live, "GET", "/v1/events?limit=5000", headers=token), 400, "invalid_query"),
        (raw(live, "GET", "/v1/events?limit=%C2%B2", headers=token), 400, "invalid_query"),
        (raw(live, "GET", "/v1/events?after=%C2%B2", headers=token), 400, "invalid_query"),
        (raw(live, "GET", "/v1/events?limit=0", headers=token), 400, "invalid_query"),
        (raw(live, "GET", "/v1/events?after=x", headers=token), 400, "invalid_query"),
        (raw(live, "GET", "/v1/stream?views=nope", headers=token), 404, "unknown_view"),
        (raw(live, "GET", "/v1/stream?views=tasks,nope", headers=token), 404, "unknown_view"),
        (raw(live, "GET", "/v1/explain/nothing-here", headers=token), 404, "unknown_id"),
        (raw(live, "POST", "/v1/inputs", b"{not json", json_type), 400, "invalid_input"),
        (raw(live, "POST", "/v1/inputs", b"", json_type), 400, "invalid_input"),
        (raw(live, "POST", "/v1/inputs", b"x" * (1_048_576 + 10), json_type), 413, "too_large"),
        (post_ndjson(live, "daemon", b'{"type":"tick"}\n' * (16 * 1_048_576 // 16 + 1)), 413, "too_large"),
    ]
    for reply, status, code in cases:
        assert_error(reply, status, code)
    head.unchanged()


def test_concurrent_clients_commit_one_at_a_time(live: Served) -> None:
    """Eight clients at once, single inputs and batches: every commit has a
    range of positions of its own, one stream message each, in order, and
    stamped times never go back; the store verifies clean."""
    head = Head(live)
    replies: list[dict[str, Any]] = []

    def work() -> None:
        client = live.client("daemon")
        for number in range(30):
            replies.append(client.submit_batch([{"type": "tick"}] * 20) if number % 5 == 0 else client.submit({"type": "tick"}))
        client.close()

    with Stream(live) as stream:
        workers = [threading.Thread(target=work) for _ in range(8)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(WAIT_S * 3)
        ends = sorted(reply["position"] for reply in replies)
        assert len(replies) == len(set(ends)) == 240
        spans = sorted((reply["results"][0]["events"][0]["position"], reply["position"]) for reply in replies)
        assert spans[0][0] == head.position + 1 and all(a[1] + 1 == b[0] for a, b in zip(spans, spans[1:]))
        assert [message.id for message in stream.messages(len(replies))] == ends
        stream.quiet(0.1)
    assert head.moved() == ends[-1]
    ats = [record["body"]["input"]["at"] for record in records(live)]
    assert ats == sorted(ats)
    done = tandem("verify", "--store", live.store_url)
    assert done.returncode == 0, done.stdout + done.stderr


# ============================================================ 6: the stream


def open_stream(server: Served, last_event_id: int | str | None = None, query: str = "") -> Stream:
    """A stream, once a place is free (a stream closed just before frees its
    place when the server notices the disconnect)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        stream = Stream(server, last_event_id=last_event_id, query=query)
        if stream.status != 503 or time.monotonic() > deadline:
            assert stream.status == 200, stream.error
            return stream
        time.sleep(0.02)


def same(received: list[Sse], expected: list[Sse]) -> None:
    """The same messages: ids, events and data."""
    assert [(m.id, m.event) for m in received] == [(m.id, m.event) for m in expected]
    assert [m.data for m in received] == [m.data for m in expected]


def tasks_messages(messages: list[Sse]) -> list[Sse]:
    return [message for message in messages if "tasks" in message.data["views"]]


def test_the_stream(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    server = Served(tmp_path, url, NO_RUNTIME, "--stream-keepalive", "0.2", "--stream-clients-max", "2").start()
    human = server.client("human")
    sent: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []  # (inputs, reply) per commit

    def commit(values: list[dict[str, Any]], batch: bool = False) -> dict[str, Any]:
        before = human.views()
        if batch:
            reply = server.client(sender(values[0])).submit_batch(values)
        else:
            (value,) = values
            reply = server.client(sender(value)).submit(value)
        after = human.views()
        changed = {name for name in before if name != "position" and before[name] != after[name]}
        sent.append((values, {**reply, "changed": changed}))
        return reply

    def check(message: Sse, values: list[dict[str, Any]], reply: dict[str, Any]) -> None:
        assert message.event == "change" and message.id == reply["position"] == message.data["position"], message
        assert set(message.data) == {"position", "views", "inputs"}
        assert message.data["inputs"] == [
            {"type": value["type"], "actor": sender(value), "at": result["at"], "accepted": result["accepted"]}
            for value, result in zip(values, reply["results"])
        ]
        # Every view whose value changed is named (a view may be named when it
        # folded an event that left its value as it was).
        assert reply["changed"] <= set(message.data["views"]), (reply["changed"], message.data["views"])

    try:
        everything = Stream(server)
        tasks_only = Stream(server, query="?views=tasks")
        # --stream-clients-max 2: a third is refused, with the error body.
        with Stream(server) as third:
            assert_error(third.error, 503, "too_many_streams")
        # An open stream says so at once, then keeps idle connections open.
        assert everything.next(comments=True) == Sse(None, "comment", comment="connected")
        assert [everything.next(timeout_s=5, comments=True).comment for _ in range(3)] == ["keep-alive"] * 3

        # One message per commit: single inputs, a batch (one message), a tick.
        for value in trace_inputs(EXAMPLE)[:7]:
            commit([without_at(value)])
        commit([
            {"type": "human.message", "conversation_id": "fg", "message_id": "m-s1", "text": "a"},
            {**DELEGATE, "message_refs": ["m-s1"]},
            {**DELEGATE, "task_id": "t-http", "goal": "again"},  # rejected (the task exists): still in the message
        ], batch=True)  # fmt: skip
        commit([{"type": "tick"}])
        commit([{"type": "task.cancel", "task_id": "t-http"}])
        messages = everything.messages(len(sent))
        for message, (values, reply) in zip(messages, sent):
            check(message, values, reply)
        everything.quiet()
        batch = messages[7]
        assert [summary["accepted"] for summary in batch.data["inputs"]] == [True, True, False]
        assert "tasks" in batch.data["views"] and "rejections" in batch.data["views"]
        assert "tasks" not in messages[8].data["views"]  # the tick
        # ?views=tasks: exactly the messages that name tasks.
        same(tasks_only.messages(len(tasks_messages(messages))), tasks_messages(messages))
        assert len(tasks_messages(messages)) >= 2
        tasks_only.quiet(0.1)

        # A place frees when a stream disconnects.
        tasks_only.close()
        resumed = open_stream(server, last_event_id=messages[2].id)
        # Resuming after P: exactly the messages after P it missed, then live ones.
        same(resumed.messages(len(messages) - 3), messages[3:])
        resumed.quiet(0.1)
        live_reply = commit([{"type": "tick"}])
        (live_one,) = everything.messages(1)
        check(live_one, *sent[-1])
        same(resumed.messages(1), [live_one])
        messages.append(live_one)
        resumed.close()
        # Resuming at the head: nothing missed. From 0: everything.
        for last, expected in [(live_reply["position"], []), (0, messages)]:
            with open_stream(server, last_event_id=last) as again:
                same(again.messages(len(expected)), expected)
                again.quiet(0.1)
        # An id this store never reached: a reset to the head, then live ones.
        with open_stream(server, last_event_id=999_999) as ahead:
            assert ahead.next() == Sse(live_reply["position"], "reset", {"position": live_reply["position"]})
            commit([{"type": "tick"}])
            (message,) = everything.messages(1)
            messages.append(message)
            same(ahead.messages(1), [message])
        # An id that is no number cannot say what was missed: a reset too.
        for bogus in ("abc", "-1", "\xb2", "9" * 5_000):
            with open_stream(server, last_event_id=bogus) as lost:
                assert lost.next() == Sse(message.id, "reset", {"position": message.id}), bogus
        assert_error(Stream(server, query="?views=nope").error, 404, "unknown_view")

        # SIGTERM ends the open stream; the restarted server rebuilds the
        # commits from the log: a reconnect with an old id misses nothing.
        assert server.stop() == 0, server.log()
        assert everything.next() is Stream.end
        everything.close()
        server.start()
        # --no-runtime-inputs: neither daemon.start nor daemon.stop was recorded.
        assert not [r for r in records(server) if r["body"]["input"]["type"].startswith("daemon.")]
        with open_stream(server, last_event_id=messages[1].id) as after_restart:
            same(after_restart.messages(len(messages) - 2), messages[2:])
            after_restart.quiet(0.1)
        with open_stream(server, last_event_id=0, query="?views=tasks") as filtered:
            same(filtered.messages(len(tasks_messages(messages))), tasks_messages(messages))
            filtered.quiet(0.1)

        # 1,000 commits are kept: a resume from before them is one reset.
        daemon = server.client("daemon")
        oldest = messages[-1].id
        positions = [daemon.submit({"type": "tick"})["position"] for _ in range(1_000)]
        head = positions[-1]
        for _ in range(2):  # live, then rebuilt from the log after a restart
            with open_stream(server, last_event_id=positions[0]) as kept:  # the oldest commit still kept is the next
                got = kept.messages(999)
                assert [m.id for m in got] == positions[1:]
                kept.quiet(0.1)
            with open_stream(server, last_event_id=oldest) as last_kept:
                got = last_kept.messages(1_000)
                assert [m.id for m in got] == positions
            with open_stream(server, last_event_id=messages[-2].id) as too_old:
                assert too_old.next() == Sse(head, "reset", {"position": head})
                too_old.quiet(0.1)
            assert server.stop() == 0, server.log()
            server.start()
    finally:
        human.close()
        server.stop()


# ================================================== 7, 8: writers and stops


def assert_locked_by(done: Any, url: str, pid: int, seconds: float) -> None:
    """Refused at once, exit 1, naming the holder exactly."""
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert seconds < WAIT_S, f"took {seconds:.1f} s: it waited for the lock"
    assert "listening" not in done.stdout
    match = LOCKED.fullmatch(done.stderr.removeprefix("tandem: ").removesuffix("\n"))
    assert done.stderr.startswith("tandem: ") and match, done.stderr
    assert (match["url"], int(match["pid"]), match["host"]) == (redacted(url), pid, socket.gethostname())
    since = utc(match["since"])
    assert abs(datetime.datetime.now(datetime.UTC) - since) < datetime.timedelta(minutes=5), since


def timed(*arguments: str) -> tuple[Any, float]:
    began = time.monotonic()
    done = tandem(*arguments, timeout_s=WAIT_S * 3)
    return done, time.monotonic() - began


def test_one_writer_per_store(kind: str, stores: Stores, tmp_path: Path) -> None:
    url = stores.url(kind)
    server = Served(tmp_path, url, NO_RUNTIME).start()
    try:
        assert server.process is not None
        post_each(server, [without_at(value) for value in trace_inputs(EXAMPLE)[:3]])
        head = Head(server)
        second = Served(tmp_path, url, NO_RUNTIME, name="second")
        done, seconds = timed("serve", "--store", url, "--tokens", str(second.tokens_file), "--listen", "127.0.0.1:0")
        assert_locked_by(done, url, server.process.pid, seconds)
        done, seconds = timed("ingest", "--store", url, str(EXAMPLE))
        assert_locked_by(done, url, server.process.pid, seconds)
        spool = tmp_path / "spool"
        spool.mkdir(mode=0o700)
        done, seconds = timed("daemon", "--store", url, "--spool", str(spool), "--interval", "0.05")
        assert_locked_by(done, url, server.process.pid, seconds)
        head.unchanged()
        # Readers need no lock.
        assert cli("show", "--store", url, "--json", "tasks").returncode == 0

        # SIGKILL leaves no lock behind: started again at once, it serves.
        server.kill()
        assert server.process.returncode == -signal.SIGKILL
        server.start()
        assert health_position(server) == head.position
        reply = post_json(server, "daemon", {"type": "tick"})
        assert reply.status == 200 and reply.body["position"] > head.position, reply.data
        # ... and holds the lock again, under its new pid.
        done, seconds = timed("ingest", "--store", url, str(EXAMPLE))
        assert_locked_by(done, url, server.process.pid, seconds)
        assert server.stop() == 0, server.log()
    finally:
        server.kill()


def test_sigterm_stops_cleanly_and_sigkill_is_a_crash(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    done = tandem("ingest", "--store", url, str(EXAMPLE))
    assert done.returncode == 0, done.stderr
    ingested = store_head(url)
    # Runtime inputs on: on a store that is not empty, the start is recorded at once.
    server = Served(tmp_path, url, "--tick", "0").start()
    try:
        (start,) = records(server, ingested)
        assert start["body"]["input"]["type"] == "daemon.start"
        ended = threading.Event()
        received: list[Any] = []

        def follow() -> None:
            for message in server.client("human").stream(last_event_id=ingested):
                received.append(message)
            ended.set()

        reader = threading.Thread(target=follow, daemon=True)
        reader.start()
        wait_for("the start's message", lambda: received, server)
        assert [(m.event, m.data["inputs"][0]["type"]) for m in received] == [("change", "daemon.start")]
        assert not ended.is_set()

        assert server.stop() == 0, server.log()
        assert ended.wait(WAIT_S), "the stream did not end at SIGTERM"
        reader.join(WAIT_S)
        assert "stopped as asked (daemon.stop expected)" in server.log()
        stop = [record for record in records_in(url) if record["input"]["type"] == "daemon.stop"]
        assert [record["input"]["expected"] for record in stop] == [True]

        # An expected stop: the next start raises nothing. A stream resumed from
        # the last message it saw gets the stop and the new start.
        server.start()
        resumed = server.client("human").stream(last_event_id=received[-1].id)
        restart = records(server)[-1]
        assert restart["body"]["input"]["type"] == "daemon.start"
        assert [(m.data["inputs"][0]["type"], m.id) for m in itertools.islice(resumed, 2)] == [
            ("daemon.stop", restart["position"] - 1), ("daemon.start", health_position(server))
        ]  # fmt: skip
        resumed.close()
        alerts = server.client("human").view("alerts")["rows"]
        assert not [alert for alert in alerts if "daemon_crash" in alert["alert_id"]], alerts
        assert server.client("human").view("health")["value"]["open_incidents"] == []

        # SIGKILL: no daemon.stop; the next start records a crash.
        server.kill()
        server.start()
        alerts = {alert["alert_id"]: alert for alert in server.client("human").view("alerts")["rows"]}
        assert alerts["incident:daemon_crash/1"]["state"] == "raised", alerts
        assert "daemon_crash/1" in server.client("human").view("health")["value"]["open_incidents"]

        # SIGTERM while a big batch is in flight: it is committed whole and
        # answered, or (had the stop come first) not at all; never in part.
        head = health_position(server)
        in_flight: dict[str, Any] = {}

        def send() -> None:
            try:
                in_flight["reply"] = post_ndjson(server, "daemon", b'{"type":"tick"}\n' * in_flight_lines)
            except (OSError, http.client.HTTPException) as error:
                in_flight["error"] = error

        sender_thread = threading.Thread(target=send)
        sender_thread.start()
        time.sleep(0.05)
        assert server.stop() == 0, server.log()
        sender_thread.join(WAIT_S)
        recorded = records_in(url)
        ticks = [record for record in recorded if record["input"]["type"] == "tick"]
        if "reply" in in_flight:
            reply = in_flight["reply"]
            assert reply.status == 200, reply.data
            assert len(reply.body["results"]) == len(ticks) == in_flight_lines
            assert reply.body["position"] == head + sum(len(result["events"]) for result in reply.body["results"])
        else:
            assert ticks == [], in_flight
        assert len(trace_inputs(EXAMPLE)) == 23 and len(recorded) == 23 + 5 + len(ticks)
        # start, stop (SIGTERM), start, (SIGKILL: nothing), start, [the batch], stop: nothing else.
        assert [(record["input"]["type"], record["input"].get("expected")) for record in recorded[23:] if record["input"]["type"] != "tick"] == [
            ("daemon.start", None), ("daemon.stop", True), ("daemon.start", None), ("daemon.start", None), ("daemon.stop", True),
        ]  # fmt: skip
        assert recorded[-1]["input"]["type"] == "daemon.stop"
        assert all(record["accepted"] for record in recorded)
    finally:
        server.kill()


def records_in(url: str) -> list[dict[str, Any]]:
    """The input records of a store (read directly, no server): {input, accepted}."""
    store = open_store(url)
    try:
        found = []
        for _, event in store.read():
            if isinstance(event, (ev.InputAccepted, ev.InputRejected)):
                found.append({"input": json.loads(msgspec.json.encode(event.input)), "accepted": isinstance(event, ev.InputAccepted)})
        return found
    finally:
        store.close()


# ========================================================= 9: tokens file


@pytest.mark.parametrize(
    "problem",
    ["group-readable", "others-readable", "short", "unknown-actor", "twice", "not-json", "missing"],
)
def test_an_unsafe_tokens_file_is_refused_before_anything_listens(tmp_path: Path, problem: str) -> None:
    path = tmp_path / "tokens.json"
    entries = [{"actor": "human", "token": new_token()}, {"actor": "background", "token": new_token()}]
    mode = 0o600
    expected = ""
    if problem == "group-readable":
        mode, expected = 0o640, "readable or writable by group or others (mode 0640)"
    elif problem == "others-readable":
        mode, expected = 0o604, "readable or writable by group or others (mode 0604)"
    elif problem == "short":
        entries[1]["token"] = "x" * 31
        expected = "token 2 (actor 'background'): 31 characters, shorter than 32"
    elif problem == "unknown-actor":
        entries.append({"actor": "root", "token": new_token()})
        expected = "token 3 (actor 'root'): unknown actor"
    elif problem == "twice":
        entries.append({"actor": "foreground", "token": entries[0]["token"]})
        expected = "token 3 (actor 'foreground'): the same token is given twice"
    if problem == "not-json":
        path.write_text("{nope")
        expected = "expected"
    elif problem != "missing":
        path.write_text(json.dumps({"tokens": entries}))
    else:
        expected = "cannot read it"
    if path.exists():
        os.chmod(path, mode)
    database = tmp_path / "events.db"
    done = tandem("serve", "--store", f"sqlite:///{database}", "--tokens", str(path), "--listen", "127.0.0.1:0", timeout_s=60)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "listening" not in done.stdout and done.stdout == ""
    assert f"tokens file {path}" in done.stderr and expected in done.stderr, done.stderr
    assert not database.exists()  # refused before the store was opened
