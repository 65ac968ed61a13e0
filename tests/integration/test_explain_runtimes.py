"""`tandem explain` of a runtime (contract v1.2 sections 1, 10): each refusal,
revocation and denial names the failed check, the offending entry, the tool
policy revision (with the `tool_policy.set` that made it) and the evidence or
admission it relied on."""

from __future__ import annotations

from pathlib import Path

from tandem.adapters.ingest import ingest
from tandem.adapters.store import open_store
from tandem.adapters.trace import read_trace
from tandem.replay.engine import Engine
from tandem.replay.explain import ExplainError, explain

import pytest

GATES = Path(__file__).resolve().parents[2] / "fixtures" / "gates"


def stored(name: str):
    engine = Engine(open_store("memory:"), with_views=False, snapshot_every=0)
    ingest(engine, read_trace(str(GATES / f"{name}.jsonl")))
    return engine.store


def facts(link) -> dict[str, object]:
    return {fact.name: fact.value for fact in link.facts}


def test_the_worked_example_explains_the_refusal_and_the_denial():
    store = stored("39_no_inherited_tools_forbidden_tool_denied_before_execution")
    [runtime] = explain(store, "bg-codex")
    assert runtime.kind == "runtime" and runtime.state == "admitted"
    refused, admitted, allowed, denied = runtime.steps
    assert refused.event == "RuntimeRefused" and refused.input.rejected == "tools_inherited"
    assert facts(refused)["check"] == "tools_inherited"
    assert facts(refused)["entry"]["entry"] == "mcp:github/create_pull_request"
    assert facts(refused)["tool_policy_revision"] == 1
    revision = next(fact for fact in refused.facts if fact.name == "tool_policy_revision")
    assert revision.source is not None and revision.source.event == "ToolPolicySet"
    assert (admitted.event, allowed.event) == ("RuntimeAdmitted", "ToolCallAllowed")
    assert denied.event == "ToolCallDenied" and denied.input.rejected == "tool_not_allowed"
    entry = facts(denied)["entry"]
    assert entry == {"entry": "shell:exec", "in_admission": False, "in_allowlist": False}
    admission = next(fact for fact in denied.facts if fact.name == "admission")
    assert admission.source is not None and admission.source.event == "RuntimeAdmitted"


def test_a_revocation_and_a_fence_explain_themselves_and_what_the_runtime_waits_for():
    store = stored("40_isolation_unavailable_refuses_unsafe_profile")
    [runtime] = explain(store, "bg-codex", kind="runtime")
    events = [link.event for link in runtime.steps]
    assert events.count("RuntimeRefused") == 2 and "RuntimeFenced" in events
    revoked = next(link for link in runtime.steps if link.event == "ToolPolicySet" and link.state == "refused")
    assert facts(revoked)["check"] == "tool_not_allowed" and facts(revoked)["tool_policy_revision"] == 3
    fenced = next(link for link in runtime.steps if link.event == "RuntimeFenced")
    binding = fenced.facts[0]
    assert binding.name == "binding_generation" and binding.source is not None and binding.source.event == "BackgroundBound"
    [worker] = explain(store, "w-1")
    assert worker.state == "admitted"
    assert any(link.event == "ToolPolicySet" and "re-stamped" in link.summary for link in worker.steps)


def test_a_store_without_runtimes_lists_the_kinds_it_always_did():
    with pytest.raises(ExplainError) as v1:
        explain(stored("01_user_chats_ci_fails"), "nothing-here")
    assert "runtime" not in str(v1.value)
    with pytest.raises(ExplainError) as v12:
        explain(stored("39_no_inherited_tools_forbidden_tool_denied_before_execution"), "nothing-here")
    assert "reconciliation, runtime)" in str(v12.value)


def test_an_action_blocked_by_its_runtime_names_the_runtime_and_its_refusal():
    engine = Engine(open_store("memory:"), with_views=False, snapshot_every=0)
    trace = GATES.parent / "traces" / "worker_tools_denied_before_execution_outside_its_action.jsonl"
    ingest(engine, read_trace(str(trace)))
    [operation] = explain(engine.store, "op-1", kind="operation")
    blocked = next(link for link in operation.steps if link.event == "ActionBlocked")
    [fact] = blocked.facts
    assert fact.name == "runtime" and fact.value == {"runtime_id": "w-1", "state": "refused"}
    assert fact.source is not None and fact.source.event == "RuntimeRefused"
