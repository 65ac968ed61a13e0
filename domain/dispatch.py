"""One input, completely (`handle_input`), and the dispatch pass (spec
section 4): what the engine decides by itself.

After every input (a rejected one too: time still passes), in the same
transaction, the pass runs the time rules (contract section 6, the alerts area), then
claims pending actions that nothing blocks, in proposal order, then records
every change of `blocked_by` and of task `holds` (with the facts behind them:
domain/provenance.py), then runs the foreground pass (the delivery area). It
orchestrates the areas; the claims and the blockers are its own.

Work is proportional to what the input touched: evolve marks the actions and
tasks whose blocking inputs changed (`State.dirty_*`, via the indexes by
prerequisite, resource, task, grant and conversation), and the pass looks at
those only. Conditions that apply to every action (the watchdog going stale,
an `"unknown"` question, a `*` pause) touch every pending action; they are
rare and the cost is inherent: each of those actions changes.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable

from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain.alerts.rules import resolve_progressed, run_time_rules
from tandem.domain.background_pass import run_background_pass
from tandem.domain.budgets.rules import deadline_for, deadline_rule, retry_blocked, touch_backed_off
from tandem.domain.conversation.delivery import run_foreground_pass
from tandem.domain.actions.foreman import affecting_owner
from tandem.domain.inputs import Input
from tandem.domain.investigations.rules import exhaustion_rule
from tandem.domain.provenance import block_facts, hold_facts, prerequisite_facts
from tandem.domain.records import Action
from tandem.domain.rules import reacting, record
from tandem.domain.actions.source_rule import run_source_rule
from tandem.domain.state import State, reachable

Emit = Callable[[ev.Event], None]


def handle_input(state: State, value: Input, seq: int, file: str | None, line: int | None, emit: Emit) -> None:
    """One input, completely: its record and the domain's events (`record`),
    then the pass; every event is followed by the alert and obligation rules
    it triggers (`rules.REACTIONS`). `emit` applies and records one event
    (evolve); all of them carry `seq` as their cause."""
    emit = reacting(state, emit)
    for event in record(state, value, seq, file, line):
        emit(event)
    run_pass(state, seq, value.at, emit)


def run_pass(state: State, cause: int, at: datetime.datetime, emit: Emit) -> None:
    """Decide the engine's own events: time rules, then actions in proposal
    order, then foreground delivery (contract section 4), then the background
    reseeds (contract v1.2 section 9)."""
    run_time_rules(
        state, cause, at, emit,
        deadline_rule(state, cause) if state.actions.deadline_timers.entries else None,
        exhaustion_rule(state, cause) if state.investigations.timers.entries else None,
    )  # fmt: skip
    if state.actions.backing_off:
        touch_backed_off(state, at)
    if state.dirty_sources:
        run_source_rule(state, cause, emit)
    if state.dirty_actions or state.dirty_tasks:
        _actions_pass(state, cause, emit)
        resolve_progressed(state, cause, emit)  # a claim, or holds lifting, is progress
    run_foreground_pass(state, cause, at, emit)
    run_background_pass(state, cause, at, emit)


def _actions_pass(state: State, cause: int, emit: Emit) -> None:
    looked_at: set[str] = set()
    while state.dirty_actions:
        batch = state.dirty_actions
        state.dirty_actions = set()
        looked_at |= batch
        for action in sorted((state.actions.by_id[op] for op in batch if op in state.actions.pending), key=_order):
            if action.state == "pending" and not blockers(state, action):
                _claim(state, cause, action, emit)

    for action in sorted((state.actions.by_id[op] for op in looked_at), key=_order):
        if action.state != "pending":
            continue
        operation_id = action.operation_id
        codes = blockers(state, action)
        if codes != action.blocked_by or awaiting_evidence(state, action) != action.awaiting_evidence:
            # The facts behind the codes: computed only when the codes change.
            emit(
                ev.ActionBlocked(
                    cause=cause, operation_id=operation_id, blocked_by=list(codes), facts=block_facts(state, action, codes)
                )
            )
    state.dirty_actions.clear()

    for task_id in sorted(state.dirty_tasks):
        task = state.tasks.by_id[task_id]
        holds = task_holds(state, task_id) if task.state == "active" else ()
        if holds != task.holds:
            emit(ev.TaskHoldsChanged(cause=cause, task_id=task_id, holds=list(holds), facts=hold_facts(state, task_id, holds)))
    state.dirty_tasks.clear()


def _order(action: Action) -> int:
    return action.order


def _claim(state: State, cause: int, action: Action, emit: Emit) -> None:
    task = state.tasks.by_id[action.task_id] if action.task_id is not None else None
    # Never claim under stale authority: fencing and re-stamping keep these current.
    assert action.revisions.grant == state.authority.grants[action.grant_id].revision, action.operation_id
    assert task is None or action.revisions.task == task.revision, action.operation_id
    # (Its source revision is the cause's: the source rule ran first. The invariant
    # no_claim_behind_source_revision checks it, so a broken rule is found, not a crash.)
    conversation = state.conversation.by_id[task.conversation_id] if task is not None else None
    assert state.last_at is not None
    deadline_at = deadline_for(state, action, state.last_at)
    emit(
        ev.ActionClaimed(
            cause=cause,
            operation_id=action.operation_id,
            attempt_id=f"{action.operation_id}/a{len(action.attempts) + 1}",
            envelope=ev.Envelope(
                operation=action.operation,
                target=action.target,
                resource=action.resource,
                write_paths=list(action.write_paths),
                # The revisions it was validated under (re-stamped as they moved
                # without fencing it), and the policy in force now.
                task_revision=action.revisions.task,
                grant_revision=action.revisions.grant,
                policy_revision=state.authority.policy.revision,
                intent_revision=action.revisions.intent,
                source_revision=action.source_revision if action.source_revision is not None else UNSET,
                target_sha=action.target_sha if action.target_sha is not None else UNSET,
                **({"deadline_at": deadline_at} if deadline_at is not None else {}),
                **_runtime_envelope(state, action),
            ),
            facts=ev.ClaimFacts(
                heartbeat_generation=state.health.heartbeat_generation,
                heartbeat_at=state.health.heartbeat_at,
                binding_generation=conversation.generation if conversation is not None else None,
                prerequisites=prerequisite_facts(state, action) if action.prerequisites else [],
            ),
        )
    )


def _runtime_envelope(state: State, action: Action) -> dict[str, object]:
    """Contract v1.2 section 10: the runtime and the tool policy revision it was
    admitted at, for an action naming one (nothing, so a v1 envelope is unchanged)."""
    if action.runtime_id is None:
        return {}
    runtime = state.tools.runtimes[action.runtime_id]
    return {"runtime_id": runtime.runtime_id, "tool_policy_revision": runtime.tool_policy_revision}


# ----------------------------------------------------------------- blockers


def blockers(state: State, action: Action) -> tuple[str, ...]:
    """Every code that blocks a pending action now, in the section 4 order."""
    codes: list[str] = []
    statuses = {state.prerequisite_status(prerequisite) for prerequisite in action.prerequisites}
    if "pending" in statuses:
        codes.append("prerequisite_pending")
    if "failed" in statuses:
        codes.append("prerequisite_failed")
    task = state.tasks.by_id[action.task_id] if action.task_id is not None else None
    if _operation_held(state, action, set()) or (task is not None and _task_question_held(state, task.task_id)):
        codes.append("question_hold")
    if state.tasks.unknown_questions and state.wider_hold():
        codes.append("wider_hold")
    if "*" in state.actions.paused or (task is not None and task.task_id in state.actions.paused):
        codes.append("scope_paused")
    if task is not None:
        if any(state.tasks.by_id[dependency].state != "completed" for dependency in task.depends_on):
            codes.append("task_held")
        if action.proposed_by in ("background", "daemon") and state.conversation.by_id[task.conversation_id].intent_unsynced:
            codes.append("intent_unsynced")
    if action.unattended and not state.watchdog_fresh:
        codes.append("watchdog_unavailable")
    if state.actions.busy_by_resource.get(action.resource):
        codes.append("resource_busy")
    if task is not None and _approval_pending(state, task.conversation_id):
        codes.append("approval_pending")
    if state.authority.grants[action.grant_id].budget_exhausted:
        codes.append("budget_exhausted")
    if action.rule_id is not None and not state.opted_in(action.rule_id, action.cause_key):
        codes.append("rule_opted_out")
    if action.runtime_id is not None and _runtime_state(state, action.runtime_id) != "admitted":
        codes.append("runtime_not_admitted")
    if action.retry_at is not None and retry_blocked(state, action):
        codes.append("retry_backoff")
    if action.priority == "maintenance" and affecting_owner(state, action) is not None:
        codes.append("owner_active")  # contract v1.2 section 8.1: an active owner it concerns
    return tuple(codes)


def awaiting_evidence(state: State, action: Action) -> tuple[str, ...]:
    """The prerequisites that succeeded but still lack what the dependent
    requires (contract v1.2 section 2.5): when they change, the block's facts
    are recorded again, so that they name what is missing (always () in v1)."""
    return tuple(
        p.operation_id
        for p in action.prerequisites
        if p.evidence_required is True
        and state.actions.by_id[p.operation_id].state == "succeeded"
        and state.prerequisite_status(p) == "pending"
    )


def _runtime_state(state: State, runtime_id: str) -> str | None:
    runtime = state.tools.runtimes.get(runtime_id)
    return runtime.state if runtime is not None else None


def _approval_pending(state: State, conversation_id: str) -> bool:
    """The task's conversation, or the background bound to it, has an open approval."""
    conversation = state.conversation.by_id[conversation_id]
    if conversation.approvals:
        return True
    background = state.conversation.by_id.get(conversation.background_id or "")
    return background is not None and bool(background.approvals)


def _operation_held(state: State, action: Action, seen: set[str]) -> bool:
    """An open question lists this operation or, transitively, a prerequisite."""
    if action.operation_id in seen:
        return False
    seen.add(action.operation_id)
    listed = state.tasks.question_ops.get(action.operation_id)
    if listed and any(state.question_active(key) for key in listed):
        return True
    return any(_operation_held(state, state.actions.by_id[p.operation_id], seen) for p in action.prerequisites)


def _task_question_held(state: State, task_id: str) -> bool:
    """An open `"task"` question on this task or on a task it depends on, transitively."""
    if not state.tasks.task_questions:
        return False
    for current in reachable(task_id, lambda task: state.tasks.by_id[task].depends_on):
        keys = state.tasks.task_questions.get(current)
        if keys and any(state.question_active((current, key)) for key in keys):
            return True
    return False


def task_holds(state: State, task_id: str) -> tuple[str, ...]:
    """Task-level holds (section 3.2), in the section 4 order."""
    task = state.tasks.by_id[task_id]
    holds: list[str] = []
    if _task_question_held(state, task_id):
        holds.append("question_hold")
    if state.tasks.unknown_questions and state.wider_hold():
        holds.append("wider_hold")
    if "*" in state.actions.paused or task_id in state.actions.paused:
        holds.append("scope_paused")
    if any(state.tasks.by_id[dependency].state != "completed" for dependency in task.depends_on):
        holds.append("task_held")
    return tuple(holds)
