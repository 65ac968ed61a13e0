"""A refused attempt returns its action to pending only under current
authority: never a claim under a task, grant or policy revision that moved
while the attempt was out (docs/contract/decisions.md: decisions where the spec is silent)."""

from __future__ import annotations

from tandem.domain import events as ev
from tests.unit.helpers import (
    action_state,
    given,
    of_type,
    policy,
    propose,
    receipt,
    revise_grant,
    revise_task,
    when,
    world,
)


def test_refused_after_the_task_was_revised_is_fenced_not_retried() -> None:
    engine = given(world(), propose("op-1"), revise_task("t1", 1, goal="changed"))
    assert action_state(engine, "op-1") == "submitting"  # in flight: not fenced by the revise
    events = when(engine, receipt("op-1", "op-1/a1", "refused"))
    assert of_type(events, ev.AttemptUpdated)[0].action_state == "fenced"
    assert not of_type(events, ev.ActionClaimed)
    assert action_state(engine, "op-1") == "fenced"


def test_refused_after_the_grant_stopped_allowing_it_is_fenced() -> None:
    engine = given(world(), propose("op-1", operation="worker.test"),
                   revise_grant("g-t1", 1, allowed_operations=["worker.start"]))
    events = when(engine, receipt("op-1", "op-1/a1", "refused"))
    assert of_type(events, ev.AttemptUpdated)[0].action_state == "fenced"
    assert not of_type(events, ev.ActionClaimed)


def test_refused_after_the_policy_stopped_allowing_it_is_fenced() -> None:
    engine = given(world(), propose("op-1", operation="worker.test"), policy(["worker.start"], ["/repo"]))
    events = when(engine, receipt("op-1", "op-1/a1", "refused"))
    assert of_type(events, ev.AttemptUpdated)[0].action_state == "fenced"


def test_refused_after_a_grant_revision_that_still_allows_it_is_restamped_and_retried() -> None:
    engine = given(world(), propose("op-1"), revise_grant("g-t1", 1, max_attempts=5))
    events = when(engine, receipt("op-1", "op-1/a1", "refused"))
    updated = of_type(events, ev.AttemptUpdated)[0]
    assert updated.action_state == "pending" and updated.restamped is not None and updated.restamped.grant == 2
    claim = of_type(events, ev.ActionClaimed)[0]
    assert claim.attempt_id == "op-1/a2" and claim.envelope.grant_revision == 2


# ---- held revisions of an unknown delivery whose turn failed (spec 5.3)


def test_an_unknown_delivery_of_a_failed_turn_holds_until_reconciled_then_releases() -> None:
    from tests.unit.helpers import delivery_row, provider_reconcile, provider_receipt, turn_ended, update_for

    engine = given(world(), *update_for("ci:pr/1"))
    assert delivery_row(engine, "fg/d1")["included"] == [["ci:pr/1", 1]]  # the wake
    engine = given(world(), *update_for("ci:pr/1"), provider_receipt("fg/d1", "unknown"), turn_ended("fg/t1", "failed"))
    # Still held: no blind resend while the provider may have it.
    assert engine.state.inbox.updates["ci:pr/1"].held_by == "fg/d1"
    assert [row["delivery_id"] for row in engine.views.view("conversations")[1]["deliveries"]] == ["fg/d1"]
    events = when(engine, provider_reconcile("fg/d1", "accepted"))
    receipted = of_type(events, ev.DeliveryReceipted)[0]
    assert receipted.releases is True
    # Released once settled: the failed turn's revision goes out again, in a new wake.
    created = of_type(events, ev.DeliveryCreated)
    assert [(d.delivery_id, d.included) for d in created] == [("fg/d2", [("ci:pr/1", 1)])]
