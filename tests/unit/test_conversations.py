"""Spec 5: conversations and foreground delivery (given / when / then).

Alerts and obligations (section 6) are not implemented; nothing here tests
them. Documented decisions the tests rely on: unknown delivery/turn ids are
`stale_attempt`; a reseed's control state is the conversation's own active
tasks (40), their live grants (20), open questions (30) and non-terminal
actions (30); every delivery, steers included, must fit; approval.required for
an open request, hold.failure when held and hold.release when not held are
accepted and change nothing.
"""

from __future__ import annotations

from tandem.domain import events as ev
from tests.unit.helpers import (
    at, approval_required, approval_resolved, blocked_by, configure, context_reset, conversation_row,
    conversation_usage, deliveries, delivery_row, given, hold_failure, hold_release, inbox_row, message,
    of_type, open_background, open_foreground, pause, propose, provider_receipt, provider_reconcile,
    queue_edit, rejection, snapshot, triage, turn_ended, update_for, when, world, policy, bind, heartbeat,
    delegate, observe,
)


def conv(engine, cid="fg"):
    return conversation_row(engine, cid)


def ids(engine, cid="fg"):
    return [d["delivery_id"] for d in deliveries(engine, cid)]


def last(engine, cid="fg"):
    return deliveries(engine, cid)[-1]


def bare(limit=200_000, reserve=20_000, steer=False, **kw):
    """Foreground/background pair without tasks (reseed control state = 0)."""
    return [
        *([configure(**kw)] if kw else []),
        policy(),
        open_foreground(context_limit=limit, reserve=reserve, steer=steer),
        open_background(),
        bind(1),
        heartbeat(1),
    ]


# ------------------------------------------------------------ ids and human turns


def test_turn_and_delivery_ids_are_numbered_and_never_reused_across_epochs():
    engine = given(*bare(), message("m1"), provider_receipt("fg/d1"), turn_ended("fg/t1"))
    assert ids(engine) == ["fg/d1"]
    when(engine, context_reset())
    # the reseed is d2 (no turn); t1 is not reused
    assert last(engine)["delivery_id"] == "fg/d2" and last(engine)["kind"] == "reseed"
    assert last(engine)["turn_id"] is None and last(engine)["epoch"] == 2
    when(engine, provider_receipt("fg/d2"))
    when(engine, message("m2"))
    assert last(engine)["delivery_id"] == "fg/d3"
    assert last(engine)["turn_id"] == "fg/t2"
    assert last(engine)["epoch"] == 2
    assert [d["delivery_id"] for d in deliveries(engine)] == ["fg/d1", "fg/d2", "fg/d3"]


def test_human_turn_takes_all_queued_messages_in_order_then_deliverable_by_rank_then_routine():
    engine = given(*bare(), hold_failure(),
                   message("m1"), message("m2"), message("m3"),
                   *update_for("ci:low", notification_priority=1),
                   *update_for("ci:high", notification_priority=9),
                   *update_for("ci:routine", disposition="routine", notification_priority=9),
                   *update_for("ci:urgent", disposition="urgent", notification_priority=0))
    assert deliveries(engine) == []
    when(engine, hold_release())
    d = last(engine)
    assert d["kind"] == "turn" and d["turn_id"] == "fg/t1"
    assert d["messages"] == ["m1", "m2", "m3"]
    assert d["included"] == [["ci:urgent", 1], ["ci:high", 1], ["ci:low", 1], ["ci:routine", 1]]
    assert conv(engine)["state"] == "running" and conv(engine)["queue"] == []


def test_rank_ties_by_first_seen_then_cause_key():
    engine = given(*bare(), hold_failure(),
                   *update_for("ci:b", n=1), *update_for("ci:a", n=1), *update_for("ci:z", n=0),
                   message("m1", at=at(2)), hold_release(at=at(2)))
    assert last(engine)["included"] == [["ci:z", 1], ["ci:a", 1], ["ci:b", 1]]


def test_routine_updates_ride_along_only_when_they_fit():
    engine = given(*bare(limit=1000, reserve=100), hold_failure(),
                   message("m1", tokens=100),
                   *update_for("ci:big", disposition="routine", tokens=900),
                   *update_for("ci:small", disposition="routine", tokens=50))
    when(engine, hold_release())
    assert last(engine)["included"] == [["ci:small", 1]]
    assert last(engine)["tokens"] == 150


def test_routine_updates_alone_wake_nothing():
    engine = given(*bare(), *update_for("ci:r", disposition="routine"))
    assert deliveries(engine) == []
    assert conv(engine)["state"] == "idle"


# ----------------------------------------------------------------- wakes


def test_one_coalesced_wake_up_to_wake_batch_max():
    engine = given(*bare(wake_batch_max=2), hold_failure(),
                   *update_for("ci:a", notification_priority=1),
                   *update_for("ci:b", notification_priority=5),
                   *update_for("ci:c", notification_priority=3))
    when(engine, hold_release())
    assert len(deliveries(engine)) == 1
    d = last(engine)
    assert d["kind"] == "turn" and d["turn_id"] == "fg/t1" and d["messages"] == []
    assert d["included"] == [["ci:b", 1], ["ci:c", 1]]
    # ci:a stays deliverable, but the turn runs: no second wake
    when(engine, provider_receipt("fg/d1"))
    assert len(deliveries(engine)) == 1
    when(engine, turn_ended("fg/t1"))
    assert last(engine)["included"] == [["ci:a", 1]] and last(engine)["turn_id"] == "fg/t2"


def test_wake_skips_misfits():
    engine = given(*bare(limit=1000, reserve=100), hold_failure(),
                   *update_for("ci:a", notification_priority=9, tokens=901),
                   *update_for("ci:b", notification_priority=1, tokens=900))
    when(engine, hold_release())
    assert last(engine)["included"] == [["ci:b", 1]]


def test_no_wake_while_star_paused_but_a_human_turn_still_goes():
    engine = given(*bare(), pause("*"), *update_for("ci:a"))
    assert deliveries(engine) == []
    when(engine, message("m1"))
    assert last(engine)["messages"] == ["m1"] and last(engine)["included"] == [["ci:a", 1]]


def test_task_pause_does_not_stop_a_wake():
    engine = given(*world(), pause("t1"), *update_for("ci:a"))
    assert last(engine)["included"] == [["ci:a", 1]]


# ---------------------------------------------------------- not dispatchable


def test_open_approval_blocks_dispatch_and_resolution_lifts_it():
    engine = given(*bare(), approval_required("r1"), message("m1"), *update_for("ci:a"))
    assert deliveries(engine) == [] and conv(engine)["queue"] == ["m1"]
    assert conv(engine)["state"] == "idle"
    when(engine, approval_resolved("r1"))
    assert last(engine)["messages"] == ["m1"]


def test_failure_hold_blocks_dispatch_and_view_state():
    engine = given(*bare(), hold_failure(), message("m1"))
    assert deliveries(engine) == [] and conv(engine)["state"] == "failure_held"
    when(engine, hold_release())
    assert conv(engine)["state"] == "running"


def test_repeated_approval_and_holds_are_accepted_without_change():
    engine = given(*bare(), approval_required("r1"), hold_failure())
    before = snapshot(engine)
    for item in (approval_required("r1", detail="other"), hold_failure()):
        events = when(engine, item)
        assert rejection(events) is None
        assert snapshot(engine) == before
    engine = given(*bare())
    before = snapshot(engine)
    events = when(engine, hold_release())
    assert rejection(events) is None and snapshot(engine) == before


def test_approval_resolved_not_open():
    engine = given(*bare())
    assert rejection(when(engine, approval_resolved("nope"))) == "not_open"
    engine = given(*bare(), approval_required("r1"), approval_resolved("r1"))
    assert rejection(when(engine, approval_resolved("r1"))) == "not_open"


def test_unaccepted_reseed_blocks_dispatch():
    engine = given(*bare(), context_reset(), message("m1"))
    assert [d["kind"] for d in deliveries(engine)] == ["reseed"]
    assert conv(engine)["queue"] == ["m1"]
    when(engine, provider_receipt("fg/d1", "unknown"))
    assert len(deliveries(engine)) == 1
    when(engine, provider_reconcile("fg/d1", "accepted"))
    assert last(engine)["messages"] == ["m1"] and last(engine)["turn_id"] == "fg/t1"


# ----------------------------------------------------------------- steers


def running_with_steer(steer=True):
    return [*bare(steer=steer), message("m1"), provider_receipt("fg/d1")]


def test_steer_only_urgent_while_running_with_steer_true():
    engine = given(*running_with_steer(), *update_for("ci:act"), *update_for("ci:u1", disposition="urgent"),
                   *update_for("ci:u2", disposition="urgent", n=1))
    steers = [d for d in deliveries(engine) if d["kind"] == "steer"]
    assert [d["included"] for d in steers] == [[["ci:u1", 1]], [["ci:u2", 1]]]
    assert all(d["turn_id"] == "fg/t1" and d["messages"] == [] for d in steers)
    assert not any(["ci:act", 1] in d["included"] for d in deliveries(engine))


def test_one_steer_takes_every_deliverable_urgent_update():
    engine = given(*bare(steer=True), message("m1"), hold_failure(),
                   *update_for("ci:u1", disposition="urgent"), *update_for("ci:u2", disposition="urgent"))
    assert len(deliveries(engine)) == 1  # the human turn, before the urgent updates
    when(engine, hold_release())
    assert last(engine)["kind"] == "steer"
    assert sorted(map(tuple, last(engine)["included"])) == [("ci:u1", 1), ("ci:u2", 1)]


def test_no_steer_without_steer_true():
    engine = given(*running_with_steer(False), *update_for("ci:u1", disposition="urgent"))
    assert len(deliveries(engine)) == 1
    when(engine, turn_ended("fg/t1"))
    assert last(engine)["included"] == [["ci:u1", 1]] and last(engine)["turn_id"] == "fg/t2"


def test_refused_steer_is_not_steered_again_in_that_turn():
    engine = given(*running_with_steer(), *update_for("ci:u1", disposition="urgent"))
    assert last(engine)["kind"] == "steer" and last(engine)["delivery_id"] == "fg/d2"
    when(engine, provider_receipt("fg/d2", "refused"))
    when(engine, observe(source_id="other", fingerprint="x", scope="elsewhere"))  # another pass
    assert ids(engine) == ["fg/d1", "fg/d2"]
    assert conv(engine)["state"] == "running"
    when(engine, turn_ended("fg/t1"))
    assert last(engine)["turn_id"] == "fg/t2" and last(engine)["included"] == [["ci:u1", 1]]


def test_steer_must_fit():
    engine = given(*bare(limit=1000, reserve=100, steer=True), message("m1", tokens=10),
                   provider_receipt("fg/d1"), *update_for("ci:u", disposition="urgent", tokens=900))
    assert len(deliveries(engine)) == 1


# -------------------------------------------------------- receipts, reconciles


def test_provider_receipt_only_while_submitting():
    engine = given(*bare(), message("m1"), provider_receipt("fg/d1"))
    assert rejection(when(engine, provider_receipt("fg/d1"))) == "stale_attempt"
    assert rejection(when(engine, provider_receipt("fg/d9"))) == "stale_attempt"
    assert rejection(when(engine, provider_receipt("nope/d1"))) == "stale_attempt"


def test_provider_reconcile_only_while_unknown():
    engine = given(*bare(), message("m1"))
    assert rejection(when(engine, provider_reconcile("fg/d1"))) == "stale_attempt"
    when(engine, provider_receipt("fg/d1", "unknown"))
    assert delivery_row(engine, "fg/d1")["attempt_state"] == "unknown"
    assert rejection(when(engine, provider_receipt("fg/d1"))) == "stale_attempt"
    assert rejection(when(engine, provider_reconcile("fg/d1"))) is None
    assert delivery_row(engine, "fg/d1")["attempt_state"] == "accepted"
    assert rejection(when(engine, provider_reconcile("fg/d1"))) == "stale_attempt"


def test_held_revision_is_never_put_in_another_delivery():
    engine = given(*bare(), *update_for("ci:a"))  # wake d1 holds ci:a r1
    when(engine, provider_receipt("fg/d1", "unknown"))
    when(engine, turn_ended("fg/t1", "failed"))
    when(engine, message("m1"))
    assert last(engine)["messages"] == ["m1"] and last(engine)["included"] == []
    when(engine, turn_ended("fg/t2", "failed"))  # m1 requeued: t3 runs, still without ci:a
    assert last(engine)["turn_id"] == "fg/t3" and last(engine)["included"] == []
    # not_received releases it
    when(engine, provider_reconcile("fg/d1", "not_received"))
    when(engine, turn_ended("fg/t3", "completed"))
    assert last(engine)["turn_id"] == "fg/t4" and last(engine)["included"] == [["ci:a", 1]]


def test_new_revision_is_deliverable_while_the_old_one_is_held():
    engine = given(*bare(), *update_for("ci:a"), provider_receipt("fg/d1"))
    when(engine, observe(source_id="src-ci:a", scope="a", fingerprint="fp2", at=at(1)))
    when(engine, triage("ci:a", 2, "actionable", at=at(1)))
    assert len(deliveries(engine)) == 1  # the turn still runs
    when(engine, turn_ended("fg/t1"))
    assert last(engine)["included"] == [["ci:a", 2]]


def test_refused_turn_delivery_fails_the_turn_and_requeues_messages_at_the_front():
    engine = given(*bare(), message("m1"), message("m2"), *update_for("ci:a"), hold_failure())
    when(engine, message("m3"))
    events = when(engine, provider_receipt("fg/d1", "refused"))
    ended = of_type(events, ev.TurnEnded)
    assert len(ended) == 1 and ended[0].outcome == "failed" and ended[0].turn_id == "fg/t1"
    assert conv(engine)["queue"] == ["m1", "m2", "m3"]
    assert conv(engine)["state"] == "failure_held"
    assert rejection(when(engine, turn_ended("fg/t1"))) == "stale_attempt"
    when(engine, hold_release())
    d = last(engine)
    assert d["turn_id"] == "fg/t2" and d["messages"] == ["m1", "m2", "m3"] and d["included"] == [["ci:a", 1]]


def test_not_received_turn_delivery_fails_the_turn():
    engine = given(*bare(), message("m1"), provider_receipt("fg/d1", "unknown"), hold_failure())
    events = when(engine, provider_reconcile("fg/d1", "not_received"))
    assert [e.outcome for e in of_type(events, ev.TurnEnded)] == ["failed"]
    assert conv(engine)["queue"] == ["m1"]


# ------------------------------------------------------------------ turn ends


def test_turn_ended_completed_marks_messages_handled():
    engine = given(*bare(), message("m1"), provider_receipt("fg/d1"))
    when(engine, turn_ended("fg/t1", "completed", delivered=[]))
    assert conv(engine)["queue"] == [] and conv(engine)["state"] == "idle"
    assert len(deliveries(engine)) == 1
    assert rejection(when(engine, turn_ended("fg/t1"))) == "stale_attempt"
    assert rejection(when(engine, turn_ended("fg/t7"))) == "stale_attempt"


def test_turn_ended_failed_or_interrupted_requeues_and_releases_except_unknown():
    for outcome in ("failed", "interrupted"):
        engine = given(*bare(steer=True), *update_for("ci:a"), *update_for("ci:b", n=1),
                       provider_receipt("fg/d1"), *update_for("ci:u", disposition="urgent", n=2))
        # d1 wake holds a (and b); d2 steer holds u; make d2 unknown
        assert last(engine)["kind"] == "steer"
        when(engine, provider_receipt("fg/d2", "unknown"))
        when(engine, hold_failure())
        when(engine, message("m1"))
        when(engine, turn_ended("fg/t1", outcome))
        assert conv(engine)["queue"] == ["m1"]
        when(engine, hold_release())
        d = last(engine)
        assert d["messages"] == ["m1"]
        assert ["ci:a", 1] in d["included"] and ["ci:b", 1] in d["included"]
        assert ["ci:u", 1] not in d["included"], outcome


def test_turn_failed_requeues_before_newer_messages():
    engine = given(*bare(), message("m1"), message("m2"), provider_receipt("fg/d1"), message("m3"))
    when(engine, turn_ended("fg/t1", "interrupted"))
    assert last(engine)["messages"] == ["m1", "m2", "m3"]


# ---------------------------------------------------------------- budget


def test_delivery_fits_iff_context_plus_tokens_plus_reserve_at_most_limit():
    engine = given(*bare(limit=1000, reserve=100), message("m1", tokens=900))
    assert last(engine)["tokens"] == 900 and conv(engine)["state"] == "running"
    engine = given(*bare(limit=1000, reserve=100), message("m1", tokens=901))
    assert deliveries(engine) == [] and conv(engine)["state"] == "context_recovery_required"
    assert conv(engine)["queue"] == ["m1"]


def test_message_tokens_default_to_utf8_bytes_over_four():
    engine = given(*bare(), message("m1", text="héllo"))  # 6 bytes -> 2
    assert last(engine)["tokens"] == 2


def test_accepted_delivery_adds_tokens_and_usage_report_sets_them():
    engine = given(*bare(), message("m1", tokens=70))
    assert conv(engine)["context_tokens"] == 0
    when(engine, provider_receipt("fg/d1"))
    assert conv(engine)["context_tokens"] == 70
    when(engine, conversation_usage(context_tokens=5))
    assert conv(engine)["context_tokens"] == 5
    when(engine, conversation_usage(output_tokens=9))
    assert conv(engine)["context_tokens"] == 5


def test_unknown_and_refused_deliveries_add_nothing():
    engine = given(*bare(), message("m1", tokens=70), provider_receipt("fg/d1", "unknown"))
    assert conv(engine)["context_tokens"] == 0
    when(engine, provider_reconcile("fg/d1", "accepted"))
    assert conv(engine)["context_tokens"] == 70


def test_usage_fills_the_context_so_the_next_message_goes_to_recovery():
    engine = given(*bare(limit=1000, reserve=100), message("m1", tokens=10), provider_receipt("fg/d1"),
                   turn_ended("fg/t1"), conversation_usage(context_tokens=850))
    when(engine, message("m2", tokens=51))
    assert conv(engine)["state"] == "context_recovery_required" and conv(engine)["queue"] == ["m2"]


# -------------------------------------------------------- recovery and reset


def test_message_recovery_left_by_a_reset_reseed_first_then_the_message():
    engine = given(*bare(limit=1000, reserve=100), conversation_usage(context_tokens=500),
                   message("m1", tokens=500))
    assert conv(engine)["state"] == "context_recovery_required"
    when(engine, context_reset())
    assert conv(engine)["epoch"] == 2 and conv(engine)["context_tokens"] == 0
    assert [d["kind"] for d in deliveries(engine)] == ["reseed"]
    assert conv(engine)["state"] == "idle"
    when(engine, provider_receipt("fg/d1"))
    assert last(engine)["messages"] == ["m1"] and last(engine)["turn_id"] == "fg/t1"


def test_message_recovery_left_by_edit_or_withdraw():
    for op, extra in (("withdraw", {}), ("edit", {"text": "short"})):
        engine = given(*bare(limit=1000, reserve=100), message("m1", tokens=901))
        assert conv(engine)["state"] == "context_recovery_required"
        assert rejection(when(engine, queue_edit("m1", op, **extra))) is None
        assert conv(engine)["state"] != "context_recovery_required", op
        if op == "edit":
            assert last(engine)["messages"] == ["m1"]
        else:
            assert deliveries(engine) == [] and conv(engine)["queue"] == []


def test_withdrawn_message_is_never_sent_and_dispatched_one_cannot_be_edited():
    engine = given(*bare(), hold_failure(), message("m1"), message("m2"), queue_edit("m1"))
    when(engine, hold_release())
    assert last(engine)["messages"] == ["m2"]
    assert rejection(when(engine, queue_edit("m2"))) == "already_dispatched"


def test_reset_interrupts_a_running_turn_and_reseeds_in_the_same_pass():
    engine = given(*world(), message("m1"), provider_receipt("fg/d1"))
    events = when(engine, context_reset())
    assert [e.outcome for e in of_type(events, ev.TurnEnded)] == ["interrupted"]
    d = last(engine)
    assert d["kind"] == "reseed" and d["turn_id"] is None and d["epoch"] == 2
    assert d["tokens"] == 40 + 20
    assert conv(engine)["queue"] == ["m1"]
    assert conv(engine)["context_tokens"] == 0


def test_reseed_control_state_counts_questions_and_open_actions():
    engine = given(*world(), propose("op-1"), propose("op-2", resource="res:x"),
                   __import__("tests.unit.helpers", fromlist=["raise_question"]).raise_question(affected=["op-2"]))
    when(engine, context_reset())
    assert last(engine)["tokens"] == 40 + 20 + 30 + 30 * 2


def test_reseed_takes_deliverable_updates_that_fit():
    engine = given(*world(), *update_for("ci:a", tokens=5), provider_receipt("fg/d1"))
    when(engine, context_reset())  # d1 (epoch 1) no longer holds ci:a
    d = last(engine)
    assert d["kind"] == "reseed" and d["included"] == [["ci:a", 1]] and d["tokens"] == 65


def test_reseed_too_big_means_recovery_until_next_reset():
    engine = given(*world(), open_foreground("fg2", context_limit=100, reserve=50),
                   delegate("t2", conversation_id="fg2"))
    when(engine, context_reset("fg2"))
    assert conversation_row(engine, "fg2")["state"] == "context_recovery_required"
    assert deliveries(engine, "fg2") == []
    when(engine, message("m1", conversation_id="fg2", tokens=1))
    assert deliveries(engine, "fg2") == []
    assert conversation_row(engine, "fg2")["state"] == "context_recovery_required"
    when(engine, __import__("tests.unit.helpers", fromlist=["cancel_task"]).cancel_task("t2"))
    assert conversation_row(engine, "fg2")["state"] == "context_recovery_required"
    when(engine, context_reset("fg2"))
    assert [d["kind"] for d in deliveries(engine, "fg2")] == ["reseed"]


def test_refused_reseed_is_replaced_in_the_same_pass():
    engine = given(*world(), context_reset())
    assert ids(engine) == ["fg/d1"]
    when(engine, provider_receipt("fg/d1", "refused"))
    assert ids(engine) == ["fg/d1", "fg/d2"]
    assert last(engine)["kind"] == "reseed" and last(engine)["epoch"] == 2


def test_reset_releases_earlier_epoch_holds_and_unknown_counts_for_nothing():
    engine = given(*bare(), *update_for("ci:a"), provider_receipt("fg/d1", "unknown"))
    when(engine, context_reset())
    assert last(engine)["kind"] == "reseed" and last(engine)["included"] == [["ci:a", 1]]
    # the old delivery may still be reconciled, and counts for nothing now
    assert rejection(when(engine, provider_reconcile("fg/d1", "accepted"))) is None
    assert conv(engine)["context_tokens"] == 0


# ------------------------------------------------------------ approval_pending


def test_approval_pending_blocks_actions_of_the_foregrounds_tasks():
    for where in ("fg", "bg"):
        engine = given(*world(), approval_required("r1", conversation_id=where), propose("op-1"))
        assert "approval_pending" in blocked_by(engine, "op-1"), where
        when(engine, approval_resolved("r1", conversation_id=where))
        assert "approval_pending" not in blocked_by(engine, "op-1")
        assert action_state_of(engine, "op-1") == "submitting"


def test_approval_pending_arrives_on_an_already_pending_action():
    engine = given(*world(), pause("t1"), propose("op-1"), approval_required("r1", conversation_id="bg"))
    assert blocked_by(engine, "op-1") == ["scope_paused", "approval_pending"]


def test_approval_elsewhere_does_not_block():
    engine = given(*world(), open_foreground("fg2"), approval_required("r1", conversation_id="fg2"), propose("op-1"))
    assert "approval_pending" not in blocked_by(engine, "op-1")


def action_state_of(engine, op):
    from tests.unit.helpers import action_state
    return action_state(engine, op)


def test_triage_blocked_while_background_has_open_approval():
    engine = given(*bare(), observe(), approval_required("r1", conversation_id="bg"))
    assert rejection(when(engine, triage())) == "triage_blocked"
    assert inbox_row(engine)["triage_state"] == "untriaged"
    when(engine, approval_resolved("r1", conversation_id="bg"))
    assert rejection(when(engine, triage())) is None


def test_background_approval_does_not_stop_foreground_delivery():
    engine = given(*bare(), approval_required("r1", conversation_id="bg"), message("m1"))
    assert last(engine)["messages"] == ["m1"]


# ------------------------------------------------------------------ views


def test_conversation_state_order():
    engine = given(*bare(limit=1000, reserve=100), message("m1", tokens=10))
    assert conv(engine)["state"] == "running"
    when(engine, hold_failure())
    assert conv(engine)["state"] == "failure_held"
    when(engine, message("m2", tokens=5000))
    when(engine, turn_ended("fg/t1", "completed"))
    when(engine, hold_release())
    assert conv(engine)["state"] == "context_recovery_required"
    when(engine, hold_failure())
    assert conv(engine)["state"] == "context_recovery_required"
    assert conv("x" and engine, "bg")["state"] == "idle"


def test_inbox_delivered_revision():
    engine = given(*bare(), *update_for("ci:a"))
    assert inbox_row(engine, "ci:a")["delivered_revision"] is None
    when(engine, provider_receipt("fg/d1", "unknown"))
    assert inbox_row(engine, "ci:a")["delivered_revision"] is None
    when(engine, provider_reconcile("fg/d1", "accepted"))
    assert inbox_row(engine, "ci:a")["delivered_revision"] == 1
    when(engine, turn_ended("fg/t1"))
    when(engine, observe(source_id="src-ci:a", scope="a", fingerprint="fp2", at=at(1)))
    when(engine, triage("ci:a", 2, "actionable", at=at(1)))
    when(engine, provider_receipt("fg/d2"))
    assert inbox_row(engine, "ci:a")["delivered_revision"] == 2
    when(engine, turn_ended("fg/t2"))
    when(engine, hold_failure())
    when(engine, context_reset())
    assert inbox_row(engine, "ci:a")["delivered_revision"] is None


def test_refused_delivery_is_not_delivered():
    engine = given(*bare(), *update_for("ci:a"), hold_failure())
    when(engine, provider_receipt("fg/d1", "refused"))
    assert inbox_row(engine, "ci:a")["delivered_revision"] is None


# ------------------------------------------------------------ more edges


def test_wake_none_fits_means_no_wake():
    engine = given(*bare(limit=1000, reserve=100), *update_for("ci:a", tokens=901))
    assert deliveries(engine) == [] and conv(engine)["state"] == "idle"
    assert inbox_row(engine, "ci:a")["retained"] is True


def test_reseed_recovery_is_not_left_by_withdrawing_a_message():
    engine = given(*world(), open_foreground("fg2", context_limit=100, reserve=50),
                   delegate("t2", conversation_id="fg2"), context_reset("fg2"),
                   message("m1", conversation_id="fg2", tokens=1))
    assert conversation_row(engine, "fg2")["state"] == "context_recovery_required"
    when(engine, queue_edit("m1", conversation_id="fg2"))
    assert conversation_row(engine, "fg2")["state"] == "context_recovery_required"
    assert deliveries(engine, "fg2") == []


def test_reseed_and_human_turns_are_not_limited_by_wake_batch_max():
    engine = given(*bare(wake_batch_max=1), hold_failure(), *update_for("ci:a"), *update_for("ci:b"),
                   context_reset())
    when(engine, hold_release())
    assert last(engine)["kind"] == "reseed" and len(last(engine)["included"]) == 2
    engine = given(*bare(wake_batch_max=1), hold_failure(), *update_for("ci:a"), *update_for("ci:b"),
                   message("m1"))
    when(engine, hold_release())
    assert len(last(engine)["included"]) == 2


def test_steer_is_not_stopped_by_a_star_pause():
    engine = given(*running_with_steer(), pause("*"), *update_for("ci:u", disposition="urgent"))
    assert last(engine)["kind"] == "steer"


def test_accepted_reseed_counts_tokens_and_delivers():
    engine = given(*world(), hold_failure(), *update_for("ci:a", tokens=5), context_reset())
    when(engine, hold_release())
    assert last(engine)["kind"] == "reseed"
    when(engine, provider_receipt(last(engine)["delivery_id"]))
    assert conv(engine)["context_tokens"] == 65
    assert inbox_row(engine, "ci:a")["delivered_revision"] == 1


def test_delivered_revision_stays_for_an_accepted_delivery_of_a_failed_turn():
    # spec 7: delivered_revision = the highest revision in an accepted delivery of the current epoch
    engine = given(*bare(), *update_for("ci:a"), provider_receipt("fg/d1"), hold_failure(),
                   turn_ended("fg/t1", "failed"))
    assert delivery_row(engine, "fg/d1")["attempt_state"] == "accepted"
    assert inbox_row(engine, "ci:a")["delivered_revision"] == 1


def test_a_reset_during_a_failure_hold_reseeds_once_the_hold_is_released():
    engine = given(*world(), hold_failure(), message("m1"), context_reset())
    assert deliveries(engine) == []
    when(engine, hold_release())
    assert [d["kind"] for d in deliveries(engine)] == ["reseed"]
    when(engine, provider_receipt("fg/d1"))
    assert last(engine)["messages"] == ["m1"]


def test_hold_release_and_approval_resolved_are_human_only():
    engine = given(*bare(), hold_failure(), approval_required("r1"))
    assert rejection(when(engine, hold_release(actor="daemon"))) is not None
    assert rejection(when(engine, approval_resolved("r1", actor="daemon"))) is not None
    assert conv(engine)["state"] == "failure_held"


def test_failed_turn_releases_its_accepted_steer():
    engine = given(*running_with_steer(), *update_for("ci:u", disposition="urgent"))
    assert last(engine)["kind"] == "steer"
    when(engine, provider_receipt("fg/d2"))
    when(engine, turn_ended("fg/t1", "failed"))
    d = last(engine)
    assert d["turn_id"] == "fg/t2" and d["messages"] == ["m1"] and d["included"] == [["ci:u", 1]]


def test_completed_turn_keeps_its_revisions_delivered():
    engine = given(*bare(), *update_for("ci:a"), provider_receipt("fg/d1"), turn_ended("fg/t1"))
    when(engine, message("m1"))
    assert last(engine)["included"] == []
    assert inbox_row(engine, "ci:a")["delivered_revision"] == 1


def test_reset_makes_an_accepted_revision_deliverable_again_in_the_reseed():
    engine = given(*bare(), *update_for("ci:a"), provider_receipt("fg/d1"), turn_ended("fg/t1"), context_reset())
    assert last(engine)["kind"] == "reseed" and last(engine)["included"] == [["ci:a", 1]]


def test_not_received_of_an_earlier_turn_does_not_end_the_running_one():
    engine = given(*bare(), message("m1"), provider_receipt("fg/d1", "unknown"), turn_ended("fg/t1", "failed"))
    assert last(engine)["turn_id"] == "fg/t2" and last(engine)["messages"] == ["m1"]
    events = when(engine, provider_reconcile("fg/d1", "not_received"))
    assert of_type(events, ev.TurnEnded) == []
    assert conv(engine)["state"] == "running"


def test_update_tokens_default_to_text_bytes_over_four():
    engine = given(*bare(), *update_for("ci:a", text="x" * 9))
    assert last(engine)["tokens"] == 3
