"""Gate 19 end to end (contract v1.2 sections 4.1, 4.3 and 14): "daemon dead /
expired auth -> independent health incident + notification", with the real
`tandem watchdog` and `tandem daemon` processes.

The daemon is not running. The real watchdog reads a provider snapshot whose
credential exposes its expiry, a second away; by its own clock the expiry
passes, and it writes a readiness row and notifies through its own path (the
notify log), as it does for the daemon being down. The daemon, started
afterwards, imports the rows: `provider.readiness` becomes incident
`provider/anthropic` with its alert, and deliveries to the conversation on
that provider wait; heartbeats carry their `beat_at`. A renewed login is a
ready row: the daemon recovers the incident and the queued message goes.
"""

from __future__ import annotations

import datetime
import json
import signal
from pathlib import Path

from tandem.adapters.health_file import format_time, write_atomically
from tandem.adapters.providers_file import providers_format
from tests.e2e.test_daemon_watchdog import FAST, Process, drop, now_at, processes, recorded, running, views, wait_for, watchdog_rows

__all__ = ["processes"]  # the fixture, imported


def write_providers(path: Path, **anthropic: object) -> None:
    body = {"format": providers_format, "providers": [{"provider": "anthropic", **anthropic}]}
    write_atomically(path, json.dumps(body).encode())


def test_an_expired_login_is_an_incident_through_the_real_watchdog(tmp_path: Path, processes: list[Process]) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    spool, health, watchdog_db = tmp_path / "spool", tmp_path / "health.json", tmp_path / "wd.db"
    notify_log, providers = tmp_path / "notify.log", tmp_path / "providers.json"
    spool.mkdir()
    expires = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1)
    write_providers(providers, ready=True, auth_expires_at=format_time(expires))

    # The daemon is down: only the watchdog runs.
    watchdog = Process(
        tmp_path / "watchdog.log", "watchdog", "--health", str(health), "--db", str(watchdog_db), "--max-age", "1",
        "--interval", "0.1", "--notify-log", str(notify_log), "--providers", str(providers),
    )  # fmt: skip
    processes.append(watchdog)

    def readiness() -> list[tuple]:
        return watchdog_rows(watchdog_db, "readiness")

    rows = wait_for("the expiry judged by the watchdog's clock", lambda: [r for r in readiness() if not r[3]] and readiness(), watchdog)
    (_, _, provider, ready, reason, auth_expires_at, _) = rows[-1]
    assert (provider, ready, reason, auth_expires_at) == ("anthropic", 0, "auth_expired", format_time(expires))
    assert all(row[3:5] == (1, None) for row in rows[:-1])  # ready before the expiry (if it saw that at all)
    wait_for("the daemon's own incident", lambda: watchdog_rows(watchdog_db, "incidents"), watchdog)
    notified = notify_log.read_text()
    assert "Tandem provider anthropic not ready (auth_expired)" in notified
    assert "Tandem daemon down" in notified  # the same independent path, with the daemon unavailable

    # The daemon comes back, with a foreground on that provider.
    drop(spool, "a.jsonl", [
        json.dumps({"type": "conversation.open", "at": now_at(), "actor": "daemon", "conversation_id": "fg",
                    "role": "foreground", "context_limit": 200000, "reserve": 20000, "provider": "anthropic"}),
    ])  # fmt: skip
    daemon = Process(
        tmp_path / "daemon.log", "daemon", "--store", url, "--spool", str(spool), "--health", str(health),
        "--watchdog-db", str(watchdog_db), "--spool-actors", "daemon,human", *FAST,
    )  # fmt: skip
    processes.append(daemon)
    readiness_ids = [row[0] for row in readiness()]
    wait_for("the readiness rows imported", lambda: {e.input.id for e in recorded(url)} >= set(readiness_ids), daemon)
    wait_for("the daemon running", running(health, daemon.pid), daemon)
    # The human writes: the message waits for the provider.
    message = {"type": "human.message", "at": now_at(), "actor": "human", "conversation_id": "fg", "message_id": "m1",
               "text": "anything new?", "tokens": 3}  # fmt: skip
    drop(spool, "b.jsonl", [json.dumps(message)])
    wait_for("m1 queued", lambda: views(url)["conversations"][0]["queue"], daemon)
    shown = views(url)
    assert shown["rejections"] == []
    alerts = {alert["alert_id"]: alert for alert in shown["alerts"]}
    assert alerts["incident:provider/anthropic"]["state"] == "raised"
    [incident] = [row for row in shown["health"]["incidents"] if row["incident_id"] == "provider/anthropic"]
    assert incident["kind"] == "auth_expired" and incident["observed_at"] is not None
    [row] = shown["health"]["providers"]
    assert (row["provider"], row["ready"], row["reason"], row["auth_expires_at"]) == (
        "anthropic", False, "auth_expired", shown["health"]["providers"][0]["auth_expires_at"],
    )  # fmt: skip
    [fg] = shown["conversations"]
    assert (fg["provider"], fg["queue"], fg["deliveries"]) == ("anthropic", ["m1"], [])  # deliveries wait
    heartbeats = [e.input for e in recorded(url) if e.input.input_type == "watchdog.heartbeat"]
    assert heartbeats and all(beat.beat_at is not None for beat in heartbeats)  # each row's own time
    # Rows written while the daemon was down were imported at its start: their beat times are earlier.
    assert any(beat.beat_at < beat.at for beat in heartbeats)
    assert shown["health"]["last_heartbeat_imported_at"] is not None

    # The login is renewed: a ready row; the daemon recovers the incident and m1 goes.
    write_providers(providers, ready=True, auth_expires_at=format_time(expires + datetime.timedelta(hours=8)))
    wait_for("the ready row", lambda: readiness()[-1][3] == 1 and readiness(), watchdog)
    ready_id = readiness()[-1][0]
    wait_for("the ready row imported", lambda: any(e.input.id == ready_id for e in recorded(url)), daemon, watchdog)
    wait_for("m1 delivered", lambda: views(url)["conversations"][0]["deliveries"], daemon)
    shown = views(url)
    alerts = {alert["alert_id"]: alert for alert in shown["alerts"]}
    assert alerts["incident:provider/anthropic"]["state"] == "resolved"
    assert "provider/anthropic" not in shown["health"]["open_incidents"]
    assert shown["conversations"][0]["deliveries"][0]["messages"] == ["m1"]
    assert "Tandem provider anthropic ready again" in notify_log.read_text()
    assert daemon.signal(signal.SIGTERM) == 0
    assert watchdog.signal(signal.SIGTERM) == 0
