"""`GET /v1/stream?rows=1` against a real `tandem serve` (docs/api.md, "Row
changes"): a replica started from `GET /v1/views` and kept by the row
changes equals `GET /v1/views` after every commit (single inputs, a batch, a
rejection, a tick that moves the clock); a `?rows=keys` stream names, for
each commit, the keys the row changes name, live and after a restart; a stream resumed with
`Last-Event-ID` brings a replica left behind up to date, also after a
restart (the messages rebuilt from the log carry the row changes the live
ones did); `?views=` combines with `rows=1`; a follower sends the row
changes its writer sends; a bad `rows` is 400, and /openapi.json describes
the parameter."""

from __future__ import annotations

import copy
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tandem.adapters.client import Client, Message
from tandem.adapters.commands.demo import EXAMPLE
from tandem.client.replica import Replica
from tests.e2e.serving import Served, store_head
from tests.e2e.test_follow import caught_up
from tests.e2e.test_serve import DELEGATE, NO_RUNTIME, WAIT_S, Stream, assert_error, sender, trace_inputs, without_at
from tests.integration.test_stream_rows import touched_keys
from tests.e2e.test_serve_faults import message, open_conversation


def changes(messages: Iterator[Message], count: int) -> list[Message]:
    """The next `count` messages, each a `change` with its row changes."""
    got = [next(messages) for _ in range(count)]
    for message in got:
        assert message.event == "change", message
        assert list(message.data["rows"]) == message.data["views"], message.data
    return got


def test_a_rows_stream_keeps_a_replica_equal_to_the_views(tmp_path: Path) -> None:
    # No keep-alive within the client's timeout: a message that never comes fails the test, not hangs it.
    server = Served(tmp_path, f"sqlite:///{tmp_path}/events.db", NO_RUNTIME, "--stream-keepalive", "600").start()
    human = server.client("human")
    clients: dict[str, Client] = {}

    def submit(values: list[dict[str, Any]]) -> int:
        client = clients.setdefault(sender(values[0]), server.client(sender(values[0])))
        reply = client.submit_batch(values) if len(values) > 1 else client.submit(values[0])
        return reply["position"]

    try:
        replica = Replica(human.views())
        stream = human.stream(last_event_id=replica.position, rows=True, timeout_s=WAIT_S)
        inputs = trace_inputs(EXAMPLE)
        later = [
            [{"type": "human.message", "conversation_id": "fg", "message_id": "m-r1", "text": "and the docs?"},
             {"type": "human.message", "conversation_id": "fg", "message_id": "m-r2", "text": "thanks"}],
            [{"type": "task.cancel", "task_id": "no-such-task"}],  # rejected
            [{"type": "tick", "actor": "daemon"}],  # now, months after the example: obligations fall due
        ]  # fmt: skip
        kept: list[tuple[Replica, list[Message]]] = []  # a replica left behind, and the messages after it
        received: list[Message] = []
        for values in [[value] for value in inputs] + [[without_at(value) for value in batch] for batch in later]:
            position = submit(values)
            (message,) = changes(stream, 1)
            assert message.id == position == message.data["position"]
            assert replica.apply(message.data)
            assert replica.document() == human.views(), values
            received.append(message)
            for _, after in kept:
                after.append(message)
            if len(received) in (5, len(inputs) - 3):
                kept.append((copy.deepcopy(replica), []))
        assert len(received) == len(inputs) + 3
        said = {word for message in received for change in message.data["rows"].values() for word in change}
        # Every word: rejections whole ("rows") once the second request's file shows in them.
        assert said == {"key", "upserted", "removed", "value", "appended", "rows"}, said

        # A stream resumed with Last-Event-ID: what the replica missed, then live.
        stream.close()
        behind, missed = kept[-1]
        resumed = human.stream(last_event_id=behind.position, rows=True, timeout_s=WAIT_S)
        assert [message.data for message in changes(resumed, len(missed))] == [message.data for message in missed]
        for message in missed:
            behind.apply(message.data)
        submit([{"type": "tick", "actor": "daemon"}, {"type": "human.message", "conversation_id": "fg", "message_id": "m-r3", "text": "?"}])
        (live,) = changes(resumed, 1)
        assert behind.apply(live.data) and behind.document() == human.views()
        resumed.close()

        # After a restart: the messages rebuilt from the log carry the same row changes.
        assert server.stop() == 0, server.log()
        server.start()
        human = server.client("human")
        clients.clear()
        oldest, missed = kept[0]
        again = human.stream(last_event_id=oldest.position, rows=True, timeout_s=WAIT_S)
        assert [message.data for message in changes(again, len(missed))] == [message.data for message in missed]
        (message,) = changes(again, 1)
        assert message.data == live.data
        for message in [*missed, live]:
            oldest.apply(message.data)
        assert oldest.document() == human.views()
        again.close()

        # ?views= with rows=1: only the messages naming tasks, each with every view it names.
        filtered = human.stream(last_event_id=oldest.position, views=["tasks"], rows=True, timeout_s=WAIT_S)
        submit([{"type": "task.cancel", "task_id": "signup"}])  # done already: rejected, no task changed
        submit([{**DELEGATE, "task_id": "t-rows", "message_refs": ["m-r1"]}])
        (message,) = changes(filtered, 1)
        assert "tasks" in message.data["views"] and message.data["rows"]["tasks"]["key"] == "task_id"
        assert [(row["task_id"], row["state"]) for row in message.data["rows"]["tasks"]["upserted"]] == [("t-rows", "active")]
        filtered.close()
    finally:
        for client in clients.values():
            client.close()
        server.stop()


def test_a_bad_rows_value_is_invalid_query(tmp_path: Path) -> None:
    with Served(tmp_path, f"sqlite:///{tmp_path}/events.db", NO_RUNTIME) as server:
        with urllib.request.urlopen(server.url + "/openapi.json", timeout=WAIT_S) as answer:
            parameters = json.load(answer)["paths"]["/v1/stream"]["get"]["parameters"]
        (rows,) = [parameter for parameter in parameters if parameter["name"] == "rows"]
        assert rows["in"] == "query" and rows["schema"]["enum"] == ["0", "1", "keys"] and "Row changes" in rows["description"]
        for bad in ("2", "yes", "", "true", "01"):
            refused = Stream(server, query=f"?rows={bad}&views=tasks")
            assert_error(refused.error, 400, "invalid_query")
            assert "?rows=" in refused.error.body["error"]["message"], bad


def test_a_follower_sends_the_row_changes_the_writer_sends(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    quiet = ("--stream-keepalive", "600")
    with Served(tmp_path, url, NO_RUNTIME, *quiet, name="writer") as writer:
        open_conversation(writer)
        with Served(tmp_path, url, "--follow", "--interval", "0.1", *quiet, name="follower") as follower:
            reader, client = follower.client("human"), writer.client("human")
            caught_up(follower, store_head(url))
            replica = Replica(reader.views())
            on_follower = reader.stream(last_event_id=replica.position, rows=True, timeout_s=WAIT_S)
            on_writer = client.stream(last_event_id=replica.position, rows=True, timeout_s=WAIT_S)
            positions = [client.submit(message(f"m{number}", id=f"m{number}"))["position"] for number in range(3)]
            followed, written = changes(on_follower, 3), changes(on_writer, 3)
            assert [message.data for message in followed] == [message.data for message in written]
            assert [message.id for message in followed] == positions
            for change in followed:
                replica.apply(change.data)
            caught_up(follower, positions[-1])
            assert replica.document() == reader.views() == client.views()


def test_a_keys_stream_names_the_keys_the_row_changes_name(tmp_path: Path) -> None:
    """`?rows=keys` beside `?rows=1`: message for message, the same
    positions and views, and `keys` exactly the keys the row changes
    upsert or remove (null where they name none); after a restart, the
    messages rebuilt from the log carry the same keys."""
    server = Served(tmp_path, f"sqlite:///{tmp_path}/events.db", NO_RUNTIME, "--stream-keepalive", "600").start()
    try:
        with_rows, with_keys = Stream(server, query="?rows=1"), Stream(server, query="?rows=keys")
        inputs = trace_inputs(EXAMPLE)
        for value in inputs:
            with server.client(sender(value)) as client:
                client.submit(value)
        rows, keys = with_rows.messages(len(inputs)), with_keys.messages(len(inputs))
        with_rows.close()
        with_keys.close()
        assert [message.event for message in keys] == ["change"] * len(inputs)
        assert [message.id for message in keys] == [message.id for message in rows]
        for said, full in zip(keys, rows):
            assert "rows" not in said.data and said.data["views"] == full.data["views"]
            assert said.data["keys"] == touched_keys(full.data["rows"]), said.id
        named = {key for message in keys for change in message.data["keys"].values() if change for key in change["touched"]}
        assert {"signup", "op-api", "fg"} <= named, named  # a task, an action and a conversation were named

        assert server.stop() == 0, server.log()
        server.start()
        middle = keys[len(keys) // 2]
        resumed = Stream(server, last_event_id=middle.id, query="?rows=keys")
        after = keys[len(keys) // 2 + 1 :]
        assert [(message.id, message.data) for message in resumed.messages(len(after))] == [(m.id, m.data) for m in after]
        resumed.close()
    finally:
        server.stop()
