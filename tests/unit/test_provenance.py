"""Spec section 8: the facts each engine decision records (given / when / then).

A block change names, per code, what makes it apply; a claim, the revisions,
prerequisite outcomes, heartbeat and binding it relied on; a fence, why; a
delivery, the rule, the budget and the ranked candidates; an alert, its facts.
`tandem explain` (replay/explain/) walks exactly these.
"""

from __future__ import annotations

import datetime

import msgspec

from tandem.domain import events as ev
from tests.unit.helpers import (
    approval_required,
    at,
    bind,
    cancel_action,
    configure,
    delegate,
    given,
    grant_request,
    heartbeat,
    hold_failure,
    hold_release,
    message,
    of_type,
    open_background,
    open_foreground,
    outcome,
    pause,
    policy,
    propose,
    raise_question,
    receipt,
    revise_grant,
    revise_task,
    tick,
    update_for,
    usage,
    when,
    world,
)


def blocked(events) -> ev.ActionBlocked:
    (event,) = of_type(events, ev.ActionBlocked)
    return event


def fact(event: ev.ActionBlocked | ev.TaskHoldsChanged, code: str) -> ev.BlockFact:
    assert len(event.facts) == len(getattr(event, "blocked_by", None) or getattr(event, "holds", []))
    return next(f for f in event.facts if f.code == code)


# ------------------------------------------------------------- block facts


def test_prerequisite_pending_names_the_prerequisites_without_an_outcome_and_what_is_required():
    engine = given(world(), propose("op-a"), propose("op-b", resource="res:b"))
    events = when(
        engine,
        propose(
            "op-c", prerequisites=[{"operation_id": "op-a", "outcome": "succeeded", "artifact_revision": "a@1"}, "op-b"]
        ),
    )
    event = blocked(events)
    assert event.blocked_by == ["prerequisite_pending"]
    assert fact(event, "prerequisite_pending").prerequisites == [
        ev.PrerequisiteFact(
            operation_id="op-a", state="submitting", artifact_revision=None, required_artifact_revision="a@1"
        ),
        ev.PrerequisiteFact(operation_id="op-b", state="submitting", artifact_revision=None),
    ]


def test_prerequisite_failed_names_the_prerequisite_with_the_wrong_artifact_only():
    engine = given(
        world(),
        propose("op-a"),
        propose("op-b"),
        propose(
            "op-c", prerequisites=[{"operation_id": "op-a", "outcome": "succeeded", "artifact_revision": "a@1"}, "op-b"]
        ),
    )
    when(engine, outcome("op-b"))
    event = blocked(when(engine, outcome("op-a", artifact_revision="a@2")))
    assert event.blocked_by == ["prerequisite_failed"]
    assert fact(event, "prerequisite_failed").prerequisites == [
        ev.PrerequisiteFact(
            operation_id="op-a", state="succeeded", artifact_revision="a@2", required_artifact_revision="a@1"
        )
    ]


def test_question_hold_names_the_questions_and_how_they_reach_the_action():
    engine = given(world(), propose("op-a"), propose("op-b", prerequisites=["op-a"]))
    event = blocked(when(engine, raise_question(question_key="which-db", affected=["op-a"])))
    assert event.operation_id == "op-b"
    assert fact(event, "question_hold").questions == [
        ev.QuestionRef(task_id="t1", question_key="which-db", via="prerequisite", through="op-a")
    ]
    # A question listing an operation not proposed yet holds it at its proposal.
    when(engine, raise_question(question_key="later", affected=["op-z"]))
    event = blocked(when(engine, propose("op-z")))
    assert fact(event, "question_hold").questions == [
        ev.QuestionRef(task_id="t1", question_key="later", via="operation")
    ]


def test_task_question_holds_dependent_tasks_through_depends_on():
    engine = given(world(), delegate("t2", depends_on=["t1"]), raise_question("t1", "scope", affected="task"))
    events = when(engine, propose("op-2", task_id="t2"))
    event = blocked(events)
    assert event.blocked_by == ["question_hold", "task_held"]
    assert fact(event, "question_hold").questions == [
        ev.QuestionRef(task_id="t1", question_key="scope", via="depends_on", through="t1")
    ]
    assert fact(event, "task_held").tasks == [ev.TaskStateFact(task_id="t1", state="active")]


def test_task_holds_changed_records_the_facts_of_each_hold():
    engine = given(world(), delegate("t2", depends_on=["t1"]))
    events = when(engine, raise_question("t1", "scope", affected="task"))
    changes = {e.task_id: e for e in of_type(events, ev.TaskHoldsChanged)}
    assert changes["t1"].holds == ["question_hold"]
    assert fact(changes["t1"], "question_hold").questions == [
        ev.QuestionRef(task_id="t1", question_key="scope", via="task")
    ]
    assert changes["t2"].holds == ["question_hold", "task_held"]
    assert fact(changes["t2"], "question_hold").questions == [
        ev.QuestionRef(task_id="t1", question_key="scope", via="depends_on", through="t1")
    ]


def test_wider_hold_names_the_unknown_questions():
    engine = given(
        world(),
        delegate("t2"),
        propose("op-1", prerequisites=[]),
        propose("op-0", task_id="t2", prerequisites=["op-1"]),
    )
    events = when(engine, raise_question("t1", "what", affected="unknown"))
    event = next(e for e in of_type(events, ev.ActionBlocked) if e.operation_id == "op-0")
    assert fact(event, "wider_hold").questions == [ev.QuestionRef(task_id="t1", question_key="what", via="unknown")]


def test_scope_paused_names_the_scope():
    engine = given(world(), pause("t1"))
    assert fact(blocked(when(engine, propose("op-1"))), "scope_paused").scope == "t1"
    engine = given(world(), pause("*"))
    assert fact(blocked(when(engine, propose("op-1"))), "scope_paused").scope == "*"


def test_intent_unsynced_names_the_revisions():
    engine = given(world(), message("m1"))
    event = blocked(when(engine, propose("op-1", revisions={"task": 1, "grant": 1, "intent": 1})))
    assert fact(event, "intent_unsynced") == ev.BlockFact(
        code="intent_unsynced", conversation_id="fg", intent_revision=1, synced_intent_revision=0
    )


def test_watchdog_unavailable_names_the_last_heartbeat_and_the_max_age_and_the_alert_says_so_too():
    engine = given(world(heartbeat_at=0))
    events = when(engine, propose("op-1", at=at(121)))
    assert fact(blocked(events), "watchdog_unavailable") == ev.BlockFact(
        code="watchdog_unavailable",
        heartbeat_generation=1,
        heartbeat_at=datetime.datetime(2026, 3, 1, 9, 0, tzinfo=datetime.timezone.utc),
        watchdog_max_age_s=120,
    )
    (alert,) = of_type(events, ev.AlertRaised)
    assert alert.facts.operation_id == "op-1" and alert.facts.heartbeat_generation == 1
    (resolved,) = of_type(when(engine, heartbeat(2, at=at(130))), ev.AlertResolved)
    assert resolved.facts.reason == "fresh_heartbeat" and resolved.facts.heartbeat_generation == 2
    assert "generation 2" in resolved.detail


def test_watchdog_never_seen_names_no_heartbeat():
    engine = given(policy(), open_foreground(), open_background(), bind(1), delegate("t1"))
    assert fact(blocked(when(engine, propose("op-1"))), "watchdog_unavailable").heartbeat_at is None


def test_resource_busy_names_the_in_flight_operations_on_the_resource():
    engine = given(world(), propose("op-a", resource="wt"))
    event = blocked(when(engine, propose("op-b", resource="wt")))
    assert fact(event, "resource_busy") == ev.BlockFact(code="resource_busy", resource="wt", operations=["op-a"])
    # The index follows the resource out of flight: op-b is claimed when op-a ends.
    claims = of_type(when(engine, outcome("op-a")), ev.ActionClaimed)
    assert [c.operation_id for c in claims] == ["op-b"]
    assert engine.state.actions.in_flight_by_resource == {"wt": {"op-b"}}
    when(engine, cancel_action("op-b"))
    assert engine.state.actions.in_flight_by_resource == {"wt": {"op-b"}}  # cancel_requested is still in flight
    when(engine, outcome("op-b", result="cancelled"))
    assert engine.state.actions.in_flight_by_resource == {}


def test_approval_pending_names_the_open_approvals_of_the_conversation_and_its_background():
    engine = given(world(), approval_required("r1", conversation_id="bg"), approval_required("r2"))
    event = blocked(when(engine, propose("op-1")))
    assert fact(event, "approval_pending").approvals == [
        ev.ApprovalRef(conversation_id="fg", request_id="r2"),
        ev.ApprovalRef(conversation_id="bg", request_id="r1"),
    ]


def test_budget_exhausted_names_usage_and_limit():
    engine = given(
        policy(),
        open_foreground(),
        open_background(),
        bind(1),
        heartbeat(1),
        delegate("t1", grant=grant_request("g-t1", token_limit=100)),
        propose("op-a"),
    )
    events = when(engine, usage("op-a", input_tokens=60, output_tokens=40))
    (exhausted,) = of_type(events, ev.BudgetExhausted)
    assert exhausted.operation_id == "op-a"
    (alert,) = of_type(events, ev.AlertRaised)
    assert (alert.facts.grant_id, alert.facts.usage, alert.facts.token_limit, alert.facts.operation_id) == (
        "g-t1",
        100,
        100,
        "op-a",
    )
    event = blocked(when(engine, propose("op-b")))
    assert fact(event, "budget_exhausted") == ev.BlockFact(
        code="budget_exhausted", grant_id="g-t1", usage=100, token_limit=100
    )


def test_block_facts_are_one_per_code_in_order():
    engine = given(world(heartbeat_at=0), message("m1"), propose("op-a", resource="wt", actor="human"), pause("t1"))
    events = when(engine, propose("op-b", resource="wt", prerequisites=["op-a"], at=at(500)))
    event = next(e for e in of_type(events, ev.ActionBlocked) if e.operation_id == "op-b")
    assert event.blocked_by == [
        "prerequisite_pending",
        "scope_paused",
        "intent_unsynced",
        "watchdog_unavailable",
        "resource_busy",
    ]
    assert [f.code for f in event.facts] == event.blocked_by


# ------------------------------------------------------------------- claims


def test_a_claim_records_the_prerequisites_it_relied_on_with_the_artifact_they_require():
    engine = given(
        world(),
        propose("op-a"),
        propose("op-b", prerequisites=[{"operation_id": "op-a", "outcome": "succeeded", "artifact_revision": "a@1"}]),
    )
    (claim,) = of_type(when(engine, outcome("op-a", artifact_revision="a@1")), ev.ActionClaimed)
    assert claim.facts.binding_generation == 1 and claim.facts.heartbeat_generation == 1
    assert claim.facts.prerequisites == [
        ev.PrerequisiteFact(
            operation_id="op-a", state="succeeded", artifact_revision="a@1", required_artifact_revision="a@1"
        )
    ]


# ------------------------------------------------------------------- fences


def test_policy_and_grant_fences_say_why_each_action_is_no_longer_allowed():
    engine = given(
        world(), pause("t1"), propose("op-1", write_paths=["/repo/src"]), propose("op-2", operation="worker.test")
    )
    (policy_set,) = of_type(
        when(engine, policy(operations=("worker.start",), roots=("/other", "/repo/src"))), ev.PolicySet
    )
    assert policy_set.fenced == ["op-2"]
    assert policy_set.fenced_because == {"op-2": "operation worker.test is not allowed by the policy"}
    (revised,) = of_type(when(engine, revise_grant("g-t1", write_roots=["/repo/src/lib"])), ev.GrantRevised)
    assert revised.fenced == ["op-1"]
    assert revised.fenced_because == {"op-1": "write path /repo/src is outside the write roots"}


def test_refusals_record_why_the_action_was_retried_exhausted_or_fenced():
    engine = given(world(), propose("op-1"))
    (update,) = of_type(when(engine, receipt("op-1", result="refused")), ev.AttemptUpdated)
    assert update.action_state == "pending" and update.refusal == ev.RefusalFacts(
        reason="retry",
        attempts=1,
        max_attempts=3,
        task_revision=1,
        validated_task_revision=1,
        grant_revision=1,
        policy_revision=1,
    )
    when(engine, receipt("op-1", "op-1/a2", result="refused"))
    (update,) = of_type(when(engine, receipt("op-1", "op-1/a3", result="refused")), ev.AttemptUpdated)
    assert update.action_state == "exhausted" and update.refusal.reason == "max_attempts"
    assert update.refusal.attempts == 3

    engine = given(world(), propose("op-1"), revise_task("t1"))
    (update,) = of_type(when(engine, receipt("op-1", result="refused")), ev.AttemptUpdated)
    assert update.action_state == "fenced" and update.refusal.reason == "task_revised"
    assert (update.refusal.task_revision, update.refusal.validated_task_revision) == (2, 1)

    engine = given(
        world(), propose("op-1", operation="worker.test"), revise_grant("g-t1", allowed_operations=["worker.start"])
    )
    (update,) = of_type(when(engine, receipt("op-1", result="refused")), ev.AttemptUpdated)
    assert update.action_state == "fenced" and update.refusal.reason == "authority_narrowed"


# --------------------------------------------------------------- deliveries


def bare(limit=200_000, reserve=20_000, **kw):
    return [
        *([configure(**kw)] if kw else []),
        policy(),
        open_foreground(context_limit=limit, reserve=reserve),
        open_background(),
        bind(1),
        heartbeat(1),
    ]


def test_a_wake_records_the_rule_the_budget_and_the_ranked_candidates():
    engine = given(
        *bare(limit=1000, reserve=100, wake_batch_max=2),
        hold_failure(),
        *update_for("ci:a", notification_priority=9, tokens=901),
        *update_for("ci:b", notification_priority=5, tokens=10),
        *update_for("ci:c", notification_priority=3, tokens=20),
        *update_for("ci:d", notification_priority=1, tokens=30),
    )
    events = when(engine, hold_release())
    (turn,) = of_type(events, ev.TurnStarted)
    (delivery,) = of_type(events, ev.DeliveryCreated)
    assert turn.rule == "wake" and delivery.rule == "wake"
    assert delivery.budget == ev.DeliveryBudget(
        context_limit=1000,
        reserve=100,
        context_tokens=0,
        room=900,
        message_tokens=0,
        control_tokens=0,
        update_tokens=30,
    )
    assert [(c.cause_key, c.tokens, c.verdict) for c in delivery.candidates] == [
        ("ci:a", 901, "does_not_fit"),
        ("ci:b", 10, "included"),
        ("ci:c", 20, "included"),
        ("ci:d", 30, "over_wake_batch_max"),
    ]
    assert delivery.candidates_total == 4
    assert delivery.candidates[0].disposition == "actionable" and delivery.candidates[0].notification_priority == 9


def test_a_human_turn_records_its_message_tokens_and_optional_candidates():
    engine = given(*bare(), *update_for("ci:r", disposition="routine", tokens=5))
    events = when(engine, message("m1", tokens=7))
    (turn,) = of_type(events, ev.TurnStarted)
    (delivery,) = of_type(events, ev.DeliveryCreated)
    assert turn.rule == "human_turn" and delivery.rule == "human_turn"
    assert (delivery.budget.message_tokens, delivery.budget.update_tokens, delivery.tokens) == (7, 5, 12)
    assert [(c.cause_key, c.verdict, c.optional) for c in delivery.candidates] == [("ci:r", "included", True)]


def test_recovery_records_what_was_needed_and_the_room():
    engine = given(*bare(limit=1000, reserve=100))
    (change,) = of_type(when(engine, message("m1", tokens=901)), ev.RecoveryChanged)
    assert (change.recovery, change.needed, change.room) == ("message", 901, 900)


def test_compaction_required_records_the_room_and_the_smallest_candidate():
    engine = given(
        *bare(limit=1000, reserve=100), hold_failure(), *update_for("ci:a", tokens=950), *update_for("ci:b", tokens=901)
    )
    (alert,) = of_type(when(engine, hold_release()), ev.AlertRaised)
    assert alert.alert_id == "compaction_required:fg"
    assert (alert.facts.room, alert.facts.smallest_tokens, alert.facts.candidates) == (900, 901, 2)


def test_obligations_and_resurfacing_record_their_due_times():
    engine = given(
        configure(fallback_after_s=60, question_resurface_s=100),
        policy(),
        open_foreground(),
        open_background(),
        bind(1),
        heartbeat(1),
        delegate("t1"),
        propose("op-1"),
        raise_question(question_key="q", affected=["op-x"]),
    )
    (opened,) = of_type(when(engine, outcome("op-1", at=at(10))), ev.ObligationOpened)
    assert opened.due_at == datetime.datetime(2026, 3, 1, 9, 1, 10, tzinfo=datetime.timezone.utc)
    events = when(engine, tick(at=at(250)))
    (due,) = of_type(events, ev.ObligationDue)
    assert due.reason == "overdue"
    alerts = {alert.alert_id: alert for alert in of_type(events, ev.AlertRaised)}
    assert alerts["fallback_delivery:op-1"].facts is None  # its id names the obligation; ObligationDue says why
    assert alerts["question_stale:t1/q"].facts.k == 2
    (resurfaced,) = of_type(events, ev.QuestionResurfaced)
    assert resurfaced.k == 2 and resurfaced.due_at == datetime.datetime(
        2026, 3, 1, 9, 3, 20, tzinfo=datetime.timezone.utc
    )


# -------------------------------------------------------------- compatibility


def test_events_written_before_the_facts_existed_still_decode_with_empty_facts():
    old = (
        b'{"event":"ActionBlocked","cause":3,"operation_id":"op-1","blocked_by":["resource_busy"]}',
        b'{"event":"DeliveryCreated","cause":3,"conversation_id":"fg","delivery_id":"fg/d1","turn_id":"fg/t1",'
        b'"epoch":1,"kind":"turn","included":[],"messages":["m1"],"tokens":3,"control_tokens":0}',
        b'{"event":"AlertRaised","cause":3,"alert_id":"card:c","kind":"card","at":"2026-03-01T09:00:00Z"}',
    )
    blocked_event, delivery, alert = (ev.decode_event(data) for data in old)
    assert blocked_event.facts == [] and delivery.rule == "" and delivery.budget is None and delivery.candidates == []
    assert alert.facts is None


def test_fact_structs_leave_out_what_their_code_does_not_use():
    data = msgspec.json.encode(ev.BlockFact(code="scope_paused", scope="*"))
    assert data == b'{"code":"scope_paused","scope":"*"}'
