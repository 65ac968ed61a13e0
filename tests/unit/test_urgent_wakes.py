"""Contract v1.2 section 3.7, issue 23 (given / when / then): the RFC's
"urgent + idle -> notify now; coalesced wake if permitted, else next
boundary". An urgent update to an idle foreground is woken at once, wake
interval or not (the interval still bounds the other wakes); what can still
hold one back is named by the conversation's deferral, with the update
(`urgent`) in its facts, and explained on the cause's chain."""

from __future__ import annotations

from tandem.domain import events as ev
from tests.unit.helpers import (
    approval_required, approval_resolved, at, bind, configure, context_reset, conversation_row, deliveries, given,
    heartbeat, hold_failure, hold_release, message, of_type, open_background, open_foreground, pause, policy,
    provider_receipt, resume, tick, turn_ended, update_for, when,
)


def fg_world(*lines, foreground=None, **config):
    """The budgets' world (a foreground fg bound to bg), then ci:a woken (fg/t1 at 1 s) and its turn over."""
    return [
        configure(**config),
        policy(),
        open_foreground(**(foreground or {})),
        open_background(),
        bind(1),
        heartbeat(1),
        *update_for("ci:a", n=1),
        provider_receipt("fg/d1", at=at(2)),
        turn_ended("fg/t1", at=at(3)),
        *lines,
    ]


def recorded(engine, *lines):
    """Apply `lines`; the DeliveryDeferred events they caused."""
    return [event for line in lines for event in of_type(when(engine, line), ev.DeliveryDeferred)]


def alert(engine, alert_id):
    return next((row for row in engine.views.view("alerts") if row["alert_id"] == alert_id), None)


def deferral(engine):
    """The conversation's deferral in the state: (reason, until, urgent)."""
    return engine.state.conversation.by_id["fg"].deferred


# ------------------------------------------------------ woken at once


def test_an_urgent_update_is_woken_at_once_inside_the_wake_interval():
    engine = given(fg_world(wake_min_interval_s=60))
    for line in update_for("ci:u", "urgent", n=10):
        when(engine, line)
    assert deliveries(engine)[-1]["turn_id"] == "fg/t2" and deliveries(engine)[-1]["included"] == [["ci:u", 1]]
    assert alert(engine, "urgent:ci:u") is None  # delivered in the pass: nothing to alert
    assert conversation_row(engine)["deferred"] is None


def test_the_interval_still_defers_a_wake_that_carries_no_urgent_update():
    engine = given(fg_world(wake_min_interval_s=60), *update_for("ci:b", n=10))
    assert len(deliveries(engine)) == 1
    assert conversation_row(engine)["deferred"] == {"until": "2026-03-01T09:01:01Z", "reason": "wake_interval"}
    for line in update_for("ci:u", "urgent", n=20):  # the urgent one takes ci:b along
        when(engine, line)
    assert deliveries(engine)[-1]["included"] == [["ci:u", 1], ["ci:b", 1]]
    assert conversation_row(engine)["deferred"] is None


def test_an_urgent_wake_starts_the_next_interval():
    engine = given(fg_world(wake_min_interval_s=60), *update_for("ci:u", "urgent", n=10))
    when(engine, provider_receipt("fg/d2", at=at(11)))
    when(engine, turn_ended("fg/t2", at=at(12)))
    for line in update_for("ci:b", n=20):
        when(engine, line)
    assert conversation_row(engine)["deferred"] == {"until": "2026-03-01T09:01:10Z", "reason": "wake_interval"}


def test_an_urgent_wake_waits_for_neither_the_interval_nor_the_batch():
    world = fg_world(wake_min_interval_s=60, wake_batch_wait_s=30, wake_batch_max=3)
    engine = given(world[:8], tick(at=at(31)), provider_receipt("fg/d1", at=at(32)), turn_ended("fg/t1", at=at(33)))
    for line in update_for("ci:b", n=40):  # both would hold it: the interval (to 91 s), its batch (to 70 s)
        when(engine, line)
    assert conversation_row(engine)["deferred"] == {"until": "2026-03-01T09:01:31Z", "reason": "wake_interval"}
    for line in update_for("ci:u", "urgent", n=45):
        when(engine, line)
    assert deliveries(engine)[-1]["included"] == [["ci:u", 1], ["ci:b", 1]]


# ------------------------------------------------------ what holds it back, named


def test_a_refusals_back_off_holds_it_and_the_deferral_names_the_urgent_update():
    engine = given(fg_world(wake_min_interval_s=60, delivery_backoff_s=30), *update_for("ci:u", "urgent", n=10))
    (deferred,) = recorded(engine, provider_receipt("fg/d2", "refused", at=at(11)))
    assert (deferred.reason, deferred.facts.urgent, deferred.facts.refusals) == ("backoff", "ci:u", 1)
    assert conversation_row(engine)["deferred"] == {"until": "2026-03-01T09:00:41Z", "reason": "backoff"}
    assert alert(engine, "urgent:ci:u")["state"] == "raised"
    when(engine, tick(at=at(41)))  # the back-off ends, the interval (from fg/t2 at 10 s) does not
    assert deliveries(engine)[-1]["delivery_id"] == "fg/d3" and deliveries(engine)[-1]["included"] == [["ci:u", 1]]


def test_an_urgent_update_arriving_during_a_back_off_records_it_again_naming_it():
    engine = given(fg_world(delivery_backoff_s=30), message("m1", at=at(10)))
    (first,) = recorded(engine, provider_receipt("fg/d2", "refused", at=at(11)))
    assert first.reason == "backoff" and first.facts.urgent is None
    (again,) = recorded(engine, *update_for("ci:u", "urgent", n=12))
    assert (again.reason, again.until, again.facts.urgent) == ("backoff", first.until, "ci:u")


def test_the_retry_caps_hold_is_named_once_the_back_off_ends():
    engine = given(
        fg_world(delivery_backoff_s=30, delivery_retries_max=0), *update_for("ci:u", "urgent", n=10),
        provider_receipt("fg/d2", "refused", at=at(11)),
    )  # fmt: skip
    assert deferral(engine)[0] == "backoff"
    (deferred,) = recorded(engine, tick(at=at(41)))
    assert (deferred.reason, deferred.until) == ("failure_hold", None)
    facts = deferred.facts
    assert (facts.held_by, facts.refusals, facts.delivery_retries_max, facts.urgent) == ("engine", 1, 0, "ci:u")
    assert conversation_row(engine)["deferred"] == {"until": None, "reason": "failure_hold"}
    (ended,) = recorded(engine, hold_release(at=at(50)))
    assert ended.reason is None and deliveries(engine)[-1]["included"] == [["ci:u", 1]]


def test_a_human_failure_hold_is_named_also_in_a_v1_trace():
    engine = given(fg_world(), hold_failure(at=at(5)))
    (deferred,) = recorded(engine, *update_for("ci:u", "urgent", n=10))
    assert (deferred.reason, deferred.facts.held_by, deferred.facts.urgent) == ("failure_hold", "human", "ci:u")
    assert deferred.facts.refusals is None and deferred.facts.delivery_retries_max is None


def test_an_approval_is_named_with_its_request():
    engine = given(fg_world(wake_min_interval_s=60), approval_required("r1", at=at(5)))
    (deferred,) = recorded(engine, *update_for("ci:u", "urgent", n=10))
    assert (deferred.reason, deferred.facts.approvals, deferred.facts.urgent) == ("approval", ["r1"], "ci:u")
    (ended,) = recorded(engine, approval_resolved("r1", at=at(12)))
    assert ended.reason is None and deliveries(engine)[-1]["included"] == [["ci:u", 1]]


def test_the_wider_pause_is_named():
    engine = given(fg_world(), pause("*", at=at(5)))
    (deferred,) = recorded(engine, *update_for("ci:u", "urgent", n=10))
    assert (deferred.reason, deferred.until, deferred.facts.urgent) == ("paused", None, "ci:u")
    when(engine, resume("*", at=at(12)))
    assert deliveries(engine)[-1]["included"] == [["ci:u", 1]]


def test_the_context_limit_is_named_when_no_urgent_update_fits():
    engine = given(fg_world(foreground={"context_limit": 1000, "reserve": 100}, wake_min_interval_s=60))
    (deferred,) = recorded(engine, *update_for("ci:u", "urgent", n=10, tokens=5000))
    room = 1000 - 100 - 0  # ci:a (no text, no tokens) counts 0
    assert (deferred.reason, deferred.facts.tokens, deferred.facts.room) == ("context_limit", 5000, room)
    assert alert(engine, "compaction_required:fg")["state"] == "raised"  # nothing fits: no wake at all


def test_the_context_limit_not_the_interval_is_named_when_only_a_non_urgent_wake_fits():
    engine = given(
        fg_world(foreground={"context_limit": 1000, "reserve": 100}, wake_min_interval_s=60), *update_for("ci:b", n=5)
    )  # fmt: skip
    assert deferral(engine)[0] == "wake_interval"
    (deferred,) = recorded(engine, *update_for("ci:u", "urgent", n=10, tokens=5000))
    assert (deferred.reason, deferred.until, deferred.facts.urgent) == ("context_limit", None, "ci:u")
    when(engine, tick(at=at(61)))  # the interval ends: ci:b's wake goes, ci:u still does not fit
    assert deliveries(engine)[-1]["included"] == [["ci:b", 1]]


def test_context_recovery_is_named():
    engine = given(fg_world(foreground={"context_limit": 1000, "reserve": 100}), message("m1", tokens=5000, at=at(5)))
    assert conversation_row(engine)["state"] == "context_recovery_required"
    (deferred,) = recorded(engine, *update_for("ci:u", "urgent", n=10))
    assert (deferred.reason, deferred.facts.recovery) == ("context_recovery", "message")


def test_a_reseed_not_yet_accepted_is_named():
    engine = given(fg_world(), context_reset(at=at(5)))
    assert deliveries(engine)[-1]["kind"] == "reseed"
    (deferred,) = recorded(engine, *update_for("ci:u", "urgent", n=10))
    assert (deferred.reason, deferred.facts.delivery_id) == ("reseed", "fg/d2")
    when(engine, provider_receipt("fg/d2", at=at(12)))
    assert deliveries(engine)[-1]["included"] == [["ci:u", 1]] and deferral(engine) is None


def test_a_non_urgent_update_a_hold_keeps_records_nothing_as_in_v1():
    engine = given(fg_world(), hold_failure(at=at(5)))
    assert recorded(engine, *update_for("ci:b", n=10)) == []
    assert conversation_row(engine)["deferred"] is None


def test_a_running_turn_is_not_idle_nothing_is_named():
    engine = given(fg_world(), message("m1", at=at(5)))
    assert recorded(engine, *update_for("ci:u", "urgent", n=10)) == []


# ------------------------------------------------------ explain


def test_explain_says_what_held_the_urgent_update_back_and_until_when():
    from tandem.adapters.ingest import ingest
    from tandem.adapters.store import open_store
    from tandem.adapters.trace import read_trace
    from tandem.replay.engine import Engine
    from tandem.replay.explain import explain
    from tests.integration.test_event_digests import ROOT

    engine = Engine(open_store("memory:"), with_views=False, snapshot_every=0)
    ingest(engine, read_trace(str(ROOT / "fixtures" / "gates" / "61_urgent_idle_notify_now.jsonl")))
    [cause] = explain(engine.store, "ci:e", kind="cause")
    steps = [step for step in cause.steps if step.event == "DeliveryDeferred"]
    assert [step.summary for step in steps] == [
        "urgent revision 1 not woken in fg: held back by backoff until 2026-03-01T09:01:11Z",
        "urgent revision 1 not woken in fg: held back by backoff until 2026-03-01T09:02:12Z",
        "urgent revision 1 not woken in fg: held back by failure_hold until the human's hold.release",
    ]
    assert steps[0].facts[0].text == (
        "a refusal's back-off: 1 refused or not received deliveries since the last accepted one, the latest fg/d3 "
        "at 2026-03-01T09:00:41Z (delivery_backoff_s 30 x 2^0)"
    )
    held = steps[2].facts[0]
    assert held.name == "failure_hold"
    assert held.text == "the engine's failure hold, the retry cap: 2 refused deliveries in a row, past delivery_retries_max 1"
    assert held.value == {"refusals": 2, "urgent": "ci:e", "held_by": "engine", "delivery_retries_max": 1}
    # The refused delivery's back-off step says whom it held back.
    [delivery] = explain(engine.store, "fg/d3", kind="delivery")
    [backoff] = [step for step in delivery.steps if step.event == "DeliveryDeferred"]
    assert backoff.summary.endswith("; it holds back urgent ci:e (contract v1.2 section 3.7)")
