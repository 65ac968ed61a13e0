"""Lifecycle tables are derived from their StateMachine classes (DESIGN
principle 4), and decide asks the tables, never a running machine."""

from __future__ import annotations

import pytest
from statemachine import StateMachine

from tandem.domain import dispatch as dispatch_module
from tandem.domain import lifecycles, rules
from tandem.domain.lifecycles import ACTION, ATTEMPT, GRANT, LIFECYCLES, QUESTION, TASK, Lifecycle
from tests.unit.helpers import (
    answer,
    cancel_action,
    cancel_task,
    complete_task,
    given,
    outcome,
    propose,
    raise_question,
    receipt,
    reconcile,
    rejection,
    revise_task,
    when,
    world,
)

SPEC_ACTION_NON_TERMINAL = {"pending", "fenced", "submitting", "queued", "accepted", "unknown", "cancel_requested"}
SPEC_ACTION_TERMINAL = {"succeeded", "failed", "cancelled", "exhausted", "superseded"}  # superseded: contract v1.2 section 2.2
SPEC_ATTEMPT_STATES = {"submitting", "queued", "accepted", "unknown", "refused", "not_received"}


def _expected_table(machine: type[StateMachine]) -> dict[tuple[str, str], str]:
    table = {}
    for state in machine.states:
        for transition in state.transitions:
            for event in transition.events:
                table[(state.id, str(event.id))] = transition.target.id
    return table


@pytest.mark.parametrize("lifecycle", LIFECYCLES, ids=lambda lifecycle: lifecycle.name)
def test_each_table_is_derived_from_its_state_machine_class(lifecycle: Lifecycle):
    assert issubclass(lifecycle.machine, StateMachine)
    assert type(lifecycle.table) is dict
    assert lifecycle.table == _expected_table(lifecycle.machine)
    assert set(lifecycle.states) == {state.id for state in lifecycle.machine.states}
    assert lifecycle.initial == next(state.id for state in lifecycle.machine.states if state.initial)
    assert lifecycle.terminal == {state.id for state in lifecycle.machine.states if state.final}
    assert set(lifecycle.events) == {str(event.id) for event in lifecycle.machine.events}


@pytest.mark.parametrize("lifecycle", LIFECYCLES, ids=lambda lifecycle: lifecycle.name)
def test_terminal_states_have_no_outgoing_transitions(lifecycle: Lifecycle):
    for (source, event), target in lifecycle.table.items():
        assert source not in lifecycle.terminal, (lifecycle.name, source, event, target)


def test_the_action_table_matches_the_spec():
    assert ACTION.target("pending", "claim") == "submitting"
    assert ACTION.target("fenced", "revalidate") == "pending"
    assert ACTION.target("pending", "cancel") == "cancelled"
    assert ACTION.target("fenced", "cancel") == "cancelled"
    for state in ("submitting", "queued", "accepted", "unknown"):
        assert ACTION.target(state, "request_cancel") == "cancel_requested"
    assert ACTION.target("cancel_requested", "refuse") == "cancelled"
    assert ACTION.target("cancel_requested", "confirm_cancel") == "cancelled"
    assert ACTION.target("accepted", "confirm_cancel") is None
    assert ACTION.target("unknown", "claim") is None  # never retried automatically
    assert set(ACTION.states) == SPEC_ACTION_NON_TERMINAL | SPEC_ACTION_TERMINAL
    assert ACTION.terminal == SPEC_ACTION_TERMINAL
    assert ACTION.initial == "pending"


def test_the_attempt_and_other_tables_match_the_spec():
    assert set(ATTEMPT.states) == SPEC_ATTEMPT_STATES
    assert ATTEMPT.target("submitting", "receipt_refused") == "refused"
    assert ATTEMPT.target("unknown", "reconcile_not_received") == "not_received"
    assert ATTEMPT.target("accepted", "receipt_accepted") is None
    assert TASK.target("active", "complete") == "completed"
    assert TASK.target("completed", "revise") is None
    assert GRANT.target("live", "revoke") == "revoked"
    assert QUESTION.target("answered", "reopen") == "open"
    assert QUESTION.target("answered", "answer") is None


def test_the_lifecycle_tables_are_plain_dicts_not_machines():
    for lifecycle in LIFECYCLES:
        assert not isinstance(lifecycle, StateMachine)
        assert all(isinstance(key, tuple) and isinstance(value, str) for key, value in lifecycle.table.items())
    for module in (rules, *rules.AREAS, dispatch_module, lifecycles):
        assert not any(isinstance(value, StateMachine) for value in vars(module).values())


def test_decide_never_builds_or_runs_a_state_machine(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a StateMachine was instantiated or run while deciding")

    monkeypatch.setattr(StateMachine, "__init__", refuse)
    monkeypatch.setattr(StateMachine, "send", refuse)
    engine = given(world(), propose("op-1"), receipt("op-1", result="refused"), receipt("op-1", "op-1/a2", "unknown"),
                   reconcile("op-1", "op-1/a2", "accepted"), outcome("op-1"), propose("op-2"), cancel_action("op-2"),
                   outcome("op-2", "cancelled"), raise_question(affected="task"), answer(),
                   raise_question(evidence_revision=2), revise_task("t1", expected_revision=2))
    assert rejection(when(engine, cancel_action("op-1"))) == "not_cancellable"
    assert rejection(when(engine, complete_task("t1"))) is None
    assert rejection(when(engine, cancel_task("t1"))) == "task_not_active"
    assert engine.state.tasks.by_id["t1"].state == "completed"
