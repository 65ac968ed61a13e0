"""`tandem daemon` and `tandem watchdog` as real processes (docs/operations.md).

Every wait polls with a generous deadline; nothing asserts how fast anything
is. Intervals are short (0.05-0.2 s) so the whole file runs in seconds.

- the spool: files renamed into it are applied in name order, exactly once,
  also when the daemon is killed with SIGKILL mid-file and started again; a bad
  file goes to rejected/ with its `.error` and the daemon goes on;
- SIGTERM: exit 0, `daemon.stop` with `expected: true` recorded, final snapshot
  `stopped`;
- the daemon killed with `kill -9` while the watchdog runs: an incident in the
  watchdog's own file and notify log, then in the engine's `alerts` and
  `health.open_incidents` once the daemon is back (with `daemon_crash/1`);
  an expected stop and restart raises nothing.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tandem.adapters.cli import build_parser
from tandem.adapters.store import open_store
from tandem.domain import events as ev
from tests.e2e.serving import stored_inputs

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 60.0
FAST = ["--interval", "0.05", "--publish-interval", "0.2", "--tick", "3600"]

T = TypeVar("T")


# ------------------------------------------------------------------ helpers


def tandem(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tandem.adapters.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


class Process:
    """A `tandem` subprocess whose output goes to a file (a pipe nobody reads
    would fill up and block it)."""

    def __init__(self, log: Path, *args: str) -> None:
        self.log = log
        with open(log, "ab") as out:
            self.popen = subprocess.Popen(
                [sys.executable, "-m", "tandem.adapters.cli", *args], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT
            )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def signal(self, number: int) -> int:
        """Send `number`, wait for the exit (reaping it: no zombie), return the code."""
        self.popen.send_signal(number)
        return self.popen.wait(timeout=DEADLINE_S)

    def assert_running(self) -> None:
        assert self.popen.poll() is None, f"exited {self.popen.returncode}:\n{self.output()}"

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(timeout=DEADLINE_S)


@pytest.fixture
def processes() -> Iterator[list[Process]]:
    """Every process a test starts is killed at its end, whatever happened."""
    started: list[Process] = []
    yield started
    for process in started:
        process.kill()


def wait_for(what: str, probe: Callable[[], T | None], *alive: Process) -> T:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        value = probe()
        if value:
            return value
        for process in alive:
            process.assert_running()
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def now_at() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def drop(spool: Path, name: str, lines: list[str]) -> None:
    """What a writer does: a temporary hidden name, then a rename."""
    temporary = spool / f".{name}.tmp"
    temporary.write_text("".join(line + "\n" for line in lines))
    os.replace(temporary, spool / name)


def observe(at: str, scope: str, n: int) -> str:
    return json.dumps(
        {"type": "observe", "at": at, "actor": "source", "source_id": scope, "kind": "ci", "scope": scope,
         "fingerprint": f"{scope}-{n}", "complete": True}
    )  # fmt: skip


def snapshot(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None


def running(path: Path, pid: int) -> Callable[[], dict[str, Any] | None]:
    def probe() -> dict[str, Any] | None:
        body = snapshot(path)
        return body if body and body["pid"] == pid and body["state"] == "running" else None

    return probe


def recorded(url: str) -> list[ev.InputAccepted | ev.InputRejected]:
    """Every input record in the store, in order (read in this process)."""
    store = open_store(url)
    try:
        return [
            event
            for page in store.read_pages()
            for event in page
            if isinstance(event, (ev.InputAccepted, ev.InputRejected))
        ]
    finally:
        store.close()


def views(url: str) -> dict[str, Any]:
    result = tandem("show", "--store", url, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def watchdog_rows(database: Path, table: str) -> list[tuple[Any, ...]]:
    if not database.exists():
        return []
    connection = sqlite3.connect(database.resolve().as_uri() + "?mode=ro", uri=True, timeout=30)
    try:
        return connection.execute(f"SELECT * FROM {table} ORDER BY seq").fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        connection.close()


# ------------------------------------------------------------------- --help


@pytest.mark.parametrize(
    "command, options",
    [
        ("daemon", ["--store", "--spool", "--spool-actors", "--health", "--watchdog-db", "--interval", "--publish-interval", "--tick", "--batch"]),
        ("watchdog", ["--health", "--db", "--max-age", "--interval", "--notify-log", "--providers"]),
    ],
)  # fmt: skip
def test_help_explains_every_option(command: str, options: list[str]) -> None:
    result = tandem(command, "--help")
    assert result.returncode == 0
    assert result.stdout.startswith(f"usage: tandem {command} ")
    assert "docs/operations.md" in result.stdout and "Exit codes" in result.stdout
    for option in options:
        assert option in result.stdout
    parser = build_parser()
    subcommands = next(action for action in parser._actions if action.dest == "command")
    sub = subcommands.choices[command]  # type: ignore[index]
    for action in sub._actions:
        assert action.help and len(action.help) > 15, f"{command} {action.option_strings} has no real help"
    assert sorted(o for a in sub._actions for o in a.option_strings if o.startswith("--") and o != "--help") == sorted(
        options
    )


def test_unusable_options_exit_with_a_clear_message(tmp_path: Path) -> None:
    spool = str(tmp_path / "spool")
    bad_url = tandem("daemon", "--store", "nosuch://x", "--spool", spool)
    assert bad_url.returncode == 1 and "bad store URL" in bad_url.stderr
    no_parent = tandem("daemon", "--store", f"sqlite:///{tmp_path}/s.db", "--spool", str(tmp_path / "no" / "spool"))
    assert no_parent.returncode == 1 and "does not exist" in no_parent.stderr
    (tmp_path / "file").write_text("")
    not_folder = tandem("daemon", "--store", f"sqlite:///{tmp_path}/s.db", "--spool", str(tmp_path / "file"))
    assert not_folder.returncode == 2 and "is not a folder" in not_folder.stderr
    zero = tandem("daemon", "--store", "memory:", "--spool", spool, "--interval", "0")
    assert zero.returncode == 2 and "more than 0 seconds" in zero.stderr
    no_store = tandem("daemon", "--spool", spool)
    assert no_store.returncode == 2 and "--store" in no_store.stderr
    watchdog = tandem("watchdog", "--health", str(tmp_path / "h.json"), "--db", str(tmp_path / "no" / "wd.db"))
    assert watchdog.returncode == 1 and "does not exist" in watchdog.stderr
    no_db = tandem("watchdog", "--health", str(tmp_path / "h.json"))
    assert no_db.returncode == 2 and "--db" in no_db.stderr


# -------------------------------------------------------------------- spool


def test_spool_exactly_once_in_name_order_across_kill_9(tmp_path: Path, processes: list[Process]) -> None:
    spool, database = tmp_path / "spool", tmp_path / "store.db"
    url = f"sqlite:///{database}"
    spool.mkdir()
    lines_per_file = 300
    # The backlog, dropped out of name order before the daemon starts (one
    # time for all: name order must not send `at` backwards).
    at = now_at()
    for name in ("b.jsonl", "c.jsonl", "a.jsonl"):
        drop(spool, name, [observe(at, name, n) for n in range(1, lines_per_file + 1)])
    (spool / ".half-written.jsonl").write_text("{")  # still being written: ignored
    (spool / "later.jsonl.tmp").write_text("{")
    total = 3 * lines_per_file
    arguments = ["daemon", "--store", url, "--spool", str(spool), "--batch", "1", "--watchdog-db", str(tmp_path / "none.db"), *FAST]  # fmt: skip

    first = Process(tmp_path / "daemon-1.log", *arguments)
    processes.append(first)
    wait_for("a third of the backlog", lambda: stored_inputs(database) >= total // 3, first)
    assert first.signal(signal.SIGKILL) == -signal.SIGKILL
    partial = stored_inputs(database)
    assert 0 < partial < total, f"killed at {partial} of {total} inputs: not mid-way"

    second = Process(tmp_path / "daemon-2.log", *arguments)
    processes.append(second)
    wait_for("the backlog applied", lambda: len(list((spool / "done").glob("*.jsonl"))) == 3, second)
    wait_for("the daemon running", running(tmp_path / "tandem-health.json", second.pid), second)

    # One writer per store (and one runtime per spool).
    third = tandem(*arguments)
    assert third.returncode == 1 and f"is locked by pid {second.pid} on " in third.stderr

    drop(spool, "d.jsonl", [observe(now_at(), "d.jsonl", 1), '{"type": "tick", "at": 12}'])
    drop(spool, "e.jsonl", [observe(now_at(), "e.jsonl", 1)])
    wait_for("e.jsonl applied", lambda: (spool / "done" / "e.jsonl").exists(), second)
    assert sorted(path.name for path in (spool / "rejected").iterdir()) == ["d.jsonl", "d.jsonl.error"]
    assert (spool / "rejected" / "d.jsonl.error").read_text().startswith("line 2: ")
    assert (spool / ".half-written.jsonl").exists() and (spool / "later.jsonl.tmp").exists()
    assert sorted(path.name for path in spool.iterdir() if path.is_file() and not path.name.startswith(".")) == [
        "later.jsonl.tmp"
    ]

    assert second.signal(signal.SIGTERM) == 0
    from_files = [(event.file, event.line) for event in recorded(url) if event.file is not None]
    expected = [(name, n) for name in ("a.jsonl", "b.jsonl", "c.jsonl") for n in range(1, lines_per_file + 1)]
    assert from_files == expected + [("e.jsonl", 1)]  # name order, each line once, nothing of d

    shown = views(url)
    assert [row for row in shown["rejections"] if row.get("file") is not None] == []
    inbox = {row["cause_key"]: row for row in shown["inbox"]}
    for name in ("a.jsonl", "b.jsonl", "c.jsonl"):
        assert (inbox[f"ci:{name}"]["revision"], inbox[f"ci:{name}"]["repeats"]) == (lines_per_file, 0)
    assert "d.jsonl: rejected" in second.output()


# ------------------------------------------------------------------ SIGTERM


def test_sigterm_records_an_expected_stop(tmp_path: Path, processes: list[Process]) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    health = tmp_path / "health.json"
    arguments = ["daemon", "--store", url, "--spool", str(tmp_path / "spool"), "--health", str(health), *FAST]
    # One input waiting, so the store is not empty at the first start: daemon.start is recorded at once.
    (tmp_path / "spool").mkdir()
    (tmp_path / "spool" / "first.jsonl").write_text('{"type": "tick", "at": "2026-03-01T09:00:00Z", "actor": "daemon"}\n')
    for run in (1, 2):  # a stop as asked, then a start: no crash incident
        daemon = Process(tmp_path / f"daemon-{run}.log", *arguments)
        processes.append(daemon)
        wait_for("the daemon running", running(health, daemon.pid), daemon)
        assert daemon.signal(signal.SIGTERM) == 0, daemon.output()
        final = snapshot(health)
        assert final is not None
        assert (final["pid"], final["state"], final["expected_stop"]) == (daemon.pid, "stopped", True)

    inputs = recorded(url)
    lifecycle = [(type(event).__name__, event.input.input_type) for event in inputs]
    assert lifecycle == [("InputAccepted", "tick")] + [("InputAccepted", "daemon.start"), ("InputAccepted", "daemon.stop")] * 2
    assert all(event.input.expected for event in inputs if event.input.input_type == "daemon.stop")  # type: ignore[union-attr]
    shown = views(url)
    assert shown["alerts"] == [] and shown["health"]["open_incidents"] == []


# ---------------------------------------------------------- kill -9 + watchdog


def test_kill_9_under_the_watchdog_raises_one_incident(tmp_path: Path, processes: list[Process]) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    health, watchdog_db, notify_log = tmp_path / "health.json", tmp_path / "wd.db", tmp_path / "notify.log"
    daemon_arguments = ["daemon", "--store", url, "--spool", str(tmp_path / "spool"), "--health", str(health), "--watchdog-db", str(watchdog_db), *FAST]  # fmt: skip
    watchdog_arguments = ["watchdog", "--health", str(health), "--db", str(watchdog_db), "--max-age", "2", "--interval", "0.1", "--notify-log", str(notify_log)]  # fmt: skip

    def incidents() -> list[tuple[Any, ...]]:
        return watchdog_rows(watchdog_db, "incidents")

    def imported(row_id: str) -> Callable[[], bool]:
        return lambda: any(event.input.id == row_id for event in recorded(url))

    daemon = Process(tmp_path / "daemon-1.log", *daemon_arguments)
    watchdog = Process(tmp_path / "watchdog-1.log", *watchdog_arguments)
    processes += [daemon, watchdog]
    wait_for("heartbeats imported", lambda: (snapshot(health) or {}).get("watchdog_fresh"), daemon, watchdog)
    assert incidents() == []

    assert daemon.signal(signal.SIGKILL) == -signal.SIGKILL
    (incident,) = wait_for("an incident row", incidents, watchdog)
    row_id, _, incident_id, kind, detail, at = incident
    assert (row_id, incident_id, kind) == ("watchdog/incident/daemon_dead-1", "daemon_dead-1", "daemon_dead")
    assert f"daemon pid {daemon.pid} is not running" in detail
    datetime.datetime.fromisoformat(at.replace("Z", "+00:00"))
    assert "daemon_dead-1" in notify_log.read_text()
    # Later rounds see the same occurrence: no second incident.
    beats = len(watchdog_rows(watchdog_db, "heartbeats"))
    wait_for("five more rounds", lambda: len(watchdog_rows(watchdog_db, "heartbeats")) >= beats + 5, watchdog)
    assert len(incidents()) == 1
    # Stopped now, so that no recovery is written before the engine shows the incident.
    assert watchdog.signal(signal.SIGTERM) == 0

    daemon = Process(tmp_path / "daemon-2.log", *daemon_arguments)
    processes.append(daemon)
    wait_for("the incident imported", imported("watchdog/incident/daemon_dead-1"), daemon)
    wait_for("the daemon running", running(health, daemon.pid), daemon)
    shown = views(url)
    alerts = {alert["alert_id"]: alert for alert in shown["alerts"]}
    for incident_alert in ("incident:daemon_dead-1", "incident:daemon_crash/1"):
        assert incident_alert in alerts, shown["alerts"]
        assert (alerts[incident_alert]["kind"], alerts[incident_alert]["state"], alerts[incident_alert]["count"]) == (
            "incident",
            "raised",
            1,
        )
    assert sorted(shown["health"]["open_incidents"]) == ["daemon_crash/1", "daemon_dead-1"]
    assert shown["rejections"] == []

    # The watchdog again (generation 2): the daemon is back, so it recovers the incident.
    watchdog = Process(tmp_path / "watchdog-2.log", *watchdog_arguments)
    processes.append(watchdog)
    wait_for("the recovery imported", imported("watchdog/recovered/daemon_dead-1"), daemon, watchdog)
    assert {row[2] for row in watchdog_rows(watchdog_db, "heartbeats")} == {1, 2}
    assert "daemon_dead-1 recovered" in notify_log.read_text()
    shown = views(url)
    alerts = {alert["alert_id"]: alert for alert in shown["alerts"]}
    assert alerts["incident:daemon_dead-1"]["state"] == "resolved"
    assert shown["health"]["open_incidents"] == ["daemon_crash/1"]

    # An expected stop, seen by the watchdog, then a start: nothing new anywhere.
    assert daemon.signal(signal.SIGTERM) == 0
    beats = len(watchdog_rows(watchdog_db, "heartbeats"))
    wait_for("five more rounds", lambda: len(watchdog_rows(watchdog_db, "heartbeats")) >= beats + 5, watchdog)
    daemon = Process(tmp_path / "daemon-3.log", *daemon_arguments)
    processes.append(daemon)
    wait_for("the daemon running", running(health, daemon.pid), daemon)
    beats = len(watchdog_rows(watchdog_db, "heartbeats"))
    wait_for("five more rounds", lambda: len(watchdog_rows(watchdog_db, "heartbeats")) >= beats + 5, watchdog)
    assert daemon.signal(signal.SIGTERM) == 0
    assert watchdog.signal(signal.SIGTERM) == 0
    assert len(incidents()) == 1
    shown = views(url)
    assert sorted(alert["alert_id"] for alert in shown["alerts"]) == [
        "incident:daemon_crash/1",
        "incident:daemon_dead-1",
    ]
    assert shown["health"]["open_incidents"] == ["daemon_crash/1"]
    assert shown["rejections"] == []
    assert notify_log.read_text().count("down") == 1
