"""The actions area's part of the decision state: its records, one mutable
dataclass per thing, filled by its evolvers (domain/records.py gathers every
area's; domain/state.py holds them and the indexes over them). A record's
`state` starts where its lifecycle starts and moves only as its events say.
Records are pickled in snapshots: their module is part of the snapshot
fingerprint."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from tandem.domain.indexes import Timers
from tandem.domain.facts import Envelope, PrerequisiteSpec, Revisions
from tandem.domain.lifecycles import (
    ACTION,
)


@dataclass(slots=True)
class Attempt:
    attempt_id: str
    state: str
    envelope: Envelope


@dataclass(slots=True)
class Action:
    operation_id: str
    order: int  # proposal order: the pass claims in this order
    cause_key: str
    operation: str
    target: str
    resource: str
    write_paths: list[str]
    task_id: str | None
    rule_id: str | None
    grant_id: str
    prerequisites: list[PrerequisiteSpec]
    revisions: Revisions
    unattended: bool
    proposed_by: str
    generation: int | None
    cause_revision: int
    state: str = ACTION.initial
    attempts: list[Attempt] = field(default_factory=list)
    outcome: str | None = None
    artifact_revision: str | None = None
    evidence_ref: str | None = None
    blocked_by: tuple[str, ...] = ()
    dependents: list[str] = field(default_factory=list)  # actions listing this one as a prerequisite
    # Contract v1.2 section 2: the cause's revision it answers (None: it names none), and
    # what makes it pointless; its evidence refs (the outcome's, then those attached).
    source_revision: int | None = None
    target_sha: str | None = None
    moot_statuses: tuple[str, ...] = ()
    evidence_refs: list[str] = field(default_factory=list)
    awaiting_evidence: tuple[str, ...] = ()  # as of its last ActionBlocked (dispatch.awaiting_evidence)
    deadline_at: datetime.datetime | None = None  # its first claim + execution_deadline_s (v1.2 section 3.3)
    first_claim_at: datetime.datetime | None = None  # when it was (only with a deadline)
    retry_at: datetime.datetime | None = None  # not claimed before (v1.2 section 3.5), once refused
    runtime_id: str | None = None  # contract v1.2 section 1.4: the worker runtime executing it
    calls: int = 0  # allowed tool calls charged to it
    priority: str = "normal"  # contract v1.2 section 8.1: "maintenance" yields to the owner
    # Contract v1.2 section 7.3: its cause's batch when it was proposed, and that batch's revision then.
    batch_id: str | None = None
    batch_revision: int = 0

    @property
    def terminal(self) -> bool:
        return self.state in ACTION.terminal


@dataclass(slots=True)
class ActionsState:
    """The actions area's part of the decision state (`state.actions.by_id`): written
    only by this area's evolvers, read by others through it."""

    by_id: dict[str, Action] = field(default_factory=dict)
    paused: set[str] = field(default_factory=set)
    # Execution deadlines (contract v1.2 section 3.3) of live actions: (deadline_at, operation_id).
    deadline_timers: Timers = field(default_factory=Timers)
    # Pending actions refused under a grant's retry back-off (v1.2 section 3.5): op -> retry_at.
    backing_off: dict[str, datetime.datetime] = field(default_factory=dict)
    pending: set[str] = field(default_factory=set)
    fenced: set[str] = field(default_factory=set)
    pending_by_resource: dict[str, set[str]] = field(default_factory=dict)
    pending_by_task: dict[str, set[str]] = field(default_factory=dict)
    pending_by_grant: dict[str, set[str]] = field(default_factory=dict)
    busy_by_resource: dict[str, int] = field(default_factory=dict)
    # The in-flight actions on each resource (what resource_busy's facts name).
    in_flight_by_resource: dict[str, set[str]] = field(default_factory=dict)
    by_cause: dict[str, list[str]] = field(default_factory=dict)
    by_runtime: dict[str, set[str]] = field(default_factory=dict)  # runtime -> actions naming it
    maintenance: set[str] = field(default_factory=set)  # live maintenance actions (contract v1.2 section 8.1)
    # Contract v1.2 section 8.1: conversation -> resource -> the non-terminal actions of its
    # tasks naming it (what a foreground's work names: the maintenance there is affected by it).
    work_resources: dict[str, dict[str, set[str]]] = field(default_factory=dict)


__all__ = ['ActionsState', 'Attempt', 'Action']  # re-exported by domain/records.py
