"""The actions area's part of the decision state: its records, one mutable
dataclass per thing, and its part of the State (`state.<area>`: the records
and the indexes over them), written only by this area's code (domain/records.py
gathers every area's records; domain/state.py holds the parts). A record's
`state` starts where its lifecycle starts and moves only as its events say.
Records are pickled in snapshots: their module is part of the snapshot
fingerprint."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from msgspec import UNSET
from msgspec.structs import replace
from tandem.domain.actions.events import ActionProposed
from tandem.domain.facts import Envelope, Revisions
from tandem.domain.indexes import Timers, index_add, index_remove
from tandem.domain.lifecycles import (
    ACTION,
)

if TYPE_CHECKING:
    from tandem.domain.state import State


IN_FLIGHT = ACTION.in_flight
TERMINAL = ACTION.terminal


@dataclass(slots=True)
class Attempt:
    attempt_id: str
    state: str
    envelope: Envelope


def _given(value: Any) -> Any:
    return None if value is UNSET else value


@dataclass(slots=True)
class Action:
    """An action: its proposal (the event, kept as it is: what it was
    proposed as never changes, so it is read through it, not copied) and
    what its later events changed."""

    proposal: ActionProposed
    order: int  # proposal order: the pass claims in this order
    revisions: Revisions  # what it was last validated under (re-stamped by grant.revise, revalidation)
    state: str = ACTION.initial
    # Contract v1.2 section 2: the cause's revision it answers (None: it names none); revalidation moves it.
    source_revision: int | None = None
    attempts: list[Attempt] = field(default_factory=list)
    outcome: str | None = None
    artifact_revision: str | None = None
    evidence_ref: str | None = None
    blocked_by: tuple[str, ...] = ()
    dependents: list[str] = field(default_factory=list)  # actions listing this one as a prerequisite
    evidence_refs: list[str] = field(default_factory=list)  # the outcome's, then those attached
    awaiting_evidence: tuple[str, ...] = ()  # as of its last ActionBlocked (dispatch.awaiting_evidence)
    deadline_at: datetime.datetime | None = None  # its first claim + execution_deadline_s (v1.2 section 3.3)
    first_claim_at: datetime.datetime | None = None  # when it was (only with a deadline)
    retry_at: datetime.datetime | None = None  # not claimed before (v1.2 section 3.5), once refused
    calls: int = 0  # allowed tool calls charged to it

    # What it was proposed as (ActionProposed's fields, contract sections 4 and v1.2 1.4, 2, 7.3, 8.1).
    operation_id = property(attrgetter("proposal.operation_id"))
    cause_key = property(attrgetter("proposal.cause_key"))
    operation = property(attrgetter("proposal.operation"))
    target = property(attrgetter("proposal.target"))
    resource = property(attrgetter("proposal.resource"))
    write_paths = property(attrgetter("proposal.write_paths"))
    task_id = property(attrgetter("proposal.task_id"))
    rule_id = property(attrgetter("proposal.rule_id"))
    grant_id = property(attrgetter("proposal.grant_id"))
    prerequisites = property(attrgetter("proposal.prerequisites"))
    unattended = property(attrgetter("proposal.unattended"))
    proposed_by = property(attrgetter("proposal.proposed_by"))
    generation = property(attrgetter("proposal.generation"))
    cause_revision = property(attrgetter("proposal.cause_revision"))
    target_sha = property(lambda self: _given(self.proposal.target_sha))
    runtime_id = property(lambda self: _given(self.proposal.runtime_id))  # the worker runtime executing it
    batch_id = property(lambda self: _given(self.proposal.batch_id))  # its cause's batch when proposed
    batch_revision = property(lambda self: _given(self.proposal.batch_revision) or 0)  # that batch's revision

    @property
    def moot_statuses(self) -> tuple[str, ...]:
        """What makes it pointless (contract v1.2 section 2)."""
        statuses = self.proposal.moot_statuses
        return () if statuses is UNSET else tuple(statuses)

    @property
    def priority(self) -> str:
        """"maintenance" yields to the owner (contract v1.2 section 8.1)."""
        return _given(self.proposal.priority) or "normal"

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
    # Read only for maintenance, so kept only while some is live: built from the live actions
    # when the first maintenance action comes, dropped when the last one ends.
    work_resources: dict[str, dict[str, set[str]]] = field(default_factory=dict)



def _work_named(state: State, action: Action, live: bool) -> None:
    """A task's action became live or ended: what its foreground's work names
    changed, so the pending maintenance on its resource (owner_active, v1.2 section 8.1).
    Nothing to keep while no maintenance is live (`work_resources`)."""
    if not state.actions.maintenance:
        return
    conversation_id = state.tasks.by_id[action.task_id].conversation_id  # type: ignore[index]
    if live:
        index_add(state.actions.work_resources.setdefault(conversation_id, {}), action.resource, action.operation_id)
    else:
        named = state.actions.work_resources[conversation_id]
        index_remove(named, action.resource, action.operation_id)
        if not named:
            del state.actions.work_resources[conversation_id]
    if state.actions.maintenance:
        waiting = state.actions.pending_by_resource.get(action.resource, ())
        state.dirty_actions.update(op for op in waiting if op in state.actions.maintenance)


def add_action(state: State, action: Action) -> None:
    """A proposed action, in its first state: indexed as pending (the pass looks at it)."""
    assert action.state == "pending", action.state
    operation_id = action.operation_id
    state.actions.by_id[operation_id] = action
    state.actions.pending.add(operation_id)
    index_add(state.actions.pending_by_resource, action.resource, operation_id)
    index_add(state.actions.pending_by_task, action.task_id, operation_id)
    index_add(state.actions.pending_by_grant, action.grant_id, operation_id)
    state.dirty_actions.add(operation_id)
    if action.source_revision is not None:
        state.dirty_sources.add(operation_id)
    if action.priority == "maintenance":
        first = not state.actions.maintenance
        state.actions.maintenance.add(operation_id)
        if first:
            _name_live_work(state)
    if action.proposal.task_id is not None:
        _work_named(state, action, live=True)


def _live(state: State) -> Iterator[str]:
    """Every action not terminal: pending, fenced or in flight."""
    yield from state.actions.pending
    yield from state.actions.fenced
    for operation_ids in state.actions.in_flight_by_resource.values():
        yield from operation_ids


def _name_live_work(state: State) -> None:
    """`work_resources` from the live task actions (the first maintenance action came)."""
    named = state.actions.work_resources
    assert not named, "work_resources is kept only while maintenance is live"
    for operation_id in _live(state):
        action = state.actions.by_id[operation_id]
        if action.task_id is not None:
            conversation_id = state.tasks.by_id[action.task_id].conversation_id
            index_add(named.setdefault(conversation_id, {}), action.resource, operation_id)


def move_action(state: State, action: Action, new_state: str) -> None:
    """Move an action and keep the pending/fenced/resource indexes in step."""
    old = action.state
    if old == new_state:
        return
    action.state = new_state
    proposal = action.proposal  # its fields read once (the Action's properties read them one by one)
    operation_id = proposal.operation_id
    resource = proposal.resource
    actions = state.actions
    if old == "pending":
        actions.backing_off.pop(operation_id, None)
        actions.pending.discard(operation_id)
        index_remove(actions.pending_by_resource, resource, operation_id)
        index_remove(actions.pending_by_task, proposal.task_id, operation_id)
        index_remove(actions.pending_by_grant, proposal.grant_id, operation_id)
        action.blocked_by = ()
    elif old == "fenced":
        actions.fenced.discard(operation_id)
    if new_state == "pending":
        actions.pending.add(operation_id)
        index_add(actions.pending_by_resource, resource, operation_id)
        index_add(actions.pending_by_task, proposal.task_id, operation_id)
        index_add(actions.pending_by_grant, proposal.grant_id, operation_id)
        state.dirty_actions.add(operation_id)
    elif new_state == "fenced":
        actions.fenced.add(operation_id)
    was_busy = old in IN_FLIGHT
    is_busy = new_state in IN_FLIGHT
    if was_busy != is_busy:
        _busy_changed(state, resource, operation_id, is_busy)
    if new_state in TERMINAL:
        if action.deadline_at is not None:
            state.actions.deadline_timers.discard((action.deadline_at, operation_id))
        state.actions.maintenance.discard(operation_id)
        if not state.actions.maintenance:
            state.actions.work_resources.clear()  # no maintenance: nothing reads it
        if proposal.task_id is not None:
            _work_named(state, action, live=False)
        if action.dependents:
            # The outcome its dependents wait for is known now (prerequisite_*).
            state.dirty_actions.update(action.dependents)
    elif new_state in ("pending", "fenced") and action.source_revision is not None:
        state.dirty_sources.add(operation_id)  # back at pending or fenced: the source rule first


def _busy_changed(state: State, resource: str, operation_id: str, busy: bool) -> None:
    count = state.actions.busy_by_resource.get(resource, 0) + (1 if busy else -1)
    if count:
        state.actions.busy_by_resource[resource] = count
    else:
        state.actions.busy_by_resource.pop(resource, None)
    if busy:
        index_add(state.actions.in_flight_by_resource, resource, operation_id)
    else:
        index_remove(state.actions.in_flight_by_resource, resource, operation_id)
    state.touch_resource(resource)


# ------------------------------------------ what other areas ask of an action


def restamp_grant(state: State, operation_id: str, revision: int) -> None:
    """The action answers the grant's new revision (grant.revise re-stamps it)."""
    action = state.actions.by_id[operation_id]
    action.revisions = replace(action.revisions, grant=revision)


def drop_deadline(state: State, deadline_at: datetime.datetime, operation_id: str) -> None:
    """The action's execution deadline passed (contract v1.2 section 3.3): no timer."""
    state.actions.deadline_timers.discard((deadline_at, operation_id))


def charge_action_call(state: State, operation_id: str) -> Action:
    """One allowed tool call charged to the action; the action."""
    action = state.actions.by_id[operation_id]
    action.calls += 1
    return action


__all__ = ['restamp_grant', 'drop_deadline', 'charge_action_call', 'add_action', 'move_action', 'ActionsState', 'Attempt', 'Action']  # re-exported by domain/records.py
