"""Tool names are the engine's to judge (contract v1.2 section 1, issue 23
point 5): any string the contract's field type admits (a str of at most 512
characters) decodes, and the engine's verdict on a tool policy is
`tool_not_exact` exactly when one of its entries is not exact. The engine this
found broken: an empty name refused by the schema, which made a whole trace
invalid instead of rejecting one input (hypothesis tries `""` first)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tandem.domain.input_base import identifier_chars_max
from tandem.domain.tools.rules import is_exact
from tests.unit.helpers import at, given as given_inputs, rejection, tool_policy, when, world

NAMES = st.one_of(
    st.sampled_from(["", " ", "mcp:", "mcp:github", "mcp:github/get_pull_request", "shell:*", "tandem:read_evidence"]),
    st.text(max_size=identifier_chars_max),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(NAMES, min_size=1, max_size=4))
def test_any_tool_names_are_an_inputs_verdict_never_a_broken_trace(names: list[str]) -> None:
    engine = given_inputs(*world())
    events = when(engine, tool_policy(tools=names, at=at(1)))
    exact = all(is_exact(name) for name in names)
    assert rejection(events) == (None if exact else "tool_not_exact"), names
    assert engine.views.view("health")["tool_policy_revision"] == (1 if exact else 0)
