"""`tandem daemon` as a real process, refusing an unsafe spool at start
(adapters/spool.py; API.md, the --spool paragraph).

A spool folder writable by group or others, or whose `done/` or `rejected/`
is a symlink, would let someone else speak for the spool's actors or have
the runtime move files out of the spool: the daemon exits 1 at once, with a
message naming the folder and the fix, and records nothing (a file waiting in
the spool stays where it is, the store holds no input, no health snapshot is
published). The same rules while it runs are in
tests/adapters/test_spool_guard.py."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--interval", "0.05", "--publish-interval", "0.2", "--tick", "3600"]


def daemon_command(tmp_path: Path, spool: Path) -> list[str]:
    return [
        sys.executable, "-m", "tandem.adapters.cli", "daemon", "--store", f"sqlite:///{tmp_path / 'store.db'}",
        "--spool", str(spool), "--health", str(tmp_path / "health.json"), "--watchdog-db", str(tmp_path / "wd.db"),
        *FAST,
    ]  # fmt: skip


def daemon(tmp_path: Path, spool: Path) -> subprocess.CompletedProcess[str]:
    """`tandem daemon` on its own files in tmp_path; a daemon that did not
    refuse would run until the timeout (and fail the test)."""
    return subprocess.run(daemon_command(tmp_path, spool), cwd=ROOT, capture_output=True, text=True, timeout=60)


def waiting_file(spool: Path) -> Path:
    path = spool / "waiting.jsonl"
    path.write_text(json.dumps({"type": "tick", "actor": "daemon"}) + "\n")
    return path


def assert_nothing_recorded(tmp_path: Path, waiting: Path) -> None:
    assert waiting.exists(), "the waiting file was taken"
    assert not (tmp_path / "health.json").exists(), "a health snapshot was published"
    database = tmp_path / "store.db"
    if database.exists():
        with sqlite3.connect(database) as connection:
            tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for table in tables:
                assert connection.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,), table


@pytest.mark.parametrize("mode", [0o775, 0o757])
def test_a_spool_writable_by_group_or_others_is_refused_at_start(tmp_path: Path, mode: int) -> None:
    spool = tmp_path / "spool"
    spool.mkdir()
    waiting = waiting_file(spool)
    os.chmod(spool, mode)
    result = daemon(tmp_path, spool)
    assert result.returncode == 1, result.stderr
    assert f"refusing the spool: spool folder {spool} is writable by group or others (mode {mode:04o})" in result.stderr
    assert f"run: chmod go-w {spool}" in result.stderr
    assert "Traceback" not in result.stderr
    assert_nothing_recorded(tmp_path, waiting)
    assert stat_mode(spool) == mode  # the daemon does not "fix" it behind the operator's back

    # After the fix it names, the same daemon starts and applies the file:
    # the refusal was the mode, nothing else.
    os.chmod(spool, 0o700)
    process = subprocess.Popen(daemon_command(tmp_path, spool), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (spool / "done" / "waiting.jsonl").exists():
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "gave up waiting for the file to be applied"
            time.sleep(0.05)
    finally:
        process.terminate()
        assert process.wait(timeout=60) == 0


def stat_mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


@pytest.mark.parametrize("role", ["done", "rejected"])
def test_a_done_or_rejected_folder_that_is_a_symlink_is_refused_at_start(tmp_path: Path, role: str) -> None:
    spool, outside = tmp_path / "spool", tmp_path / "outside"
    spool.mkdir(mode=0o700)
    outside.mkdir(mode=0o700)
    os.symlink(outside, spool / role)
    waiting = waiting_file(spool)
    (spool / "bad.jsonl").write_text("{oops\n")  # would go to rejected/
    result = daemon(tmp_path, spool)
    assert result.returncode == 1, result.stderr
    assert f"refusing the spool: {role}/ {spool / role} is a symlink; give the real folder" in result.stderr
    assert "Traceback" not in result.stderr
    assert_nothing_recorded(tmp_path, waiting)
    assert (spool / "bad.jsonl").exists()
    assert list(outside.iterdir()) == []  # nothing moved or written through the link
    assert (spool / role).is_symlink()
