"""Runtimes (contract v1.2 section 1): why a runtime is admitted, refused or
fenced, and why each of its tool calls was allowed or denied before execution.

A refusal, a revocation and a denial each name the failed check, the
offending entry (the inherited, non-exact or missing tool, the read root or
path), the tool policy revision in force (with the `tool_policy.set` that made
it) and the isolation evidence or the admission the call relied on."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain.lifecycles import RUNTIME
from tandem.replay.explain.chain import Chain, Rendered
from tandem.replay.explain.log import Entry, Resolver, of_type, source
from tandem.replay.explain.model import Fact
from tandem.projections.base import rfc3339

_CHECKS = {
    "isolation_unavailable": "no isolation test evidence: a capability flag alone is not enforcement",
    "tools_inherited": "it would still inherit a provider/MCP tool",
    "tool_not_exact": "a tool is not exact (a wildcard, a server or a prefix)",
    "tool_not_allowed": "a tool is not in the admitted tools and the role's allowlist",
    "read_outside_roots": "a read root or path is outside the read roots",
    "write_outside_roots": "a write path is outside what it may write",
    "runtime_not_admitted": "the runtime is not admitted at its current generation",
    "unknown_operation": "the worker names no action it executes",
    "stale_attempt": "the action is not in flight",
    "budget_exhausted": "the action's grant reached its call_limit or token_limit (contract v1.2 section 3.4)",
    "unknown_investigation": "the investigation it names is not one of its background's (contract v1.2 section 5.1)",
    "not_open": "the investigation it names is closed (contract v1.2 section 5.1)",
}
# budget_exhausted for a background's call: its investigation ran out (contract v1.2 section 5.1).
_INVESTIGATION_EXHAUSTED = "the investigation it names is exhausted: its duration or calls ran out (contract v1.2 section 5.1)"


def tool_policy_fact(resolver: Resolver, revision: int, position: int) -> Fact:
    """The tool policy revision a decision saw, with the `tool_policy.set` that made it."""
    made = None
    if revision:
        made = resolver.source(("tool_policy",), position, lambda event: event.revision == revision)
    text = f"tool policy revision {revision}" + ("" if revision else " (no tool_policy.set yet: nothing allowed)")
    return Fact(name="tool_policy_revision", text=text, value=revision, source=made)


def tool_named(tool: str) -> str:
    """A call's tool as explain names it: an empty name said so (contract v1.2 section 1.1)."""
    return tool if tool else "'' (an empty tool name)"


def tool_facts(resolver: Resolver, facts: ev.ToolFacts, position: int, runtime_id: str) -> list[Fact]:
    """The failed check, the offending entry, the revision, the evidence or admission."""
    investigation = facts.investigation_calls_max is not None
    words = _INVESTIGATION_EXHAUSTED if investigation else _CHECKS.get(facts.check, facts.check)
    found = [Fact(name="check", text=f"{facts.check}: {words}", value=facts.check)]
    if facts.entry is not None:
        where = []
        if facts.in_admission is not None:
            where.append("in the admission" if facts.in_admission else "missing from the admission")
        if facts.in_allowlist is not None:
            where.append("in the allowlist" if facts.in_allowlist else "missing from the allowlist")
        text = f"entry {facts.entry!r}" + (f" ({', '.join(where)})" if where else "")
        value: dict[str, Any] = {"entry": facts.entry, "in_admission": facts.in_admission, "in_allowlist": facts.in_allowlist}
        found.append(Fact(name="entry", text=text, value=value))
    found.append(tool_policy_fact(resolver, facts.tool_policy_revision, position))
    if facts.isolation_test_ref is not None:
        text = f"isolation test evidence {facts.isolation_test_ref}"
        found.append(Fact(name="isolation_test_ref", text=text, value=facts.isolation_test_ref))
    if facts.admitted_revision is not None:
        admitted = resolver.find(("runtime", runtime_id), position, of_type(ev.RuntimeAdmitted))
        text = f"{runtime_id} admitted at tool policy revision {facts.admitted_revision}"
        found.append(Fact(name="admission", text=text, value=facts.admitted_revision, source=source(admitted)))
    if investigation:  # contract v1.2 section 5.1: the investigation's count and bounds
        text = (
            f"investigation {facts.entry}: calls {facts.calls} of investigation_calls_max "
            f"{facts.investigation_calls_max}, due at {rfc3339(facts.due_at)}"
        )
        value = {"calls": facts.calls, "investigation_calls_max": facts.investigation_calls_max, "due_at": rfc3339(facts.due_at)}
        exhausted = resolver.source(("investigation", facts.entry or ""), position, of_type(ev.InvestigationExhausted))
        found.append(Fact(name="investigation_budget", text=text, value=value, source=exhausted))
    elif facts.check == "budget_exhausted":  # contract v1.2 section 3.4: the grant's count and limits
        text = f"grant {facts.entry}: calls {facts.calls} of call_limit {facts.call_limit}, usage {facts.usage}" + (
            f" of token_limit {facts.token_limit}" if facts.token_limit is not None else ""
        )
        value = {"calls": facts.calls, "call_limit": facts.call_limit, "usage": facts.usage, "token_limit": facts.token_limit}
        found.append(Fact(name="grant_budget", text=text, value=value, source=resolver.source(("grant", facts.entry or ""), position)))
    return found


class Runtime(Chain):
    kind, key, lifecycle = "runtime", "runtime", RUNTIME
    defined_by = (ev.RuntimeAdmitted, ev.RuntimeRefused)
    profile: ev.RuntimeAdmitted | ev.RuntimeRefused

    def admitted(self, entry: Entry, event: ev.RuntimeAdmitted) -> Rendered:
        self.profile = event
        generation = f" for {event.conversation_id} at generation {event.generation}" if event.conversation_id else ""
        summary = f"admitted{generation} with tools [{', '.join(event.tools)}], reading [{', '.join(event.read_roots)}]"
        facts = [
            tool_policy_fact(self.resolver, event.tool_policy_revision, entry[0]),
            Fact(name="isolation_test_ref", text=f"isolation test evidence {event.isolation_test_ref}", value=event.isolation_test_ref),
        ]
        return summary, facts

    def refused(self, entry: Entry, event: ev.RuntimeRefused) -> Rendered:
        self.profile = event
        summary = f"admission refused {event.reason}" + (f": {event.facts.entry}" if event.facts.entry else "")
        return summary, tool_facts(self.resolver, event.facts, entry[0], self.identifier)

    def policy(self, entry: Entry, event: ev.ToolPolicySet) -> Rendered:
        if self.identifier in event.revoked:
            why = event.revoked_because[self.identifier]
            summary = f"revoked by tool policy revision {event.revision} ({event.role}): {why.check}: {why.entry}"
            return summary, tool_facts(self.resolver, why, entry[0], self.identifier)
        return f"re-stamped at tool policy revision {event.revision} ({event.role} policy changed)", []

    def fenced(self, entry: Entry, event: ev.RuntimeFenced) -> Rendered:
        bound = self.resolver.source(("binding", event.foreground_id), entry[0], of_type(ev.BackgroundBound))
        text = f"{event.foreground_id} bound {event.conversation_id} at generation {event.generation}"
        fact = Fact(name="binding_generation", text=text, value=event.generation, source=bound)
        return f"fenced: {event.conversation_id} was bound at generation {event.generation}", [fact]

    def allowed(self, entry: Entry, event: ev.ToolCallAllowed) -> Rendered:
        summary = f"call {event.call_id} {event.tool} allowed at tool policy revision {event.tool_policy_revision}"
        if event.investigation_id is not UNSET:
            summary += f" for investigation {event.investigation_id}"  # counted on it (contract v1.2 section 5.1)
        return summary + (f" for {event.operation_id}" if event.operation_id else ""), []

    def denied(self, entry: Entry, event: ev.ToolCallDenied) -> Rendered:
        summary = f"call {event.call_id} {tool_named(event.tool)} denied {event.reason} before execution"
        return summary, tool_facts(self.resolver, event.facts, entry[0], self.identifier)

    renderers = {
        ev.RuntimeAdmitted: admitted,
        ev.RuntimeRefused: refused,
        ev.ToolPolicySet: policy,
        ev.RuntimeFenced: fenced,
        ev.ToolCallAllowed: allowed,
        ev.ToolCallDenied: denied,
    }

    def summary(self) -> str:
        profile = self.profile
        of = f" of {profile.conversation_id}" if profile.conversation_id else ""
        return f"{profile.role} runtime{of} ({profile.adapter}), tool policy revision {profile.tool_policy_revision}"

    _again = "waits for a runtime.admit with isolation evidence, nothing inherited, exact tools inside the allowlist"
    waits = {
        "refused": ("runtime.admit", _again),
        "fenced": ("runtime.admit", "waits for a runtime.admit at its background's current binding generation"),
    }

    def related(self) -> list[str]:
        return [f"alert isolation_unavailable:{self.identifier}"]
