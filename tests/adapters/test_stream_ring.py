"""The live stream's resume ring (adapters/stream.py, `Hub.ring`) is bounded
in memory, not only in commits (issue 22, memory under load).

It kept the last 1,000 commits' summaries, each holding its inputs' records:
every input whole (a message's 256 KiB text, a batch of 50,000 lines), so
its memory followed the inputs' sizes up to 1,000 commits of them. Now a
message keeps what it sends of each input (type, actor, at, accepted), and
the ring at most `resume_inputs_max` inputs besides `resume_messages_max`
commits; a resume from before what it keeps is a reset, as before."""

from __future__ import annotations

import asyncio
import datetime
import gc
import json
import tracemalloc

from tandem.adapters import stream
from tandem.adapters.stream import Hub, reset_wire
from tandem.domain import events as ev
from tandem.domain.inputs import decode_input
from tandem.replay.commits import CommitSummary, summarize

T0 = datetime.datetime(2026, 3, 1, 9, 0, 0, tzinfo=datetime.timezone.utc)


def message_input(number: int, text_chars: int) -> bytes:
    at = (T0 + datetime.timedelta(seconds=number)).strftime("%Y-%m-%dT%H:%M:%SZ")
    value = {"type": "human.message", "at": at, "conversation_id": "fg", "message_id": f"m{number}", "text": "x" * text_chars}
    return json.dumps(value).encode()


def commit(after: int, inputs: int, text_chars: int = 10) -> CommitSummary:
    """A commit of `inputs` accepted human messages after position `after`."""
    records = [
        ev.InputAccepted(seq=after + n, file=f"http@{after}", line=n + 1, input=decode_input(message_input(after + n, text_chars)))
        for n in range(inputs)
    ]
    return summarize(after, list(records), views=("conversations",))


def test_the_ring_keeps_no_input_whole() -> None:
    loop = asyncio.new_event_loop()
    try:
        hub = Hub(loop, [], 0)
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for after in range(100):
            hub.publish(commit(after, 1, text_chars=100_000))  # 100 inputs of ~100 KB: ~10 MB if kept
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        assert len(hub.ring) == 100
        assert kept < 1_000_000, f"the ring holds {kept:,} bytes for 100 one-input commits"
        sent = json.loads(hub.ring[-1].wire.split(b"data: ", 1)[1])
        assert sent == {"position": 100, "views": ["conversations"],
                        "inputs": [{"type": "human.message", "actor": "human", "at": "2026-03-01T09:01:39Z", "accepted": True}]}  # fmt: skip
    finally:
        loop.close()


def test_the_ring_keeps_at_most_resume_inputs_max_inputs() -> None:
    loop = asyncio.new_event_loop()
    try:
        per_commit = 1_000
        hub = Hub(loop, [], 0)
        for number in range(stream.resume_inputs_max // per_commit + 5):
            hub.publish(commit(number * per_commit, per_commit))
        held = sum(len(message.inputs) for message in hub.ring)
        assert held <= stream.resume_inputs_max and len(hub.ring) == stream.resume_inputs_max // per_commit
        assert hub.since == hub.ring[0].after and hub.head == hub.ring[-1].position
        # A resume from what was dropped is a reset; from what is kept, its messages.
        client, first = hub.subscribe(hub.since - 1, None)
        assert first == reset_wire(hub.head)
        client, first = hub.subscribe(hub.since, None)
        assert first.count(b"event: change") == len(hub.ring)
    finally:
        loop.close()


def test_a_commit_over_the_bound_alone_is_kept_alone() -> None:
    loop = asyncio.new_event_loop()
    try:
        hub = Hub(loop, [commit(0, 3)], 3)
        hub.publish(commit(3, stream.resume_inputs_max + 1))
        assert len(hub.ring) == 1 and hub.since == 3  # the newest is always resumable from just before it
    finally:
        loop.close()


def test_a_stopping_hub_refuses_new_streams_as_stopping_not_as_full() -> None:
    """Once the server stops, a new stream is refused with what is true (it
    is stopping), not with "too many streams" (there may be none open)."""
    loop = asyncio.new_event_loop()
    try:
        hub = Hub(loop, [], 0)
        hub.subscribe(None, None)
        hub.close()
        try:
            hub.subscribe(None, None)
        except stream.StreamsClosed as closed:
            assert "stopping" in str(closed)
        else:
            raise AssertionError("a stopping hub opened a stream")
    finally:
        loop.close()
