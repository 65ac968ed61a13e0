"""Side files never stop the engine (issue 22, point 5).

The defect: a full volume for the health file killed the engine. `tandem
daemon` exited 1 with a traceback from the atomic health write, `tandem
serve` exited 1 at start, a running serve logged a traceback at every
publish. Here the health file sits on a real full disk (a tiny tmpfs,
filled): the daemon and the service keep running and applying inputs, say
it once (at most once a minute), `GET /v1/health` carries the fact, and once
the disk has room the file is written again, said once, and the fact clears.
"""

from __future__ import annotations

import datetime
import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tandem.adapters.health_file import parse_time, read_snapshot
from tandem.adapters.runtime import Runtime, Settings
from tests.e2e.serving import ROOT, Served

T0 = datetime.datetime(2026, 3, 1, 9, 0, tzinfo=datetime.timezone.utc)
wait_s = 20.0  # the longest any wait polls; nothing here asserts a speed
poll_s = 0.05
watch_s = 2.0  # how long a failing health file is watched: about 20 publishes at 0.1 s
fast = ["--interval", "0.05", "--publish-interval", "0.1"]
warning = "cannot write the health file"
recovered = "is written again"
tick_line = '{"type": "tick", "at": "2026-03-01T09:00:00Z", "actor": "daemon"}\n'


def wait_for(condition: Callable[[], bool], what: str, log: Callable[[], str]) -> None:
    deadline = time.monotonic() + wait_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {wait_s} s\n{log()}")
        time.sleep(poll_s)


@contextmanager
def running_daemon(tmp_path: Path, spool: Path, health: Path) -> Iterator[tuple[subprocess.Popen[str], Callable[[], str]]]:
    """A real `tandem daemon`, started (its log says so), and its log; killed after the block if still running."""
    log_file = tmp_path / "daemon.log"
    command = [sys.executable, "-m", "tandem.adapters.cli", "daemon", "--store", f"sqlite:///{tmp_path / 't.db'}",
               "--spool", str(spool), "--health", str(health), "--tick", "0", *fast]  # fmt: skip
    with open(log_file, "w") as stderr:
        daemon = subprocess.Popen(command, cwd=ROOT, stderr=stderr, text=True)
    log = log_file.read_text
    try:
        wait_for(lambda: "started:" in log() or daemon.poll() is not None, "the daemon's start", log)
        assert daemon.poll() is None, log()
        yield daemon, log
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait(timeout=wait_s)


def stop(daemon: subprocess.Popen[str], log: Callable[[], str]) -> None:
    daemon.send_signal(signal.SIGTERM)
    assert daemon.wait(timeout=wait_s) == 0, log()
    assert "Traceback" not in log(), log()


def temporaries(folder: Path) -> list[str]:
    """The health write's temporary files left in `folder` (`.NAME.*.tmp`)."""
    return sorted(path.name for path in folder.iterdir() if path.name.endswith(".tmp"))


def test_a_daemon_whose_health_file_cannot_be_written_keeps_running(full_disk, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spool, health = tmp_path / "spool", full_disk.mount / "health.json"
    with running_daemon(tmp_path, spool, health) as (daemon, log):
        (spool / ".first.tmp").write_text(tick_line)
        (spool / ".first.tmp").rename(spool / "first.jsonl")
        wait_for(lambda: (spool / "done" / "first.jsonl").exists(), "the spool file applied", log)
        time.sleep(watch_s)
        assert daemon.poll() is None, log()
        assert log().count(warning) == 1, log()
        assert f"{warning} {health}: No space left on device" in log(), log()
        assert temporaries(full_disk.mount) == [] and not health.exists()

        full_disk.free()
        wait_for(lambda: recovered in log(), "the recovery said", log)
        wait_for(lambda: (read_snapshot(health) or {}).get("state") == "running", "a running snapshot", log)
        stop(daemon, log)
    assert log().count(warning) == 1 and log().count(recovered) == 1, log()
    assert read_snapshot(health)["state"] == "stopped"  # type: ignore[index]


def test_a_refused_spool_file_whose_reasons_cannot_be_written_stays_in_the_spool(full_disk, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The spool on the full disk: a refused file's `.error` cannot be
    written, so the file stays in the spool (not lost, not moved without its
    reasons), the daemon goes on (a good file after it is applied), and once
    there is room it is rejected with its reasons."""
    full_disk.free()
    spool = full_disk.mount / "spool"
    with running_daemon(tmp_path, spool, tmp_path / "health.json") as (daemon, log):
        (spool / ".bad.tmp").write_text("not a trace\n")
        (spool / ".good.tmp").write_text(tick_line)
        full_disk.fill()
        (spool / ".bad.tmp").rename(spool / "bad.jsonl")
        (spool / ".good.tmp").rename(spool / "good.jsonl")
        wait_for(lambda: (spool / "done" / "good.jsonl").exists(), "the good file applied", log)
        time.sleep(watch_s)
        assert daemon.poll() is None, log()
        assert (spool / "bad.jsonl").exists() and list((spool / "rejected").iterdir()) == [], log()
        assert log().count("cannot write the reasons of a refused spool file") == 1, log()

        full_disk.free()
        wait_for(lambda: (spool / "rejected" / "bad.jsonl").exists(), "the bad file rejected", log)
        assert "line 1" in (spool / "rejected" / "bad.jsonl.error").read_text()
        assert not (spool / "bad.jsonl").exists()
        stop(daemon, log)
    assert log().count(recovered) == 1, log()


def test_serve_whose_health_file_cannot_be_written_serves_and_says_so(full_disk, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    health = full_disk.mount / "health.json"
    url = f"sqlite:///{tmp_path / 't.db'}"
    with Served(tmp_path, url, "--health", str(health), *fast) as server:
        client = server.client("daemon")
        answer = client.health()
        assert answer["status"] == "ok" and answer["writer"] is True, answer
        [fact] = answer["degraded"]
        assert set(fact) == {"what", "path", "reason", "since"}, fact
        assert (fact["what"], fact["path"], fact["reason"]) == ("health_file", str(health), "No space left on device")
        assert abs(datetime.datetime.now(datetime.timezone.utc) - parse_time(fact["since"])) < datetime.timedelta(minutes=5)
        first = client.submit({"type": "tick"})
        time.sleep(watch_s)
        assert client.submit({"type": "tick"})["position"] > first["position"]
        assert client.health()["degraded"] == [fact]  # the same fact, since its first failure
        assert temporaries(full_disk.mount) == []

        full_disk.free()
        wait_for(lambda: "degraded" not in client.health(), "the fact cleared", server.log)
        assert (read_snapshot(health) or {}).get("state") == "running"
        assert server.stop() == 0, server.log()
    log = server.log()
    assert "Traceback" not in log, log
    assert log.count(warning) == 1 and log.count(recovered) == 1, log


def test_the_warning_comes_at_most_once_a_minute_escaped_and_the_recovery_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder removed under the runtime (ENOENT), on its own clocks: one
    warning, the next a minute later; the path escaped; recovery said once."""
    folder = tmp_path / "health\x1b[31m"
    folder.mkdir()
    now = [0.0]
    settings = Settings(store_url="memory:", health=folder / "health.json", runtime_inputs=False)
    runtime = Runtime(settings, clock=lambda: T0, monotonic=lambda: now[0])
    runtime.open()
    runtime.start()
    try:
        capsys.readouterr()
        shutil.rmtree(folder)
        for now[0] in (1.0, 2.0, 30.0, 60.5):
            runtime.publish()
        said = capsys.readouterr().err
        assert said.count(warning) == 1, said
        assert "\x1b" not in said and "health\\x1b[31m" in said, said
        expected = {"what": "health_file", "path": str(folder / "health.json"), "reason": "No such file or directory",
                    "since": "2026-03-01T09:00:00Z"}  # fmt: skip
        assert runtime.side_files.degraded() == [expected]
        json.dumps(runtime.side_files.degraded())  # as /v1/health sends it
        now[0] = 61.5
        runtime.publish()
        assert capsys.readouterr().err.count(warning) == 1
        folder.mkdir()
        for now[0] in (62.0, 63.0):
            runtime.publish()
        said = capsys.readouterr().err
        assert said.count(recovered) == 1 and warning not in said, said
        assert runtime.side_files.degraded() == []
        assert (read_snapshot(folder / "health.json") or {}).get("state") == "running"
    finally:
        runtime.close()
