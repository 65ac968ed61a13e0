"""The tools area's part of the decision state: its records, one mutable
dataclass per thing, and its part of the State (`state.<area>`: the records
and the indexes over them), written only by this area's code (domain/records.py
gathers every area's records; domain/state.py holds the parts). A record's
`state` starts where its lifecycle starts and moves only as its events say.
Records are pickled in snapshots: their module is part of the snapshot
fingerprint."""

from __future__ import annotations

from dataclasses import dataclass, field
from tandem.domain.lifecycles import (
    RUNTIME,
)


@dataclass(slots=True)
class ToolPolicy:
    """A role's tool policy (contract v1.2 section 1.1): exact tools, normalised read roots."""

    tools: frozenset[str] = frozenset()
    read_roots: tuple[str, ...] = ()


@dataclass(slots=True)
class Runtime:
    """A process that runs a model with tools (contract v1.2 section 1.2): a
    background's runner or a worker profile, as last admitted or refused."""

    runtime_id: str
    role: str
    conversation_id: str | None
    generation: int | None
    adapter: str
    tool_policy_revision: int
    tools: tuple[str, ...]
    read_roots: tuple[str, ...]
    state: str = RUNTIME.initial
    reason: str | None = None
    calls_allowed: int = 0
    calls_denied: int = 0
    call_ids: set[str] = field(default_factory=set)  # every call asked (allowed or denied)


@dataclass(slots=True)
class ToolsState:
    """The tools area's part of the decision state (`state.tools`): written
    only by this area's evolvers, read by others through it."""

    # Contract v1.2 section 1: the tool policy per role ("background", "worker"), its
    # revision (one counter for both), and the runtimes by id.
    policy_revision: int = 0
    policies: dict[str, ToolPolicy] = field(default_factory=dict)
    runtimes: dict[str, Runtime] = field(default_factory=dict)


__all__ = ['ToolsState', 'ToolPolicy', 'Runtime']  # re-exported by domain/records.py
