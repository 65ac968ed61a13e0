"""`tandem explain` of a runtime whose admission and call named an empty tool
(contract v1.2 section 1.1, fixture 64): the refusal names the entry, and the
call is said to be for an empty tool name, not left blank."""

from __future__ import annotations

from tandem.replay.explain import explain
from tests.integration.gate_stores import stored

FIXTURE = "64_exact_allowed_tools_empty_name_refused"


def test_an_empty_tool_name_is_named_in_the_refusal_and_the_denial():
    [runtime] = explain(stored(FIXTURE), "bg-codex", kind="runtime")
    steps = {step.event: step for step in runtime.steps}
    refused = steps["RuntimeRefused"]
    assert {fact.name: fact.value for fact in refused.facts}["entry"]["entry"] == ""
    denied = steps["ToolCallDenied"]
    assert denied.summary == "call c1 '' (an empty tool name) denied tool_not_allowed before execution"
