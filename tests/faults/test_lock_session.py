"""Only the writer lock's session dies (issue 22, point 2): one writer at a
time, always, and the store keeps a writer.

The defect, as an operator saw it: `pg_terminate_backend` on just the
writer lock's session while a standby waited; the old writer went on
committing (32 inputs) while the standby held the lock, the standby saw the
store move under its lock and stopped, the old writer stopped too: two
writers, then none (clients refused, 4 runs of 4). Now the standby's claim
fences the old writer off: its next append is refused whole, it stops and
says so, and the standby serves.

Three orders of sessions dying, each made deterministic (the order is the
test's, never a race's):
- "holder": the writer's lock session dies; the standby is granted the
  lock, claims the store (generation 2), the old writer is fenced off.
- "waiter, then holder": the standby's waiting session dies first, then the
  writer's; the old writer takes its lock again (generation 2) and goes on,
  and the standby waits again. The standby's next wait is held back
  (`rewait_delay_s`, injected) so that the writer's re-take comes first:
  without it, whichever reaches PostgreSQL first wins, and both are right.
- "holder, then new holder": as "holder", then, once the old writer has
  stopped, the new writer's lock session dies too; it takes its lock again
  (generation 3) and goes on.

"Exactly one writer commits at any time" is checked on what was committed:
the store's claims ({table}_claims: each writer generation and the head
when it began) against every acknowledged input's position and server."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tandem.adapters.store import open_store
from tandem.adapters.writer_lock import advisory_lock_keys
from tests.e2e.serving import Served
from tests.e2e.test_serve_faults import until
from tests.faults.faults import Load, faults_env, open_conversations, recorded_ids, verified
from tests.integration.conftest import postgres_url

pytestmark = pytest.mark.postgres
conversations = ["fg0", "fg1"]
load_before_s = 1.0
load_after_s = 2.0
switch_wait_s = 30
rewait_delay_s = 3.0  # the standby's next wait after its session died, held back (injected)


def lock_sessions(admin: Any, table: str) -> tuple[int | None, list[int]]:
    """The backend holding the table's writer lock, and those waiting for it."""
    keys = advisory_lock_keys(table)
    rows = admin.execute(
        "SELECT pid, granted FROM pg_locks WHERE locktype = 'advisory' AND classid = %s::bigint::oid"
        " AND objid = %s::bigint::oid AND objsubid = 2",
        keys,
    ).fetchall()
    holder = next((pid for pid, granted in rows if granted), None)
    return holder, [pid for pid, granted in rows if not granted]


def writers_of(url: str) -> list[Any]:
    store = open_store(url, read_only=True)
    try:
        return store.list_claims()
    finally:
        store.close()


def assert_one_writer_at_a_time(url: str, load: Load, servers: list[Served]) -> None:
    """Every acknowledged input was committed by the writer whose generation
    held the store at its position: the server that answered it is the
    process of the claim its position falls under."""
    claims = writers_of(url)
    pids = [server.process.pid for server in servers]  # type: ignore[union-attr]
    for key, (index, position) in load.answers.items():
        owner = max((claim for claim in claims if claim.after < position), key=lambda claim: claim.generation)
        assert owner.pid == pids[index], f"{key} at {position} answered by {pids[index]}, but generation {owner.generation} ({owner.pid}) held the store"


def terminate(admin: Any, pid: int | None) -> None:
    """End one backend's session and wait until it is gone."""
    assert pid is not None
    admin.execute("SELECT pg_terminate_backend(%s, %s)", (pid, switch_wait_s * 1000))


def kill_sessions(victims: str, admin: Any, table: str, writer: Served, standby: Served) -> None:
    """Terminate the lock sessions `victims` names, in its order; return
    once the store has the writer that order leaves."""
    holder, waiting = lock_sessions(admin, table)
    if victims == "waiter, then holder":
        terminate(admin, waiting[0])
        terminate(admin, holder)
        until(lambda: len(writers_of(standby.store_url)) == 2, switch_wait_s, "the writer to claim the store again")
        until(lambda: len(lock_sessions(admin, table)[1]) == 1, switch_wait_s, "the standby to wait again")
        return
    terminate(admin, holder)
    health = standby.client("human")
    until(lambda: health.health().get("writer") is True, switch_wait_s, "the standby to write")
    assert writer.process is not None
    writer.process.wait(timeout=switch_wait_s)  # the old writer stops by itself
    if victims == "holder, then new holder":
        terminate(admin, lock_sessions(admin, table)[0])
        until(lambda: len(writers_of(standby.store_url)) == 3, switch_wait_s, "the new writer to claim the store again")


scenarios = {  # victims: (the writer that stays, its generations)
    "holder": ("standby", [1, 2]),
    "waiter, then holder": ("writer", [1, 2]),
    "holder, then new holder": ("standby", [1, 2, 3]),
}


@pytest.mark.parametrize("victims", list(scenarios))
def test_a_terminated_lock_session_leaves_one_writer_at_a_time(tmp_path: Path, postgres_store: str, victims: str) -> None:
    import psycopg

    url = postgres_store
    table = url.rsplit("table=", 1)[1]
    # The standby's second wait starts late: the writer's re-take comes first.
    rewait = faults_env({"target": "tandem.adapters.writer_lock:_wait_postgres", "sleep_before_s": rewait_delay_s, "skip": 1})
    writer = Served(tmp_path, url, "--interval", "0.2", name="writer")
    standby = Served(tmp_path, url, "--standby", "--interval", "0.2", name="standby", env=rewait)
    standby.tokens, standby.tokens_file = writer.tokens, writer.tokens_file
    with writer, standby, psycopg.connect(postgres_url(), autocommit=True) as admin:
        open_conversations(writer, conversations)
        until(lambda: len(lock_sessions(admin, table)[1]) == 1, switch_wait_s, "the standby to wait on the lock")
        load = Load([writer, standby], conversations).start()
        try:
            time.sleep(load_before_s)
            kill_sessions(victims, admin, table, writer, standby)
            time.sleep(load_after_s)
        finally:
            load.finish()
        survivor, other = (standby, writer) if scenarios[victims][0] == "standby" else (writer, standby)
        assert survivor.process is not None and survivor.process.poll() is None, survivor.log()
        assert survivor.client("human").health()["writer"] is True
        if survivor is standby:
            assert writer.process is not None and writer.process.returncode == 1, writer.log()
            assert "fenced off" in writer.log() or "writer lock" in writer.log(), writer.log()
        else:
            assert other.client("human").health()["writer"] is False
        assert "Traceback" not in writer.log() + standby.log(), writer.log() + standby.log()
    assert load.errors == []
    counts = recorded_ids(url)
    assert [key for key, count in counts.items() if count > 1] == []
    assert load.acknowledged <= set(counts)
    claims = writers_of(url)
    assert [claim.generation for claim in claims] == scenarios[victims][1], claims
    assert_one_writer_at_a_time(url, load, [writer, standby])
    verified(url)
    print(f"\n{victims}: {len(load.acknowledged)} inputs acknowledged, longest wait for one {load.outage_s:.2f} s; "
          f"claims {[(c.generation, c.after, c.pid) for c in claims]}")  # fmt: skip
