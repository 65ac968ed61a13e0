"""`tandem explain` of a runtime whose admission and call named an empty tool
(contract v1.2 section 1.1, fixture 64): the refusal names the entry, and the
call is said to be for an empty tool name, not left blank."""

from __future__ import annotations

from pathlib import Path

from tandem.adapters.ingest import ingest
from tandem.adapters.store import open_store
from tandem.adapters.trace import read_trace
from tandem.replay.engine import Engine
from tandem.replay.explain import explain

GATES = Path(__file__).resolve().parents[2] / "fixtures" / "gates"
FIXTURE = "64_exact_allowed_tools_empty_name_refused"


def test_an_empty_tool_name_is_named_in_the_refusal_and_the_denial():
    engine = Engine(open_store("memory:"), with_views=False, snapshot_every=0)
    ingest(engine, read_trace(str(GATES / f"{FIXTURE}.jsonl")))
    [runtime] = explain(engine.store, "bg-codex", kind="runtime")
    steps = {step.event: step for step in runtime.steps}
    refused = steps["RuntimeRefused"]
    assert {fact.name: fact.value for fact in refused.facts}["entry"]["entry"] == ""
    denied = steps["ToolCallDenied"]
    assert denied.summary == "call c1 '' (an empty tool name) denied tool_not_allowed before execution"
