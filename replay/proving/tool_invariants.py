"""The catalog's invariant of contract v1.2 section 1 (tool policy and runtime
admission): "no tool outside the admitted allowlist is ever allowed"
(contract v1.2 section 14). Restated from the state, not asked of
domain/tools/rules.py, so the check does not share the code it checks."""

from __future__ import annotations

from tandem.domain import events as ev
from tandem.domain import inputs as inp
from tandem.domain.events import Event
from tandem.domain.state import State
from tandem.replay.proving.model import Applying, event_invariant


def _bound_generation(state: State, background_id: str | None) -> int | None:
    background = state.conversation.by_id.get(background_id or "")
    foreground = state.conversation.by_id.get(background.foreground_id or "") if background is not None else None
    if foreground is None or foreground.background_id != background_id:
        return None
    return foreground.generation


def _allowlist(state: State, role: str) -> frozenset[str]:
    policy = state.tools.policies.get(role)
    return policy.tools if policy is not None else frozenset()


@event_invariant
def tools_within_admitted_allowlist(before: State, event: Event, applying: Applying) -> str | None:
    """No tool outside the admitted allowlist is ever allowed: "exact allowed
    tools, no inherited provider/MCP tools ... Deny forbidden tools at the
    runner/tool host before execution". A call is allowed only for a runtime
    admitted (a background's at its current binding generation), for a tool
    among its admitted tools and in its role's current allowlist; a runtime is
    admitted only with isolation evidence, nothing inherited, and every tool
    in the allowlist."""
    if isinstance(event, ev.ToolCallAllowed):
        runtime = before.tools.runtimes.get(event.runtime_id)
        if runtime is None or runtime.state != "admitted":
            return f"call {event.call_id} allowed for {event.runtime_id}, which is {runtime.state if runtime else 'unknown'}"
        if runtime.role == "background" and runtime.generation != _bound_generation(before, runtime.conversation_id):
            return f"call {event.call_id} allowed for {event.runtime_id} at generation {runtime.generation}, not its binding's"
        if event.tool not in runtime.tools:
            return f"call {event.call_id} allowed {event.tool!r}, which {event.runtime_id}'s admission does not list"
        if event.tool not in _allowlist(before, runtime.role):
            return f"call {event.call_id} allowed {event.tool!r}, outside the {runtime.role} allowlist"
    elif isinstance(event, ev.RuntimeAdmitted):
        value = applying.input
        if not isinstance(value, inp.AdmitRuntime) or value.runtime_id != event.runtime_id:
            return f"{event.runtime_id} admitted by {value.input_type}, not by its runtime.admit"
        if value.inherited_tools or not event.isolation_test_ref:
            return f"{event.runtime_id} admitted with inherited tools or without isolation evidence"
        outside = [tool for tool in event.tools if tool not in _allowlist(before, event.role)]
        if outside:
            return f"{event.runtime_id} admitted with {outside} outside the {event.role} allowlist"
    return None
