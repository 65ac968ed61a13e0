"""The row changes the stream's ring keeps (adapters/stream.py; docs/api.md,
"Row changes"): bounded in bytes, the oldest dropped first; a rows stream
that would miss some gets a `reset` (at its start, or in place of a live
message without them) and goes on; plain streams are served as before.
When no rows stream is open, nor was while the kept messages were made,
nor the server started just now, no row changes are rendered at all
(`wants_rows`); a keys stream (`?rows=keys`) never asks for them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from tandem.adapters import stream
from tandem.adapters.stream import Hub, reset_wire
from tandem.domain import events as ev
from tandem.domain.inputs import decode_input
from tandem.replay.commits import CommitSummary, summarize

TICK = b'{"type": "tick", "at": "2026-03-01T09:00:00Z", "actor": "daemon"}'


def commit(after: int, rows: bytes | None, keys: bytes | None = None) -> CommitSummary:
    """A one-input commit after `after`, naming `usage`, with these row changes (and keys)."""
    record = ev.InputAccepted(seq=after + 1, file=None, line=None, input=decode_input(TICK))
    return summarize(after, [record], views=("usage",), rows=rows, keys=keys)


def usage_rows(number: int, size: int = 100) -> bytes:
    return json.dumps({"usage": {"value": {"pad": "x" * size, "n": number}}}).encode()


def messages_of(wire: bytes) -> list[tuple[str, dict]]:
    """(event, data) of each message in `wire`."""
    found = []
    for block in wire.split(b"\n\n"):
        fields = dict(line.split(b": ", 1) for line in block.split(b"\n") if line and not line.startswith(b":"))
        if fields:
            found.append((fields[b"event"].decode(), json.loads(fields[b"data"])))
    return found


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def test_the_ring_drops_the_oldest_row_changes_past_its_byte_bound(loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch) -> None:
    hub = Hub(loop, [], 0)
    one = len(hub_message_wire(loop, usage_rows(0)))
    monkeypatch.setattr(stream, "resume_rows_bytes_max", one * 5 + 50)  # five messages' row changes (some a digit longer)
    for after in range(10):
        hub.publish(commit(after, usage_rows(after)))
    assert len(hub.ring) == 10 and hub.ring_rows_bytes <= one * 5 + 50
    assert [message.rows_wire is not None for message in hub.ring] == [False] * 5 + [True] * 5
    # A rows stream resuming where every missed message kept its changes: them, with `rows`.
    _, first = hub.subscribe(5, None, rows=True)
    sent = messages_of(first)
    assert [data["position"] for _, data in sent] == [6, 7, 8, 9, 10]
    assert [data["rows"]["usage"]["value"]["n"] for _, data in sent] == [5, 6, 7, 8, 9]
    # From before: one missed message kept none: a reset to the head (reload the views).
    _, first = hub.subscribe(4, None, rows=True)
    assert first == reset_wire(10)
    # A plain stream from there still gets every kept message, without `rows`.
    _, first = hub.subscribe(0, None)
    assert [(event, set(data)) for event, data in messages_of(first)] == [("change", {"position", "views", "inputs"})] * 10


def hub_message_wire(loop: asyncio.AbstractEventLoop, rows: bytes) -> bytes:
    hub = Hub(loop, [], 0)
    hub.publish(commit(0, rows))
    wire = hub.ring[-1].rows_wire
    assert wire is not None
    return wire


def test_a_live_message_without_row_changes_is_a_reset_to_a_rows_stream(loop: asyncio.AbstractEventLoop) -> None:
    hub = Hub(loop, [], 0)
    rows_client, _ = hub.subscribe(None, None, rows=True)
    plain, _ = hub.subscribe(None, None)
    hub.publish(commit(0, usage_rows(0)))
    hub.publish(commit(1, None))  # too big to keep (replay/commits.py, message_rows_bytes_max)
    hub.publish(commit(2, usage_rows(2)))
    got = messages_of(b"".join(rows_client.queue))
    assert [(event, data["position"]) for event, data in got] == [("change", 1), ("reset", 2), ("change", 3)]
    assert "rows" in got[0][1] and "rows" in got[2][1]
    assert [(event, "rows" in data) for event, data in messages_of(b"".join(plain.queue))] == [("change", False)] * 3


def test_row_changes_are_rendered_while_a_rows_stream_may_want_them(loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream, "resume_messages_max", 3)
    clock = [100.0]
    hub = Hub(loop, [], 0, monotonic=lambda: clock[0])
    assert hub.wants_rows()  # a stream open before a restart may reconnect with rows
    for after in range(3):
        hub.publish(commit(after, None))
    assert hub.wants_rows()  # still within the grace after the start
    clock[0] += stream.rows_start_grace_s
    assert not hub.wants_rows()  # the grace is over and no rows stream came: none rendered
    client, _ = hub.subscribe(None, None, rows=True)
    assert hub.wants_rows()
    hub.publish(commit(3, usage_rows(3)))
    hub._leave(client)  # its stream ended (at 4): it may come back from there
    assert hub.rows_clients == 0 and hub.wants_rows()
    for after in range(4, 6):
        hub.publish(commit(after, usage_rows(after)))
    assert hub.since == 3 and hub.wants_rows()
    hub.publish(commit(6, None))
    assert hub.since == 4 and hub.wants_rows()  # the ring still resumes from 4
    hub.publish(commit(7, None))
    assert hub.since == 5 and not hub.wants_rows()
    keys_client, _ = hub.subscribe(None, None, keys=True)
    assert not hub.wants_rows()  # a keys stream asks for no rendering

USAGE_KEYS = b'{"usage":null}'


def test_a_keys_stream_gets_keys_never_rows_and_a_reset_where_a_message_has_none(loop: asyncio.AbstractEventLoop) -> None:
    """`?rows=keys`: each message with `keys`, without `rows`; a reset in
    place of one without keys (read back from the log at start), at its
    start when a missed one has none; no keys stream asks for row changes."""
    hub = Hub(loop, [commit(0, None, None)], 1)  # rebuilt at start without keys
    keys_client, first = hub.subscribe(0, None, keys=True)
    assert first == reset_wire(1)
    assert hub.rows_clients == 0
    hub.publish(commit(1, usage_rows(1), USAGE_KEYS))
    hub.publish(commit(2, None, None))
    hub.publish(commit(3, None, USAGE_KEYS))  # no rows stream wanted them: the keys come anyway
    got = messages_of(b"".join(keys_client.queue))
    assert [(event, data["position"]) for event, data in got] == [("change", 2), ("reset", 3), ("change", 4)]
    assert [set(data) for event, data in got if event == "change"] == [{"position", "views", "inputs", "keys"}] * 2
    assert got[0][1]["keys"] == {"usage": None}
    _, first = hub.subscribe(3, None, keys=True)  # resumed after the message without keys
    assert [data["position"] for _, data in messages_of(first)] == [4]
