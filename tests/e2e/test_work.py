"""`GET /v1/work` and what an executor reads in the actions view, on a real
`tandem serve` (docs/api.md, "The work queue"): an executor loop is "take,
do, report" with nothing of its own to keep. A proposal is claimed and its
attempt appears, with its frozen envelope; the executor builds each input
from the item's replies alone (receipt, then outcome) and the item moves,
then leaves; a cancelled one says `stop` until the executor's word ends it.
Every answer matches its schema in the server's own `/openapi.json`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis

from tandem.adapters.client import ApiError, Client
from tests.e2e.serving import Served

SETUP = [
    ("daemon", {"type": "policy.set", "allowed_operations": ["worker.start"], "write_roots": ["/repo"]}),
    ("daemon", {"type": "conversation.open", "conversation_id": "fg", "role": "foreground", "context_limit": 200000, "reserve": 20000}),
    ("human", {"type": "human.message", "conversation_id": "fg", "message_id": "m1", "text": "Build the API."}),
    ("human", {
        "type": "task.delegate", "task_id": "api", "conversation_id": "fg", "message_refs": ["m1"], "goal": "The API",
        "done_when": ["tests pass"], "grant": {"grant_id": "g-api", "allowed_operations": ["worker.start"], "write_roots": ["/repo/api"]},
    }),
]  # fmt: skip


def propose(operation_id: str, resource: str) -> dict[str, Any]:
    return {
        "type": "action.propose", "actor": "human", "operation_id": operation_id, "cause_key": f"api:{operation_id}", "operation": "worker.start",
        "target": f"build {operation_id}", "resource": resource, "write_paths": [f"/repo/api/{operation_id}"], "task_id": "api",
        "grant_id": "g-api", "input_revisions": {"grant": 1}, "unattended": False,
    }  # fmt: skip


def reply_input(reply: dict[str, Any], value: str) -> dict[str, Any]:
    """The input an item's reply stands for, with `value` chosen: all an executor needs."""
    assert value in reply["values"], (value, reply)
    ids = {"operation_id": reply["operation_id"], **({"attempt_id": reply["attempt_id"]} if reply["attempt_id"] else {})}
    return {"type": reply["type"], **ids, reply["choose"]: value}


def accepted(answer: dict[str, Any]) -> int:
    assert [result["accepted"] for result in answer["results"]] == [True] * len(answer["results"]), answer
    return answer["position"]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Served]:
    with Served(tmp_path, f"sqlite:///{tmp_path / 'work.db'}", "--no-runtime-inputs") as served:
        for actor, value in SETUP:
            accepted(served.client(actor).submit(value))
        yield served


class Checked:
    """GET answers, each checked against the server's /openapi.json."""

    def __init__(self, server: Served, actor: str) -> None:
        self.server, self.token = server, server.tokens[actor]
        self.schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")

    def get(self, path: str, template: str | None = None, **query: str) -> dict[str, Any]:
        response = requests.get(f"{self.server.url}{path}", params=query, headers={"Authorization": f"Bearer {self.token}"}, timeout=30)
        self.schema[template or path]["GET"].validate_response(response)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    def work(self, **query: str) -> dict[str, Any]:
        return self.get("/v1/work", **query)

    def action(self, operation_id: str) -> dict[str, Any]:
        rows = self.get("/v1/views/actions", "/v1/views/{name}")["rows"]
        return next(row for row in rows if row["operation_id"] == operation_id)


def test_a_claimed_attempt_is_taken_done_and_reported_from_the_queue_alone(server: Served) -> None:
    human, executor = server.client("human"), server.client("executor")
    read = Checked(server, "executor")
    assert read.work()["items"] == []
    position = accepted(human.submit(propose("op-1", "wt-1")))

    queue = read.work()
    assert queue["position"] == position  # exact at the engine's position: the proposal's own pass claimed it
    (item,) = queue["items"]
    assert (item["operation_id"], item["attempt_id"], item["action_state"], item["attempt_state"]) == ("op-1", "op-1/a1", "submitting", "submitting")
    assert (item["awaits"], item["stop"], item["task_id"], item["rule_id"], item["cause_key"]) == ("executor.receipt", False, "api", None, "api:op-1")
    envelope = item["envelope"]
    assert (envelope["operation"], envelope["target"], envelope["resource"], envelope["write_paths"]) == ("worker.start", "build op-1", "wt-1", ["/repo/api/op-1"])
    assert (envelope["task_revision"], envelope["grant_revision"], envelope["policy_revision"]) == (1, 1, 1)
    assert [(reply["type"], reply["choose"], reply["values"]) for reply in item["replies"]] == [
        ("executor.receipt", "result", ["queued", "accepted", "unknown", "refused"]),
        ("executor.outcome", "outcome", ["succeeded", "failed"]),
    ]
    row = read.action("op-1")  # the view says the same
    assert (row["attempt_id"], row["envelope"], row["target"], row["write_paths"]) == ("op-1/a1", envelope, "build op-1", ["/repo/api/op-1"])
    assert row["input_revisions"] == {"task": 1, "grant": 1, "intent": 1}

    # Take: the receipt, built from the reply alone.
    position = accepted(executor.submit(reply_input(item["replies"][0], "accepted")))
    (item,) = read.work()["items"]
    assert (item["attempt_id"], item["attempt_state"], item["awaits"]) == ("op-1/a1", "accepted", "executor.outcome")
    assert [reply["type"] for reply in item["replies"]] == ["executor.outcome"] and item["envelope"] == envelope

    # Do, then report: the outcome; the item leaves, and so do the row's attempt keys.
    outcome = reply_input(item["replies"][0], "succeeded")
    position = accepted(executor.submit({**outcome, "artifact_revision": "api@1"}))
    assert read.work() == {"position": position, "items": []}
    row = read.action("op-1")
    assert (row["state"], row["attempt_id"], row["envelope"]) == ("succeeded", None, None)


def test_the_queue_keeps_claim_order_says_stop_and_filters_by_runtime(server: Served) -> None:
    human, executor = server.client("human"), server.client("executor")
    read = Checked(server, "executor")
    accepted(human.submit_batch([propose("op-b", "wt-b"), propose("op-a", "wt-a")]))
    accepted(human.submit(propose("op-c", "wt-c")))
    assert [item["operation_id"] for item in read.work()["items"]] == ["op-b", "op-a", "op-c"]  # by claim, not by id

    accepted(human.submit({"type": "action.cancel", "operation_id": "op-a"}))
    stopping = next(item for item in read.work()["items"] if item["operation_id"] == "op-a")
    assert (stopping["action_state"], stopping["stop"]) == ("cancel_requested", True)
    assert stopping["replies"][-1]["values"] == ["succeeded", "failed", "cancelled"]
    accepted(executor.submit(reply_input(stopping["replies"][0], "refused")))  # it never started
    assert [item["operation_id"] for item in read.work()["items"]] == ["op-b", "op-c"]
    assert read.action("op-a")["state"] == "cancelled"

    # No action names a runtime: a runtime's queue is empty; an empty filter is refused.
    assert read.work(runtime_id="w-1")["items"] == []
    with pytest.raises(ApiError) as refused:
        executor.request("GET", "/v1/work?runtime_id=")
    assert (refused.value.status, refused.value.code) == (400, "invalid_query")
    with pytest.raises(ApiError) as unauthenticated:
        Client(server.url, "not-a-token-" * 3).request("GET", "/v1/work")
    assert (unauthenticated.value.status, unauthenticated.value.code) == (401, "unauthenticated")
