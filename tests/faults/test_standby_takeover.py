"""A standby's takeover under load leaves a store `tandem verify` calls clean
(issue 22, point 1), and a stop never runs beside a round still committing.

The defect, as an operator saw it: writer + standby on one PostgreSQL table,
clients posting and reading, the writer SIGKILLed: the standby took over,
nothing was applied twice, but `verify` said DIVERGED ("snapshot's
conversations view differs ... fg state: snapshot 'running', re-derived
'idle'"). Reproduced with this test's load on the code before the fix, 3 runs
of 3; the cause was not the takeover but the readers: rendering the
conversations view wrote each row's computed `state` into the row a snapshot
keeps (tests/unit/test_render_is_pure.py). The second test's stop landed
beside a spool batch still committing (a cancelled round let go of the
engine): 1 stop in 4 diverged before the fix; here a delay injected into
every commit makes it land there every time."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tandem.adapters.store import open_store
from tests.e2e.serving import Served, store_head
from tests.e2e.test_serve_faults import until
from tests.faults.faults import Load, faults_env, open_conversations, recorded_ids, verified

pytestmark = pytest.mark.postgres
takeover_wait_s = 30
conversations = ["fg0", "fg1", "fg2"]
warm_turns = 300  # turns sent before the load: enough events that every stop writes its snapshot
load_before_kill_s = 1.5
load_after_takeover_s = 1.5


def warm_up(server: Served) -> None:
    """`warm_turns` turns of conversation `warm`, in one batch."""
    open_conversations(server, ["warm"])
    batch = []
    for number in range(1, warm_turns + 1):
        batch += [
            {"type": "human.message", "conversation_id": "warm", "message_id": f"m{number}", "text": "x", "tokens": 3},
            {"type": "provider.receipt", "delivery_id": f"warm/d{number}", "result": "accepted"},
            {"type": "turn.ended", "turn_id": f"warm/t{number}", "outcome": "completed"},
        ]
    server.client("human").submit_batch(batch)


def test_a_takeover_under_load_with_readers_leaves_every_snapshot_exact(tmp_path: Path, postgres_store: str) -> None:
    url = postgres_store
    writer = Served(tmp_path, url, "--interval", "0.1", name="writer")
    standby = Served(tmp_path, url, "--standby", "--interval", "0.1", name="standby")
    standby.tokens, standby.tokens_file = writer.tokens, writer.tokens_file
    with writer, standby:
        warm_up(writer)
        open_conversations(writer, conversations)
        load = Load([writer, standby], conversations).start()
        try:
            time.sleep(load_before_kill_s)
            assert writer.process is not None
            os.kill(writer.process.pid, signal.SIGKILL)
            health = standby.client("human")
            until(lambda: health.health().get("writer") is True, takeover_wait_s, "the standby to take over")
            time.sleep(load_after_takeover_s)  # readers read the new writer's views while turns run
        finally:
            load.finish()
        assert standby.stop() == 0, standby.log()
    assert load.errors == []
    counts = recorded_ids(url)
    assert [key for key, count in counts.items() if count > 1] == [], "an input applied twice"
    assert load.acknowledged <= set(counts), f"acknowledged but not recorded: {sorted(load.acknowledged - set(counts))[:5]}"
    report = verified(url)
    assert report["snapshots_checked"] >= 1, report  # the stop's snapshot, at least, was checked
    print(f"\n{len(load.acknowledged)} inputs acknowledged; longest wait for one: {load.outage_s:.2f} s; "
          f"{report['snapshots_checked']} snapshot(s) checked")  # fmt: skip


commit_delay_s = 2.0  # injected after every commit: longer than a stop takes to reach the engine


def test_a_stop_while_a_round_commits_a_spool_batch_waits_for_it(tmp_path: Path, postgres_store: str) -> None:
    url = postgres_store
    spool = tmp_path / "spool"
    slow = faults_env(
        {"target": "tandem.adapters.store.recorder:RecorderStore._insert", "sleep_after_s": commit_delay_s, "report_overlap": True}
    )
    options = ("--spool", str(spool), "--spool-actors", "human,daemon", "--interval", "0.05", "--batch", "20")
    server = Served(tmp_path, url, *options, name="slow", env=slow)
    with server:
        warm_up(server)  # the stop's snapshot is due (over 1,000 events since the last)
        lines = [f'{{"type": "human.message", "conversation_id": "warm", "message_id": "s{n}", "text": "x", "tokens": 3}}'
                 for n in range(200)]  # fmt: skip
        temporary = spool / ".late.tmp"
        temporary.write_text("\n".join(lines) + "\n")
        before = store_head(url)
        os.rename(temporary, spool / "late.jsonl")
        until(lambda: store_head(url) > before, 30, "the spool file's first batch")
        assert server.stop() == 0, server.log()
    assert "stopping mid-file" in server.log()
    assert "tandem-faults: overlap" not in server.log(), "the stop committed beside the round's commit"
    assert "not written" not in server.log(), server.log()
    assert newest_snapshot(url) == store_head(url), "the stop's snapshot is at the head"
    report = verified(url)
    assert report["snapshots_checked"] >= 1, report


def newest_snapshot(url: str) -> int:
    store = open_store(url)
    try:
        return max((info.position for info in store.list_snapshots()), default=0)
    finally:
        store.close()
