"""Contract v1.2 section 3: budgets (given / when / then).

Execution deadlines (stop and alert), the action retry back-off
(`retry_backoff`), the delivery back-off and retry cap (`refusals`,
`deferred`, the engine's failure hold, `delivery_failing`), the wake
interval and batch wait, `exhausted` alerts, and `health.degraded` /
`backlog.deliverable`. A v1 trace (no new field) records no event of this
area: tests at the end.
"""

from __future__ import annotations

import msgspec

from tandem.domain import events as ev
from tests.unit.helpers import (
    action_row, action_state, at, blocked_by, bind, configure, conversation_row, delegate, deliveries, given,
    grant_request, heartbeat, hold_failure, hold_release, kinds, message, of_type, open_background, open_foreground,
    outcome, policy, propose, provider_receipt, provider_reconcile, receipt, reconcile, revise_grant, tick,
    turn_ended, update_for, when, world,
)
from tests.unit.helpers import _flatten


def recorded(*lines):
    """given(), and every event the lines caused."""
    engine = given()
    events = [event for line in _flatten(lines) for event in when(engine, line)]
    assert not [e for e in events if isinstance(e, ev.InputRejected)], [e for e in events if isinstance(e, ev.InputRejected)]
    return engine, events


def alert(engine, alert_id):
    return next((row for row in engine.views.view("alerts") if row["alert_id"] == alert_id), None)


def health(engine):
    return engine.views.view("health")


def with_grant(*lines, **grant):
    """world() with task t1's grant g-t1 carrying the budgets `grant`."""
    base = [line for line in world() if line["type"] != "task.delegate"]
    return [*lines, *base, delegate("t1", grant=grant_request("g-t1", **grant))]


# ------------------------------------------------------ 3.1 the grant's budgets


def test_grant_budgets_are_recorded_only_when_given():
    engine, events = recorded(world())
    (issued,) = of_type(events, ev.GrantIssued)
    assert b"execution_deadline_s" not in msgspec.json.encode(issued)
    engine = given(with_grant(execution_deadline_s=600, retry_backoff_s=5))
    grant = engine.state.authority.grants["g-t1"]
    assert (grant.execution_deadline_s, grant.retry_backoff_s) == (600, 5)


def test_grant_revise_may_name_a_budget_alone_and_keeps_the_others():
    engine = given(with_grant(execution_deadline_s=600))
    events = when(engine, revise_grant("g-t1", retry_backoff_s=10))
    (revised,) = of_type(events, ev.GrantRevised)
    assert (revised.execution_deadline_s, revised.retry_backoff_s) == (600, 10)
    when(engine, revise_grant("g-t1", expected_revision=2, retry_backoff_s=0))
    assert engine.state.authority.grants["g-t1"].retry_backoff_s == 0
    assert engine.state.authority.grants["g-t1"].execution_deadline_s == 600


def test_engine_configure_records_the_budget_settings_only_when_given():
    engine, events = recorded(configure(wake_batch_max=5), policy())
    (configured,) = of_type(events, ev.EngineConfigured)
    assert b"delivery_backoff_s" not in msgspec.json.encode(configured)
    engine = given(configure(delivery_backoff_s=30, delivery_retries_max=2, exhausted_alerts=True), policy())
    config = engine.state.authority.config
    assert (config.delivery_backoff_s, config.delivery_retries_max, config.exhausted_alerts) == (30, 2, True)
    assert config.wake_batch_max == 20


# ------------------------------------------------------ 3.3 execution deadline


def test_first_claim_sets_deadline_at_in_the_envelope_and_the_view():
    engine, events = recorded(with_grant(execution_deadline_s=600), propose("op-1", at=at(10)))
    (claim,) = of_type(events, ev.ActionClaimed)
    assert claim.envelope.deadline_at == engine.state.actions.by_id["op-1"].deadline_at
    assert action_row(engine, "op-1")["deadline_at"] == "2026-03-01T09:10:10Z"


def test_deadline_stops_an_accepted_action_and_raises_deadline_exceeded():
    engine = given(with_grant(execution_deadline_s=600), propose("op-1", at=at(10)), receipt("op-1", at=at(11)))
    assert of_type(when(engine, tick(at=at(609))), ev.DeadlineExceeded) == []
    events = when(engine, tick(at=at(610)))
    assert kinds(events) == ["InputAccepted", "DeadlineExceeded", "AlertRaised"]
    assert events[1].facts.attempt_id == "op-1/a1" and events[1].facts.execution_deadline_s == 600
    assert action_state(engine, "op-1") == "cancel_requested"
    assert action_row(engine, "op-1")["reason"] == "deadline"  # contract v1.2 section 2.6
    assert alert(engine, "deadline_exceeded:op-1")["state"] == "raised"
    when(engine, outcome("op-1", "cancelled", at=at(620)))
    assert action_state(engine, "op-1") == "cancelled"
    assert action_row(engine, "op-1")["reason"] == "deadline"  # cancelled after that request, it keeps it


def test_deadline_exhausts_a_pending_action_and_no_claim_follows():
    engine = given(with_grant(execution_deadline_s=60, retry_backoff_s=100), propose("op-1", at=at(10)))
    when(engine, receipt("op-1", result="refused", at=at(20)))
    assert blocked_by(engine, "op-1") == ["retry_backoff"]
    events = when(engine, tick(at=at(200)))  # the back-off ended too, but the deadline passed first
    assert of_type(events, ev.ActionClaimed) == []
    assert action_state(engine, "op-1") == "exhausted"
    assert action_row(engine, "op-1")["reason"] == "deadline"
    assert alert(engine, "deadline_exceeded:op-1") is not None


def test_deadline_leaves_a_cancel_requested_action_as_it_is_and_still_alerts():
    from tests.unit.helpers import cancel_action

    engine = given(with_grant(execution_deadline_s=60), propose("op-1", at=at(10)), receipt("op-1", at=at(11)),
                   cancel_action("op-1", at=at(12)))
    events = when(engine, tick(at=at(70)))
    assert of_type(events, ev.DeadlineExceeded)[0].action_state == "cancel_requested"
    assert action_state(engine, "op-1") == "cancel_requested"
    assert action_row(engine, "op-1")["reason"] == "human"  # the request it was already under
    assert alert(engine, "deadline_exceeded:op-1") is not None
    assert of_type(when(engine, tick(at=at(80))), ev.DeadlineExceeded) == []  # once


def test_deadlines_due_at_one_input_go_in_time_order_with_the_other_timers():
    engine = given(with_grant(configure(fallback_after_s=30), execution_deadline_s=60),
                   propose("op-b", at=at(10)), receipt("op-b", at=at(10)), propose("op-a", at=at(20)),
                   receipt("op-a", at=at(20)), propose("op-c", at=at(25)), outcome("op-c", at=at(45)))
    events = when(engine, tick(at=at(100)))  # deadlines at 70 (op-b) and 80 (op-a), op-c's obligation due at 75
    order = [(type(e).__name__, getattr(e, "operation_id", None)) for e in events
             if type(e) in (ev.DeadlineExceeded, ev.ObligationDue)]
    assert order == [("DeadlineExceeded", "op-b"), ("ObligationDue", "op-c"), ("DeadlineExceeded", "op-a")]


def test_later_attempts_and_grant_revisions_do_not_move_the_deadline():
    engine = given(with_grant(execution_deadline_s=60), propose("op-1", at=at(10)))
    when(engine, revise_grant("g-t1", execution_deadline_s=3600, at=at(15)))
    events = when(engine, receipt("op-1", result="refused", at=at(20)))  # claimed again at once: op-1/a2
    (second,) = [e for e in of_type(events, ev.ActionClaimed) if e.attempt_id == "op-1/a2"]
    assert second.envelope.deadline_at == engine.state.actions.by_id["op-1"].deadline_at
    assert action_row(engine, "op-1")["deadline_at"] == "2026-03-01T09:01:10Z"


# ------------------------------------------------------ 3.5 action retry back-off


def test_refused_action_waits_for_its_back_off_doubling_per_refusal():
    engine = given(with_grant(retry_backoff_s=10), propose("op-1", at=at(0)))
    events = when(engine, receipt("op-1", result="refused", at=at(5)))
    assert of_type(events, ev.AttemptUpdated)[0].retry_at is not msgspec.UNSET
    assert blocked_by(engine, "op-1") == ["retry_backoff"]
    (block,) = of_type(events, ev.ActionBlocked)
    assert block.facts[0].code == "retry_backoff" and block.facts[0].attempts == 1
    assert action_row(engine, "op-1")["retry_at"] == "2026-03-01T09:00:15Z"
    assert health(engine)["degraded"] == ["action_backoff"]
    assert of_type(when(engine, tick(at=at(14))), ev.ActionClaimed) == []
    events = when(engine, tick(at=at(15)))
    assert [e.attempt_id for e in of_type(events, ev.ActionClaimed)] == ["op-1/a2"]
    assert action_row(engine, "op-1")["retry_at"] is None and health(engine)["degraded"] == []
    when(engine, receipt("op-1", "op-1/a2", result="refused", at=at(20)))
    assert action_row(engine, "op-1")["retry_at"] == "2026-03-01T09:00:40Z"  # 20 + 10 x 2


def test_not_received_counts_like_refused_for_the_back_off():
    engine = given(with_grant(retry_backoff_s=10), propose("op-1", at=at(0)))
    when(engine, receipt("op-1", result="refused", at=at(5)))
    when(engine, tick(at=at(15)))
    when(engine, receipt("op-1", "op-1/a2", result="unknown", at=at(16)))
    when(engine, reconcile("op-1", "op-1/a2", observed="not_received", at=at(20)))
    assert action_row(engine, "op-1")["retry_at"] == "2026-03-01T09:00:40Z"  # 20 + 10 x 2


def test_max_attempts_still_exhausts_and_raises_exhausted_only_when_opted_in():
    for opted_in in (False, True):
        lines = [configure(exhausted_alerts=True)] if opted_in else []
        engine = given(with_grant(*lines, max_attempts=1), propose("op-1"))
        when(engine, receipt("op-1", result="refused", at=at(5)))
        assert action_state(engine, "op-1") == "exhausted"
        row = alert(engine, "exhausted:op-1")
        assert (row is not None) == opted_in
        if row is not None:
            assert row["kind"] == "exhausted"


# ------------------------------------------------------ 3.6 delivery back-off and retry cap


def fg_world(**config):
    return [
        configure(**config),
        policy(),
        open_foreground(),
        open_background(),
        bind(1),
        heartbeat(1),
    ]


def test_refused_delivery_resent_only_after_back_off_at_most_n_times():
    engine = given(fg_world(delivery_backoff_s=30, delivery_retries_max=2), message("m1", at=at(5)))
    (deferred,) = of_type(when(engine, provider_receipt("fg/d1", "refused", at=at(6))), ev.DeliveryDeferred)
    assert (deferred.facts.refusals, deferred.facts.delivery_id, deferred.facts.delivery_backoff_s) == (1, "fg/d1", 30)
    row = conversation_row(engine)
    assert row["queue"] == ["m1"] and row["refusals"] == 1
    assert row["deferred"] == {"until": "2026-03-01T09:00:36Z", "reason": "backoff"}
    assert health(engine)["degraded"] == ["delivery_backoff"]
    when(engine, tick(at=at(20)))
    assert len(deliveries(engine)) == 1
    when(engine, tick(at=at(36)))
    assert [d["delivery_id"] for d in deliveries(engine)] == ["fg/d1", "fg/d2"]
    assert conversation_row(engine)["deferred"] is None
    when(engine, provider_receipt("fg/d2", "refused", at=at(37)))
    assert conversation_row(engine)["deferred"] == {"until": "2026-03-01T09:01:37Z", "reason": "backoff"}
    when(engine, tick(at=at(97)))
    events = when(engine, provider_receipt("fg/d3", "refused", at=at(98)))
    (held,) = of_type(events, ev.FailureHoldChanged)
    assert (held.by, held.refusals, held.delivery_retries_max) == ("engine", 3, 2)
    row = conversation_row(engine)
    assert (row["state"], row["queue"], row["refusals"]) == ("failure_held", ["m1"], 3)
    assert row["deferred"] == {"until": "2026-03-01T09:03:38Z", "reason": "backoff"}
    assert alert(engine, "delivery_failing:fg")["state"] == "raised"
    assert health(engine)["degraded"] == ["delivery_backoff", "delivery_failing"]
    when(engine, hold_release(at=at(100)))
    assert deliveries(engine)[-1]["delivery_id"] == "fg/d4" and deliveries(engine)[-1]["messages"] == ["m1"]
    row = conversation_row(engine)
    assert (row["refusals"], row["deferred"]) == (0, None)
    when(engine, provider_receipt("fg/d4", "accepted", at=at(101)))
    assert alert(engine, "delivery_failing:fg")["state"] == "resolved"
    assert health(engine)["degraded"] == []


def test_not_received_delivery_counts_as_a_refusal_and_accepted_resets_refusals():
    engine = given(fg_world(delivery_backoff_s=10), message("m1", at=at(5)))
    when(engine, provider_receipt("fg/d1", "unknown", at=at(6)))
    when(engine, provider_reconcile("fg/d1", "not_received", at=at(7)))
    assert conversation_row(engine)["refusals"] == 1
    assert conversation_row(engine)["deferred"]["until"] == "2026-03-01T09:00:17Z"
    when(engine, tick(at=at(17)))
    when(engine, provider_receipt("fg/d2", "accepted", at=at(18)))
    assert conversation_row(engine)["refusals"] == 0


def test_without_delivery_backoff_a_refusal_is_resent_at_once_as_in_v1():
    engine = given(fg_world(), message("m1", at=at(5)))
    events = when(engine, provider_receipt("fg/d1", "refused", at=at(6)))
    assert of_type(events, ev.DeliveryDeferred) == []
    assert [d["delivery_id"] for d in deliveries(engine)] == ["fg/d1", "fg/d2"]
    assert conversation_row(engine)["refusals"] == 1 and conversation_row(engine)["deferred"] is None


# ------------------------------------------------------ 3.7 wake frequency and batch wait


def test_wake_interval_defers_the_next_wake_but_never_a_human_turn():
    engine = given(fg_world(wake_min_interval_s=60), *update_for("ci:a", n=1))
    assert deliveries(engine)[-1]["turn_id"] == "fg/t1"  # the first wake: no previous one
    when(engine, provider_receipt("fg/d1", at=at(2)))
    when(engine, turn_ended("fg/t1", at=at(3)))
    for line in update_for("ci:b", n=10):
        when(engine, line)
    assert len(deliveries(engine)) == 1
    assert conversation_row(engine)["deferred"] == {"until": "2026-03-01T09:01:01Z", "reason": "wake_interval"}
    when(engine, message("m1", at=at(20)))  # a human turn is never deferred
    assert deliveries(engine)[-1]["messages"] == ["m1"] and conversation_row(engine)["deferred"] is None


def test_wake_interval_counts_from_the_previous_wake():
    engine = given(fg_world(wake_min_interval_s=60), *update_for("ci:a", n=1))
    when(engine, provider_receipt("fg/d1", at=at(2)))
    when(engine, turn_ended("fg/t1", at=at(3)))
    for line in update_for("ci:b", n=10):
        when(engine, line)
    when(engine, tick(at=at(60)))
    assert len(deliveries(engine)) == 1
    when(engine, tick(at=at(61)))
    assert deliveries(engine)[-1]["included"] == [["ci:b", 1]]


def test_batch_wait_gathers_updates_unless_urgent_or_a_full_batch_waits():
    engine = given(fg_world(wake_batch_wait_s=30, wake_batch_max=3), *update_for("ci:a", n=1))
    assert deliveries(engine) == []
    row = conversation_row(engine)
    assert row["deferred"] == {"until": "2026-03-01T09:00:31Z", "reason": "batch_wait"}
    for line in update_for("ci:b", n=5):
        when(engine, line)
    when(engine, tick(at=at(31)))
    assert deliveries(engine)[-1]["included"] == [["ci:a", 1], ["ci:b", 1]]

    engine = given(fg_world(wake_batch_wait_s=30), *update_for("ci:u", "urgent", n=1))
    assert deliveries(engine)[-1]["included"] == [["ci:u", 1]]  # urgent: not delayed

    engine = given(fg_world(wake_batch_wait_s=30, wake_batch_max=2), *update_for("ci:a", n=1), *update_for("ci:b", n=2))
    assert deliveries(engine)[-1]["included"] == [["ci:a", 1], ["ci:b", 1]]  # a full batch waits


# ------------------------------------------------------ 3.9 visible degradation


def test_backlog_degradation_and_deliverable_count():
    engine = given(fg_world(backlog_degraded_at=2, wake_batch_max=1, wake_batch_wait_s=3600))
    when(engine, update_for("ci:a", n=1)[0])
    assert health(engine)["degraded"] == []
    when(engine, update_for("ci:b", n=2)[0])
    assert health(engine)["degraded"] == ["backlog"]
    when(engine, update_for("ci:a", n=3)[1])
    assert health(engine)["backlog"]["deliverable"] == 0  # a full batch (wake_batch_max 1): delivered
    when(engine, update_for("ci:b", n=4)[1])
    assert health(engine)["backlog"]["deliverable"] == 1  # the wake runs: ci:b waits
    assert health(engine)["degraded"] == []


def test_over_wake_batch_max_is_degradation_a_v1_trace_can_show():
    engine = given(fg_world(wake_batch_max=1), hold_failure(), *update_for("ci:a", n=1), *update_for("ci:b", n=2))
    assert health(engine)["backlog"]["deliverable"] == 2
    assert health(engine)["degraded"] == ["over_wake_batch_max"]


# ------------------------------------------------------ compatibility


def test_a_v1_trace_records_no_budget_event_and_shows_the_v1_values():
    engine, events = recorded(world(), propose("op-1"), receipt("op-1", result="refused", at=at(5)),
                              message("m1", at=at(6)), provider_receipt("fg/d1", "refused", at=at(7)))
    assert not [e for e in events if type(e) in (ev.DeadlineExceeded, ev.DeliveryDeferred)]
    assert action_row(engine, "op-1")["deadline_at"] is None and action_row(engine, "op-1")["retry_at"] is None
    row = conversation_row(engine)
    assert row["deferred"] is None and row["refusals"] == 1
    assert health(engine)["degraded"] == []
