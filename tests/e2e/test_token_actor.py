"""The token is the actor, from the first check on (docs/api.md,
"Authentication and authority"), on a real `tandem serve`: an input that
leaves `actor` out is checked as its token's actor's, including the schema
rules that depend on who sends it (`generation`, required of a `background`
`action.propose` or `action.revalidate`; docs/contract/actions.md). A human
token's proposal without `generation` is recorded, and accepted; a
background token's is `400 invalid_input` naming `generation`, nothing
recorded; an executor token's is the recorded `not_authorized` any actor
a kind does not accept gets. The same through `tandem.client`, whose typed
input leaves that rule to the server when it names no actor."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tandem.adapters.client import ApiError
from tandem.client import ApiError as TypedApiError
from tandem.client import Client as TypedClient
from tandem.client import inputs
from tests.e2e.serving import Served, store_head

GENERATION_MISSING = "`generation` is required when the actor is background"

SETUP = [
    ("daemon", {"type": "policy.set", "allowed_operations": ["worker.start"], "write_roots": ["/repo"]}),
    ("daemon", {"type": "conversation.open", "conversation_id": "fg", "role": "foreground", "context_limit": 200000, "reserve": 20000}),
    ("daemon", {"type": "conversation.open", "conversation_id": "bg", "role": "background", "foreground_id": "fg",
                "context_limit": 100000, "reserve": 10000}),
    ("daemon", {"type": "background.bind", "conversation_id": "bg", "foreground_id": "fg", "generation": 1}),
    ("human", {"type": "human.message", "conversation_id": "fg", "message_id": "m1", "text": "Build the API."}),
    ("human", {
        "type": "task.delegate", "task_id": "api", "conversation_id": "fg", "message_refs": ["m1"], "goal": "The API",
        "done_when": ["tests pass"], "grant": {"grant_id": "g-api", "allowed_operations": ["worker.start"], "write_roots": ["/repo/api"]},
    }),
]  # fmt: skip


def proposal(operation_id: str, **fields: Any) -> dict[str, Any]:
    """An `action.propose` naming no actor and, unless given, no generation."""
    return {
        "type": "action.propose", "operation_id": operation_id, "cause_key": f"api:{operation_id}", "operation": "worker.start",
        "target": f"build {operation_id}", "resource": f"wt-{operation_id}", "write_paths": [f"/repo/api/{operation_id}"],
        "task_id": "api", "grant_id": "g-api", "input_revisions": {"grant": 1}, "unattended": False, **fields,
    }  # fmt: skip


def revalidation(operation_id: str) -> dict[str, Any]:
    return {"type": "action.revalidate", "operation_id": operation_id, "input_revisions": {"grant": 1}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    directory = tmp_path_factory.mktemp("token-actor")
    with Served(directory, f"sqlite:///{directory}/events.db", "--no-runtime-inputs") as served:
        for actor, value in SETUP:
            assert submitted(served, actor, value)["accepted"], value
        yield served


def submitted(server: Served, actor: str, value: dict[str, Any]) -> dict[str, Any]:
    """The one result of `value` posted with `actor`'s token."""
    with server.client(actor) as client:
        (result,) = client.submit(value)["results"]
    return result


def recorded_input(server: Served, result: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The input as the log records it, and the events it caused (as stored)."""
    first = result["events"][0]["position"]
    with server.client("human") as client:
        page = client.events(after=first - 1, limit=len(result["events"]))["events"]
    assert [event["position"] for event in page] == [event["position"] for event in result["events"]]
    return page[0]["body"]["input"], page


def refused(server: Served, actor: str, value: dict[str, Any] | list[dict[str, Any]]) -> ApiError:
    """`value` (a batch if a list) refused before anything was recorded: the error."""
    head = store_head(server.store_url)
    with server.client(actor) as client, pytest.raises(ApiError) as error:
        client.submit_batch(value) if isinstance(value, list) else client.submit(value)
    assert store_head(server.store_url) == head
    return error.value


def test_a_human_token_proposes_without_generation_and_is_recorded_as_the_human(server: Served) -> None:
    result = submitted(server, "human", proposal("op-human"))
    assert (result["accepted"], result["reason"]) == (True, None)
    value, events = recorded_input(server, result)
    assert value["actor"] == "human" and "generation" not in value
    (proposed,) = [event for event in events if event["type"] == "ActionProposed"]
    assert (proposed["body"]["proposed_by"], proposed["body"]["generation"]) == ("human", None)
    with server.client("human") as client:
        row = next(row for row in client.view("actions")["rows"] if row["operation_id"] == "op-human")
    assert row["state"] == "submitting"  # claimed in the same transaction: nothing blocks it


def test_a_background_token_without_generation_is_refused_naming_it(server: Served) -> None:
    error = refused(server, "background", proposal("op-background"))
    assert (error.status, error.code) == (400, "invalid_input")
    assert error.errors == [{"line": 1, "message": GENERATION_MISSING}]
    assert error.message == f"1 bad line(s): line 1: {GENERATION_MISSING}"
    # With its generation, the same proposal is the background's.
    result = submitted(server, "background", proposal("op-background", generation=1))
    assert result["accepted"], result
    assert recorded_input(server, result)[0]["actor"] == "background"


def test_a_token_whose_actor_the_kind_does_not_accept_is_a_recorded_not_authorized(server: Served) -> None:
    result = submitted(server, "executor", proposal("op-executor"))
    assert (result["accepted"], result["reason"]) == (False, "not_authorized")
    assert recorded_input(server, result)[0]["actor"] == "executor"


def test_revalidate_is_checked_for_its_tokens_actor_too(server: Served) -> None:
    submitted(server, "human", proposal("op-revalidated"))
    # The human's needs no generation: the domain decides it (a claimed action is not fenced).
    result = submitted(server, "human", revalidation("op-revalidated"))
    assert (result["accepted"], result["reason"]) == (False, "not_fenced")
    error = refused(server, "background", revalidation("op-revalidated"))
    assert (error.status, error.code, error.errors) == (400, "invalid_input", [{"line": 1, "message": GENERATION_MISSING}])


def test_a_batch_is_checked_line_by_line_for_its_tokens_actor(server: Served) -> None:
    with server.client("human") as client:
        answer = client.submit_batch([proposal("op-batch-1"), proposal("op-batch-2")])
    assert [(result["line"], result["accepted"]) for result in answer["results"]] == [(1, True), (2, True)]
    error = refused(server, "background", [proposal("op-batch-3", generation=1), proposal("op-batch-4")])
    assert (error.status, error.code, error.errors) == (400, "invalid_input", [{"line": 2, "message": GENERATION_MISSING}])


def test_the_typed_client_sends_it_and_the_server_checks_it_for_the_token(server: Served) -> None:
    value = inputs.parse(proposal("op-typed-human"))
    with TypedClient(server.url, server.tokens["human"]) as human:
        result = human.submit(value)
    assert result.accepted and result.reason is None
    head = store_head(server.store_url)
    with TypedClient(server.url, server.tokens["background"]) as background:
        with pytest.raises(TypedApiError) as error:
            background.submit(inputs.parse(proposal("op-typed-background")))
    assert (error.value.status, error.value.code) == (400, "invalid_input")
    assert error.value.errors == [{"line": 1, "message": GENERATION_MISSING}]
    assert store_head(server.store_url) == head
