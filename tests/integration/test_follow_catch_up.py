"""A follower's catch-up (adapters/follow.py), in one process on SQLite: it
folds what a writer committed, commit by commit, into the writer's views,
and tells its listeners the same commits (boundaries and changed views) the
writer's engine told its own, also when a page of the read ends inside a
commit."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tandem.adapters import follow
from tandem.replay.edge import TokenActor
from tandem.adapters.follow import FOLLOWER, Follower
from tandem.adapters.runtime import ReadOnly, Runtime, Settings
from tandem.replay.commits import Commit


def ndjson(values: list[dict[str, object]]) -> bytes:
    return b"".join(json.dumps(value).encode() + b"\n" for value in values)


def messages(start: int, count: int) -> bytes:
    return ndjson(
        [{"type": "human.message", "conversation_id": "fg", "message_id": f"m-{n}", "text": "hi", "id": f"m-{n}"}
         for n in range(start, start + count)]
    )  # fmt: skip


@pytest.mark.parametrize("page_events", [3, 10_000])
def test_catch_up_is_the_writers_commits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, page_events: int) -> None:
    monkeypatch.setattr(follow, "follow_page_events_max", page_events)
    url = f"sqlite:///{tmp_path}/events.db"
    writer = Runtime(Settings(store_url=url, runtime_inputs=False))
    writer.open()
    told: list[Commit] = []
    assert writer.engine is not None
    writer.engine.listeners.append(told.append)
    opened = {"type": "conversation.open", "conversation_id": "fg", "role": "foreground", "context_limit": 200_000, "reserve": 20_000}
    writer.submit_body(json.dumps(opened).encode(), False, TokenActor("daemon"))

    reader = Runtime(Settings(store_url=url, runtime_inputs=False))
    follower = Follower(reader, FOLLOWER)
    follower.open()
    heard: list[Commit] = []
    follower.engine.listeners.append(heard.append)
    try:
        assert follower.engine.committed == writer.engine.committed  # the fold at its start
        writer.submit_body(messages(0, 4), True, TokenActor("human"))  # one commit of several events
        writer.submit_body(messages(4, 1), False, TokenActor("human"))
        writer.submit_body(messages(5, 3), True, TokenActor("human"))
        assert follower.catch_up() == writer.engine.committed - told[0].position
        assert follower.engine.committed == writer.engine.committed
        assert [(c.head_before, c.position, c.views) for c in heard] == [(c.head_before, c.position, c.views) for c in told[1:]]
        assert follower.engine.views.document() == writer.engine.views.document()
        assert follower.catch_up() == 0
        health = follower.health()
        assert health["lag_events"] == 0 and health["store_head"] == writer.engine.committed, health
        with pytest.raises(ReadOnly, match=f"the writer is pid {os.getpid()} on "):
            reader.submit_body(messages(9, 1), False, TokenActor("human"))
    finally:
        follower.close()
        reader.close()
        writer.close()
