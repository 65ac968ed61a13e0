"""Tool policy and runtime admission (contract v1.2 section 1): `tool_policy.set`,
`runtime.admit` (exact allowlist, tested isolation, no inherited tools), the
gate on background inputs, worker runtimes on actions and `tool.request`
(denied before execution). Every reason code and view key of the section."""

from __future__ import annotations

import pytest

from tandem.domain import events as ev
from tandem.domain.tools.rules import is_exact
from tests.unit.helpers import (
    BG_TOOLS,
    action_row,
    admit,
    at,
    bind,
    blocked_by,
    card,
    complete_task,
    expecting,
    given,
    intent_synced,
    kinds,
    observe,
    of_type,
    propose,
    raise_question,
    receipt,
    rejection,
    revalidate,
    runtime_row,
    tool_policy,
    tool_request,
    triage,
    when,
    world,
)

INHERITED = "mcp:github/create_pull_request"


def admitted_world() -> list:
    """world(), a background tool policy (revision 1) and bg-codex admitted at generation 1."""
    return [*world(), tool_policy(at=at(1)), admit(at=at(2))]


def alert(engine, alert_id: str) -> dict | None:
    return next((row for row in engine.views.view("alerts") if row["alert_id"] == alert_id), None)


# ------------------------------------------------------------- exact names


@pytest.mark.parametrize(
    "name, exact",
    [
        ("shell:exec", True),
        ("mcp:github/get_pull_request", True),
        ("mcp:github", False),  # a server, not a tool
        ("mcp:github/", False),
        ("mcp:/tool", False),
        ("mcp:*", False),
        ("shell:*", False),
        ("read_[a-z]", False),
        ("tool?", False),
        ("{a,b}", False),
        ("tandem:", False),
        ("two words", False),
        ("", False),
    ],
)
def test_exact_tool_names(name, exact):
    assert is_exact(name) is exact


# -------------------------------------------------------- 1.1 tool_policy.set


def test_tool_policy_set_counts_one_revision_for_both_roles_and_drops_relative_roots():
    engine = given(*world())
    assert engine.views.view("health")["tool_policy_revision"] == 0
    events = when(engine, tool_policy(roots=["/repo/./src", "relative", "/repo/src"], at=at(1)))
    assert kinds(events) == ["InputAccepted", "ToolPolicySet"]
    assert events[1].revision == 1 and events[1].read_roots == ["/repo/src"]
    when(engine, tool_policy("worker", ["shell:exec"], at=at(2)))
    assert engine.views.view("health")["tool_policy_revision"] == 2


def test_tool_policy_set_refuses_a_non_exact_entry():
    engine = given(*world())
    events = when(engine, tool_policy(tools=["tandem:read_evidence", "mcp:github"], at=at(1)))
    assert rejection(events) == "tool_not_exact"
    assert engine.views.view("health")["tool_policy_revision"] == 0


def test_an_empty_tool_name_is_the_inputs_rejection_not_the_traces():
    """`[""]` is an entry that is not exact: the contract's check, not a schema error."""
    engine = given(*world())
    events = when(engine, tool_policy(tools=[""], at=at(1)))
    assert rejection(events) == "tool_not_exact" and "''" in events[0].detail
    assert engine.views.view("health")["tool_policy_revision"] == 0
    when(engine, tool_policy(at=at(2)))
    events = when(engine, admit(tools=["tandem:read_evidence", ""], at=at(3)))
    assert rejection(events) == "tool_not_exact"
    assert of_type(events, ev.RuntimeRefused)[0].facts.entry == ""


def test_a_narrower_policy_revokes_an_admitted_runtime_and_restamps_the_others():
    engine = given(
        *admitted_world(),
        tool_policy("worker", ["shell:exec"], at=at(3)),
        admit("w-1", role="worker", tools=["shell:exec"], revision=2, at=at(4)),
    )
    events = when(engine, tool_policy(tools=["tandem:read_evidence"], at=at(5)))
    policy_set = of_type(events, ev.ToolPolicySet)[0]
    assert policy_set.revoked == ["bg-codex"] and policy_set.restamped == ["w-1"]
    because = policy_set.revoked_because["bg-codex"]
    assert (because.check, because.entry, because.tool_policy_revision) == (
        "tool_not_allowed", "mcp:github/get_pull_request", 3,
    )
    assert runtime_row(engine)["state"] == "refused" and runtime_row(engine)["reason"] == "tool_not_allowed"
    assert runtime_row(engine, "w-1")["tool_policy_revision"] == 3
    assert engine.views.view("health")["isolation_unavailable"] == ["bg-codex"]
    assert alert(engine, "isolation_unavailable:bg-codex")["state"] == "raised"
    # A wider policy later admits nothing by itself.
    when(engine, tool_policy(at=at(6)))
    assert runtime_row(engine)["state"] == "refused"


def test_a_narrower_read_root_revokes_with_read_outside_roots():
    engine = given(*admitted_world())
    events = when(engine, tool_policy(roots=["/repo/src"], at=at(3)))
    assert of_type(events, ev.ToolPolicySet)[0].revoked_because["bg-codex"].check == "read_outside_roots"
    assert runtime_row(engine)["reason"] == "read_outside_roots"


# ---------------------------------------------------------- 1.2 runtime.admit


def test_admission_checks_one_to_four_refuse_the_input_only():
    engine = given(*world(), tool_policy(at=at(1)))
    assert rejection(when(engine, admit(conversation_id="fg", at=at(2)))) == "unknown_conversation"
    assert rejection(when(engine, admit(generation=2, at=at(2)))) == "generation_fenced"
    assert rejection(when(engine, admit(revision=0, at=at(2)))) == "stale_revision"
    when(engine, admit(at=at(3)))
    events = when(engine, admit(role="worker", conversation_id=None, generation=None, at=at(4)))
    assert rejection(events) == "already_exists" and kinds(events) == ["InputRejected"]
    assert engine.views.view("runtimes")[0]["role"] == "background"


@pytest.mark.parametrize(
    "overrides, reason, entry",
    [
        ({"isolation_test_ref": None}, "isolation_unavailable", None),
        ({"inherited_tools": [INHERITED]}, "tools_inherited", INHERITED),
        ({"tools": ["tandem:read_evidence", "mcp:github"]}, "tool_not_exact", "mcp:github"),
        ({"tools": ["tandem:read_evidence", "shell:exec"]}, "tool_not_allowed", "shell:exec"),
        ({"roots": ["/repo", "/etc"]}, "read_outside_roots", "/etc"),
        ({"roots": ["repo"]}, "read_outside_roots", "repo"),
    ],
)
def test_admission_checks_five_to_nine_refuse_the_runtime_and_raise_isolation_unavailable(overrides, reason, entry):
    engine = given(*world(), tool_policy(at=at(1)))
    events = when(engine, admit(at=at(2), **overrides))
    assert rejection(events) == reason
    assert kinds(events) == ["InputRejected", "RuntimeRefused", "AlertRaised"]
    refused = of_type(events, ev.RuntimeRefused)[0]
    assert refused.facts.check == reason and refused.facts.entry == entry and refused.facts.tool_policy_revision == 1
    row = runtime_row(engine)
    assert (row["state"], row["reason"], row["calls_allowed"], row["calls_denied"]) == ("refused", reason, 0, 0)
    assert engine.views.view("health")["isolation_unavailable"] == ["bg-codex"]
    assert alert(engine, "isolation_unavailable:bg-codex")["count"] == 1


def test_before_any_tool_policy_for_the_role_nothing_is_allowed():
    engine = given(*world(), tool_policy(at=at(1)))
    events = when(engine, admit("w-1", role="worker", tools=["shell:exec"], at=at(2)))
    assert rejection(events) == "tool_not_allowed"


def test_a_refusal_ends_an_earlier_admission_and_the_alert_is_raised_once_while_it_goes_on():
    engine = given(*admitted_world())
    when(engine, admit(isolation_test_ref=None, at=at(3)))
    when(engine, admit(inherited_tools=[INHERITED], at=at(4)))
    assert runtime_row(engine)["state"] == "refused" and runtime_row(engine)["reason"] == "tools_inherited"
    assert alert(engine, "isolation_unavailable:bg-codex")["count"] == 1
    events = when(engine, admit(at=at(5)))
    assert kinds(events) == ["InputAccepted", "RuntimeAdmitted", "AlertResolved"]
    assert runtime_row(engine)["state"] == "admitted" and runtime_row(engine)["reason"] is None
    assert engine.views.view("health")["isolation_unavailable"] == []


def test_a_rebind_fences_the_background_runtime():
    engine = given(*admitted_world())
    events = when(engine, bind(2, at=at(3)))
    assert kinds(events) == ["InputAccepted", "BackgroundBound", "RuntimeFenced"]
    assert runtime_row(engine)["state"] == "fenced"
    assert engine.views.view("health")["isolation_unavailable"] == []  # fenced is not refused
    assert rejection(when(engine, tool_request(at=at(4)))) == "runtime_not_admitted"
    when(engine, admit(generation=2, at=at(5)))
    assert runtime_row(engine)["state"] == "admitted" and runtime_row(engine)["generation"] == 2


# ------------------------------------------------ 1.3 background inputs gated


def test_before_any_background_tool_policy_nothing_is_gated():
    engine = given(*world(), tool_policy("worker", ["shell:exec"], at=at(1)), observe(at=at(2)))
    assert rejection(when(engine, triage(at=at(3)))) is None


@pytest.mark.parametrize(
    "make",
    [
        lambda: triage(at=at(3)),
        lambda: intent_synced(0, at=at(3)),
        lambda: propose("op-1", at=at(3)),
        lambda: raise_question(at=at(3)),
        lambda: complete_task(at=at(3)),
        lambda: card(at=at(3)),
    ],
    ids=["triage.classify", "intent.synced", "action.propose", "question.raise", "task.complete", "card.propose"],
)
def test_every_background_input_needs_an_admitted_runtime(make):
    engine = given(*world(), tool_policy(at=at(1)), observe(at=at(2)))
    assert rejection(when(engine, make())) == "runtime_not_admitted"


def test_the_gate_comes_after_generation_fenced_and_lifts_once_admitted():
    engine = given(*world(), tool_policy(at=at(1)), observe(at=at(2)))
    assert rejection(when(engine, triage(generation=2, at=at(3)))) == "generation_fenced"
    when(engine, admit(at=at(4)))
    assert rejection(when(engine, triage(at=at(5)))) is None


def test_a_fenced_runtime_no_longer_admits_its_background_inputs():
    engine = given(*admitted_world(), bind(2, at=at(3)))
    assert rejection(when(engine, revalidate("op-x", generation=2, at=at(4)))) == "unknown_operation"
    assert rejection(when(engine, propose("op-1", generation=2, at=at(4)))) == "runtime_not_admitted"


# -------------------------------------------------- 1.4 worker runtimes on actions


def worker_world() -> list:
    return [
        *world(),
        tool_policy("worker", ["shell:exec", "fs:write"], at=at(1)),
        admit("w-1", role="worker", tools=["shell:exec", "fs:write"], at=at(2)),
    ]


def test_a_proposal_naming_an_unknown_or_background_runtime_is_unknown_runtime():
    engine = given(*worker_world(), tool_policy(at=at(3)), admit(revision=2, at=at(4)))
    assert rejection(when(engine, propose("op-1", runtime_id="nope", at=at(5)))) == "unknown_runtime"
    assert rejection(when(engine, propose("op-1", runtime_id="bg-codex", at=at(5)))) == "unknown_runtime"


def test_an_action_names_its_runtime_and_its_envelope_records_the_admission():
    engine = given(*worker_world())
    events = when(engine, propose("op-1", actor="human", runtime_id="w-1", at=at(3)))
    claim = of_type(events, ev.ActionClaimed)[0]
    assert (claim.envelope.runtime_id, claim.envelope.tool_policy_revision) == ("w-1", 1)
    row = action_row(engine, "op-1")
    assert (row["runtime_id"], row["calls"]) == ("w-1", 0)


def test_a_pending_action_naming_a_runtime_not_admitted_is_blocked():
    engine = given(*worker_world(), tool_policy("worker", ["fs:write"], at=at(3)))
    events = when(engine, propose("op-1", actor="human", runtime_id="w-1", at=at(4)))
    assert blocked_by(engine, "op-1") == ["runtime_not_admitted"]
    fact = of_type(events, ev.ActionBlocked)[0].facts[0]
    assert (fact.runtime_id, fact.runtime_state) == ("w-1", "refused")
    events = when(engine, admit("w-1", role="worker", tools=["fs:write"], revision=2, at=at(5)))
    assert "ActionClaimed" in kinds(events)


def test_an_action_without_a_runtime_is_not_checked_against_the_worker_policy():
    engine = given(*worker_world())
    assert kinds(when(engine, propose("op-1", actor="human", at=at(3))))[-1] == "ActionClaimed"
    assert action_row(engine, "op-1")["runtime_id"] is None


# ------------------------------------------------------------ 1.5 tool.request


def test_the_worked_example_allows_c1_and_denies_c2_before_execution():
    engine = given(*admitted_world())
    events = when(engine, tool_request("c1", read_paths=["/repo/.git"], at=at(11)))
    assert kinds(events) == ["InputAccepted", "ToolCallAllowed"]
    events = when(engine, tool_request("c2", "shell:exec", at=at(12)))
    assert rejection(events) == "tool_not_allowed"
    assert kinds(events) == ["InputRejected", "ToolCallDenied", "AlertRaised"]
    facts = of_type(events, ev.ToolCallDenied)[0].facts
    assert (facts.entry, facts.tool_policy_revision, facts.in_admission, facts.in_allowlist) == ("shell:exec", 1, False, False)
    row = runtime_row(engine)
    assert (row["calls_allowed"], row["calls_denied"]) == (1, 1)
    assert alert(engine, "tool_denied:bg-codex")["count"] == 1
    when(engine, tool_request("c3", "shell:exec", at=at(13)))
    assert alert(engine, "tool_denied:bg-codex")["count"] == 2  # a new occurrence each


def test_a_call_for_an_empty_tool_name_is_denied_not_a_broken_trace():
    engine = given(*admitted_world())
    events = when(engine, tool_request("c1", "", at=at(3)))
    assert rejection(events) == "tool_not_allowed"
    assert of_type(events, ev.ToolCallDenied)[0].facts.entry == ""
    assert runtime_row(engine)["calls_denied"] == 1


def test_unknown_runtime_and_a_repeated_call_id_refuse_the_input_only():
    engine = given(*admitted_world(), tool_request("c1", at=at(3)))
    assert kinds(when(engine, tool_request("c1", runtime_id="nope", at=at(4)))) == ["InputRejected"]
    events = when(engine, tool_request("c1", at=at(4)))
    assert rejection(events) == "already_exists" and kinds(events) == ["InputRejected"]
    assert runtime_row(engine)["calls_denied"] == 0


def test_a_tool_admitted_but_no_longer_in_the_allowlist_is_denied():
    engine = given(*admitted_world(), tool_policy("worker", [], at=at(3)))
    # The background policy is unchanged: allowed. A refused runtime asks in vain.
    assert rejection(when(engine, tool_request("c1", at=at(4)))) is None
    when(engine, tool_policy(tools=["tandem:read_evidence"], at=at(5)))
    assert rejection(when(engine, tool_request("c2", at=at(6)))) == "runtime_not_admitted"


def test_read_and_write_paths_of_a_background_call():
    engine = given(*admitted_world())
    assert rejection(when(engine, tool_request("c1", read_paths=["/repo/../etc/passwd"], at=at(3)))) == "read_outside_roots"
    assert rejection(when(engine, tool_request("c2", write_paths=["/repo/x"], at=at(4)))) == "write_outside_roots"
    assert runtime_row(engine)["calls_denied"] == 2


def test_a_worker_calls_only_for_its_own_action_in_flight_inside_its_grant():
    engine = given(
        *worker_world(),
        admit("w-2", role="worker", tools=["shell:exec"], at=at(2)),
        propose("op-1", actor="human", runtime_id="w-1", at=at(3)),
    )
    request = lambda call, **kw: tool_request(call, "shell:exec", runtime_id=kw.pop("runtime_id", "w-1"), at=at(4), **kw)  # noqa: E731
    assert rejection(when(engine, request("c1"))) == "unknown_operation"
    assert rejection(when(engine, request("c2", operation_id="op-9"))) == "unknown_operation"
    assert rejection(when(engine, request("c3", operation_id="op-1", runtime_id="w-2"))) == "runtime_not_admitted"
    assert rejection(when(engine, request("c4", operation_id="op-1", write_paths=["/etc/x"]))) == "write_outside_roots"
    assert rejection(when(engine, request("c5", operation_id="op-1", write_paths=["/repo/src/a"]))) is None
    assert action_row(engine, "op-1")["calls"] == 1
    when(engine, receipt("op-1", result="refused", at=at(5)))  # back to pending, claimed again: a2 in flight
    assert rejection(when(engine, request("c6", operation_id="op-1"))) is None


def test_a_worker_action_not_in_flight_calls_nothing():
    engine = given(
        *worker_world(),
        propose("op-1", actor="human", runtime_id="w-1", at=at(3)),
        {"type": "action.cancel", "actor": "human", "operation_id": "op-1", "at": at(4)},
        expecting("stale_attempt", tool_request("c1", "shell:exec", runtime_id="w-1", operation_id="op-1", at=at(5))),
    )
    assert runtime_row(engine, "w-1")["calls_denied"] == 1


def test_no_tool_outside_the_allowlist_is_ever_allowed_whatever_the_admission_said():
    """The section's invariant, from the denial's side: a tool the admission
    listed but the current allowlist dropped (a revoked runtime) is denied."""
    engine = given(*admitted_world(), tool_policy(tools=BG_TOOLS[:1], at=at(3)))
    assert rejection(when(engine, tool_request("c1", BG_TOOLS[1], at=at(4)))) == "runtime_not_admitted"


# ------------------------------------------------------------------ schema


def test_the_schema_of_runtime_admit_and_tool_policy_set():
    import msgspec

    from tests.unit.helpers import decode

    with pytest.raises(msgspec.ValidationError):
        decode(admit(conversation_id=None))  # a background needs conversation_id
    with pytest.raises(msgspec.ValidationError):
        decode({**admit("w-1", role="worker"), "generation": 1})  # forbidden for a worker
    with pytest.raises(msgspec.ValidationError):
        decode(tool_policy(tools=[f"t:{n}" for n in range(4_097)]))  # at most 4,096
    with pytest.raises(msgspec.ValidationError):
        decode(tool_policy(role="foreground"))
    assert rejection(when(given(*world()), {**tool_policy(), "actor": "background"})) == "not_authorized"


def test_a_v1_proposal_records_no_runtime_field():
    engine = given(*world())
    events = when(engine, propose("op-1", at=at(3)))
    proposed = of_type(events, ev.ActionProposed)[0]
    assert b"runtime_id" not in ev.encode_event(proposed)
    claim = of_type(events, ev.ActionClaimed)[0]
    assert b"runtime_id" not in ev.encode_event(claim) and b"tool_policy_revision" not in ev.encode_event(claim)
    assert engine.views.view("runtimes") == []
    assert action_row(engine, "op-1")["runtime_id"] is None and action_row(engine, "op-1")["calls"] == 0


def test_the_catalog_holds_the_section_invariant():
    from tandem.replay.proving import catalog

    [found] = [invariant for invariant in catalog() if invariant.name == "tools_within_admitted_allowlist"]
    assert found.kind == "event" and "before execution" in found.guarantee
