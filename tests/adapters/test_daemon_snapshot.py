"""The daemon writes a snapshot when it stops (when enough events came since
the last one), so its next start folds almost nothing."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

import tandem.adapters.runtime as daemon_module
from tandem.adapters.daemon import Daemon, Settings

T0 = datetime.datetime(2026, 3, 1, 9, 0, 0, tzinfo=datetime.timezone.utc)


def started(tmp_path: Path) -> Daemon:
    (tmp_path / "spool").mkdir(exist_ok=True)
    settings = Settings(
        store_url="memory:", spool=tmp_path / "spool", health=tmp_path / "health.json", watchdog_db=tmp_path / "wd.db"
    )
    daemon = Daemon(settings, clock=lambda: T0, monotonic=lambda: 0.0)
    daemon.spool.prepare()
    # One input waiting, so the store is not empty and daemon.start is recorded at once.
    (tmp_path / "spool" / "first.jsonl").write_text('{"type": "tick", "at": "2026-03-01T09:00:00Z", "actor": "daemon"}\n')
    daemon.open()
    daemon.start()
    return daemon


def test_a_stop_writes_a_snapshot_at_the_head(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(daemon_module, "stop_snapshot_events_min", 1)
    daemon = started(tmp_path)
    daemon.stop(expected=True)
    assert daemon.engine is not None and daemon.engine.store is not None
    store = daemon.engine.store
    assert [info.position for info in store.list_snapshots()] == [store.head()]


def test_a_stop_after_a_few_events_writes_none(tmp_path: Path) -> None:
    daemon = started(tmp_path)
    daemon.stop(expected=True)
    assert daemon.engine is not None and daemon.engine.store is not None
    assert daemon.engine.store.head() < daemon_module.stop_snapshot_events_min
    assert daemon.engine.store.list_snapshots() == []
