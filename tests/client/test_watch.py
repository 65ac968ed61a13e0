"""tandem.client's waits against a real `tandem serve`: `watch` yields the
views commit by commit with a replica equal to `GET /v1/views` at each
position; `wait_for` returns a row as it is or as a later commit makes it,
driven by the stream (it returns when the commit lands, not on a poll), and
raises TimeoutError when the condition never holds; `work()` reads the
work queue typed, and an item's `reply()` builds the input it asks for.
The sync and the async client go through the same checks."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from tests.client import aio
from tandem.client import AsyncClient, Client, inputs
from tests.e2e.serving import Served

GRANT = inputs.GrantRequest(grant_id="g1", allowed_operations=["worker.start"], write_roots=["/repo"])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    directory = tmp_path_factory.mktemp("watch")
    with Served(directory, f"sqlite:///{directory}/events.db", "--no-runtime-inputs") as served:
        daemon = Client(served.url, served.tokens["daemon"])
        daemon.submit(inputs.SetPolicy(allowed_operations=["worker.start"], write_roots=["/repo"]))
        daemon.submit(inputs.OpenConversation(conversation_id="fg", role="foreground", context_limit=200_000, reserve=20_000))
        daemon.submit(inputs.OpenConversation(conversation_id="bg", role="background", foreground_id="fg",
                                              context_limit=100_000, reserve=10_000))
        daemon.submit(inputs.BindBackground(conversation_id="bg", foreground_id="fg", generation=1))
        Client(served.url, served.tokens["watchdog"]).submit(inputs.Heartbeat(generation=1))
        yield served


def delegate(server: Served, task_id: str) -> None:
    Client(server.url, server.tokens["human"]).submit(inputs.DelegateTask(
        task_id=task_id, conversation_id="fg", message_refs=[], goal=f"goal {task_id}", done_when=["done"],
        grant=inputs.GrantRequest(grant_id=f"g-{task_id}", allowed_operations=["worker.start"], write_roots=["/repo"])))


def later(seconds: float, work) -> threading.Thread:  # type: ignore[no-untyped-def]
    thread = threading.Thread(target=lambda: (time.sleep(seconds), work()))
    thread.start()
    return thread


def test_watch_keeps_a_replica_equal_to_the_views(server: Served) -> None:
    human = Client(server.url, server.tokens["human"])
    changes = human.watch(timeout_s=30)
    first = next(changes)
    assert first.reset and first.replica.document() == {**human.views().views, "position": human.views().position}
    delegate(server, "w1")
    human.submit(inputs.HumanMessage(conversation_id="fg", message_id="w1-m", text="and another"))
    seen = []
    for change in changes:
        assert not change.reset
        seen.extend(change.views)
        assert change.replica.document() == {**human.views(at=change.position).views, "position": change.position}
        if change.replica.row("tasks", "w1") is not None and "conversations" in seen and change.position >= human.health().position:
            break
    assert {"tasks", "conversations"} <= set(seen)


def test_wait_for_returns_when_the_commit_lands(server: Served) -> None:
    human = Client(server.url, server.tokens["human"])
    assert human.wait_for("conversations", key="fg")["conversation_id"] == "fg"  # true already: at once
    thread = later(0.5, lambda: delegate(server, "w2"))
    row = human.wait_for("tasks", lambda row: row["state"] == "active", key="w2", timeout_s=30)
    thread.join()
    assert row["task_id"] == "w2" and row["revision"] == 1
    assert human.row("tasks", "w2") == row


def test_wait_for_without_a_key_finds_the_first_row_that_passes(server: Served) -> None:
    human = Client(server.url, server.tokens["human"])
    thread = later(0.5, lambda: delegate(server, "w3"))
    row = human.wait_for("tasks", lambda row: row["goal"] == "goal w3", timeout_s=30)
    thread.join()
    assert row["task_id"] == "w3"
    value = human.wait_for("health", lambda value: value is not None, timeout_s=5)
    assert value == human.view("health").value


def test_wait_for_times_out_naming_nothing_it_did_not_see(server: Served) -> None:
    human = Client(server.url, server.tokens["human"])
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        human.wait_for("tasks", key="never", timeout_s=1.5)
    assert time.monotonic() - started < 10  # it ends: the clock ticks while nothing comes


def test_the_async_client_waits_alike(server: Served) -> None:
    async def wait() -> dict:
        async with AsyncClient(server.url, server.tokens["human"]) as human:
            changes = human.watch(timeout_s=30)
            first = await changes.__anext__()
            assert first.reset
            await changes.aclose()
            with pytest.raises(TimeoutError):
                await human.wait_for("tasks", key="never", timeout_s=1.5)
            return await human.wait_for("tasks", lambda row: row["state"] == "active", key="w4", timeout_s=30)

    thread = later(0.5, lambda: delegate(server, "w4"))
    row = aio.run(wait())
    thread.join()
    assert row["task_id"] == "w4"


def test_work_lists_the_claim_and_reply_builds_its_input(server: Served) -> None:
    delegate(server, "w5")
    background = Client(server.url, server.tokens["background"])
    executor = Client(server.url, server.tokens["executor"])
    fg = background.row("conversations", "fg")
    if fg["intent_revision"] > fg["synced_intent_revision"]:
        background.submit(inputs.SyncIntent(conversation_id="fg", intent_revision=fg["intent_revision"], generation=1))
    Client(server.url, server.tokens["watchdog"]).submit(inputs.Heartbeat(generation=1))
    task = background.row("tasks", "w5")
    background.submit(inputs.ProposeAction(
        operation_id="w5-op", cause_key="w5:op", operation="worker.start", target="w5 target", resource="wt-w5",
        write_paths=["/repo/w5"], task_id="w5", grant_id="g-w5", generation=1,
        input_revisions=inputs.InputRevisions(task=task["revision"], grant=task["grant_revision"],
                                              intent=background.row("conversations", "fg")["intent_revision"])))
    row = executor.wait_for("actions", lambda row: row["attempt_id"] is not None, key="w5-op", timeout_s=30)
    item = next(item for item in executor.work().items if item.operation_id == "w5-op")
    assert item.attempt_id == row["attempt_id"] and item.envelope.target == "w5 target"
    assert item.envelope.write_paths == ["/repo/w5"] and item.awaits == "executor.receipt"
    with pytest.raises(ValueError, match="must be one of"):
        item.reply("maybe")
    executor.submit(item.reply("accepted"))
    accepted = next(item for item in executor.work().items if item.operation_id == "w5-op")
    assert accepted.awaits == "executor.outcome"
    executor.submit(accepted.reply("succeeded", evidence_ref="ev/w5"))
    done = executor.wait_for("actions", lambda row: row["state"] == "succeeded", key="w5-op", timeout_s=30)
    assert done["evidence_refs"] == ["ev/w5"] and all(i.operation_id != "w5-op" for i in executor.work().items)
