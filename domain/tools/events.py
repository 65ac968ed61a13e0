"""The events of the tools area: immutable facts, in the past tense, one frozen
msgspec Struct each (domain/events.py assembles every area's into the one
union the log is written in)."""

from __future__ import annotations

from msgspec import UNSET, UnsetType
from tandem.domain.event_base import Decision
from tandem.domain.facts import ToolFacts


class ToolPolicySet(Decision, frozen=True, kw_only=True):
    """A role's allowlist and read roots at a new tool policy revision (one
    counter for both roles). `revoked`: the admitted runtimes of that role it
    no longer allows (now refused), with why (`revoked_because`);
    `restamped`: the other admitted runtimes, of both roles, now at this revision."""

    revision: int
    role: str
    allowed_tools: list[str]
    read_roots: list[str]
    revoked: list[str]
    restamped: list[str]
    revoked_because: dict[str, ToolFacts] = {}


class RuntimeAdmitted(Decision, frozen=True, kw_only=True):
    runtime_id: str
    role: str
    conversation_id: str | None
    generation: int | None
    adapter: str
    tool_policy_revision: int
    tools: list[str]
    read_roots: list[str]
    isolation_test_ref: str


class RuntimeRefused(Decision, frozen=True, kw_only=True):
    """A refused admission (checks 5-9 of `runtime.admit`): recorded after its
    rejection; the runtime is refused with `reason`, whatever it was before."""

    runtime_id: str
    role: str
    conversation_id: str | None
    generation: int | None
    adapter: str
    tool_policy_revision: int
    tools: list[str]
    reason: str
    facts: ToolFacts


class RuntimeFenced(Decision, frozen=True, kw_only=True):
    """Its background was bound at a new generation: it must be admitted again."""

    runtime_id: str
    conversation_id: str
    foreground_id: str
    generation: int  # the new binding generation


class ToolCallAllowed(Decision, frozen=True, kw_only=True):
    runtime_id: str
    call_id: str
    tool: str
    operation_id: str | None
    tool_policy_revision: int
    investigation_id: str | UnsetType = UNSET  # the background's investigation it counts on (v1.2 section 5.1)


class ToolCallDenied(Decision, frozen=True, kw_only=True):
    """A denied `tool.request` (recorded after its rejection): the runner must not execute it."""

    runtime_id: str
    call_id: str
    tool: str
    operation_id: str | None
    reason: str
    facts: ToolFacts
    investigation_id: str | UnsetType = UNSET  # a named, known investigation (v1.2 section 5.1)


__all__ = ['ToolPolicySet', 'RuntimeAdmitted', 'RuntimeRefused', 'RuntimeFenced', 'ToolCallAllowed', 'ToolCallDenied']  # every name here is the registry's: `ev.Name`
