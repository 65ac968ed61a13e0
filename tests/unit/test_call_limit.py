"""Contract v1.2 section 3.4: the call limit (given / when / then).

A grant's calls are the allowed `tool.request`s of its actions; the call that
brings them to `call_limit` is allowed and raises `budget_exhausted:{grant_id}`;
the next is denied `budget_exhausted` (section 1.5, check 8) and stops its
worker; pending actions of the grant are blocked `budget_exhausted`; a
`grant.revise` lifting the limit above the count resolves the alert.
"""

from __future__ import annotations

import msgspec

from tandem.domain import events as ev
from tests.unit.helpers import (
    action_row, action_state, admit, at, blocked_by, delegate, given, grant_request, of_type, propose, receipt,
    rejection, revise_grant, runtime_row, tool_policy, tool_request, usage, when, world,
)


def limited_world(**grant) -> list:
    """world() with grant g-t1 limited by `grant`, worker w-1 admitted and op-1 accepted on it."""
    base = [line for line in world() if line["type"] != "task.delegate"]
    return [
        *base,
        delegate("t1", grant=grant_request("g-t1", **grant)),
        tool_policy("worker", ["shell:exec"], at=at(1)),
        admit("w-1", role="worker", tools=["shell:exec"], at=at(2)),
        propose("op-1", actor="human", runtime_id="w-1", at=at(3)),
        receipt("op-1", at=at(3)),
    ]


def call(call_id: str, second: float, operation_id: str = "op-1"):
    return tool_request(call_id, "shell:exec", runtime_id="w-1", operation_id=operation_id, at=at(second))


def alert(engine, alert_id):
    return next((row for row in engine.views.view("alerts") if row["alert_id"] == alert_id), None)


def test_call_limit_is_recorded_only_when_given():
    engine = given(limited_world())
    assert engine.state.authority.grants["g-t1"].call_limit is None
    engine = given(limited_world(call_limit=2))
    assert engine.state.authority.grants["g-t1"].call_limit == 2


def test_a_v1_grant_event_has_no_call_limit_key():
    engine = given()
    events = [event for line in world() for event in when(engine, line)]
    for issued in of_type(events, ev.GrantIssued):
        assert b"call_limit" not in msgspec.json.encode(issued)


def test_the_call_that_reaches_the_limit_is_allowed_and_raises_the_alert():
    engine = given(limited_world(call_limit=2))
    assert rejection(when(engine, call("c1", 4))) is None
    assert alert(engine, "budget_exhausted:g-t1") is None
    assert rejection(when(engine, call("c2", 5))) is None
    assert alert(engine, "budget_exhausted:g-t1")["state"] == "raised"
    assert engine.state.authority.grants["g-t1"].calls == 2
    assert action_row(engine, "op-1")["calls"] == 2


def test_the_next_call_is_denied_budget_exhausted_and_stops_its_worker():
    engine = given(limited_world(call_limit=1), call("c1", 4))
    events = when(engine, call("c2", 5))
    assert rejection(events) == "budget_exhausted"
    (denied,) = of_type(events, ev.ToolCallDenied)
    assert (denied.facts.calls, denied.facts.call_limit, denied.facts.entry) == (1, 1, "g-t1")
    (stop,) = of_type(events, ev.ActionCancelRequested)
    assert stop.reason == "budget_exhausted"
    assert action_state(engine, "op-1") == "cancel_requested"
    assert runtime_row(engine, "w-1")["calls_denied"] == 1
    assert action_row(engine, "op-1")["calls"] == 1


def test_a_pending_action_of_an_exhausted_grant_is_blocked_budget_exhausted():
    engine = given(
        limited_world(call_limit=1), call("c1", 4), propose("op-2", actor="human", resource="wt-2", at=at(5))
    )
    assert "budget_exhausted" in blocked_by(engine, "op-2")
    assert action_state(engine, "op-2") == "pending"


def test_a_revise_lifting_the_limit_above_the_count_resolves_the_alert():
    engine = given(limited_world(call_limit=1), call("c1", 4))
    when(engine, revise_grant(call_limit=1, at=at(5)))  # not above the count: still reached
    assert alert(engine, "budget_exhausted:g-t1")["state"] == "raised"
    when(engine, revise_grant(expected_revision=2, call_limit=3, at=at(6)))
    assert alert(engine, "budget_exhausted:g-t1")["state"] == "resolved"
    assert rejection(when(engine, call("c2", 7))) is None


def test_a_reached_token_limit_also_denies_calls():
    engine = given(limited_world(token_limit=10), usage("op-1", input_tokens=10, at=at(4)))
    assert action_state(engine, "op-1") == "cancel_requested"  # the token limit's own stop
    assert rejection(when(engine, call("c1", 5))) == "stale_attempt"
    engine = given(limited_world(token_limit=10), propose("op-2", actor="human", runtime_id="w-1", resource="wt-2", at=at(4)))
    when(engine, usage("op-1", input_tokens=10, at=at(5)))
    assert action_state(engine, "op-2") == "submitting"  # claimed before the limit was reached
    assert rejection(when(engine, call("c1", 6, "op-2"))) == "budget_exhausted"


# ------------------------------------------- explain: which limit blocks it


def explained_block(*lines):
    """op-2 proposed after `lines`: what explain says its budget_exhausted waits for."""
    from tandem.replay.engine import Engine, Located
    from tandem.replay.explain import explain
    from tandem.replay.proving import ProvingStore
    from tests.unit.helpers import _flatten, decode

    engine = Engine(ProvingStore())
    trace = [*_flatten(lines), propose("op-2", actor="human", resource="wt-2", at=at(9))]
    for number, line in enumerate(trace, 1):
        engine.submit(Located(decode(line), line=number))
    assert blocked_by(engine, "op-2") == ["budget_exhausted"]
    [operation] = explain(engine.store, "op-2", kind="operation")
    [waiting] = operation.waiting
    [fact] = waiting.facts
    return waiting.text, fact.text, fact.source.event if fact.source is not None else None


def test_explain_says_the_call_limit_when_calls_exhausted_the_grant():
    assert explained_block(limited_world(call_limit=1), call("c1", 4)) == (
        "its grant's calls reached call_limit",
        "grant g-t1 made 1 of its call_limit 1 calls",
        "AlertRaised",  # budget_exhausted:g-t1, raised by the call that reached it
    )
    _, text, _ = explained_block(limited_world(call_limit=1, token_limit=1000), call("c1", 4))
    assert text == "grant g-t1 made 1 of its call_limit 1 calls (used 0 of its token_limit 1000)"


def test_explain_says_the_token_limit_or_both_when_they_are_reached():
    tokens = explained_block(limited_world(call_limit=5, token_limit=10), usage("op-1", input_tokens=10, at=at(4)))
    assert tokens == (
        "its grant's usage reached token_limit",
        "grant g-t1 used 10 of its token_limit 10 and made 0 of its call_limit 5 calls",
        "BudgetExhausted",
    )
    both = explained_block(limited_world(call_limit=1, token_limit=10), call("c1", 4), usage("op-1", input_tokens=10, at=at(5)))
    assert both == (
        "its grant's usage reached token_limit and its calls reached call_limit",
        "grant g-t1 used 10 of its token_limit 10 and made 1 of its call_limit 1 calls",
        "BudgetExhausted",
    )
