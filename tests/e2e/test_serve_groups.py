"""Group commit against a real `tandem serve` (docs/api.md, "Group commit").

The server's first commit of a wave is held (a fault injected into the
store's append, tests/faults/inject: it waits for a file the test writes),
so the requests the test sends meanwhile arrive while a commit is in
flight; then it is let go. Checked:

- each request's answer is its own: its results, line by line, its events'
  positions contiguous and in order, its `file` `http@P` (P the position
  before its first event) and no other request's; a bad request (400) and
  a refused one (403) among good ones change nothing for the others;
- the store's events equal, byte for byte, those of the same requests sent
  one at a time to a fresh server in the order they were committed, and
  `tandem verify` is clean on both;
- the stream sends one message per request (with its own row changes), and
  the same messages rebuilt from the log after a restart;
- a transaction that fails fails every request in it (`503
  store_unavailable`, nothing of any of them recorded), and each resent
  with its ids is applied once.
"""

from __future__ import annotations

import http.client
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tandem.adapters.store import open_store
from tandem.domain import events as ev
from tests.e2e.serving import Served, tandem
from tests.e2e.test_serve import NO_RUNTIME, WAIT_S, open_stream, same, wait_for
from tests.faults.faults import faults_env, recorded_ids

APPEND = "tandem.adapters.store.recorder:RecorderStore.append"
AT = "2026-03-02T10:00:00Z"  # every input's time: the same second, whoever commits it when
JSON = "application/json"
NDJSON = "application/x-ndjson"
clients_count = 12
later_rounds = 4  # requests each client sends after the held wave, concurrently


@dataclass(frozen=True)
class Request:
    actor: str
    body: bytes
    content_type: str
    ids: tuple[str, ...]  # its inputs' ids, in order (none when it is refused whole)
    status: int = 200


def _line(value: dict[str, Any]) -> bytes:
    return json.dumps({"at": AT, **value}).encode()


def _message(name: str) -> dict[str, Any]:
    return {"type": "human.message", "conversation_id": "fg", "message_id": name, "text": name, "id": name}


OPEN = Request("daemon", _line({"type": "conversation.open", "conversation_id": "fg", "role": "foreground",
                                "context_limit": 200_000, "reserve": 20_000, "id": "open"}), JSON, ("open",))  # fmt: skip


def request_of(client: int, number: int) -> Request:
    """Client `client`'s request `number`: a message, a batch of three, a
    recorded rejection, a bad batch (400), or another actor's input (403)."""
    name = f"c{client}-{number}"
    kind = (client + number) % 5
    if kind == 1:
        names = tuple(f"{name}-{part}" for part in range(3))
        return Request("human", b"".join(_line(_message(each)) + b"\n" for each in names), NDJSON, names)
    if kind == 2:
        return Request("background", _line({"type": "task.cancel", "task_id": "t", "id": name}), JSON, (name,))
    if kind == 3:
        body = _line(_message(f"{name}-a")) + b"\n" + _line({"type": "no.such.kind", "id": f"{name}-b"}) + b"\n"
        return Request("human", body, NDJSON, (), 400)
    if kind == 4:
        return Request("background", _line({**_message(name), "actor": "human"}), JSON, (), 403)
    return Request("human", _line(_message(name)), JSON, (name,))


class Connection:
    """A kept-alive connection that sends a request now and reads its answer later."""

    def __init__(self, server: Served) -> None:
        parts = urlsplit(server.url)
        self.server = server
        self.http = http.client.HTTPConnection(parts.hostname, parts.port, timeout=WAIT_S * 3)
        self.http.request("GET", "/v1/health")  # connected and accepted before any commit is held
        self.http.getresponse().read()

    def send(self, request: Request) -> None:
        headers = {"Authorization": f"Bearer {self.server.tokens[request.actor]}", "Content-Type": request.content_type}
        self.http.request("POST", "/v1/inputs", request.body, headers)

    def answer(self) -> tuple[int, dict[str, Any]]:
        response = self.http.getresponse()
        return response.status, json.loads(response.read())

    def exchange(self, request: Request) -> tuple[int, dict[str, Any]]:
        self.send(request)
        return self.answer()


def held(directory: Path, *more: dict[str, Any]) -> dict[str, str]:
    """Faults: the store's second append (the first is the conversation's)
    waits for `go` and says it started by writing `inside`; every append is
    reported."""
    gate = {"target": APPEND, "skip": 1, "times": 1, "touch_file": str(directory / "inside"),
            "wait_for_file": str(directory / "go"), "report_calls": True}  # fmt: skip
    return faults_env(gate, *more)


def held_wave(server: Served, directory: Path, first: Request, others: list[Request]) -> list[tuple[Request, int, dict[str, Any]]]:
    """`first` sent, its commit held; `others` sent meanwhile, each on its
    own connection; then the commit let go. Every answer, in sending order."""
    connections = [Connection(server) for _ in range(len(others) + 1)]
    connections[0].send(first)
    wait_for("the first commit to be held", lambda: (directory / "inside").exists(), server)
    for connection, request in zip(connections[1:], others):
        connection.send(request)
    (directory / "go").touch()
    return [(request, *connection.answer()) for connection, request in zip(connections, [first, *others])]


def concurrently(server: Served, rounds: int) -> list[tuple[Request, int, dict[str, Any]]]:
    """Every client sends `rounds` requests, one after the other, all clients at once."""
    answers: list[tuple[Request, int, dict[str, Any]]] = []
    connections = [Connection(server) for _ in range(clients_count)]

    def work(client: int) -> None:
        for number in range(1, rounds + 1):
            request = request_of(client, number)
            answers.append((request, *connections[client].exchange(request)))

    threads = [threading.Thread(target=work, args=(client,)) for client in range(clients_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S * 3)
    assert len(answers) == clients_count * rounds
    return answers


def stored(url: str) -> list[tuple[int, bytes]]:
    store = open_store(url)
    try:
        return list(store.read_encoded())
    finally:
        store.close()


def records(url: str) -> dict[int, ev.InputAccepted | ev.InputRejected]:
    store = open_store(url)
    try:
        return {position: event for position, event in store.read() if isinstance(event, (ev.InputAccepted, ev.InputRejected))}
    finally:
        store.close()


def check_answer(request: Request, status: int, answer: dict[str, Any], by_position: dict[int, Any]) -> tuple[int, int] | None:
    """One request's answer is its own: the span of positions it holds (None: refused whole)."""
    assert status == request.status, (request, status, answer)
    if status == 400:
        assert answer["error"]["code"] == "invalid_input" and [error["line"] for error in answer["errors"]] == [2]
        return None
    if status == 403:
        assert answer["error"]["code"] == "actor_mismatch"
        return None
    positions = [event["position"] for result in answer["results"] for event in result["events"]]
    first = positions[0]
    assert positions == list(range(first, first + len(positions))) and positions[-1] == answer["position"]
    assert [result["line"] for result in answer["results"]] == list(range(1, len(request.ids) + 1))
    mine = [by_position[result["events"][0]["position"]] for result in answer["results"]]
    assert [(record.file, record.line, record.input.id) for record in mine] == [
        (f"http@{first - 1}", line, identifier) for line, identifier in enumerate(request.ids, 1)
    ]
    rejected = request.actor == "background"
    assert [result["accepted"] for result in answer["results"]] == [not rejected] * len(request.ids)
    if rejected:
        assert [result["reason"] for result in answer["results"]] == ["not_authorized"]
    return (first, answer["position"])


def verified(url: str) -> None:
    done = tandem("verify", "--store", url)
    assert done.returncode == 0 and "clean" in done.stdout, done.stdout + done.stderr


def test_concurrent_requests_each_keep_their_own_and_equal_them_one_by_one(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    server = Served(tmp_path, url, NO_RUNTIME, env=held(tmp_path)).start()
    try:
        assert Connection(server).exchange(OPEN)[0] == 200
        with open_stream(server, query="?rows=1") as stream:  # row changes too: each request's own
            wave = held_wave(server, tmp_path, request_of(0, 0), [request_of(client, 0) for client in range(1, clients_count)])
            appends = server.log().count(f"tandem-faults: call {APPEND}")
            assert appends == 3, f"the {clients_count - 1} requests sent meanwhile were not one transaction: {appends - 2} appends"
            answers = wave + concurrently(server, later_rounds)
            by_position = records(url)
            spans = {index: check_answer(*answer, by_position) for index, answer in enumerate(answers)}
            committed = sorted((span, index) for index, span in spans.items() if span is not None)
            assert all(earlier[0][1] < later[0][0] for earlier, later in zip(committed, committed[1:]))  # no position shared
            live = stream.messages(len(committed))
            assert [message.id for message in live] == [span[1] for span, _ in committed]  # one message per request
            assert [len(message.data["inputs"]) for message in live] == [len(answers[index][0].ids) for _, index in committed]
            assert all(list(message.data["rows"]) == message.data["views"] for message in live)
        server.stop()
        server.start()  # resumed after a restart: the same messages, rebuilt from the log
        with open_stream(server, last_event_id=committed[0][0][0] - 1, query="?rows=1") as stream:
            same(stream.messages(len(live)), live)
    finally:
        server.stop()
    # The same requests one at a time, in the order they were committed (the refused ones last), give the same events.
    alone_url = f"sqlite:///{tmp_path}/alone.db"
    with Served(tmp_path, alone_url, NO_RUNTIME, name="alone") as alone:
        connection = Connection(alone)
        assert connection.exchange(OPEN)[0] == 200
        in_order = [answers[index][0] for _, index in committed]
        in_order += [request for index, (request, _, _) in enumerate(answers) if spans[index] is None]
        for request in in_order:
            assert connection.exchange(request)[0] == request.status
    assert stored(alone_url) == stored(url)
    verified(url)
    verified(alone_url)


def test_a_failed_transaction_fails_every_request_in_it_and_each_resent_applies_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    fail = {"target": APPEND, "skip": 2, "times": 1, "fail_before": "tandem.replay.port:StoreError"}  # the held commit's next
    with Served(tmp_path, url, NO_RUNTIME, env=held(tmp_path, fail)) as server:
        assert Connection(server).exchange(OPEN)[0] == 200
        good = [request_of(client, 0) for client in range(1, clients_count)]
        good = [request for request in good if request.actor == "human" and request.status == 200]
        wave = held_wave(server, tmp_path, request_of(0, 0), good)
        (_, status, answer), rest = wave[0], wave[1:]
        assert status == 200 and answer["results"][0]["accepted"]
        assert len(rest) >= 3
        for request, status, refused in rest:
            assert (status, refused["error"]["code"]) == (503, "store_unavailable"), (request, refused)
            assert "nothing was recorded" in refused["error"]["message"]
        assert stored(url)[-1][0] == answer["position"]  # nothing of the failed transaction
        connection = Connection(server)
        for request, _, _ in rest:  # resent with their ids: each applied once
            status, again = connection.exchange(request)
            assert status == 200 and all(result["accepted"] for result in again["results"]), again
        for request, _, _ in rest[:2]:
            status, again = connection.exchange(request)
            assert status == 200 and {result["reason"] for result in again["results"]} == {"duplicate_input"}
    counts = recorded_ids(url)
    assert [counts[identifier] for request, _, _ in wave for identifier in request.ids] == [1] * sum(len(r.ids) for r, _, _ in wave)
    verified(url)
