"""The watchdog's decisions, one round at a time, with an injected clock and
pid check: what it judges from a snapshot, when it opens an incident (once per
occurrence), when it writes a recovery, and what the daemon reads back."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from tandem.adapters.health_file import format_time, write_atomically, write_snapshot
from tandem.adapters.watchdog import Watchdog, WatchdogStore, judge, read_facts
from tandem.domain.inputs import decode_input

T0 = datetime.datetime(2026, 3, 1, 9, 0, 0, tzinfo=datetime.timezone.utc)
MAX_AGE = 10.0


def seconds(n: float) -> datetime.datetime:
    return T0 + datetime.timedelta(seconds=n)


def snapshot(path: Path, written: float, state: str = "running", expected_stop: bool = False, pid: int = 4242) -> None:
    write_snapshot(
        path, {"pid": pid, "state": state, "expected_stop": expected_stop, "written_at": format_time(seconds(written))}
    )


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime.datetime:
        return self.now

    def at(self, n: float) -> None:
        self.now = seconds(n)


class Notes:
    def __init__(self) -> None:
        self.seen: list[tuple[str, bool]] = []

    def __call__(self, now: datetime.datetime, title: str, message: str, urgent: bool) -> None:
        self.seen.append((title, urgent))


def alive(pid: int) -> bool:
    return pid == 4242


# ----------------------------------------------------------------- judge


def test_judge_names_each_condition(tmp_path: Path) -> None:
    health = tmp_path / "health.json"
    since = T0
    assert judge(health, seconds(1), MAX_AGE, since, alive).condition == "not_yet_seen"
    missing = judge(health, seconds(11), MAX_AGE, since, alive)
    assert missing.condition == "down" and "no health snapshot" in missing.detail

    snapshot(health, written=20)
    assert judge(health, seconds(25), MAX_AGE, since, alive).condition == "healthy"
    stale = judge(health, seconds(31), MAX_AGE, since, alive)
    assert stale.condition == "down" and "alive but its snapshot is 11.0s old" in stale.detail

    snapshot(health, written=20, pid=999)
    dead = judge(health, seconds(21), MAX_AGE, since, alive)
    assert dead.condition == "down" and "pid 999 is not running" in dead.detail

    snapshot(health, written=20, state="stopped", expected_stop=True, pid=999)
    assert judge(health, seconds(500), MAX_AGE, since, alive).condition == "stopped_expectedly"
    snapshot(health, written=20, state="stopped", expected_stop=False, pid=999)
    assert judge(health, seconds(21), MAX_AGE, since, alive).condition == "down"

    write_atomically(health, b"{not json")
    unreadable = judge(health, seconds(30), MAX_AGE, since, alive)
    assert unreadable.condition == "down" and "not JSON" in unreadable.detail


# ----------------------------------------------------------------- rounds


def test_one_incident_per_occurrence_then_a_recovery(tmp_path: Path) -> None:
    health, clock, notes = tmp_path / "health.json", Clock(), Notes()
    store = WatchdogStore(tmp_path / "wd.db")
    watchdog = Watchdog(store, health, MAX_AGE, notes, clock, alive)

    snapshot(health, written=0)
    clock.at(1)
    assert watchdog.step().condition == "healthy"
    snapshot(health, written=1, pid=999)  # killed
    for n in (2, 3, 4):
        clock.at(n)
        assert watchdog.step().condition == "down"
    assert [incident for incident, _ in store.open_incidents()] == ["daemon_dead-1"]
    assert notes.seen == [("Tandem daemon down (daemon_dead-1)", True)]

    snapshot(health, written=5)  # back
    clock.at(5)
    watchdog.step()
    assert store.open_incidents() == []
    assert notes.seen[-1] == ("Tandem daemon back (daemon_dead-1 recovered)", False)

    snapshot(health, written=5)  # hangs: stale past max age
    clock.at(16)
    watchdog.step()
    assert [incident for incident, _ in store.open_incidents()] == ["daemon_dead-2"]


def test_an_expected_stop_is_not_an_incident(tmp_path: Path) -> None:
    health, clock, notes = tmp_path / "health.json", Clock(), Notes()
    store = WatchdogStore(tmp_path / "wd.db")
    watchdog = Watchdog(store, health, MAX_AGE, notes, clock, alive)
    snapshot(health, written=0, state="stopped", expected_stop=True, pid=999)
    for n in (1, 50, 500):
        clock.at(n)
        assert watchdog.step().condition == "stopped_expectedly"
    assert store.open_incidents() == [] and notes.seen == []


def test_a_clean_stop_after_an_incident_shows_the_daemon_was_back(tmp_path: Path) -> None:
    health, clock, notes = tmp_path / "health.json", Clock(), Notes()
    store = WatchdogStore(tmp_path / "wd.db")
    watchdog = Watchdog(store, health, MAX_AGE, notes, clock, alive)
    snapshot(health, written=0, pid=999)
    clock.at(1)
    watchdog.step()
    assert len(store.open_incidents()) == 1
    # restarted and stopped as asked between two rounds: written after the incident
    snapshot(health, written=3, state="stopped", expected_stop=True, pid=999)
    clock.at(4)
    watchdog.step()
    assert store.open_incidents() == []


def test_generations_go_up_with_each_process_and_rows_replay_in_order(tmp_path: Path) -> None:
    health, clock = tmp_path / "health.json", Clock()
    path = tmp_path / "wd.db"
    first = Watchdog(WatchdogStore(path), health, MAX_AGE, Notes(), clock, alive)
    clock.at(20)  # no snapshot for longer than max age: down
    first.step()
    first.store.close()
    second = Watchdog(WatchdogStore(path), health, MAX_AGE, Notes(), clock, alive)
    snapshot(health, written=21)
    clock.at(21)
    second.step()
    assert (first.generation, second.generation) == (1, 2)

    store_id, facts = read_facts(path, 0)
    assert [(fact.type, fact.id) for fact in facts] == [
        ("watchdog.heartbeat", "watchdog/heartbeat/1/1"),
        ("health.incident", "watchdog/incident/daemon_dead-1"),
        ("watchdog.heartbeat", "watchdog/heartbeat/2/1"),
        ("health.recovered", "watchdog/recovered/daemon_dead-1"),
    ]
    assert [fact.seq for fact in facts] == [1, 2, 3, 4]
    # each row decodes as the input the daemon will submit
    for fact in facts:
        value = decode_input(json.dumps({"at": "2026-03-01T09:00:00Z", **fact.input_fields()}))
        assert value.id == fact.id and value.sender == "watchdog"
    assert read_facts(path, 2) == (store_id, facts[2:])
    assert read_facts(path, 0, limit=1) == (store_id, facts[:1])


def test_heartbeats_are_pruned_to_the_latest(tmp_path: Path) -> None:
    store = WatchdogStore(tmp_path / "wd.db")
    for n in range(1, 8):
        store.heartbeat(1, n, seconds(n))
    store.prune_heartbeats(keep=3)
    _, facts = read_facts(tmp_path / "wd.db", 0)
    assert [fact.id for fact in facts] == [f"watchdog/heartbeat/1/{n}" for n in (5, 6, 7)]


# ------------------------------------------- contract v1.2 section 4: probes


def providers(path: Path, **anthropic: object) -> None:
    body = {"format": "tandem-providers/1", "providers": [{"provider": "anthropic", **anthropic}]}
    write_atomically(path, json.dumps(body).encode())


def test_a_heartbeat_row_becomes_an_input_with_its_own_beat_at(tmp_path: Path) -> None:
    store = WatchdogStore(tmp_path / "wd.db")
    store.heartbeat(1, 1, seconds(5))
    _, [fact] = read_facts(tmp_path / "wd.db", 0)
    value = decode_input(json.dumps({"at": "2026-03-01T11:00:00Z", **fact.input_fields()}))
    assert value.beat_at == seconds(5)  # imported later, it keeps the time it was written


def test_a_provider_readiness_row_per_change_and_a_known_expiry_by_the_watchdogs_clock(tmp_path: Path) -> None:
    health, clock, notes, path = tmp_path / "health.json", Clock(), Notes(), tmp_path / "providers.json"
    snapshot(health, written=0)
    providers(path, ready=True, auth_expires_at=format_time(seconds(30)))
    watchdog = Watchdog(WatchdogStore(tmp_path / "wd.db"), health, MAX_AGE, notes, clock, alive, providers_path=path)
    watchdog.step()
    clock.at(5)
    snapshot(health, written=5)
    watchdog.step()  # unchanged: no second row
    clock.at(30)
    snapshot(health, written=30)
    watchdog.step()  # the known expiry passed: not ready, notified though nobody reported it
    _, facts = read_facts(tmp_path / "wd.db", 0)
    rows = [fact for fact in facts if fact.type == "provider.readiness"]
    assert [(fact.ready, fact.kind) for fact in rows] == [(True, None), (False, "auth_expired")]
    assert notes.seen == [("Tandem provider anthropic not ready (auth_expired)", True)]
    value = decode_input(json.dumps({"at": "2026-03-01T09:00:31Z", **rows[-1].input_fields()}))
    assert (value.provider, value.ready, value.reason, value.observed_at) == ("anthropic", False, "auth_expired", seconds(30))
    assert value.auth_expires_at == seconds(30)
    providers(path, ready=True, auth_expires_at=format_time(seconds(9000)))  # renewed
    clock.at(31)
    snapshot(health, written=31)
    watchdog.step()
    assert notes.seen[-1] == ("Tandem provider anthropic ready again", False)


def test_an_unreadable_provider_snapshot_changes_nothing(tmp_path: Path) -> None:
    health, clock, notes, path = tmp_path / "health.json", Clock(), Notes(), tmp_path / "providers.json"
    snapshot(health, written=0)
    path.write_text("{")
    watchdog = Watchdog(WatchdogStore(tmp_path / "wd.db"), health, MAX_AGE, notes, clock, alive, providers_path=path)
    watchdog.step()
    _, facts = read_facts(tmp_path / "wd.db", 0)
    assert [fact.type for fact in facts] == ["watchdog.heartbeat"]
    assert notes.seen == [("Tandem provider snapshot unreadable", False)]
