"""Provenance (contract section 8): the facts behind a block or a hold.

The pass decides these codes, so their facts are the pass's: a module of
its own beside domain/dispatch.py, which decides *whether* a code applies
(`blockers`, on every pass for the actions an input touched: the hot path).
When the codes of an action or the holds of a task change, and only then, the
pass asks this module *why* each code applies, and records the answer in the event
(`ActionBlocked.facts`, `TaskHoldsChanged.facts`). The answer names what it
relied on by key — prerequisite operations, questions `(task_id,
question_key)`, the paused scope, the tasks depended on, the intent revisions,
the last heartbeat, the operations holding the resource, the open approvals,
the grant's usage — so `tandem explain` can follow each key to the event, and
so the input, that established it.

Everything here reads the state after the pass's claims, as `blockers` does,
and iterates sets in a sorted order: the same trace gives the same facts.
"""

from __future__ import annotations

from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain.actions.foreman import owner_fact
from tandem.domain.records import Action
from tandem.domain.state import State, reachable



def block_facts(state: State, action: Action, codes: tuple[str, ...]) -> list[ev.BlockFact]:
    """One fact per code of `codes` (the action's blocked_by), same order."""
    return [_ACTION_FACTS[code](state, action) for code in codes]


def hold_facts(state: State, task_id: str, holds: tuple[str, ...]) -> list[ev.BlockFact]:
    """One fact per task-level hold of `holds`, same order."""
    return [_TASK_FACTS[code](state, task_id) for code in holds]


# -------------------------------------------------------------- prerequisites


def _prerequisite_fact(state: State, prerequisite: ev.PrerequisiteSpec) -> ev.PrerequisiteFact:
    other = state.actions.by_id[prerequisite.operation_id]
    evidence = prerequisite.evidence_required is True  # contract v1.2 section 2.5: what it still lacks
    return ev.PrerequisiteFact(
        operation_id=other.operation_id,
        state=other.state,
        artifact_revision=other.artifact_revision,
        required_artifact_revision=prerequisite.artifact_revision,
        evidence_required=True if evidence else UNSET,
        evidence_refs=list(other.evidence_refs) if evidence else UNSET,
    )


def prerequisite_facts(state: State, action: Action) -> list[ev.PrerequisiteFact]:
    """Every prerequisite of the action as it is now (what a claim relied on)."""
    return [_prerequisite_fact(state, p) for p in action.prerequisites]


def _prerequisites_with(state: State, action: Action, status: str) -> list[ev.PrerequisiteFact]:
    return [_prerequisite_fact(state, p) for p in action.prerequisites if state.prerequisite_status(p) == status]


def _prerequisites_pending(state: State, action: Action) -> ev.BlockFact:
    return ev.BlockFact(code="prerequisite_pending", prerequisites=_prerequisites_with(state, action, "pending"))


def _prerequisites_failed(state: State, action: Action) -> ev.BlockFact:
    return ev.BlockFact(code="prerequisite_failed", prerequisites=_prerequisites_with(state, action, "failed"))


# ------------------------------------------------------------------ questions


def _active_keys(state: State, keys) -> list[tuple[str, str]]:
    return sorted(key for key in keys if state.question_active(key))


def _task_question_refs(state: State, task_id: str) -> list[ev.QuestionRef]:
    """Open `"task"` questions on the task or a task it depends on, transitively."""
    refs: list[ev.QuestionRef] = []
    for current in reachable(task_id, lambda task: state.tasks.by_id[task].depends_on):
        keys = state.tasks.task_questions.get(current)
        if not keys:
            continue
        for key in _active_keys(state, ((current, question_key) for question_key in keys)):
            if current == task_id:
                refs.append(ev.QuestionRef(task_id=key[0], question_key=key[1], via="task"))
            else:
                refs.append(ev.QuestionRef(task_id=key[0], question_key=key[1], via="depends_on", through=current))
    return refs


def holding_questions(state: State, action: Action) -> list[ev.QuestionRef]:
    """The open questions behind `question_hold`: those listing the action or,
    transitively, one of its prerequisites, then the task's (section 3.2)."""
    refs: list[ev.QuestionRef] = []
    seen_keys: set[tuple[str, str]] = set()
    seen_operations: set[str] = set()
    stack = [action.operation_id]
    while stack:
        operation_id = stack.pop()
        if operation_id in seen_operations:
            continue
        seen_operations.add(operation_id)
        listed = state.tasks.question_ops.get(operation_id)
        if listed:
            for key in _active_keys(state, listed):
                if key in seen_keys:
                    continue
                seen_keys.add(key)
                if operation_id == action.operation_id:
                    refs.append(ev.QuestionRef(task_id=key[0], question_key=key[1], via="operation"))
                else:
                    refs.append(
                        ev.QuestionRef(task_id=key[0], question_key=key[1], via="prerequisite", through=operation_id)
                    )
        # Prerequisites in their listed order (reversed onto the stack).
        stack.extend(p.operation_id for p in reversed(state.actions.by_id[operation_id].prerequisites))
    if action.task_id is not None:
        for ref in _task_question_refs(state, action.task_id):
            if (ref.task_id, ref.question_key) not in seen_keys:
                seen_keys.add((ref.task_id, ref.question_key))
                refs.append(ref)
    return refs


def _wider_refs(state: State) -> list[ev.QuestionRef]:
    return [
        ev.QuestionRef(task_id=key[0], question_key=key[1], via="unknown")
        for key in _active_keys(state, state.tasks.unknown_questions)
    ]


def _question_hold(state: State, action: Action) -> ev.BlockFact:
    return ev.BlockFact(code="question_hold", questions=holding_questions(state, action))


def _wider_hold(state: State, action: Action | None = None) -> ev.BlockFact:
    return ev.BlockFact(code="wider_hold", questions=_wider_refs(state))


# ---------------------------------------------------------- scope, tasks, intent


def _paused_scope(state: State, task_id: str | None) -> ev.BlockFact:
    scope = "*" if "*" in state.actions.paused else task_id
    return ev.BlockFact(code="scope_paused", scope=scope)


def _held_tasks(state: State, task_id: str) -> ev.BlockFact:
    task = state.tasks.by_id[task_id]
    tasks = [
        ev.TaskStateFact(task_id=dependency, state=state.tasks.by_id[dependency].state)
        for dependency in task.depends_on
        if state.tasks.by_id[dependency].state != "completed"
    ]
    return ev.BlockFact(code="task_held", tasks=tasks)


def _intent_unsynced(state: State, action: Action) -> ev.BlockFact:
    assert action.task_id is not None
    conversation = state.conversation.by_id[state.tasks.by_id[action.task_id].conversation_id]
    return ev.BlockFact(
        code="intent_unsynced",
        conversation_id=conversation.conversation_id,
        intent_revision=conversation.intent_revision,
        synced_intent_revision=conversation.synced_intent_revision,
    )


# ------------------------------------------- watchdog, resource, approval, budget


def _watchdog(state: State, action: Action) -> ev.BlockFact:
    return ev.BlockFact(
        code="watchdog_unavailable",
        heartbeat_generation=state.health.heartbeat_generation,
        heartbeat_at=state.health.heartbeat_at,
        watchdog_max_age_s=state.authority.config.watchdog_max_age_s,
        host=state.health.host if state.health.host != "running" else None,
        last_resume_at=state.health.last_resume_at if state.health.host == "resuming" else None,
    )


def _resource_busy(state: State, action: Action) -> ev.BlockFact:
    holders = state.actions.in_flight_by_resource.get(action.resource, ())
    operations = sorted(holders, key=lambda operation_id: state.actions.by_id[operation_id].order)
    return ev.BlockFact(code="resource_busy", resource=action.resource, operations=operations)


def _approval_pending(state: State, action: Action) -> ev.BlockFact:
    assert action.task_id is not None
    conversation = state.conversation.by_id[state.tasks.by_id[action.task_id].conversation_id]
    approvals = [
        ev.ApprovalRef(conversation_id=conversation.conversation_id, request_id=request_id)
        for request_id in conversation.approvals
    ]
    background = state.conversation.by_id.get(conversation.background_id or "")
    if background is not None:
        approvals.extend(
            ev.ApprovalRef(conversation_id=background.conversation_id, request_id=request_id)
            for request_id in background.approvals
        )
    return ev.BlockFact(code="approval_pending", approvals=approvals)


def _budget(state: State, action: Action) -> ev.BlockFact:
    grant = state.authority.grants[action.grant_id]
    return ev.BlockFact(
        code="budget_exhausted", grant_id=grant.grant_id, usage=grant.usage, token_limit=grant.token_limit,
        **({"calls": grant.calls, "call_limit": grant.call_limit} if grant.call_limit is not None else {}),
    )  # fmt: skip


def _opted_out(state: State, action: Action) -> ev.BlockFact:
    """Contract v1.2 section 2.4: the rule's scopes, and the scope of the cause's latest (None: no observation)."""
    assert action.rule_id is not None
    latest = state.latest_observation(action.cause_key)
    return ev.BlockFact(
        code="rule_opted_out",
        rule_id=action.rule_id,
        scopes=list(state.authority.rule_scopes.get(action.rule_id, ("*",))),
        scope=latest.scope if latest is not None else None,
    )


def _retry_backoff(state: State, action: Action) -> ev.BlockFact:
    refused = sum(1 for attempt in action.attempts if attempt.state in ("refused", "not_received"))
    return ev.BlockFact(code="retry_backoff", retry_at=action.retry_at, attempts=refused)


def _runtime(state: State, action: Action) -> ev.BlockFact:
    runtime = state.tools.runtimes.get(action.runtime_id or "")
    return ev.BlockFact(
        code="runtime_not_admitted", runtime_id=action.runtime_id, runtime_state=runtime.state if runtime else None
    )


_ACTION_FACTS = {
    "prerequisite_pending": _prerequisites_pending,
    "prerequisite_failed": _prerequisites_failed,
    "question_hold": _question_hold,
    "wider_hold": _wider_hold,
    "scope_paused": lambda state, action: _paused_scope(state, action.task_id),
    "task_held": lambda state, action: _held_tasks(state, action.task_id),
    "intent_unsynced": _intent_unsynced,
    "watchdog_unavailable": _watchdog,
    "resource_busy": _resource_busy,
    "approval_pending": _approval_pending,
    "budget_exhausted": _budget,
    "rule_opted_out": _opted_out,
    "runtime_not_admitted": _runtime,
    "retry_backoff": _retry_backoff,
    "owner_active": owner_fact,
}

_TASK_FACTS = {
    "question_hold": lambda state, task_id: ev.BlockFact(
        code="question_hold", questions=_task_question_refs(state, task_id)
    ),
    "wider_hold": lambda state, task_id: _wider_hold(state),
    "scope_paused": _paused_scope,
    "task_held": _held_tasks,
}
