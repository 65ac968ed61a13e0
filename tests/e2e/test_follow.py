"""`tandem serve --follow` (issue 15, Followers), and several stores in one
PostgreSQL database (issue 15, Many orchestrators): real processes on one
PostgreSQL database, each store a table of its own.

A follower opens the store read-only, tails it (LISTEN/NOTIFY and a look
every --interval), serves the reads and the stream, answers every write
409 `read_only` naming the writer, and its views equal the writer's at the
same position."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tandem.adapters.client import ApiError
from tests.e2e.serving import Served, postgres_store_url, store_head, tandem
from tests.e2e.test_serve_faults import message, open_conversation, until

caught_up_wait_s = 20  # a generous bound for a follower to reach a position (no timing is asserted)


@pytest.fixture
def second_store() -> Iterator[str]:
    yield from postgres_store_url()


def at(second: int) -> str:
    return f"2026-03-01T10:{second // 60:02d}:{second % 60:02d}Z"


def caught_up(follower: Served, position: int) -> None:
    client = follower.client("human")
    until(lambda: client.health().get("position") == position, caught_up_wait_s, f"the follower at position {position}")


@pytest.mark.postgres
def test_follower_serves_what_the_writer_wrote(tmp_path: Path, postgres_store: str) -> None:
    url = postgres_store
    with Served(tmp_path, url, name="writer") as writer:
        open_conversation(writer)
        client = writer.client("human")
        for number in range(3):
            client.submit(message(f"before-{number}", id=f"before-{number}"))
        with Served(tmp_path, url, "--follow", name="follower") as follower:
            reader = follower.client("human")
            head = store_head(url)
            caught_up(follower, head)  # the fold at its start
            stream = reader.stream(last_event_id=head, timeout_s=caught_up_wait_s)
            writer_stream = client.stream(last_event_id=head, timeout_s=caught_up_wait_s)
            result = client.submit(message("after", id="after"))  # tailed
            changed, on_writer = next(stream), next(writer_stream)
            assert (changed.event, changed.id) == ("change", result["position"])
            assert changed == on_writer  # the same message as the writer's stream sends
            caught_up(follower, result["position"])
            assert reader.views() == client.views()
            assert reader.events(0, limit=1_000) == client.events(0, limit=1_000)
            assert reader.view("tasks", at=head) == client.view("tasks", at=head)

            health = reader.health()
            assert health["writer"] is False and health["role"] == "follower", health
            assert health["store_head"] == result["position"] and health["lag_events"] == 0, health
            assert health["writer_holder"].startswith(f"pid {writer.process.pid} on "), health
            assert set(client.health()) == {"status", "position", "writer"}  # the writer's answer is as before
            assert client.health()["writer"] is True

            with pytest.raises(ApiError) as refused:
                reader.submit(message("refused", id="refused"))
            assert (refused.value.status, refused.value.code) == (409, "read_only")
            assert f"the writer is pid {writer.process.pid} on " in refused.value.message, refused.value.message
            assert store_head(url) == result["position"]  # nothing recorded
            assert follower.stop() == 0
        assert "refused" not in str(client.events(0, limit=1_000))
    assert tandem("verify", "--store", url).returncode == 0


@pytest.mark.postgres
def test_follower_catches_up_by_polling_and_after_the_writer_restarts(tmp_path: Path, postgres_store: str) -> None:
    """A follower (looking every 0.2 s) follows a writer that stops and a new
    one that starts, and says no writer holds the lock in between."""
    url = postgres_store
    writer = Served(tmp_path, url, name="writer")
    follower = Served(tmp_path, url, "--follow", "--interval", "0.2", name="follower")
    follower.tokens = writer.tokens
    follower.tokens_file = writer.tokens_file
    with writer:
        open_conversation(writer)
        writer.client("human").submit(message("one", id="one"))
        with follower:
            reader = follower.client("human")
            caught_up(follower, store_head(url))
            assert writer.stop() == 0
            until(lambda: "writer_holder" not in reader.health(), caught_up_wait_s, "the follower to see no writer")
            with pytest.raises(ApiError) as refused:
                reader.submit(message("two", id="two"))
            assert refused.value.code == "read_only" and "no writer holds" in refused.value.message
            again = Served(tmp_path, url, name="writer-again")
            again.tokens, again.tokens_file = writer.tokens, writer.tokens_file
            with again:
                result = again.client("human").submit(message("two", id="two"))
                caught_up(follower, result["position"])
                assert reader.views() == again.client("human").views()


@pytest.mark.postgres
def test_many_stores_in_one_database(tmp_path: Path, postgres_store: str, second_store: str) -> None:
    """Two stores (tables) in one database: each has its own writer lock (two
    writers both start; a second writer of one is refused naming the first)
    and its own follower, which sees its own store only."""
    first, second = postgres_store, second_store
    with (
        Served(tmp_path, first, name="writer-a") as writer_a,
        Served(tmp_path, second, name="writer-b") as writer_b,
    ):
        trace = tmp_path / "one.trace"
        trace.write_text(json.dumps({**message("never", id="never"), "actor": "human", "at": at(1)}) + "\n")
        refused = tandem("ingest", "--store", first, str(trace))
        assert refused.returncode == 1 and f"is locked by pid {writer_a.process.pid} on " in refused.stderr, refused.stderr
        second_writer = Served(tmp_path, first, name="writer-a2")
        with pytest.raises(AssertionError, match="is locked by pid"):
            second_writer.start()
        open_conversation(writer_a)
        writer_a.client("human").submit(message("only-a", id="only-a"))
        with (
            Served(tmp_path, first, "--follow", name="follower-a") as follower_a,
            Served(tmp_path, second, "--follow", name="follower-b") as follower_b,
        ):
            caught_up(follower_a, store_head(first))
            caught_up(follower_b, store_head(second))
            assert follower_a.client("human").views() == writer_a.client("human").views()
            assert follower_b.client("human").views() == writer_b.client("human").views()
            assert "only-a" in str(follower_a.client("human").events(0, limit=1_000))
            assert "only-a" not in str(follower_b.client("human").events(0, limit=1_000))
            assert follower_b.client("human").health()["writer_holder"].startswith(f"pid {writer_b.process.pid} ")


def test_follow_refuses_what_it_would_not_use(tmp_path: Path) -> None:
    tokens = Served(tmp_path, "memory:").tokens_file
    memory = tandem("serve", "--follow", "--store", "memory:", "--tokens", str(tokens), "--listen", "127.0.0.1:0")
    assert memory.returncode == 2 and "memory store is private" in memory.stderr, memory.stderr
    spool = tandem(
        "serve", "--follow", "--store", f"sqlite:///{tmp_path}/x.db", "--tokens", str(tokens), "--spool", str(tmp_path / "spool"),
        "--listen", "127.0.0.1:0",
    )  # fmt: skip
    assert spool.returncode == 2 and "--follow applies and publishes nothing" in spool.stderr, spool.stderr
    both = tandem("serve", "--follow", "--standby", "--tokens", str(tokens))
    assert both.returncode == 2 and "not allowed with argument" in both.stderr, both.stderr


def test_follower_of_an_sqlite_store_polls(tmp_path: Path) -> None:
    """SQLite has no notifications: a follower there looks every --interval."""
    url = f"sqlite:///{tmp_path}/events.db"
    with Served(tmp_path, url, name="writer") as writer:
        open_conversation(writer)
        with Served(tmp_path, url, "--follow", "--interval", "0.1", name="follower") as follower:
            result = writer.client("human").submit(message("polled", id="polled"))
            caught_up(follower, result["position"])
            assert follower.client("human").views() == writer.client("human").views()
            health = follower.client("human").health()
            assert health["listening"] is False and health["lag_events"] == 0, health
            assert health["writer_holder"].startswith(f"pid {writer.process.pid} on "), health
