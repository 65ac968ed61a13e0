"""The daemon's rounds in process, on a memory store, with injected clocks:
the `at` it stamps, the spool's order and exactly-once, rejected files, the
watchdog import by id, idle ticks and the snapshot it publishes."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from tandem.adapters.daemon import Daemon, Settings, is_ready
from tandem.adapters.health_file import read_snapshot
from tandem.adapters.watchdog import WatchdogStore
from tandem.domain import events as ev

T0 = datetime.datetime(2026, 3, 1, 9, 0, 0, 700_000, tzinfo=datetime.timezone.utc)


class Clocks:
    def __init__(self) -> None:
        self.wall = T0
        self.mono = 0.0

    def advance(self, s: float) -> None:
        self.wall += datetime.timedelta(seconds=s)
        self.mono += s


def daemon_on(tmp_path: Path, clocks: Clocks, **options: float) -> Daemon:
    (tmp_path / "spool").mkdir(exist_ok=True)
    settings = Settings(
        store_url="memory:",
        spool=tmp_path / "spool",
        health=tmp_path / "health.json",
        watchdog_db=tmp_path / "wd.db",
        **options,  # type: ignore[arg-type]
    )
    daemon = Daemon(settings, clock=lambda: clocks.wall, monotonic=lambda: clocks.mono)
    daemon.spool.prepare()
    daemon.open()
    return daemon


def line(at: str, n: int, scope: str) -> str:
    return json.dumps(
        {"type": "observe", "at": at, "actor": "source", "source_id": scope, "kind": "ci", "scope": scope,
         "fingerprint": f"f{n}", "complete": True}
    )  # fmt: skip


def recorded(daemon: Daemon) -> list[tuple[str, str | None, int | None]]:
    assert daemon.engine is not None and daemon.engine.store is not None
    return [
        (event.input.input_type, event.file, event.line)
        for page in daemon.engine.store.read_pages()
        for event in page
        if isinstance(event, (ev.InputAccepted, ev.InputRejected))
    ]


def test_ready_names() -> None:
    assert is_ready("0001.jsonl")
    assert not is_ready(".0001.jsonl") and not is_ready("0001.jsonl.tmp") and not is_ready(".jsonl")
    assert not is_ready("notes.txt")


def test_stamps_are_whole_seconds_and_never_go_back(tmp_path: Path) -> None:
    clocks = Clocks()
    daemon = daemon_on(tmp_path, clocks)
    assert daemon.stamp() == "2026-03-01T09:00:00Z"
    # A writer's clock a little ahead (within at_ahead_max_s = 300 s) is taken as it is.
    (tmp_path / "spool" / "a.jsonl").write_text(line("2026-03-01T09:04:00.5Z", 1, "s") + "\n")
    daemon.drain_spool()
    assert daemon.stamp() == "2026-03-01T09:04:00.500000Z"  # the store's last input, not the wall clock
    clocks.advance(600)
    assert daemon.stamp() == "2026-03-01T09:10:00Z"


def test_spool_in_name_order_once_and_bad_files_aside(tmp_path: Path) -> None:
    clocks = Clocks()
    daemon = daemon_on(tmp_path, clocks)
    spool = tmp_path / "spool"
    (spool / "b.jsonl").write_text(line("2026-03-01T09:00:02Z", 1, "b") + "\n")
    (spool / "a.jsonl").write_text(line("2026-03-01T09:00:01Z", 1, "a") + "\n" + line("2026-03-01T09:00:01Z", 2, "a"))
    (spool / "c.jsonl").write_text(line("2026-03-01T09:00:03Z", 1, "c") + "\n{oops\n")
    (spool / ".d.jsonl").write_text("not yet renamed")
    daemon.start()
    assert recorded(daemon) == [
        ("observe", "a.jsonl", 1), ("observe", "a.jsonl", 2), ("observe", "b.jsonl", 1), ("daemon.start", None, None)
    ]  # fmt: skip
    assert sorted(path.name for path in (spool / "done").iterdir()) == ["a.jsonl", "b.jsonl"]
    assert sorted(path.name for path in (spool / "rejected").iterdir()) == ["c.jsonl", "c.jsonl.error"]
    assert (spool / "rejected" / "c.jsonl.error").read_text().startswith("line 2: bad JSON")
    assert (spool / ".d.jsonl").exists()

    # the same trace dropped again (a crash between applying and moving): nothing twice
    (spool / "a.jsonl").write_text((spool / "done" / "a.jsonl").read_text())
    daemon.round()
    assert len(recorded(daemon)) == 4
    assert (spool / "done" / "a.jsonl.2").exists()
    # a different trace under a used name is refused, not mixed in
    (spool / "b.jsonl").write_text(line("2026-03-01T09:00:09Z", 9, "b") + "\n")
    daemon.round()
    assert "different trace" in (spool / "rejected" / "b.jsonl.error").read_text()
    # a trace older than the store's last input is refused with its line
    (spool / "e.jsonl").write_text(line("2026-03-01T08:00:00Z", 1, "e") + "\n")
    daemon.round()
    assert "earlier than the store's last input" in (spool / "rejected" / "e.jsonl.error").read_text()
    # nothing of it is recorded; the runtime's incident naming it is (issue 22, point 6)
    assert recorded(daemon)[4:] == [("health.incident", None, None)]


def test_watchdog_rows_are_imported_once_by_id(tmp_path: Path) -> None:
    clocks = Clocks()
    store = WatchdogStore(tmp_path / "wd.db")
    store.heartbeat(3, 1, T0)
    store.open_incident("daemon_dead", "pid 7 is not running", T0)
    daemon = daemon_on(tmp_path, clocks)
    daemon.start()
    imported = [kind for kind, _, _ in recorded(daemon)]
    assert imported == ["watchdog.heartbeat", "health.incident", "daemon.start"]
    assert daemon.engine is not None and daemon.engine.views is not None
    assert daemon.engine.views.view("health")["watchdog_generation"] == 3

    store.heartbeat(3, 2, T0)
    daemon.round()
    daemon.round()
    assert [kind for kind, _, _ in recorded(daemon)][3:] == ["watchdog.heartbeat"]

    # A new process on the same store reads the file from the start, a few
    # rows a read, and skips what is recorded.
    for n in (3, 4, 5):
        store.heartbeat(3, n, T0)
    again = Daemon(daemon.settings, clock=lambda: clocks.wall, monotonic=lambda: clocks.mono)
    again.engine = daemon.engine
    again.importer.limit = 2
    again.import_watchdog()
    assert [kind for kind, _, _ in recorded(daemon)][4:] == ["watchdog.heartbeat"] * 3
    assert again.importer.after_seq == 6 and not again.importer.more


def test_idle_ticks_and_the_snapshot(tmp_path: Path) -> None:
    clocks = Clocks()
    daemon = daemon_on(tmp_path, clocks, tick_s=30.0, publish_interval_s=5.0)
    daemon.start()
    clocks.advance(29)
    daemon.round()
    # An empty store: daemon.start waits (engine.configure may still come first)...
    assert [kind for kind, _, _ in recorded(daemon)] == []
    # ...until the first input: here the runtime's own tick, which it precedes.
    clocks.advance(1)
    daemon.round()
    assert [kind for kind, _, _ in recorded(daemon)] == ["daemon.start", "tick"]
    clocks.advance(5)  # published every 5 s
    daemon.round()

    published = read_snapshot(tmp_path / "health.json")
    assert published is not None
    assert published["state"] == "running" and published["expected_stop"] is False
    assert published["last_input"]["seq"] == 2 and published["last_input"]["at"] == "2026-03-01T09:00:30Z"
    assert published["open_incidents"] == [] and published["watchdog_fresh"] is False

    daemon.ask_to_stop()
    daemon.stop(expected=True)
    final = read_snapshot(tmp_path / "health.json")
    assert final is not None and final["state"] == "stopped" and final["expected_stop"] is True
    assert recorded(daemon)[-1] == ("daemon.stop", None, None)
