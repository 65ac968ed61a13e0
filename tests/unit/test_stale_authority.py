"""A refused attempt returns its action to pending only under current
authority: never a claim under a task, grant or policy revision that moved
while the attempt was out (README: decisions where the spec is silent)."""

from __future__ import annotations

from domain import events as ev
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
