"""Spec section 6: alerts (identity per cause, raised / seen / resolved, one
raise per occurrence), delivery obligations, health incidents, daemon
start/stop and the time rules (watchdog, fallbacks, stale questions)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tandem.adapters.store import open_store
from tandem.domain import events as ev
from tandem.replay.engine import Engine, Located
from tests.unit.helpers import (
    PR,
    answer,
    approval_required,
    approval_resolved,
    at,
    card,
    configure,
    context_reset,
    decode,
    delegate,
    given,
    grant_request,
    heartbeat,
    inbox_row,
    kinds,
    line,
    log_batch,
    log_pruned,
    log_reconcile,
    message,
    observe,
    of_type,
    open_foreground,
    outcome,
    policy,
    propose,
    provider_receipt,
    raise_question,
    receipt,
    rejection,
    revise_grant,
    rule,
    tick,
    triage,
    turn_ended,
    update_for,
    usage,
    when,
    world,
    entry,
    bind,
    open_background,
)


def alerts(engine: Engine) -> dict[str, dict[str, Any]]:
    return {row["alert_id"]: row for row in engine.views.view("alerts")}


def alert(engine: Engine, alert_id: str) -> dict[str, Any]:
    return alerts(engine)[alert_id]


def raised(events: list[ev.Event]) -> list[str]:
    return [event.alert_id for event in of_type(events, ev.AlertRaised)]


def resolved(events: list[ev.Event]) -> list[str]:
    return [event.alert_id for event in of_type(events, ev.AlertResolved)]


def seen_alert(alert_id: str, **kw: Any):
    return {**line("alert.seen", "human", alert_id=alert_id), **kw}


def resolve_alert(alert_id: str, **kw: Any):
    return {**line("alert.resolve", "human", alert_id=alert_id), **kw}


def incident(incident_id: str = "i1", kind: str = "daemon_dead", actor: str = "watchdog", **kw: Any):
    return {**line("health.incident", actor, incident_id=incident_id, kind=kind, detail="no pid"), **kw}


def recovered(incident_id: str = "i1", actor: str = "watchdog", **kw: Any):
    return {**line("health.recovered", actor, incident_id=incident_id), **kw}


def daemon_start(**kw: Any):
    return {**line("daemon.start", "daemon"), **kw}


def daemon_stop(expected: bool = True, **kw: Any):
    return {**line("daemon.stop", "daemon", expected=expected), **kw}


def comment(source_id: str, n: float, fingerprint: str = "v1"):
    return observe(source_id=source_id, kind="comment", fingerprint=fingerprint, at=at(n))


def comment_key(source_id: str) -> str:
    return f"comment:{PR}:{source_id}"


# ------------------------------------------------------------------ urgent


def busy_world() -> list[Any]:
    """fg runs a human turn (fg/t1, no steering): nothing else goes out now."""
    return [world(), message("m1"), provider_receipt("fg/d1")]


def test_an_urgent_revision_left_undelivered_is_raised_once_per_revision():
    engine = given(busy_world(), comment("c1", 1))
    events = when(engine, triage(comment_key("c1"), disposition="urgent", at=at(2)))
    assert raised(events) == [f"urgent:{comment_key('c1')}"]
    # a continuing condition raises nothing more
    for n in (3, 4):
        assert raised(when(engine, tick(at=at(n)))) == []
    row = alert(engine, f"urgent:{comment_key('c1')}")
    assert (row["kind"], row["state"], row["count"]) == ("urgent", "raised", 1)
    assert row["first_raised_at"] == row["last_raised_at"] == at(2)
    # a new revision is a new occurrence
    when(engine, comment("c1", 5, fingerprint="v2"))
    events = when(engine, triage(comment_key("c1"), update_revision=2, disposition="urgent", at=at(6)))
    assert raised(events) == [f"urgent:{comment_key('c1')}"]
    row = alert(engine, f"urgent:{comment_key('c1')}")
    assert (row["count"], row["first_raised_at"], row["last_raised_at"]) == (2, at(2), at(6))
    # the turn ends: the urgent update goes first in a wake; its acceptance resolves the alert
    events = when(engine, turn_ended("fg/t1", at=at(7)))
    assert of_type(events, ev.DeliveryCreated)[0].included == [(comment_key("c1"), 2)]
    assert resolved(events) == []
    events = when(engine, provider_receipt("fg/d2", at=at(8)))
    assert resolved(events) == [f"urgent:{comment_key('c1')}"]
    assert alert(engine, f"urgent:{comment_key('c1')}")["state"] == "resolved"


def test_an_urgent_update_delivered_in_the_same_pass_raises_nothing():
    engine = given(world(), comment("c1", 1))
    events = when(engine, triage(comment_key("c1"), disposition="urgent", at=at(2)))
    assert of_type(events, ev.DeliveryCreated)  # an idle fg wakes with it at once
    assert raised(events) == []
    assert alerts(engine) == {}


def test_two_urgent_causes_on_one_pr_are_independent_alerts():
    engine = given(busy_world(), comment("c1", 1), comment("c2", 1))
    when(engine, triage(comment_key("c1"), disposition="urgent", at=at(2)))
    when(engine, triage(comment_key("c2"), disposition="urgent", at=at(2)))
    one, two = f"urgent:{comment_key('c1')}", f"urgent:{comment_key('c2')}"
    assert set(alerts(engine)) == {one, two}
    # the human resolves one; the other stays raised
    when(engine, resolve_alert(one, at=at(3)))
    assert (alert(engine, one)["state"], alert(engine, two)["state"]) == ("resolved", "raised")
    # the human having resolved it, the continuing condition does not raise it again
    assert raised(when(engine, tick(at=at(4)))) == []
    # a wake holds both; its acceptance resolves the one still raised
    when(engine, turn_ended("fg/t1", at=at(5)))
    events = when(engine, provider_receipt("fg/d2", at=at(6)))
    assert resolved(events) == [one, two]  # one: the engine saw its end too (state stays resolved)
    assert {row["state"] for row in alerts(engine).values()} == {"resolved"}
    assert all(row["count"] == 1 for row in alerts(engine).values())


def test_a_refused_steer_raises_urgent_for_what_it_held():
    engine = given(
        policy(), open_foreground(steer=True), open_background(), bind(1), heartbeat(1), delegate("t1"),
        message("m1"), provider_receipt("fg/d1"), comment("c1", 1),
    )
    events = when(engine, triage(comment_key("c1"), disposition="urgent", at=at(2)))
    assert of_type(events, ev.DeliveryCreated)[0].kind == "steer"
    assert raised(events) == []
    events = when(engine, provider_receipt("fg/d2", result="refused", at=at(3)))
    assert raised(events) == [f"urgent:{comment_key('c1')}"]


# ------------------------------------------------------------ stale questions


def test_an_open_question_resurfaces_at_each_new_multiple_keeping_its_age():
    engine = given(configure(question_resurface_s=100), world(), raise_question("t1", "q1", at=at(10)))
    stale = "question_stale:t1/q1"
    assert raised(when(engine, tick(at=at(109)))) == []
    assert raised(when(engine, tick(at=at(110)))) == [stale]  # k = 1
    assert raised(when(engine, tick(at=at(150)))) == []
    # raising it again changes nothing of its age
    when(engine, raise_question("t1", "q1", at=at(160)))
    assert engine.views.view("questions")[0]["first_seen_at"] == at(10)
    events = when(engine, tick(at=at(400)))  # k = 3: once, not once per missed k
    assert raised(events) == [stale]
    assert of_type(events, ev.QuestionResurfaced)[0].k == 3
    row = alert(engine, stale)
    assert (row["count"], row["first_raised_at"], row["last_raised_at"]) == (2, at(110), at(400))
    assert raised(when(engine, tick(at=at(409)))) == []
    assert raised(when(engine, tick(at=at(410)))) == [stale]  # k = 4
    events = when(engine, answer("t1", "q1", at=at(511)))
    assert resolved(events) == [stale]
    assert raised(when(engine, tick(at=at(10_000)))) == []  # answered: never again


def test_a_question_of_a_task_that_ended_does_not_resurface():
    engine = given(configure(question_resurface_s=100), world(), raise_question("t1", "q1", at=at(10)),
                   line("task.cancel", "human", 20, task_id="t1"))
    assert raised(when(engine, tick(at=at(500)))) == []


# ---------------------------------------------------------------- watchdog


def test_watchdog_alert_resolves_when_fresh_and_counts_a_new_occurrence():
    engine = given(world(), propose("op-1", at=at(1)))
    events = when(engine, propose("op-2", at=at(200)))  # stale: op-2 held
    assert raised(events) == ["watchdog_unavailable:engine"]
    assert raised(when(engine, propose("op-3", at=at(201)))) == []  # continuing
    events = when(engine, heartbeat(2, at=at(202)))
    assert resolved(events) == ["watchdog_unavailable:engine"]
    assert engine.views.view("health")["unattended_dispatch"] == "allowed"
    events = when(engine, propose("op-4", at=at(400)))
    assert raised(events) == ["watchdog_unavailable:engine"]
    row = alert(engine, "watchdog_unavailable:engine")
    assert (row["state"], row["count"], row["first_raised_at"], row["last_raised_at"]) == ("raised", 2, at(200), at(400))


def test_a_stale_heartbeat_holds_new_unattended_dispatch_and_keeps_accepted_work():
    engine = given(world(), propose("op-1", resource="wt-1", at=at(1)), receipt("op-1", at=at(2)))
    events = when(engine, propose("op-2", resource="wt-2", at=at(200)))
    assert of_type(events, ev.ActionBlocked)[0].blocked_by == ["watchdog_unavailable"]
    assert engine.views.view("health")["unattended_dispatch"] == "held"
    # accepted work goes on: its outcome is accepted while the watchdog is stale
    events = when(engine, outcome("op-1", at=at(201)))
    assert rejection(events) is None
    states = {row["operation_id"]: row["state"] for row in engine.views.view("actions")}
    assert states == {"op-1": "succeeded", "op-2": "pending"}
    # attended work is not held
    events = when(engine, propose("op-3", resource="wt-3", unattended=False, at=at(202)))
    assert [claim.attempt_id for claim in of_type(events, ev.ActionClaimed)] == ["op-3/a1"]


# --------------------------------------------------------------- incidents


def test_incidents_raise_once_while_open_and_again_after_recovery():
    engine = given(world())
    events = when(engine, incident("i1", at=at(1)))
    assert raised(events) == ["incident:i1"]
    assert engine.views.view("health")["open_incidents"] == ["i1"]
    events = when(engine, incident("i1", at=at(2)))  # open already: accepted, nothing new
    assert rejection(events) is None and kinds(events) == ["InputAccepted"]
    when(engine, incident("i0", actor="daemon", kind="auth_expired", at=at(3)))
    assert engine.views.view("health")["open_incidents"] == ["i0", "i1"]
    assert resolved(when(engine, recovered("i1", at=at(4)))) == ["incident:i1"]
    assert rejection(when(engine, recovered("i1", at=at(5)))) == "not_open"
    assert rejection(when(engine, recovered("nope", at=at(5)))) == "not_open"
    events = when(engine, incident("i1", at=at(6)))  # reused after recovery: a new occurrence
    assert raised(events) == ["incident:i1"]
    row = alert(engine, "incident:i1")
    assert (row["kind"], row["state"], row["count"], row["last_raised_at"]) == ("incident", "raised", 2, at(6))
    assert rejection(when(engine, incident("i2", actor="source", at=at(7)))) == "not_authorized"


def test_daemon_start_after_anything_but_an_expected_stop_is_a_crash():
    engine = given(world())
    assert raised(when(engine, daemon_start(at=at(1)))) == []  # the very first start
    when(engine, daemon_stop(True, at=at(2)))
    assert raised(when(engine, daemon_start(at=at(3)))) == []  # after an expected stop
    events = when(engine, daemon_start(at=at(4)))  # a start with no stop before it
    assert raised(events) == ["incident:daemon_crash/1"]
    assert of_type(events, ev.IncidentOpened)[0].kind == "daemon_crash"
    when(engine, daemon_stop(False, at=at(5)))
    assert raised(when(engine, daemon_start(at=at(6)))) == ["incident:daemon_crash/2"]
    assert engine.views.view("health")["open_incidents"] == ["daemon_crash/1", "daemon_crash/2"]
    assert resolved(when(engine, recovered("daemon_crash/1", actor="daemon", at=at(7)))) == ["incident:daemon_crash/1"]
    assert rejection(when(engine, daemon_start(actor="watchdog", at=at(8)))) == "not_authorized"


# ------------------------------------------------------------ alert inputs


def test_seen_is_not_resolved_and_a_new_occurrence_raises_again():
    engine = given(world(), incident("i1", at=at(1)))
    assert rejection(when(engine, seen_alert("incident:nope"))) == "unknown_alert"
    assert rejection(when(engine, resolve_alert("incident:nope"))) == "unknown_alert"
    assert rejection(when(engine, seen_alert("incident:i1", actor="background"))) == "not_authorized"
    when(engine, seen_alert("incident:i1", at=at(2)))
    assert alert(engine, "incident:i1")["state"] == "seen"
    assert engine.views.view("health")["open_incidents"] == ["i1"]  # seen is not resolved
    when(engine, resolve_alert("incident:i1", at=at(3)))
    assert alert(engine, "incident:i1")["state"] == "resolved"
    assert kinds(when(engine, seen_alert("incident:i1", at=at(4)))) == ["InputAccepted"]  # nothing to see
    assert kinds(when(engine, resolve_alert("incident:i1", at=at(4)))) == ["InputAccepted"]
    when(engine, recovered("i1", at=at(5)))
    when(engine, incident("i1", at=at(6)))
    row = alert(engine, "incident:i1")
    assert (row["state"], row["count"], row["first_raised_at"], row["last_raised_at"]) == ("raised", 2, at(1), at(6))


# ---------------------------------------------------- budgets, approvals, etc.


def test_budget_alert_raised_once_and_resolved_by_a_lifting_revise():
    engine = given(world(), delegate("t2", grant=grant_request("g-t2", token_limit=100)), propose("op-1", task_id="t2"))
    assert raised(when(engine, usage("op-1", input_tokens=100, at=at(1)))) == ["budget_exhausted:g-t2"]
    assert raised(when(engine, usage("op-1", input_tokens=5, at=at(2)))) == []
    # usage 105: a limit of 150 lifts it
    assert resolved(when(engine, revise_grant("g-t2", token_limit=150, at=at(3)))) == ["budget_exhausted:g-t2"]
    assert alert(engine, "budget_exhausted:g-t2")["state"] == "resolved"


def test_budget_alert_stays_while_a_revise_keeps_the_limit_under_the_usage():
    engine = given(world(), delegate("t2", grant=grant_request("g-t2", token_limit=100)), propose("op-1", task_id="t2"),
                   propose("op-2", task_id="t2", resource="wt-2"))
    when(engine, usage("op-2", input_tokens=120, at=at(1)))
    assert resolved(when(engine, revise_grant("g-t2", token_limit=110, at=at(2)))) == []
    assert alert(engine, "budget_exhausted:g-t2")["state"] == "raised"
    assert resolved(when(engine, revise_grant("g-t2", expected_revision=2, token_limit=500, at=at(3)))) == [
        "budget_exhausted:g-t2"
    ]
    assert raised(when(engine, usage("op-1", input_tokens=400, at=at(4)))) == ["budget_exhausted:g-t2"]
    assert alert(engine, "budget_exhausted:g-t2")["count"] == 2


def test_approvals_raise_triage_blocked_on_a_background_and_approval_required_on_a_foreground():
    engine = given(world())
    assert raised(when(engine, approval_required("r1", conversation_id="bg", at=at(1)))) == ["triage_blocked:bg"]
    assert raised(when(engine, approval_required("r2", conversation_id="bg", at=at(2)))) == []  # still blocked
    assert resolved(when(engine, approval_resolved("r1", conversation_id="bg", at=at(3)))) == []  # r2 is open
    assert resolved(when(engine, approval_resolved("r2", conversation_id="bg", at=at(4)))) == ["triage_blocked:bg"]
    assert raised(when(engine, approval_required("r3", at=at(5)))) == ["approval_required:fg/r3"]
    assert resolved(when(engine, approval_resolved("r3", at=at(6)))) == ["approval_required:fg/r3"]


def test_compaction_required_once_while_nothing_fits_resolved_by_a_reset():
    engine = given(policy(), open_foreground(context_limit=100, reserve=10), open_background(), bind(1), heartbeat(1),
                   delegate("t1"))
    when(engine, observe(text="x" * 400, at=at(1)))  # 100 tokens: never fits in 90
    events = when(engine, triage(at=at(2)))
    assert raised(events) == ["compaction_required:fg"]
    assert raised(when(engine, tick(at=at(3)))) == []
    assert resolved(when(engine, context_reset("fg", at=at(4)))) == ["compaction_required:fg"]


def test_compaction_required_resolved_when_a_later_wake_fits():
    engine = given(policy(), open_foreground(context_limit=100, reserve=10), open_background(), bind(1), heartbeat(1),
                   delegate("t1"))
    when(engine, observe(text="x" * 400, at=at(1)))
    when(engine, triage(at=at(2)))
    when(engine, observe(text="short", fingerprint="f2", at=at(3)))  # revision 2, 2 tokens, untriaged
    events = when(engine, triage(update_revision=2, at=at(4)))
    assert of_type(events, ev.TurnStarted) and resolved(events) == ["compaction_required:fg"]


def test_reconciliation_required_raised_on_entering_and_resolved_on_commit():
    engine = given(world(), log_batch([entry(1), entry(2)]))
    assert raised(when(engine, log_pruned(5, at=at(1)))) == ["reconciliation_required:scm"]
    assert raised(when(engine, log_pruned(6, at=at(2)))) == []
    assert resolved(when(engine, log_reconcile("scm/r1", retained_head=6, at=at(3)))) == ["reconciliation_required:scm"]


def test_a_card_raises_its_alert_and_retains_its_update():
    engine = given(world(), observe(at=at(1)), triage(disposition="routine", at=at(2)))
    assert inbox_row(engine)["retained"] is False
    assert raised(when(engine, card("k1", at=at(3)))) == ["card:k1"]
    assert inbox_row(engine)["retained"] is True
    when(engine, seen_alert("card:k1", at=at(4)))
    assert inbox_row(engine)["retained"] is False


# ------------------------------------------------------------- obligations


def finished(operation_id: str = "op-1", n: float = 1) -> list[Any]:
    """op-1 claimed, accepted, succeeded at `n`: fg (idle) wakes with outcome:op-1."""
    return [propose(operation_id, at=at(n)), receipt(operation_id, at=at(n)), outcome(operation_id, at=at(n))]


def test_an_outcome_opens_an_obligation_met_by_the_completed_turn():
    engine = given(world())
    events = when(engine, propose("op-1", at=at(1)))
    when(engine, receipt("op-1", at=at(1)))
    events = when(engine, outcome("op-1", at=at(1)))
    opened = of_type(events, ev.ObligationOpened)[0]
    assert (opened.cause_key, opened.conversation_id, opened.due_at.isoformat()) == (
        "outcome:op-1", "fg", "2026-03-01T09:10:01+00:00"
    )
    assert of_type(events, ev.DeliveryCreated)[0].included == [("outcome:op-1", 1)]
    when(engine, provider_receipt("fg/d1", at=at(2)))
    assert inbox_row(engine, "outcome:op-1")["retained"] is True  # delivered, but still owed
    events = when(engine, turn_ended("fg/t1", delivered=["outcome:op-1"], at=at(3)))
    assert [(met.operation_id, met.turn_id, met.delivery_id) for met in of_type(events, ev.ObligationMet)] == [
        ("op-1", "fg/t1", "fg/d1")
    ]
    assert inbox_row(engine, "outcome:op-1")["retained"] is False
    assert raised(when(engine, tick(at=at(10_000)))) == []  # met: never falls due


def test_a_turn_that_leaves_it_out_of_delivered_makes_it_due_at_once():
    engine = given(world(), finished(), provider_receipt("fg/d1", at=at(2)))
    events = when(engine, turn_ended("fg/t1", delivered=[], at=at(3)))
    assert [(due.reason, due.turn_id) for due in of_type(events, ev.ObligationDue)] == [("left_out", "fg/t1")]
    assert raised(events) == ["fallback_delivery:op-1"]
    assert inbox_row(engine, "outcome:op-1")["retained"] is True
    assert raised(when(engine, tick(at=at(10_000)))) == []  # due once, not again at the deadline


def test_an_overdue_obligation_falls_due_at_the_first_input_that_reaches_it_and_is_met_later():
    engine = given(world(), finished(), provider_receipt("fg/d1", at=at(2)))
    assert raised(when(engine, tick(at=at(600)))) == []  # due at 601 (outcome at 1 + 600)
    events = when(engine, tick(at=at(601)))
    assert [due.reason for due in of_type(events, ev.ObligationDue)] == ["overdue"]
    assert raised(events) == ["fallback_delivery:op-1"]
    assert raised(when(engine, tick(at=at(602)))) == []
    # the turn that held it completes later: met, and the engine resolves the alert
    events = when(engine, turn_ended("fg/t1", at=at(700)))
    assert of_type(events, ev.ObligationMet) and resolved(events) == ["fallback_delivery:op-1"]
    assert inbox_row(engine, "outcome:op-1")["retained"] is False


def test_a_failed_turn_meets_nothing():
    engine = given(world(), finished(), provider_receipt("fg/d1", at=at(2)))
    events = when(engine, turn_ended("fg/t1", outcome="failed", at=at(3)))
    assert not of_type(events, ev.ObligationMet) and not of_type(events, ev.ObligationDue)
    assert engine.state.alerts.obligations["op-1"].state == "open"


def test_a_rule_action_has_no_obligation():
    engine = given(world(), rule("ci-repair", grant=grant_request("g-rule")))
    when(engine, propose("op-r", task_id=None, rule_id="ci-repair", grant_id="g-rule", actor="daemon", at=at(1)))
    when(engine, receipt("op-r", at=at(1)))
    events = when(engine, outcome("op-r", at=at(2)))
    assert not of_type(events, ev.ObligationOpened)
    assert inbox_row(engine, "outcome:op-r")["disposition"] == "routine"


def test_an_overdue_obligation_goes_out_at_the_first_pass_after_a_restart(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = Engine(open_store(url))
    for number, item in enumerate([*world(), *finished(), provider_receipt("fg/d1", at=at(2))], start=1):
        engine.submit(Located(decode(item), line=number))
    engine.store.close()
    restarted = Engine(open_store(url))  # a new process: the timers come back from the log
    events = restarted.submit(Located(decode(tick(at=at(5000))), line=100))
    assert raised(events) == ["fallback_delivery:op-1"]
    assert restarted.views.view("alerts") == [
        {"alert_id": "fallback_delivery:op-1", "kind": "fallback_delivery", "state": "raised",
         "first_raised_at": at(5000), "last_raised_at": at(5000), "count": 1}
    ]
