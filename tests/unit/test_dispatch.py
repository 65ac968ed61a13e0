"""The dispatch pass (spec section 4) and the attempt table (section 3.3).

Given inputs, when one more input, then exactly these events: claims with
their attempt ids and frozen envelopes, attempt transitions, and the
`blocked_by` codes of pending actions in the section 4 table's order.
"""

from __future__ import annotations

import pytest

from tandem.domain import events as ev
from tandem.domain.reasons import BLOCKING_CODES
from tests.unit.helpers import (
    action_row,
    action_state,
    answer,
    at,
    blocked_by,
    cancel_action,
    cancel_task,
    complete_task,
    delegate,
    given,
    grant_request,
    heartbeat,
    intent_synced,
    kinds,
    message,
    of_type,
    outcome,
    pause,
    policy,
    propose,
    raise_question,
    receipt,
    reconcile,
    rejection,
    resume,
    revalidate,
    revise_grant,
    revise_task,
    rule,
    task_row,
    tick,
    usage,
    when,
    world,
)

# ------------------------------------------------------------------ claims


def test_a_proposal_nothing_blocks_is_claimed_as_attempt_1_with_its_frozen_envelope():
    engine = given(world())
    events = when(engine, propose("op-1", write_paths=["/repo/src"], revisions={"task": 1, "grant": 1, "intent": 0}))
    assert kinds(events) == ["InputAccepted", "ActionProposed", "ActionClaimed"]
    claim = events[2]
    assert claim.operation_id == "op-1" and claim.attempt_id == "op-1/a1"
    assert claim.envelope == ev.Envelope(
        operation="worker.start", target="op-1", resource="res:op-1", write_paths=["/repo/src"],
        task_revision=1, grant_revision=1, policy_revision=1, intent_revision=0,
    )
    assert (claim.facts.heartbeat_generation, claim.facts.binding_generation) == (1, 1)
    assert claim.cause == events[0].seq
    assert action_row(engine, "op-1")["attempts"] == [{"attempt_id": "op-1/a1", "state": "submitting"}]


def test_the_envelope_carries_revisions_re_stamped_by_grant_revise_and_policy_set():
    engine = given(world(), pause("t1"), propose("op-1"), revise_grant("g-t1", max_attempts=5),
                   policy(["worker.start", "worker.test", "scm.push"]))
    assert action_state(engine, "op-1") == "pending"
    events = when(engine, resume("t1"))
    (claim,) = of_type(events, ev.ActionClaimed)
    assert (claim.envelope.task_revision, claim.envelope.grant_revision, claim.envelope.policy_revision) == (1, 2, 2)


def test_the_envelope_freezes_the_intent_revision_the_action_was_validated_under():
    """Spec 4: the attempt's envelope holds "the task, grant, policy and intent
    revisions it was validated under". A human proposal validated at intent 0
    (intent_unsynced does not apply to it) is claimed after the intent moved."""
    engine = given(world(), pause("t1"),
                   propose("op-1", actor="human", revisions={"task": 1, "grant": 1, "intent": 0}),
                   message("m1"))
    events = when(engine, resume("t1"))
    (proposed_revisions,) = [engine.state.actions.by_id["op-1"].revisions]
    (claim,) = of_type(events, ev.ActionClaimed)
    assert proposed_revisions.intent == 0
    assert claim.envelope.intent_revision == 0


def test_claims_run_in_proposal_order():
    engine = given(world(), pause("t1"), propose("op-b"), propose("op-a"), propose("op-c"))
    events = when(engine, resume("t1"))
    assert [e.operation_id for e in of_type(events, ev.ActionClaimed)] == ["op-b", "op-a", "op-c"]


def test_a_rule_action_from_the_daemon_has_no_task_revisions_in_its_envelope():
    engine = given(world(), rule("ci-repair"))
    events = when(engine, propose("op-r", task_id=None, grant_id="g-rule", rule_id="ci-repair", actor="daemon",
                                  revisions={"grant": 1}))
    (claim,) = of_type(events, ev.ActionClaimed)
    assert (claim.envelope.task_revision, claim.envelope.intent_revision, claim.envelope.grant_revision) == (None, None, 1)


# ------------------------------------------------------------ the attempt table


def test_receipt_queued_then_accepted_move_attempt_and_action():
    engine = given(world(), propose("op-1"))
    events = when(engine, receipt("op-1", result="queued"))
    assert kinds(events) == ["InputAccepted", "AttemptUpdated"]
    assert (events[1].attempt_state, events[1].action_state) == ("queued", "queued")
    events = when(engine, receipt("op-1", result="accepted"))
    assert (events[1].attempt_state, events[1].action_state) == ("accepted", "accepted")


def test_refused_goes_back_to_pending_and_is_claimed_again_as_a2_in_the_same_pass():
    engine = given(world(), propose("op-1"))
    events = when(engine, receipt("op-1", "op-1/a1", "refused"))
    assert kinds(events) == ["InputAccepted", "AttemptUpdated", "ActionClaimed"]
    assert (events[1].attempt_id, events[1].attempt_state, events[1].action_state) == ("op-1/a1", "refused", "pending")
    assert events[2].attempt_id == "op-1/a2"
    assert action_row(engine, "op-1")["attempts"] == [
        {"attempt_id": "op-1/a1", "state": "refused"},
        {"attempt_id": "op-1/a2", "state": "submitting"},
    ]


def test_refused_at_max_attempts_is_exhausted():
    engine = given(world(), delegate("t2", grant=grant_request("g-t2", max_attempts=2)),
                   propose("op-1", task_id="t2"), receipt("op-1", "op-1/a1", "refused"))
    events = when(engine, receipt("op-1", "op-1/a2", "refused"))
    assert kinds(events) == ["InputAccepted", "AttemptUpdated"]
    assert (events[1].attempt_state, events[1].action_state) == ("refused", "exhausted")
    assert action_state(engine, "op-1") == "exhausted"


def test_unknown_is_never_retried_even_when_time_passes_and_heartbeats_arrive():
    engine = given(world(), propose("op-1"))
    events = when(engine, receipt("op-1", result="unknown"))
    assert kinds(events) == ["InputAccepted", "AttemptUpdated"]
    assert (events[1].attempt_state, events[1].action_state) == ("unknown", "unknown")
    later = [tick(at=at(300)), heartbeat(2, at=at(400)), tick(at=at(401)), heartbeat(3, at=at(5000)),
             tick(at=at(5001))]
    for item in later:
        assert of_type(when(engine, item), ev.ActionClaimed) == []
    assert action_state(engine, "op-1") == "unknown"
    assert action_row(engine, "op-1")["blocked_by"] == []


def test_reconcile_not_received_releases_an_unknown_attempt_and_it_is_claimed_again():
    engine = given(world(), propose("op-1"), receipt("op-1", result="unknown"))
    events = when(engine, reconcile("op-1", observed="not_received"))
    assert kinds(events) == ["InputAccepted", "AttemptUpdated", "ActionClaimed"]
    assert (events[1].attempt_state, events[1].action_state) == ("not_received", "pending")
    assert events[2].attempt_id == "op-1/a2"


def test_reconcile_accepted_makes_an_unknown_attempt_accepted():
    engine = given(world(), propose("op-1"), receipt("op-1", result="unknown"))
    events = when(engine, reconcile("op-1", observed="accepted"))
    assert kinds(events) == ["InputAccepted", "AttemptUpdated"]
    assert (events[1].attempt_state, events[1].action_state) == ("accepted", "accepted")


def test_an_outcome_proves_acceptance_of_the_latest_attempt():
    engine = given(world(), propose("op-1"))
    events = when(engine, outcome("op-1", "succeeded", artifact_revision="api@1"))
    (reported,) = of_type(events, ev.ActionOutcomeReported)
    assert (reported.attempt_id, reported.attempt_state, reported.action_state) == ("op-1/a1", "accepted", "succeeded")
    assert action_row(engine, "op-1")["outcome"] == "succeeded"
    assert action_row(engine, "op-1")["artifact_revision"] == "api@1"


@pytest.mark.parametrize("result", ["succeeded", "failed", "cancelled"])
def test_an_outcome_from_cancel_requested(result):
    engine = given(world(), propose("op-1"), receipt("op-1", result="accepted"))
    events = when(engine, cancel_action("op-1"))
    assert kinds(events) == ["InputAccepted", "ActionCancelRequested"]
    events = when(engine, outcome("op-1", result))
    (reported,) = of_type(events, ev.ActionOutcomeReported)
    assert reported.action_state == result


def test_receipts_from_cancel_requested_keep_it_there_except_a_refusal_which_cancels():
    engine = given(world(), propose("op-1"), cancel_action("op-1"))
    events = when(engine, receipt("op-1", result="queued"))
    assert (events[1].attempt_state, events[1].action_state) == ("queued", "cancel_requested")
    events = when(engine, receipt("op-1", result="refused"))
    assert kinds(events) == ["InputAccepted", "AttemptUpdated"]  # never claimed again
    assert (events[1].attempt_state, events[1].action_state) == ("refused", "cancelled")


def test_cancel_of_a_pending_action_cancels_it():
    engine = given(world(), pause("t1"), propose("op-1"))
    events = when(engine, cancel_action("op-1"))
    assert kinds(events) == ["InputAccepted", "ActionCancelled"]
    assert action_row(engine, "op-1")["blocked_by"] == []


def test_task_cancel_cancels_each_non_terminal_action_as_action_cancel_does():
    engine = given(world(), propose("op-1"), pause("t1"), propose("op-2"), propose("op-3"), revise_task("t1"))
    assert [action_state(engine, op) for op in ("op-1", "op-2", "op-3")] == ["submitting", "fenced", "fenced"]
    when(engine, resume("t1"))
    events = when(engine, cancel_task("t1"))
    assert kinds(events) == ["InputAccepted", "TaskCancelled", "GrantRevoked", "ActionCancelRequested",
                             "ActionCancelled", "ActionCancelled"]


def test_task_revise_fences_pending_actions_only():
    engine = given(world(), propose("op-1"), pause("t1"), propose("op-2"))
    events = when(engine, revise_task("t1"))
    (revised,) = of_type(events, ev.TaskRevised)
    assert (revised.revision, revised.fenced) == (2, ["op-2"])
    assert action_state(engine, "op-1") == "submitting"
    assert action_state(engine, "op-2") == "fenced"
    assert blocked_by(engine, "op-2") == []


def test_revalidate_makes_a_fenced_action_pending_again_keeping_its_attempts():
    # The watchdog is stale at 200: a1 is refused and the action waits, pending.
    engine = given(world(), propose("op-1"), receipt("op-1", result="refused", at=at(200)))
    assert action_state(engine, "op-1") == "pending"
    assert blocked_by(engine, "op-1") == ["watchdog_unavailable"]
    when(engine, revise_task("t1", at=at(200)))
    assert action_state(engine, "op-1") == "fenced"
    when(engine, revalidate("op-1", revisions={"task": 2, "grant": 1}, at=at(200)))
    events = when(engine, heartbeat(2, at=at(201)))
    (claim,) = of_type(events, ev.ActionClaimed)
    assert claim.attempt_id == "op-1/a2"
    assert claim.envelope.task_revision == 2


# ------------------------------------------------------------ blocked_by codes


def test_prerequisite_pending_until_the_prerequisite_succeeds():
    engine = given(world(), propose("op-1"))
    events = when(engine, propose("op-2", prerequisites=["op-1"]))
    assert kinds(events) == ["InputAccepted", "ActionProposed", "ActionBlocked"]
    assert (events[2].operation_id, events[2].blocked_by) == ("op-2", ["prerequisite_pending"])
    events = when(engine, outcome("op-1", "succeeded"))
    assert [e.attempt_id for e in of_type(events, ev.ActionClaimed)] == ["op-2/a1"]
    assert blocked_by(engine, "op-2") == []


def _with_prerequisite_then(final: list) -> object:
    return given(world(), delegate("t2", grant=grant_request("g-t2", max_attempts=1)),
                 propose("op-1", task_id="t2"), propose("op-2", prerequisites=[
                     {"operation_id": "op-1", "outcome": "succeeded", "artifact_revision": "api@abc"}]), final)


@pytest.mark.parametrize(
    "ending",
    [
        pytest.param([outcome("op-1", "failed")], id="failed"),
        pytest.param([cancel_action("op-1"), outcome("op-1", "cancelled")], id="cancelled"),
        pytest.param([receipt("op-1", result="refused")], id="exhausted"),
        pytest.param([outcome("op-1", "succeeded", artifact_revision="api@other")], id="wrong-artifact"),
        pytest.param([outcome("op-1", "succeeded")], id="no-artifact"),
    ],
)
def test_prerequisite_failed(ending):
    engine = _with_prerequisite_then(ending)
    assert action_state(engine, "op-2") == "pending"
    assert blocked_by(engine, "op-2") == ["prerequisite_failed"]


def test_the_required_artifact_revision_unblocks():
    engine = _with_prerequisite_then([])
    events = when(engine, outcome("op-1", "succeeded", artifact_revision="api@abc"))
    assert [e.attempt_id for e in of_type(events, ev.ActionClaimed)] == ["op-2/a1"]


def test_question_hold_on_a_listed_operation_also_one_proposed_later():
    """Spec 3.2: "listed operations need not exist yet"; the hold applies to
    "those actions (also ones proposed later)"."""
    engine = given(world())
    events = when(engine, raise_question(affected=["op-1"]))
    assert rejection(events) is None
    events = when(engine, propose("op-1"))
    assert kinds(events) == ["InputAccepted", "ActionProposed", "ActionBlocked"]
    assert events[2].blocked_by == ["question_hold"]
    assert task_row(engine, "t1")["holds"] == []  # listed operations hold actions, not the task


def test_question_hold_on_a_transitive_dependent_of_a_listed_operation():
    engine = given(world(), propose("op-1"), outcome("op-1", "succeeded"), raise_question(affected=["op-1"]),
                   propose("op-2", prerequisites=["op-1"]), propose("op-3", prerequisites=["op-2"]))
    assert blocked_by(engine, "op-2") == ["question_hold"]
    assert blocked_by(engine, "op-3") == ["prerequisite_pending", "question_hold"]
    events = when(engine, answer())
    assert kinds(events)[:3] == ["InputAccepted", "QuestionAnswered", "TaskRevised"]
    (revised,) = of_type(events, ev.TaskRevised)
    assert revised.fenced == ["op-2", "op-3"]
    assert revised.fallback_decisions == {"q1": "postgres"}


def test_question_hold_task_holds_the_task_and_dependent_tasks_transitively():
    engine = given(world(), delegate("t2", depends_on=["t1"]), delegate("t3", depends_on=["t2"]), delegate("t4"),
                   raise_question("t1", affected="task"))
    assert task_row(engine, "t1")["holds"] == ["question_hold"]
    assert task_row(engine, "t2")["holds"] == ["question_hold", "task_held"]
    assert task_row(engine, "t3")["holds"] == ["question_hold", "task_held"]
    assert task_row(engine, "t4")["holds"] == []
    when(engine, propose("op-1", task_id="t1"))
    when(engine, propose("op-3", task_id="t3"))
    events = when(engine, propose("op-4", task_id="t4"))
    assert blocked_by(engine, "op-1") == ["question_hold"]
    assert blocked_by(engine, "op-3") == ["question_hold", "task_held"]
    assert [e.attempt_id for e in of_type(events, ev.ActionClaimed)] == ["op-4/a1"]


def test_answering_lifts_the_hold_and_fences_pending_actions():
    engine = given(world(), raise_question(affected="task"), propose("op-1"))
    events = when(engine, answer())
    assert of_type(events, ev.TaskRevised)[0].fenced == ["op-1"]
    assert task_row(engine, "t1")["holds"] == []
    events = when(engine, revalidate("op-1", revisions={"task": 2, "grant": 1}))
    assert [e.attempt_id for e in of_type(events, ev.ActionClaimed)] == ["op-1/a1"]


def test_a_question_holds_only_while_its_task_is_active():
    engine = given(world(), delegate("t2"), pause("t1"), propose("op-1", task_id="t1"),
                   raise_question("t2", affected=["op-1"]), resume("t1"))
    assert blocked_by(engine, "op-1") == ["question_hold"]
    events = when(engine, cancel_task("t2"))
    assert [e.attempt_id for e in of_type(events, ev.ActionClaimed)] == ["op-1/a1"]


def test_wider_hold_blocks_every_action_and_shows_on_every_active_task():
    engine = given(world(), delegate("t2"), rule("ci-repair"), raise_question("t1", affected="unknown"))
    assert task_row(engine, "t1")["holds"] == ["wider_hold"]
    assert task_row(engine, "t2")["holds"] == ["wider_hold"]
    when(engine, propose("op-2", task_id="t2"))
    when(engine, propose("op-r", task_id=None, grant_id="g-rule", rule_id="ci-repair", actor="daemon",
                         revisions={"grant": 1}))
    assert blocked_by(engine, "op-2") == ["wider_hold"]
    assert blocked_by(engine, "op-r") == ["wider_hold"]
    events = when(engine, answer("t1"))
    assert {e.operation_id for e in of_type(events, ev.ActionClaimed)} == {"op-2", "op-r"}


def test_scope_paused_for_the_task_and_for_star():
    engine = given(world(), delegate("t2"), pause("t1"), propose("op-1"), propose("op-2", task_id="t2"))
    assert blocked_by(engine, "op-1") == ["scope_paused"]
    assert task_row(engine, "t1")["holds"] == ["scope_paused"]
    assert action_state(engine, "op-2") == "submitting"
    when(engine, pause("*"))
    when(engine, propose("op-3", task_id="t2"))
    assert blocked_by(engine, "op-3") == ["scope_paused"]
    events = when(engine, resume("*"))
    assert [e.attempt_id for e in of_type(events, ev.ActionClaimed)] == ["op-3/a1"]
    events = when(engine, resume("t1"))
    assert [e.attempt_id for e in of_type(events, ev.ActionClaimed)] == ["op-1/a1"]


def test_task_held_until_the_task_it_depends_on_is_completed():
    engine = given(world(), delegate("t2", depends_on=["t1"]), propose("op-2", task_id="t2"))
    assert blocked_by(engine, "op-2") == ["task_held"]
    assert task_row(engine, "t2")["holds"] == ["task_held"]
    when(engine, propose("op-1"))
    when(engine, outcome("op-1", "succeeded"))
    events = when(engine, complete_task("t1"))
    assert [e.attempt_id for e in of_type(events, ev.ActionClaimed)] == ["op-2/a1"]
    assert task_row(engine, "t2")["holds"] == []


def test_intent_unsynced_for_background_and_daemon_proposals_not_human_ones():
    engine = given(world(), message("m1"))
    events = when(engine, propose("op-1", revisions={"task": 1, "grant": 1, "intent": 1}))
    assert of_type(events, ev.ActionBlocked)[0].blocked_by == ["intent_unsynced"]
    events = when(engine, propose("op-2", actor="human"))
    assert [e.attempt_id for e in of_type(events, ev.ActionClaimed)] == ["op-2/a1"]
    events = when(engine, intent_synced(1))
    assert [e.attempt_id for e in of_type(events, ev.ActionClaimed)] == ["op-1/a1"]


def test_watchdog_unavailable_never_seen_fails_closed():
    engine = given(policy(), delegate_world_without_heartbeat())
    events = when(engine, propose("op-1"))
    assert of_type(events, ev.ActionBlocked)[0].blocked_by == ["watchdog_unavailable"]
    events = when(engine, propose("op-2", unattended=False))
    assert [e.attempt_id for e in of_type(events, ev.ActionClaimed)] == ["op-2/a1"]
    events = when(engine, heartbeat(1))
    assert [e.attempt_id for e in of_type(events, ev.ActionClaimed)] == ["op-1/a1"]


def test_watchdog_unavailable_when_the_last_heartbeat_is_too_old():
    engine = given(world(), pause("t1"), propose("op-1", at=at(120)))
    assert blocked_by(engine, "op-1") == ["scope_paused"]  # 120 s old: still fresh
    events = when(engine, tick(at=at(121)))
    assert kinds(events) == ["InputAccepted", "ActionBlocked", "AlertRaised"]
    assert events[1].blocked_by == ["scope_paused", "watchdog_unavailable"]
    assert events[2].alert_id == "watchdog_unavailable:engine"


def test_resource_busy_until_the_other_action_on_the_resource_ends():
    engine = given(world(), propose("op-1", resource="wt"))
    events = when(engine, propose("op-2", resource="wt"))
    assert of_type(events, ev.ActionBlocked)[0].blocked_by == ["resource_busy"]
    events = when(engine, outcome("op-1", "failed"))
    assert [e.attempt_id for e in of_type(events, ev.ActionClaimed)] == ["op-2/a1"]


def test_resource_busy_while_cancel_requested():
    engine = given(world(), propose("op-1", resource="wt"), cancel_action("op-1"), propose("op-2", resource="wt"))
    assert blocked_by(engine, "op-2") == ["resource_busy"]


def test_budget_exhausted_cancels_the_reporting_action_and_blocks_the_grants_pending_actions():
    engine = given(world(), delegate("t2", grant=grant_request("g-t2", token_limit=100)),
                   propose("op-1", task_id="t2"), usage("op-1", input_tokens=60, cached_input_tokens=500))
    events = when(engine, usage("op-1", output_tokens=40))
    assert kinds(events) == ["InputAccepted", "UsageReported", "BudgetExhausted", "AlertRaised", "ActionCancelRequested"]
    assert (events[2].grant_id, events[2].usage, events[2].token_limit) == ("g-t2", 100, 100)
    assert events[3].alert_id == "budget_exhausted:g-t2"
    assert events[4].reason == "budget_exhausted"
    events = when(engine, propose("op-2", task_id="t2"))
    assert of_type(events, ev.ActionBlocked)[0].blocked_by == ["budget_exhausted"]
    events = when(engine, revise_grant("g-t2", token_limit=1000))
    assert [e.attempt_id for e in of_type(events, ev.ActionClaimed)] == ["op-2/a1"]


def test_blocked_by_lists_every_code_in_the_section_4_table_order():
    engine = given(
        world(),
        delegate("ta", grant=grant_request("g-ta")),
        propose("pa-fail", task_id="ta"),
        outcome("pa-fail", "failed"),
        propose("pa-run", task_id="ta", resource="wt"),  # in flight on wt, no outcome
        delegate("base"),
        delegate("t", depends_on=["base"], grant=grant_request("g-t", token_limit=10)),
        raise_question("t", "q-task", affected="task"),
        raise_question("ta", "q-wide", affected="unknown"),
        pause("t"),
        message("m1"),  # intent 1, synced 0
        tick(at=at(500)),  # watchdog stale
        propose("main", task_id="t", resource="wt", prerequisites=["pa-run", "pa-fail"],
                revisions={"task": 1, "grant": 1, "intent": 1}, at=at(500)),
    )
    events = when(engine, usage("main", input_tokens=10, at=at(500)))
    assert kinds(events) == ["InputAccepted", "UsageReported", "BudgetExhausted", "AlertRaised", "ActionBlocked"]
    expected = [
        "prerequisite_pending",
        "prerequisite_failed",
        "question_hold",
        "wider_hold",
        "scope_paused",
        "task_held",
        "intent_unsynced",
        "watchdog_unavailable",
        "resource_busy",
        "budget_exhausted",
    ]
    # approval_pending needs an approval; rule_opted_out (contract v1.2) a rule action;
    # runtime_not_admitted a worker runtime; retry_backoff a refused attempt (tests/unit/test_budgets.py);
    # owner_active a maintenance action (tests/unit/test_foreman.py).
    assert expected == [
        code
        for code in BLOCKING_CODES
        if code not in ("approval_pending", "rule_opted_out", "runtime_not_admitted", "retry_backoff", "owner_active")
    ]
    assert events[4].blocked_by == expected
    assert blocked_by(engine, "main") == expected
    assert task_row(engine, "t")["holds"] == ["question_hold", "wider_hold", "scope_paused", "task_held"]


def test_blocked_by_is_empty_once_an_action_leaves_pending():
    engine = given(world(), pause("t1"), propose("op-1"))
    assert blocked_by(engine, "op-1") == ["scope_paused"]
    when(engine, revise_task("t1"))
    assert action_state(engine, "op-1") == "fenced"
    assert blocked_by(engine, "op-1") == []


def test_a_rule_action_gets_only_the_codes_that_need_no_task():
    engine = given(world(), rule("ci-repair"), pause("t1"), message("m1"), tick(at=at(500)))
    events = when(engine, propose("op-r", task_id=None, grant_id="g-rule", rule_id="ci-repair", actor="daemon",
                                  revisions={"grant": 1}, at=at(500)))
    assert of_type(events, ev.ActionBlocked)[0].blocked_by == ["watchdog_unavailable"]


def delegate_world_without_heartbeat():
    from tests.unit.helpers import bind, open_background, open_foreground

    return [open_foreground(), open_background(), bind(1), delegate("t1")]


def test_rejection_helper_reports_acceptance_as_none():
    engine = given(world())
    assert rejection(when(engine, tick())) is None


def test_blocked_by_is_evaluated_at_the_end_of_the_pass():
    """Two pending actions on one resource: the first claimed makes the second busy."""
    engine = given(world(), pause("t1"), propose("op-a", resource="wt"), propose("op-b", resource="wt"))
    assert blocked_by(engine, "op-b") == ["scope_paused"]
    events = when(engine, resume("t1"))
    assert [e.attempt_id for e in of_type(events, ev.ActionClaimed)] == ["op-a/a1"]
    assert [(e.operation_id, e.blocked_by) for e in of_type(events, ev.ActionBlocked)] == [
        ("op-b", ["resource_busy"])
    ]
    assert blocked_by(engine, "op-b") == ["resource_busy"]
    assert action_state(engine, "op-b") == "pending"


def test_resource_busy_while_the_other_action_is_unknown():
    engine = given(world(), propose("op-1", resource="wt"), receipt("op-1", result="unknown"))
    events = when(engine, propose("op-2", resource="wt"))
    assert of_type(events, ev.ActionBlocked)[0].blocked_by == ["resource_busy"]


def test_intent_unsynced_applies_to_a_daemon_proposal_for_a_task():
    engine = given(world(), message("m1"))
    events = when(engine, propose("op-1", actor="daemon", revisions={"task": 1, "grant": 1, "intent": 1}))
    assert of_type(events, ev.ActionBlocked)[0].blocked_by == ["intent_unsynced"]


def test_reconcile_not_received_at_max_attempts_is_exhausted():
    engine = given(world(), delegate("t2", grant=grant_request("g-t2", max_attempts=1)),
                   propose("op-1", task_id="t2"), receipt("op-1", result="unknown"))
    events = when(engine, reconcile("op-1", observed="not_received"))
    assert kinds(events) == ["InputAccepted", "AttemptUpdated"]
    assert (events[1].attempt_state, events[1].action_state) == ("not_received", "exhausted")


def test_a_question_listing_an_operation_not_proposed_yet_can_be_answered_and_then_holds_nothing():
    engine = given(world(), raise_question(affected=["op-later"]))
    assert rejection(when(engine, answer())) is None
    events = when(engine, propose("op-later", revisions={"task": 2, "grant": 1}))
    assert [e.attempt_id for e in of_type(events, ev.ActionClaimed)] == ["op-later/a1"]
