"""Contract v1.2 section 4, health probes: a heartbeat's own time (4.1),
incidents with their own times (4.2), provider readiness and expired auth
(4.3), task progress against its deadline (4.4), suspend and resume (4.5),
and the views they add (4.6). Given / when / then."""

from __future__ import annotations

from typing import Any

import pytest

from tandem.domain import events as ev
from tests.unit.helpers import (
    action_state,
    answer,
    attach_evidence,
    at,
    cancel_task,
    complete_task,
    configure,
    conversation_row,
    delegate,
    given,
    heartbeat,
    kinds,
    line,
    message,
    of_type,
    open_foreground,
    outcome,
    pause,
    policy,
    propose,
    raise_question,
    receipt,
    rejection,
    resume,
    revise_task,
    task_row,
    tick,
    when,
    world,
)


def health(engine) -> dict[str, Any]:
    return engine.views.view("health")


def alert(engine, alert_id: str) -> dict[str, Any] | None:
    return next((row for row in engine.views.view("alerts") if row["alert_id"] == alert_id), None)


def readiness(provider: str = "anthropic", ready: bool = False, n: float = 0, actor: str = "watchdog", **kw: Any):
    fields: dict[str, Any] = {"provider": provider, "ready": ready, **kw}
    if not ready and "reason" not in fields:
        fields["reason"] = "auth_expired"
    return line("provider.readiness", actor, n, **fields)


def suspend(n: float = 0, actor: str = "daemon"):
    return line("host.suspend", actor, n)


def wake(n: float = 0, actor: str = "daemon"):
    return line("host.resume", actor, n)


# ------------------------------------------------------- 4.1 beat time


def test_a_heartbeat_imported_after_downtime_is_not_fresh():
    # Given a watchdog row written at 0 and imported 5,405 s later
    engine = given(policy())
    events = when(engine, heartbeat(3, at=at(5405), beat_at=at(0)))
    # Then its beat time is when it was written, and it is stale
    [recorded] = of_type(events, ev.HeartbeatRecorded)
    assert recorded.beat_at == engine.state.health.heartbeat_at
    view = health(engine)
    assert view["last_heartbeat_at"] == at(0)
    assert view["last_heartbeat_imported_at"] == at(5405)
    assert view["watchdog_fresh"] is False and view["unattended_dispatch"] == "held"


def test_a_beat_at_ahead_of_at_earns_nothing():
    engine = given(policy())
    when(engine, heartbeat(1, at=at(10), beat_at=at(500)))
    assert health(engine)["last_heartbeat_at"] == at(10)
    when(engine, tick(at=at(10 + 121)))
    assert health(engine)["watchdog_fresh"] is False


def test_an_older_row_never_lowers_the_last_heartbeat():
    engine = given(policy(), heartbeat(1, at=at(100), beat_at=at(99)))
    when(engine, heartbeat(1, at=at(101), beat_at=at(10)))
    view = health(engine)
    assert view["last_heartbeat_at"] == at(99) and view["last_heartbeat_imported_at"] == at(100)
    assert view["watchdog_fresh"] is True


def test_a_v1_heartbeat_records_no_beat_at():
    engine = given(policy())
    [recorded] = of_type(when(engine, heartbeat(1, at=at(5))), ev.HeartbeatRecorded)
    assert b"beat_at" not in ev.encode_event(recorded)
    assert health(engine)["last_heartbeat_imported_at"] == health(engine)["last_heartbeat_at"] == at(5)


def test_stale_generation_with_beat_at():
    engine = given(policy(), heartbeat(3, at=at(1)))
    assert rejection(when(engine, heartbeat(2, at=at(2), beat_at=at(2)))) == "stale_generation"


def test_an_old_imported_heartbeat_holds_unattended_claims():
    engine = given(*world(heartbeat_at=0)[:4], delegate("t1"), heartbeat(1, at=at(1000), beat_at=at(0)))
    when(engine, propose("op-1", at=at(1000)))
    assert action_state(engine, "op-1") == "pending"
    assert "watchdog_unavailable" in engine.views.view("actions")[0]["blocked_by"]


# ------------------------------------------------------- 4.2 incident times


def test_an_incident_shows_its_own_times():
    engine = given(policy())
    when(engine, line("health.incident", "watchdog", 50, incident_id="i1", kind="daemon_dead", detail="no pid",
                      observed_at=at(40), last_success_at=at(10)))
    assert health(engine)["incidents"] == [
        {"incident_id": "i1", "kind": "daemon_dead", "observed_at": at(40), "last_success_at": at(10)}
    ]
    assert alert(engine, "incident:i1")["first_raised_at"] == at(50)  # alerts keep the input's `at`


def test_a_v1_incident_shows_null_times():
    engine = given(policy())
    events = when(engine, line("health.incident", "watchdog", 5, incident_id="i1", kind="daemon_dead", detail="x"))
    assert b"observed_at" not in ev.encode_event(of_type(events, ev.IncidentOpened)[0])
    assert health(engine)["incidents"][0]["observed_at"] is None


# ------------------------------------------------ 4.3 provider readiness


def provider_world() -> list[dict[str, Any]]:
    return [policy(), open_foreground("fg", provider="anthropic"), heartbeat(1)]


def test_not_ready_opens_the_provider_incident_and_deliveries_wait():
    engine = given(*provider_world())
    events = when(engine, readiness(n=6, observed_at=at(4)))
    assert kinds(events)[:4] == ["InputAccepted", "ProviderReadinessRecorded", "IncidentOpened", "AlertRaised"]
    assert health(engine)["incidents"] == [
        {"incident_id": "provider/anthropic", "kind": "auth_expired", "observed_at": at(4), "last_success_at": None}
    ]
    assert alert(engine, "incident:provider/anthropic")["state"] == "raised"
    # When the human writes, the message stays queued
    events = when(engine, message("m7", at=at(30)))
    assert not of_type(events, ev.TurnStarted)
    assert conversation_row(engine)["queue"] == ["m7"]
    assert conversation_row(engine)["provider"] == "anthropic"
    # Then a ready report recovers it, resolves the alert, and m7 goes in that pass
    events = when(engine, readiness(ready=True, n=40))
    assert "IncidentRecovered" in kinds(events) and of_type(events, ev.TurnStarted)
    assert alert(engine, "incident:provider/anthropic")["state"] == "resolved"
    assert conversation_row(engine)["queue"] == []
    assert health(engine)["providers"] == [
        {"provider": "anthropic", "ready": True, "reason": None, "observed_at": at(40), "auth_expires_at": None,
         "last_ready_at": at(40)}
    ]


def test_another_not_ready_report_while_open_changes_nothing():
    engine = given(*provider_world(), readiness(n=1))
    events = when(engine, readiness(n=2, reason="unreachable"))
    assert not of_type(events, ev.IncidentOpened) and not of_type(events, ev.AlertRaised)
    assert alert(engine, "incident:provider/anthropic")["count"] == 1


def test_a_conversation_on_another_provider_is_not_held():
    engine = given(policy(), open_foreground("fg", provider="openai"), heartbeat(1), readiness(n=1))
    events = when(engine, message("m1", at=at(2)))
    assert of_type(events, ev.TurnStarted)


@pytest.mark.parametrize("actor", ["background", "foreground"])
def test_no_model_reports_readiness(actor):
    engine = given(*provider_world())
    assert rejection(when(engine, readiness(actor=actor))) == "not_authorized"


def test_not_ready_needs_a_reason():
    from tandem.domain.inputs import decode_input
    import msgspec

    with pytest.raises(msgspec.ValidationError):
        decode_input('{"type":"provider.readiness","at":"2026-03-01T09:00:00Z","actor":"watchdog","provider":"p","ready":false}')


def test_a_known_expiry_opens_the_incident_when_it_passes():
    engine = given(*provider_world(), readiness(ready=True, n=1, auth_expires_at=at(100)))
    assert not when(engine, tick(at=at(99)))[1:]
    events = when(engine, tick(at=at(100)))
    [opened] = of_type(events, ev.IncidentOpened)
    assert (opened.incident_id, opened.kind, opened.reported_by) == ("provider/anthropic", "auth_expired", "engine")
    assert opened.detail == "known credential expiry passed"
    assert alert(engine, "incident:provider/anthropic")["count"] == 1
    assert not of_type(when(engine, tick(at=at(200))), ev.IncidentOpened)  # once


def test_a_ready_report_observed_after_the_expiry_renews_it():
    engine = given(*provider_world(), readiness(ready=True, n=1, auth_expires_at=at(100)))
    when(engine, readiness(ready=True, n=150, observed_at=at(120)))
    assert not of_type(when(engine, tick(at=at(151))), ev.IncidentOpened)
    assert health(engine)["incidents"] == []


def test_a_ready_report_observed_before_the_expiry_does_not_renew_it():
    engine = given(*provider_world(), readiness(ready=True, n=1, auth_expires_at=at(100)))
    events = when(engine, readiness(ready=True, n=150, observed_at=at(90)))
    assert of_type(events, ev.IncidentOpened)  # the same pass: the expiry passed with no later ready report


# ------------------------------------------------- 4.4 task progress


def progress_world(deadline: int = 60) -> list[dict[str, Any]]:
    return [*world()[:5], delegate("t1", progress_deadline_s=deadline)]


def test_task_without_progress_by_its_deadline_alerts():
    engine = given(*progress_world())
    assert task_row(engine, "t1")["progress_due_at"] == at(60)
    assert not of_type(when(engine, tick(at=at(59))), ev.TaskStalled)
    events = when(engine, tick(at=at(60)))
    [stalled] = of_type(events, ev.TaskStalled)
    assert (stalled.last_progress_event, stalled.progress_deadline_s) == ("TaskDelegated", 60)
    assert alert(engine, "no_progress:t1")["state"] == "raised"
    assert task_row(engine, "t1")["progress_due_at"] is None
    assert not of_type(when(engine, tick(at=at(500))), ev.AlertRaised)  # once per occurrence


def test_progress_resolves_no_progress_and_restarts_the_clock():
    engine = given(*progress_world(), tick(at=at(60)))
    when(engine, propose("op-1", at=at(70)))  # proposed and claimed: progress
    assert alert(engine, "no_progress:t1")["state"] == "resolved"
    assert task_row(engine, "t1")["last_progress_at"] == at(70)
    assert task_row(engine, "t1")["progress_due_at"] == at(130)


def test_an_outcome_exactly_at_the_due_time_is_progress():
    engine = given(*progress_world(), propose("op-1", at=at(1)), receipt("op-1", at=at(2)))
    events = when(engine, outcome("op-1", at=at(62)))
    assert not of_type(events, ev.TaskStalled)


def test_ticks_and_heartbeats_are_not_progress():
    engine = given(*progress_world())
    when(engine, heartbeat(1, at=at(30)))
    when(engine, tick(at=at(40)))
    assert task_row(engine, "t1")["last_progress_at"] == at(0)


def test_a_held_task_is_waiting_not_stalled():
    engine = given(*progress_world(), raise_question("t1", "q1", at=at(10)))
    assert task_row(engine, "t1")["holds"] == ["question_hold"]
    assert task_row(engine, "t1")["progress_due_at"] is None
    assert not of_type(when(engine, tick(at=at(500))), ev.TaskStalled)
    when(engine, answer("t1", "q1", at=at(600)))  # the holds lift: progress
    assert task_row(engine, "t1")["progress_due_at"] == at(660)


def test_a_paused_task_lifting_restarts_its_clock():
    engine = given(*progress_world(), pause("t1", at=at(10)))
    when(engine, resume("t1", at=at(300)))
    assert task_row(engine, "t1")["progress_due_at"] == at(360)


def test_a_task_no_longer_active_resolves_no_progress():
    engine = given(*progress_world(), tick(at=at(60)))
    when(engine, cancel_task("t1", at=at(61)))
    assert alert(engine, "no_progress:t1")["state"] == "resolved"
    assert task_row(engine, "t1")["progress_due_at"] is None


def test_a_revision_may_name_the_deadline_alone():
    engine = given(*world())
    assert task_row(engine, "t1")["progress_due_at"] is None
    when(engine, revise_task("t1", 1, progress_deadline_s=30, at=at(5)))
    row = task_row(engine, "t1")
    assert (row["revision"], row["progress_due_at"]) == (2, at(35))


def test_a_completed_task_has_no_due_time():
    engine = given(*progress_world(), propose("op-1", at=at(1)), receipt("op-1", at=at(2)), outcome("op-1", at=at(3)))
    when(engine, complete_task("t1", evidence_refs=["e1"], at=at(4)))
    assert task_row(engine, "t1")["progress_due_at"] is None
    assert not of_type(when(engine, tick(at=at(1000))), ev.TaskStalled)


def test_evidence_attached_to_a_task_action_is_progress():
    """Section 4.4 with 2.5: "evidence attached to one of its actions" restarts
    the task's clock (state, view, the stall's facts and explain); evidence
    that is not attached (rejected) is not progress."""
    from tandem.replay.engine import Engine, Located
    from tandem.replay.explain import explain
    from tandem.replay.proving import ProvingStore
    from tests.unit.helpers import decode

    engine = Engine(ProvingStore())
    trace = [
        *progress_world(), propose("op-1", at=at(1)), receipt("op-1", at=at(2)), outcome("op-1", at=at(3)),
        attach_evidence("op-2", at=at(20)),  # no such action: rejected, not progress
    ]  # fmt: skip
    for number, item in enumerate(trace, 1):
        engine.submit(Located(decode(item), line=number))
    assert task_row(engine, "t1")["last_progress_at"] == at(3)
    events = when(engine, attach_evidence("op-1", "ev/tests", at=at(40)))
    assert of_type(events, ev.EvidenceAttached)
    row = task_row(engine, "t1")
    assert (row["last_progress_at"], row["progress_due_at"]) == (at(40), at(100))
    assert engine.state.tasks.by_id["t1"].last_progress_event == "EvidenceAttached"
    assert not of_type(when(engine, tick(at=at(63))), ev.TaskStalled)  # due at 63 without it
    [stalled] = of_type(when(engine, tick(at=at(100))), ev.TaskStalled)
    assert (stalled.last_progress_event, stalled.last_progress_at.isoformat()) == ("EvidenceAttached", "2026-03-01T09:00:40+00:00")
    [explained] = explain(engine.store, "no_progress:t1")
    [fact] = [fact for step in explained.steps for fact in step.facts if fact.name == "task_progress"]
    assert fact.text == f"last progress of t1: EvidenceAttached at {at(40)} (progress_deadline_s 60)"


# ------------------------------------------------- 4.5 suspend and resume


def test_suspend_holds_unattended_claims_and_is_no_incident():
    engine = given(*world())
    events = when(engine, suspend(n=1))
    assert not of_type(events, ev.IncidentOpened)
    assert health(engine)["host"] == "suspended" and health(engine)["watchdog_fresh"] is False
    when(engine, propose("op-1", at=at(2)))
    assert action_state(engine, "op-1") == "pending"


def test_resume_rechecks_health_with_a_heartbeat_written_since():
    engine = given(*world(), suspend(n=1))
    when(engine, wake(n=5000))
    view = health(engine)
    assert (view["host"], view["last_resume_at"], view["watchdog_fresh"]) == ("resuming", at(5000), False)
    when(engine, heartbeat(1, at=at(5001), beat_at=at(0)))  # a row from before the suspend never counts again
    assert health(engine)["host"] == "resuming"
    when(engine, heartbeat(1, at=at(5002)))
    assert health(engine)["host"] == "running" and health(engine)["watchdog_fresh"] is True


def test_an_unannounced_suspend_is_a_resume():
    engine = given(configure(suspend_gap_s=600), *world())
    events = when(engine, tick(at=at(1000)))
    [resumed] = of_type(events, ev.HostResumed)
    assert (resumed.announced, resumed.at, resumed.previous_at) == (False, engine.state.last_at, engine.state.previous_at)
    assert health(engine)["host"] == "resuming"


def test_a_heartbeat_after_a_gap_rechecks_health_at_once():
    engine = given(configure(suspend_gap_s=600), *world())
    when(engine, heartbeat(1, at=at(1000)))
    assert health(engine)["host"] == "running" and health(engine)["watchdog_fresh"] is True


def test_without_suspend_gap_s_a_gap_is_nothing():
    engine = given(*world())
    assert not of_type(when(engine, tick(at=at(100_000))), ev.HostResumed)
    assert health(engine)["host"] == "running"


def test_a_suspend_after_a_gap_stays_suspended():
    engine = given(configure(suspend_gap_s=600), *world())
    when(engine, suspend(n=1000))
    assert health(engine)["host"] == "suspended"


@pytest.mark.parametrize("kind", ["host.suspend", "host.resume"])
def test_no_model_suspends_the_host(kind):
    engine = given(*world())
    assert rejection(when(engine, line(kind, "background", 1))) == "not_authorized"


# ------------------------------------------------------------ 4.6 views


def test_the_v1_values_of_the_added_keys():
    engine = given(*world())
    view = health(engine)
    assert view["host"] == "running" and view["last_resume_at"] is None and view["providers"] == []
    assert view["last_heartbeat_imported_at"] == view["last_heartbeat_at"]
    assert task_row(engine, "t1")["last_progress_at"] == at(0)
    assert task_row(engine, "t1")["progress_due_at"] is None
    assert conversation_row(engine)["provider"] is None


def test_the_views_are_the_engine_state():
    engine = given(*progress_world(), readiness(n=1, auth_expires_at=at(50)), suspend(n=2), wake(n=3))
    state = engine.state
    assert health(engine)["host"] == state.health.host
    assert task_row(engine, "t1")["progress_due_at"] == at(60) == state.tasks.by_id["t1"].progress_due_at.strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )


# ------------------------------------------------ provenance (section 10)


def test_no_progress_records_the_last_progress_and_the_deadline():
    engine = given(*progress_world())
    [raised] = of_type(when(engine, tick(at=at(60))), ev.AlertRaised)
    facts = raised.facts
    assert (facts.task_id, facts.progress_deadline_s, facts.last_progress_event) == ("t1", 60, "TaskDelegated")
    assert facts.last_progress_at == engine.state.tasks.by_id["t1"].last_progress_at


def test_a_provider_incident_records_the_report_or_the_expiry():
    engine = given(*provider_world())
    [raised] = of_type(when(engine, readiness(n=5, observed_at=at(4))), ev.AlertRaised)
    assert (raised.facts.provider, raised.facts.reason, raised.facts.observed_at) == ("anthropic", "auth_expired", engine.state.health.providers["anthropic"].observed_at)
    engine = given(*provider_world(), readiness(ready=True, n=1, auth_expires_at=at(100)))
    [raised] = of_type(when(engine, tick(at=at(100))), ev.AlertRaised)
    assert raised.facts.observed_at is None and raised.facts.auth_expires_at == engine.state.health.providers["anthropic"].auth_expires_at


def test_a_block_while_the_host_sleeps_says_so():
    engine = given(*world(), suspend(n=1))
    [blocked] = of_type(when(engine, propose("op-1", at=at(2))), ev.ActionBlocked)
    [fact] = blocked.facts
    assert (fact.code, fact.host) == ("watchdog_unavailable", "suspended")


# ------------------------------------- 4.3 with 3.9, 3.10: provider_unready


def test_an_unready_provider_defers_its_conversations_until_it_is_ready():
    engine = given(*provider_world())
    # When the provider is not ready, fg is deferred provider_unready (until null) and health is degraded
    events = when(engine, readiness(n=6, observed_at=at(4)))
    [deferred] = of_type(events, ev.DeliveryDeferred)
    assert (deferred.conversation_id, deferred.reason, deferred.until) == ("fg", "provider_unready", None)
    assert conversation_row(engine)["deferred"] == {"until": None, "reason": "provider_unready"}
    assert health(engine)["degraded"] == ["provider_unready"]
    # a message while it lasts changes nothing about it
    assert not of_type(when(engine, message("m7", at=at(30))), ev.DeliveryDeferred)
    # Then its recovery ends the deferral, and m7 goes in that pass
    events = when(engine, readiness(ready=True, n=40))
    [ended] = of_type(events, ev.DeliveryDeferred)
    assert (ended.reason, ended.until, ended.facts) == (None, None, None)
    assert of_type(events, ev.TurnStarted)
    assert conversation_row(engine)["deferred"] is None
    assert health(engine)["degraded"] == []


def test_a_conversation_on_a_ready_provider_is_not_deferred():
    engine = given(policy(), open_foreground("fg", provider="openai"), heartbeat(1))
    assert not of_type(when(engine, readiness(n=1)), ev.DeliveryDeferred)
    assert conversation_row(engine)["deferred"] is None
    assert health(engine)["degraded"] == ["provider_unready"]  # an open provider incident (section 3.9)


def test_the_unready_deferral_records_the_provider_and_its_incident():
    engine = given(*provider_world())
    [deferred] = of_type(when(engine, readiness(n=6, observed_at=at(4))), ev.DeliveryDeferred)
    facts = deferred.facts
    assert (facts.provider, facts.incident_id) == ("anthropic", "provider/anthropic")
    assert facts.observed_at == engine.state.health.providers["anthropic"].observed_at
    # a known expiry's incident: observed at the expiry
    engine = given(*provider_world(), readiness(ready=True, n=1, auth_expires_at=at(100)))
    [deferred] = of_type(when(engine, tick(at=at(100))), ev.DeliveryDeferred)
    assert deferred.facts.observed_at == engine.state.health.providers["anthropic"].auth_expires_at

