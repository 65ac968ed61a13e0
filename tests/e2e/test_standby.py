"""`tandem serve --standby` (issue 15, Standby): two real servers on one
PostgreSQL store. One writes; the other follows and waits on the writer
lock; the writer is SIGKILLed; the standby takes over. Then: every input is
recorded once (a retried id is answered as a duplicate, not applied again),
the views equal an uninterrupted run's, `tandem verify` is clean.

The takeover time (the kill to the standby's health saying writer: true) is
printed, not asserted (bench/takeover.py measures it)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tandem.adapters.client import ApiError
from tandem.domain import events as ev
from tests.e2e.serving import Served, postgres_store_url, store_head, tandem
from tests.e2e.test_serve_faults import message, recorded, until

pytestmark = pytest.mark.postgres
takeover_wait_s = 30  # a generous bound for the test to give up (no timing is asserted)


@pytest.fixture
def uninterrupted_store() -> Iterator[str]:
    yield from postgres_store_url()


def at(second: int) -> str:
    return f"2026-03-01T10:{second // 60:02d}:{second % 60:02d}Z"


def inputs(count: int) -> list[dict[str, Any]]:
    """A conversation and `count` messages, each with its id and `at`."""
    opened = {"type": "conversation.open", "conversation_id": "fg", "role": "foreground", "context_limit": 200_000,
              "reserve": 20_000, "actor": "daemon", "at": at(0), "id": "open"}  # fmt: skip
    return [opened] + [message(f"m-{n}", id=f"m-{n}", at=at(n + 1), actor="human") for n in range(count)]


def submit(server: Served, value: dict[str, Any]) -> dict[str, Any]:
    return server.client(value["actor"]).submit(value)


def pair(tmp_path: Path, url: str, *options: str) -> tuple[Served, Served]:
    """A writer and a standby with the same tokens."""
    writer = Served(tmp_path, url, *options, name="writer")
    standby = Served(tmp_path, url, "--standby", "--interval", "0.2", *options, name="standby")
    standby.tokens, standby.tokens_file = writer.tokens, writer.tokens_file
    return writer, standby


def kill_and_wait_takeover(writer: Served, standby: Served) -> float:
    """SIGKILL the writer; the seconds until the standby's health says it writes."""
    assert writer.process is not None
    health = standby.client("human")
    killed = time.monotonic()
    os.kill(writer.process.pid, signal.SIGKILL)
    until(lambda: health.health().get("writer") is True, takeover_wait_s, "the standby to take over", pause_s=0.005)
    took_s = time.monotonic() - killed
    writer.process.wait(timeout=takeover_wait_s)
    print(f"\ntakeover: {took_s * 1000:.0f} ms from SIGKILL to the standby's health saying writer: true")
    return took_s


def test_standby_takes_over_and_nothing_is_applied_twice(tmp_path: Path, postgres_store: str, uninterrupted_store: str) -> None:
    url = postgres_store
    sequence = inputs(8)
    half = 5
    writer, standby = pair(tmp_path, url, "--no-runtime-inputs")
    with writer, standby:
        for value in sequence[:half]:
            submit(writer, value)
        health = standby.client("human").health()
        assert health["writer"] is False and health["role"] == "standby", health
        with pytest.raises(ApiError) as refused:
            submit(standby, sequence[half])
        assert refused.value.code == "read_only" and f"pid {writer.process.pid} on " in refused.value.message

        kill_and_wait_takeover(writer, standby)
        # The client did not see the answer to its last input: it sends it
        # again, with the same id. Recorded once: the retry is a duplicate.
        retried = submit(standby, sequence[half - 1])
        assert retried["results"][0]["accepted"] is False, retried
        assert "duplicate_input" in str(retried["results"][0]), retried
        for value in sequence[half:]:
            assert submit(standby, value)["results"][0]["accepted"] is True
        views = standby.client("human").views()
        assert set(standby.client("human").health()) == {"status", "position", "writer"}
        assert standby.stop() == 0

    accepted, rejected = recorded(url, "")
    assert set(accepted.values()) == {1} and len(accepted) == len(sequence), accepted
    assert rejected == {sequence[half - 1]["id"]: 1}, rejected
    verified = tandem("verify", "--store", url)
    assert verified.returncode == 0, verified.stdout + verified.stderr

    # The same inputs, the retry included, to one server never interrupted.
    with Served(tmp_path, uninterrupted_store, "--no-runtime-inputs", name="uninterrupted") as alone:
        for value in sequence[:half] + [sequence[half - 1]] + sequence[half:]:
            submit(alone, value)
        assert alone.client("human").views() == views


def test_takeover_records_a_start_as_a_restart_does(tmp_path: Path, postgres_store: str) -> None:
    """With the runtime's inputs: the standby records `daemon.start` when it
    takes over (no `daemon.stop` for the killed writer, as after a restart),
    and every append after it is on the head it folded."""
    url = postgres_store
    writer, standby = pair(tmp_path, url)
    with writer, standby:
        for value in inputs(2):
            value.pop("at")
            submit(writer, value)
        head = store_head(url)
        took_s = kill_and_wait_takeover(writer, standby)
        assert took_s > 0
        result = standby.client("human").submit(message("after", id="after"))
        assert result["results"][0]["accepted"] is True
        assert standby.stop() == 0
    starts = daemon_inputs(url)
    assert starts == ["daemon.start", "daemon.start", "daemon.stop"], starts
    assert store_head(url) > head
    assert tandem("verify", "--store", url).returncode == 0


def daemon_inputs(url: str) -> list[str]:
    from tandem.adapters.store import open_store

    store = open_store(url, read_only=True)
    try:
        return [
            event.input.input_type
            for _, event in store.read()
            if type(event) is ev.InputAccepted and event.input.input_type.startswith("daemon.")
        ]
    finally:
        store.close()


def test_a_standby_with_the_lock_free_writes_at_once(tmp_path: Path, postgres_store: str) -> None:
    with Served(tmp_path, postgres_store, "--standby", name="alone") as alone:
        assert alone.client("human").health() == {"status": "ok", "position": 0, "writer": True}
        opened = {name: value for name, value in inputs(0)[0].items() if name != "at"}
        assert alone.client("daemon").submit(opened)["results"][0]["accepted"]
        assert "standby: the writer lock was free: writing" in alone.log()


def test_a_writer_cut_from_its_lock_is_fenced(tmp_path: Path, postgres_store: str) -> None:
    """The writer's lock session is terminated while the writer lives (a
    partition of that one connection): the standby takes over; the old
    writer finds its lock gone and stops (exit 1). Whatever the order, an
    input the old writer answered 200 is in the log once, one it refused is
    not, and the log verifies clean."""
    import psycopg

    from tests.integration.conftest import postgres_url

    url = postgres_store
    sequence = inputs(2)
    writer, standby = pair(tmp_path, url, "--no-runtime-inputs", "--interval", "0.2")
    with writer, standby, psycopg.connect(postgres_url(), autocommit=True) as admin:
        for value in sequence[:2]:
            submit(writer, value)
        table = url.rsplit("table=", 1)[1]
        (lock_backend,) = admin.execute(f'SELECT backend_pid FROM "{table}_writer"').fetchone()  # type: ignore[misc]
        admin.execute("SELECT pg_terminate_backend(%s)", (lock_backend,))
        try:
            answered = submit(writer, sequence[2])["results"][0]["accepted"]
        except (ApiError, OSError):
            answered = False
        until(lambda: standby.client("human").health().get("writer") is True, takeover_wait_s, "the standby to take over")
        assert writer.process is not None
        assert writer.process.wait(timeout=takeover_wait_s) == 1
        assert "lost the store's writer lock" in writer.log(), writer.log()
        if not answered:
            assert submit(standby, sequence[2])["results"][0]["accepted"] is True
        assert standby.stop() == 0
    accepted, rejected = recorded(url, "")
    assert accepted == {value["id"]: 1 for value in sequence} and not rejected, (accepted, rejected)
    assert tandem("verify", "--store", url).returncode == 0
