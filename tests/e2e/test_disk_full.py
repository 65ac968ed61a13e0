"""End to end: a full disk and a read-only file system (issue 15, "Faults"). `tandem ingest` onto an
SQLite store on a small tmpfs refuses cleanly when the disk fills: exit 1,
a message naming the store and the cause, no traceback, nothing of the failed
transaction written; once there is room again, the same command resumes and
the store ends as an uninterrupted run's (views equal, `tandem verify` clean).

The tmpfs is mounted by the test (it needs root, as in CI); on a machine
where it cannot mount, it fails rather than skip, unless not root.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.serving import small_tmpfs, tandem

REPO = Path(__file__).resolve().parents[2]
small_kib = 256  # room for a few dozen of these inputs, not for all of them
inputs = 400



@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "disk", small_kib) as mount:
        yield mount


def big_trace(path: Path) -> Path:
    lines = [{"type": "conversation.open", "at": "2026-03-01T09:00:00Z", "actor": "daemon", "conversation_id": "fg",
              "role": "foreground", "context_limit": 100_000_000, "reserve": 10}]  # fmt: skip
    for i in range(inputs):
        lines.append({"type": "human.message", "at": f"2026-03-01T09:{i // 60:02d}:{i % 60:02d}Z",
                      "conversation_id": "fg", "message_id": f"m{i}", "text": "x" * 2000})  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("batch", ["1000", "1"], ids=["one-transaction", "one-per-input"])
def test_a_full_disk_refuses_cleanly_and_the_same_command_resumes(small_disk: Path, tmp_path: Path, batch: str) -> None:
    trace = big_trace(tmp_path / "big.jsonl")
    url = f"sqlite:///{small_disk / 't.db'}"
    full = tandem("ingest", str(trace), "--store", url, "--batch", batch, timeout_s=300)
    assert full.returncode == 1, full
    assert f"append to {url} failed: database or disk is full" in full.stderr and "Traceback" not in full.stderr
    shown = tandem("show", "--store", url, "--json")
    assert shown.returncode == 0, shown.stderr
    queued = len(json.loads(shown.stdout)["conversations"][0]["queue"]) if batch == "1" else None
    if batch == "1000":  # the one transaction failed whole: no conversation, nothing half-written
        assert json.loads(shown.stdout)["conversations"] == []
    else:  # each committed input is whole; the rest are not there
        assert 0 < queued < inputs
    assert tandem("verify", "--store", url).returncode == 0
    subprocess.run(["mount", "-o", "remount,size=16m", str(small_disk)], check=True)
    resumed = tandem("ingest", str(trace), "--store", url, "--batch", batch, timeout_s=300)
    assert resumed.returncode == 0, resumed.stderr
    assert tandem("show", "--store", url, "--json").stdout == tandem("replay", str(trace), "--json").stdout
    verified = tandem("verify", "--store", url)
    assert verified.returncode == 0 and "clean" in verified.stdout + verified.stderr


def test_a_store_on_a_read_only_file_system_reads_and_refuses_writers(small_disk: Path) -> None:
    """Issue 15: "the read commands work on a read-only store". A WAL store's
    readers write SQLite's index beside it; on a read-only file system
    nobody can be writing, so the reader opens it immutable. A writer is
    refused naming the file and the cause."""
    subprocess.run(["mount", "-o", "remount,size=16m", str(small_disk)], check=True)
    trace = REPO / "fixtures" / "gates" / "01_user_chats_ci_fails.jsonl"
    url = f"sqlite:///{small_disk / 't.db'}"
    assert tandem("ingest", str(trace), "--store", url).returncode == 0
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    shown = tandem("show", "--store", url, "--json")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == tandem("replay", str(trace), "--json").stdout
    for command in (("verify",), ("export",), ("explain", "r1")):
        assert tandem(*command, "--store", url).returncode == 0, command
    writer = tandem("ingest", str(REPO / "fixtures" / "gates" / "02_prerequisite_user_away.jsonl"), "--store", url)
    assert writer.returncode == 1 and "Read-only file system" in writer.stderr and str(small_disk) in writer.stderr
    assert "Traceback" not in writer.stderr
