"""Every rejection code of spec sections 1 and 3.1-3.3 (plus stale_generation,
already_dispatched), and the order checks run in.

Given inputs, when one more input, then exactly the rejection reason.
"""

from __future__ import annotations

import pytest

from tandem.domain import events as ev
from tests.unit.helpers import (
    action_state,
    answer,
    at,
    bind,
    cancel_action,
    cancel_task,
    complete_task,
    configure,
    delegate,
    given,
    given_allowing_rejections,
    grant_request,
    heartbeat,
    intent_synced,
    kinds,
    line,
    message,
    observe,
    open_background,
    open_foreground,
    outcome,
    pause,
    policy,
    propose,
    queue_edit,
    raise_question,
    receipt,
    reconcile,
    rejection,
    revalidate,
    revise_grant,
    revise_task,
    rule,
    snapshot,
    tick,
    usage,
    when,
    world,
)

# ------------------------------------------------------------ section 1


def test_duplicate_input_same_body_apart_from_at():
    engine = given(policy(id="p-1"))
    events = when(engine, policy(id="p-1", at=at(5)))
    assert rejection(events) == "duplicate_input"
    assert kinds(events) == ["InputRejected"]


def test_duplicate_input_also_for_an_input_that_was_rejected():
    engine = given_allowing_rejections(world(), cancel_action("nope", id="x-1"))
    assert rejection(when(engine, cancel_action("nope", id="x-1", at=at(3)))) == "duplicate_input"


def test_idempotency_conflict_with_another_body():
    engine = given(policy(id="p-1"))
    assert rejection(when(engine, policy(id="p-1", operations=["worker.start"]))) == "idempotency_conflict"


def test_idempotency_conflict_when_only_the_actor_differs():
    engine = given(policy(id="p-1"))  # actor daemon
    assert rejection(when(engine, policy(id="p-1", actor="human"))) == "idempotency_conflict"


def test_idempotency_conflict_when_an_explicit_actor_differs_from_the_default():
    engine = given(world(), propose("op-1", id="pr-1"))  # background, the default
    again = propose("op-1", id="pr-1")
    assert rejection(when(engine, again)) == "duplicate_input"
    assert rejection(when(engine, propose("op-1", id="pr-1", actor="human"))) == "idempotency_conflict"


@pytest.mark.parametrize(
    "line_",
    [
        delegate("t9", actor="background"),  # human only
        rule(actor="daemon"),  # human only
        cancel_action("op-1", actor="background"),  # human only
        receipt("op-1", actor="human"),
        policy(actor="executor"),
        heartbeat(2, actor="daemon"),
        configure(actor="human"),
        answer(actor="foreground"),
    ],
    ids=lambda value: f"{value['type']}-from-{value['actor']}",
)
def test_not_authorized(line_):
    engine = given(world(), propose("op-1"), raise_question())
    assert rejection(when(engine, line_)) == "not_authorized"


# ------------------------------------------------------------ unknown ids


def test_unknown_task():
    engine = given(world())
    assert rejection(when(engine, revise_task("nope"))) == "unknown_task"
    assert rejection(when(engine, cancel_task("nope"))) == "unknown_task"
    assert rejection(when(engine, complete_task("nope"))) == "unknown_task"
    assert rejection(when(engine, raise_question("nope"))) == "unknown_task"
    assert rejection(when(engine, propose("op-1", task_id="nope", grant_id="g-t1"))) == "unknown_task"
    assert rejection(when(engine, delegate("t2", depends_on=["nope"]))) == "unknown_task"


def test_unknown_grant():
    engine = given(world())
    assert rejection(when(engine, revise_grant("nope", max_attempts=5))) == "unknown_grant"
    assert rejection(when(engine, propose("op-1", grant_id="nope"))) == "unknown_grant"


def test_unknown_operation():
    engine = given(world())
    assert rejection(when(engine, cancel_action("nope"))) == "unknown_operation"
    assert rejection(when(engine, receipt("nope"))) == "unknown_operation"
    assert rejection(when(engine, reconcile("nope"))) == "unknown_operation"
    assert rejection(when(engine, outcome("nope"))) == "unknown_operation"
    assert rejection(when(engine, revalidate("nope"))) == "unknown_operation"
    assert rejection(when(engine, usage("nope", input_tokens=1))) == "unknown_operation"
    assert rejection(when(engine, propose("op-1", prerequisites=["nope"]))) == "unknown_operation"


def test_unknown_conversation():
    engine = given(policy(), open_foreground())
    assert rejection(when(engine, delegate("t1", conversation_id="nope"))) == "unknown_conversation"
    assert rejection(when(engine, open_background("bg", foreground_id="nope"))) == "unknown_conversation"
    assert rejection(when(engine, bind(1, conversation_id="nope"))) == "unknown_conversation"
    assert rejection(when(engine, message(conversation_id="nope"))) == "unknown_conversation"


def test_unknown_question():
    engine = given(world(), raise_question("t1", "q1"))
    assert rejection(when(engine, answer("t1", "q-other"))) == "unknown_question"


# ------------------------------------------------------------ 3.1


def test_too_late_after_another_kind():
    engine = given(configure(watchdog_max_age_s=30), configure(fallback_after_s=60), policy())
    assert rejection(when(engine, configure(wake_batch_max=5))) == "too_late"


def test_configure_applies_before_any_other_kind():
    engine = given(configure(watchdog_max_age_s=30))
    assert engine.state.authority.config.watchdog_max_age_s == 30
    # ... and the configured age is the one freshness uses.
    engine = given(configure(watchdog_max_age_s=30), world(), propose("op-1", unattended=True, at=at(31)))
    assert action_state(engine, "op-1") == "pending"


def test_rule_set_is_human_only_and_revises_its_grant():
    engine = given(policy(), rule("ci-repair"))
    events = when(engine, rule("ci-repair", grant=grant_request("g-rule", operations=["worker.start"], max_attempts=5)))
    assert rejection(events) is None
    revised = [e for e in events if isinstance(e, ev.GrantRevised)]
    assert [(e.grant_id, e.revision, e.max_attempts) for e in revised] == [("g-rule", 2, 5)]


def test_rule_set_with_another_grant_id_for_an_existing_rule_is_already_exists():
    engine = given(policy(), rule("ci-repair"))
    events = when(engine, rule("ci-repair", grant=grant_request("g-other")))
    assert rejection(events) == "already_exists"


# ------------------------------------------------------------ 3.2


def test_grant_outside_policy_when_no_operation_survives():
    engine = given(policy(), open_foreground())
    events = when(engine, delegate("t1", grant=grant_request("g1", operations=["scm.push"])))
    assert rejection(events) == "grant_outside_policy"


def test_grant_outside_policy_when_no_write_root_survives():
    engine = given(policy(), open_foreground())
    events = when(engine, delegate("t1", grant=grant_request("g1", roots=["/etc", "repo", "/repo/../etc"])))
    assert rejection(events) == "grant_outside_policy"


def test_grant_outside_policy_on_grant_revise():
    engine = given(world())
    assert rejection(when(engine, revise_grant("g-t1", allowed_operations=["scm.push"]))) == "grant_outside_policy"


def test_already_exists_for_a_used_task_id_or_grant_id():
    engine = given(world())
    assert rejection(when(engine, delegate("t1", grant=grant_request("g-new")))) == "already_exists"
    assert rejection(when(engine, delegate("t-new", grant=grant_request("g-t1")))) == "already_exists"


def test_already_exists_for_a_used_conversation_id():
    engine = given(world())
    assert rejection(when(engine, open_foreground("fg"))) == "already_exists"


def test_already_exists_for_a_reused_operation_id_after_the_unknown_checks():
    engine = given(world(), propose("op-1"))
    assert rejection(when(engine, propose("op-1", grant_id="nope"))) == "unknown_grant"
    assert rejection(when(engine, propose("op-1", cause_key="other"))) == "already_exists"


def test_stale_revision_on_task_revise():
    engine = given(world())
    assert rejection(when(engine, revise_task("t1", expected_revision=2))) == "stale_revision"
    assert rejection(when(engine, revise_task("t1", expected_revision=1))) is None
    assert rejection(when(engine, revise_task("t1", expected_revision=1))) == "stale_revision"


def test_stale_revision_on_grant_revise():
    engine = given(world())
    assert rejection(when(engine, revise_grant("g-t1", expected_revision=0, max_attempts=4))) == "stale_revision"


def test_stale_revision_on_raising_an_answered_question_without_newer_evidence():
    engine = given(world(), raise_question(evidence_revision=3), answer())
    assert rejection(when(engine, raise_question(evidence_revision=3))) == "stale_revision"
    assert rejection(when(engine, raise_question(evidence_revision=2))) == "stale_revision"
    events = when(engine, raise_question(evidence_revision=4))
    assert rejection(events) is None
    raised = [e for e in events if isinstance(e, ev.QuestionRaised)]
    assert [(e.reopened, e.times_raised, e.first_seen_at) for e in raised] == [(True, 2, raised[0].first_seen_at)]


def test_raising_an_open_question_again_keeps_first_seen_at_and_counts():
    engine = given(world(), raise_question(evidence_revision=1, at=at(1)))
    events = when(engine, raise_question(evidence_revision=1, recipient="fg", at=at(9)))
    (raised,) = [e for e in events if isinstance(e, ev.QuestionRaised)]
    assert (raised.times_raised, raised.recipient, raised.reopened) == (2, "fg", False)
    assert raised.first_seen_at == engine.state.tasks.questions[("t1", "q1")].first_seen_at
    assert raised.first_seen_at.isoformat().startswith("2026-03-01T09:00:01")


def test_stale_revision_on_propose_for_each_input_revision():
    engine = given(world(), message("m1"), intent_synced(1))
    assert rejection(when(engine, propose("op-1", revisions={"task": 2, "grant": 1}))) == "stale_revision"
    assert rejection(when(engine, propose("op-1", revisions={"task": 1, "grant": 2}))) == "stale_revision"
    assert rejection(when(engine, propose("op-1", revisions={"task": 1, "grant": 1, "intent": 0}))) == "stale_revision"
    assert rejection(when(engine, propose("op-1", revisions={"task": 1, "grant": 1, "intent": 1}))) is None


def test_stale_revision_on_intent_synced_above_the_intent_revision():
    engine = given(world(), message("m1"))
    assert rejection(when(engine, intent_synced(2))) == "stale_revision"


def test_task_not_active():
    engine = given(world(), delegate("t2"), cancel_task("t2"))
    assert rejection(when(engine, revise_task("t2", expected_revision=1))) == "task_not_active"
    assert rejection(when(engine, complete_task("t2"))) == "task_not_active"
    assert rejection(when(engine, raise_question("t2"))) == "task_not_active"
    assert rejection(when(engine, propose("op-1", task_id="t2"))) == "task_not_active"


def test_work_outstanding_while_an_action_is_not_terminal():
    engine = given(world(), propose("op-1"), receipt("op-1"))
    assert rejection(when(engine, complete_task("t1"))) == "work_outstanding"


def test_unverified_unless_an_action_succeeded():
    engine = given(world())
    assert rejection(when(engine, complete_task("t1"))) == "unverified"
    engine = given(world(), propose("op-1"), outcome("op-1", "failed"))
    assert rejection(when(engine, complete_task("t1"))) == "unverified"
    events = when(engine, propose("op-2"))
    assert rejection(events) is None
    given_more = [outcome("op-2", "succeeded")]
    for item in given_more:
        assert rejection(when(engine, item)) is None
    events = when(engine, complete_task("t1"))
    assert kinds(events) == ["InputAccepted", "TaskCompleted", "GrantRevoked"]


def test_not_open_on_answering_an_answered_question():
    engine = given(world(), raise_question(), answer())
    assert rejection(when(engine, answer())) == "not_open"


# ------------------------------------------------------------ 3.3 propose


def test_grant_scope_a_task_grant_serves_only_its_own_task():
    engine = given(world(), delegate("t2"))
    assert rejection(when(engine, propose("op-1", task_id="t1", grant_id="g-t2"))) == "grant_scope"
    assert rejection(when(engine, propose("op-1", task_id="t1", grant_id="g-t2", actor="human"))) == "grant_scope"


def test_grant_scope_a_rule_grant_serves_only_its_rules_proposals_from_the_daemon():
    engine = given(world(), rule("ci-repair"), rule("other", grant=grant_request("g-other")))
    from_background = propose("op-r", task_id=None, grant_id="g-rule", rule_id="ci-repair", revisions={"grant": 1})
    assert rejection(when(engine, from_background)) == "grant_scope"
    from_human = propose("op-r", task_id=None, grant_id="g-rule", rule_id="ci-repair", actor="human",
                         revisions={"grant": 1})
    assert rejection(when(engine, from_human)) == "grant_scope"
    other_rule = propose("op-r", task_id=None, grant_id="g-rule", rule_id="other", actor="daemon",
                         revisions={"grant": 1})
    assert rejection(when(engine, other_rule)) == "grant_scope"
    task_with_rule_grant = propose("op-r", task_id="t1", grant_id="g-rule")
    assert rejection(when(engine, task_with_rule_grant)) == "grant_scope"
    from_daemon = propose("op-r", task_id=None, grant_id="g-rule", rule_id="ci-repair", actor="daemon",
                          revisions={"grant": 1})
    events = when(engine, from_daemon)
    assert rejection(events) is None
    assert [e.attempt_id for e in events if isinstance(e, ev.ActionClaimed)] == ["op-r/a1"]


def test_generation_fenced_for_a_background_proposal_with_another_generation():
    engine = given(world())
    assert rejection(when(engine, propose("op-1", generation=2))) == "generation_fenced"
    when(engine, bind(2))
    assert rejection(when(engine, propose("op-1", generation=1))) == "generation_fenced"
    assert rejection(when(engine, propose("op-1", generation=2))) is None


def test_generation_fenced_does_not_apply_to_human_or_daemon():
    engine = given(world(), bind(5))
    assert rejection(when(engine, propose("op-1", actor="human"))) is None


def test_generation_fenced_on_intent_synced():
    engine = given(world(), message("m1"))
    assert rejection(when(engine, intent_synced(1, generation=2))) == "generation_fenced"


def test_operation_not_granted():
    engine = given(policy(["worker.start", "worker.test", "scm.push"]), open_foreground(), open_background(), bind(1),
                   heartbeat(1), delegate("t1", grant=grant_request("g-t1", operations=["worker.start"])))
    assert rejection(when(engine, propose("op-1", operation="scm.push"))) == "operation_not_granted"
    assert rejection(when(engine, propose("op-1", operation="worker.test"))) == "operation_not_granted"


@pytest.mark.parametrize("path", ["/etc/passwd", "/repo/../etc/passwd", "repo/src", "/repository", "/repo/src/../../x"])
def test_write_outside_roots(path):
    engine = given(world())
    assert rejection(when(engine, propose("op-1", write_paths=[path]))) == "write_outside_roots"


def test_duplicate_cause_while_another_action_for_the_cause_is_not_terminal():
    engine = given(world(), propose("op-1", cause_key="ci:pr/7"))
    assert rejection(when(engine, propose("op-2", cause_key="ci:pr/7"))) == "duplicate_cause"


def test_duplicate_cause_after_success_while_the_update_has_not_moved():
    engine = given(world(), propose("op-1", cause_key="ci:pr/7"), outcome("op-1", "succeeded"))
    assert rejection(when(engine, propose("op-2", cause_key="ci:pr/7"))) == "duplicate_cause"


def test_a_failed_cause_may_be_repaired_again():
    engine = given(world(), propose("op-1", cause_key="ci:pr/7"), outcome("op-1", "failed"))
    assert rejection(when(engine, propose("op-2", cause_key="ci:pr/7"))) is None


# ------------------------------------------------------------ 3.3 other kinds


def test_not_fenced_on_revalidating_an_action_that_is_not_fenced():
    engine = given(world(), propose("op-1"))
    assert rejection(when(engine, revalidate("op-1"))) == "not_fenced"


def test_not_cancellable_once_terminal():
    engine = given(world(), propose("op-1"), outcome("op-1", "succeeded"))
    assert rejection(when(engine, cancel_action("op-1"))) == "not_cancellable"
    engine = given(world(), propose("op-1"), cancel_action("op-1"))  # cancel_requested
    assert rejection(when(engine, cancel_action("op-1"))) == "not_cancellable"


def test_stale_attempt_for_a_receipt_not_on_the_latest_attempt():
    engine = given(world(), propose("op-1"), receipt("op-1", "op-1/a1", "refused"))  # a2 now submitting
    assert rejection(when(engine, receipt("op-1", "op-1/a1", "accepted"))) == "stale_attempt"
    assert rejection(when(engine, receipt("op-1", "op-1/a3", "accepted"))) == "stale_attempt"


def test_stale_attempt_for_a_receipt_once_the_attempt_is_past_queued():
    engine = given(world(), propose("op-1"), receipt("op-1", result="accepted"))
    assert rejection(when(engine, receipt("op-1", result="accepted"))) == "stale_attempt"
    engine = given(world(), propose("op-1"), receipt("op-1", result="unknown"))
    assert rejection(when(engine, receipt("op-1", result="refused"))) == "stale_attempt"


def test_stale_attempt_for_a_receipt_on_an_action_never_claimed():
    engine = given(world(), tick(at=at(500)), propose("op-1", at=at(500)))  # watchdog stale: pending
    assert rejection(when(engine, receipt("op-1", result="accepted", at=at(500)))) == "stale_attempt"


def test_stale_attempt_for_a_reconcile_unless_the_latest_attempt_is_unknown():
    engine = given(world(), propose("op-1"))
    assert rejection(when(engine, reconcile("op-1", observed="accepted"))) == "stale_attempt"
    when(engine, receipt("op-1", result="queued"))
    assert rejection(when(engine, reconcile("op-1", observed="not_received"))) == "stale_attempt"


def test_stale_attempt_for_an_outcome_outside_the_live_states():
    engine = given(world(), propose("op-1"), outcome("op-1", "succeeded"))
    assert rejection(when(engine, outcome("op-1", "failed"))) == "stale_attempt"
    engine = given(world(), tick(at=at(500)), propose("op-1", at=at(500)))  # pending
    assert rejection(when(engine, outcome("op-1", "succeeded", at=at(500)))) == "stale_attempt"


def test_stale_attempt_for_a_cancelled_outcome_unless_cancel_requested():
    engine = given(world(), propose("op-1"), receipt("op-1", result="accepted"))
    assert rejection(when(engine, outcome("op-1", "cancelled"))) == "stale_attempt"


# ------------------------------------------------------------ 5, 6 and extensions


def test_stale_generation_for_a_heartbeat_below_the_last_one():
    engine = given(world(), heartbeat(3))
    assert rejection(when(engine, heartbeat(2))) == "stale_generation"
    assert rejection(when(engine, heartbeat(3))) is None


def test_stale_generation_for_a_bind_that_does_not_exceed_the_binding():
    engine = given(world(), bind(2))
    assert rejection(when(engine, bind(2))) == "stale_generation"
    assert rejection(when(engine, bind(1))) == "stale_generation"
    assert rejection(when(engine, bind(3))) is None


def test_already_dispatched_for_a_message_no_longer_queued():
    # A failure hold keeps the message queued (an idle foreground would send it at once).
    held = line("hold.failure", "daemon", conversation_id="fg")
    engine = given(world(), held, message("m1"), queue_edit("m1", "withdraw"))
    assert rejection(when(engine, queue_edit("m1", "edit", text="again"))) == "already_dispatched"


def test_already_dispatched_for_a_message_sent_in_a_turn():
    engine = given(world(), message("m1"))
    assert engine.state.conversation.by_id["fg"].messages["m1"].state == "dispatched"
    assert rejection(when(engine, queue_edit("m1", "edit", text="again"))) == "already_dispatched"


def test_already_dispatched_for_an_unknown_message():
    engine = given(world())
    assert rejection(when(engine, queue_edit("nope", "withdraw"))) == "already_dispatched"


# ------------------------------------------------------------ check order


def test_idempotency_is_checked_before_not_authorized():
    engine = given_allowing_rejections(world(), delegate("t9", actor="background", id="d-1"))
    assert engine.views.view("rejections")[-1]["reason"] == "not_authorized"
    assert rejection(when(engine, delegate("t9", actor="background", id="d-1", at=at(1)))) == "duplicate_input"
    assert rejection(when(engine, delegate("t8", actor="background", id="d-1", at=at(1)))) == "idempotency_conflict"


def test_not_authorized_is_checked_before_the_kinds_own_checks():
    engine = given(policy(), open_foreground())
    assert rejection(when(engine, delegate("t1", conversation_id="nope", actor="background"))) == "not_authorized"
    assert rejection(when(engine, receipt("nope", actor="daemon"))) == "not_authorized"


def test_propose_checks_run_in_the_spec_order():
    """Fix one failing check at a time: each step fails with the next check."""
    engine = given(world(), delegate("t2"), cancel_task("t2"), propose("op-0", cause_key="c"))
    proposal = propose("op-1", task_id="nope", grant_id="nope", prerequisites=["nope"], generation=9,
                       operation="scm.push", write_paths=["/etc"], revisions={"task": 7, "grant": 1}, cause_key="c")
    ladder = [
        ("unknown_task", {"task_id": "t2"}),
        ("unknown_grant", {"grant_id": "g-t1"}),
        ("unknown_operation", {"prerequisites": []}),
        ("grant_scope", {"grant_id": "g-t2"}),
        ("generation_fenced", {"generation": 1}),
        ("task_not_active", {"task_id": "t1", "grant_id": "g-t1"}),
        ("operation_not_granted", {"operation": "worker.start"}),
        ("write_outside_roots", {"write_paths": ["/repo/x"]}),
        ("stale_revision", {"input_revisions": {"task": 1, "grant": 1}}),
        ("duplicate_cause", {"cause_key": "c-new"}),
        (None, {}),
    ]
    seen = []
    for expected, fix in ladder:
        seen.append(rejection(when(engine, proposal)))
        proposal = {**proposal, **fix}
    assert seen == [expected for expected, _ in ladder]


def test_revalidate_checks_not_fenced_then_generation_then_authority_then_revisions():
    engine = given(world(), propose("op-1", at=at(0)), tick(at=at(500)), propose("op-2", at=at(500)),
                   revise_task("t1", expected_revision=1, at=at(500)))
    assert action_state(engine, "op-2") == "fenced"
    assert rejection(when(engine, revalidate("op-1", at=at(500)))) == "not_fenced"  # in flight
    assert rejection(when(engine, revalidate("op-2", generation=7, at=at(500)))) == "generation_fenced"
    assert rejection(when(engine, revalidate("op-2", at=at(500)))) == "stale_revision"
    events = when(engine, revalidate("op-2", revisions={"task": 2, "grant": 1}, at=at(500)))
    assert kinds(events)[:2] == ["InputAccepted", "ActionRevalidated"]
    assert action_state(engine, "op-2") == "pending"


def test_revalidate_checks_the_operation_and_write_paths_against_current_authority():
    engine = given(world(), tick(at=at(500)), propose("op-1", at=at(500)), propose("op-2", operation="worker.test",
                   write_paths=["/repo/b"], at=at(500)),
                   revise_grant("g-t1", allowed_operations=["worker.test"], write_roots=["/repo/a"], at=at(500)))
    assert action_state(engine, "op-1") == "fenced"
    assert action_state(engine, "op-2") == "fenced"
    assert rejection(when(engine, revalidate("op-1", revisions={"task": 1, "grant": 1}, at=at(500)))) == "operation_not_granted"
    assert rejection(when(engine, revalidate("op-2", revisions={"task": 1, "grant": 1}, at=at(500)))) == "write_outside_roots"


def test_task_revise_checks_stale_revision_before_task_not_active():
    engine = given(world(), cancel_task("t1"))
    assert rejection(when(engine, revise_task("t1", expected_revision=3))) == "stale_revision"
    assert rejection(when(engine, revise_task("t1", expected_revision=1))) == "task_not_active"


def test_task_complete_checks_task_not_active_then_work_outstanding_then_unverified():
    engine = given(world(), propose("op-1"), cancel_task("t1"))  # op-1 cancel_requested: not terminal
    assert action_state(engine, "op-1") == "cancel_requested"
    assert rejection(when(engine, complete_task("t1"))) == "task_not_active"
    engine = given(world(), propose("op-1"))  # nothing succeeded and op-1 is in flight
    assert rejection(when(engine, complete_task("t1"))) == "work_outstanding"


def test_receipt_checks_unknown_operation_before_stale_attempt():
    engine = given(world())
    assert rejection(when(engine, receipt("nope", "nope/a9"))) == "unknown_operation"


# ------------------------------------------------------------ a rejection changes nothing

REJECTED_CASES = {
    "duplicate_cause": (lambda: [world(), propose("op-1", cause_key="c")], propose("op-2", cause_key="c")),
    "stale_revision": (lambda: [world()], revise_task("t1", expected_revision=9)),
    "grant_outside_policy": (lambda: [world()], delegate("t2", grant=grant_request("g2", roots=["/etc"]))),
    "stale_attempt": (lambda: [world(), propose("op-1")], receipt("op-1", "op-1/a2")),
    "not_cancellable": (lambda: [world(), propose("op-1"), outcome("op-1")], cancel_action("op-1")),
    "work_outstanding": (lambda: [world(), propose("op-1")], complete_task("t1")),
    "not_authorized": (lambda: [world(), propose("op-1")], cancel_action("op-1", actor="background")),
    "stale_generation": (lambda: [world(), heartbeat(4)], heartbeat(3)),
    "too_late": (lambda: [world()], configure(watchdog_max_age_s=1)),
    "not_open": (lambda: [world(), raise_question(), answer()], answer(text="other")),
}


@pytest.mark.parametrize("reason", sorted(REJECTED_CASES))
def test_a_rejected_input_records_only_its_rejection_and_changes_no_state(reason):
    setup, line_ = REJECTED_CASES[reason]
    engine = given(setup())
    before = snapshot(engine)
    state_before = (engine.state.seq, engine.state.position)
    events = when(engine, line_)
    assert kinds(events) == ["InputRejected"]
    assert events[0].reason == reason
    assert snapshot(engine) == before
    assert engine.state.seq == state_before[0] + 1
    assert engine.views.view("rejections")[-1] == {"line": state_before[0] + 1, "type": line_["type"], "reason": reason}


def test_a_rejected_input_still_runs_the_pass_when_time_changed_something():
    engine = given(world(), propose("op-1", cause_key="c"), pause("t1"), propose("op-2"))
    assert engine.views.view("actions")[1]["blocked_by"] == ["scope_paused"]
    events = when(engine, propose("op-3", cause_key="c", at=at(121)))  # duplicate_cause, watchdog now stale
    assert kinds(events) == ["InputRejected", "ActionBlocked", "AlertRaised"]
    assert events[0].reason == "duplicate_cause"
    assert events[2].alert_id == "watchdog_unavailable:engine"
    assert (events[1].operation_id, events[1].blocked_by) == ("op-2", ["scope_paused", "watchdog_unavailable"])



def test_delegate_checks_grant_outside_policy_before_already_exists():
    engine = given(world())
    assert rejection(when(engine, delegate("t1", grant=grant_request("g-t1", operations=["scm.push"])))) == (
        "grant_outside_policy"
    )


def test_question_raise_checks_task_not_active_before_stale_revision():
    engine = given(world(), raise_question(evidence_revision=5), answer(), cancel_task("t1"))
    assert rejection(when(engine, raise_question(evidence_revision=1))) == "task_not_active"


def test_an_omitted_actor_is_the_kinds_default_for_idempotency():
    engine = given(world(), {k: v for k, v in propose("op-1", id="pr-1").items() if k != "actor"})
    assert rejection(when(engine, propose("op-1", id="pr-1", at=at(2)))) == "duplicate_input"
