"""`decide`: given the state and one input, the events it causes, or a rejection.

Pure: no I/O, no clock (time is the input's `at`), no mutation of the state.
Checks run in the spec's order (section 1): idempotency, `not_authorized`,
then the kind's checks in the order spec/TRACE.md lists them; the first that
fails is the reason. A rejection raises `Rejected` before any event is made,
so a refused input changes nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import msgspec
from msgspec import UNSET

from tandem.domain import alerts, consumer, update
from tandem.domain import conversation as conversation_rules
from tandem.domain import events as ev
from tandem.domain import inputs as inp
from tandem.domain.inputs import given
from tandem.domain.authority import narrow_operations, narrow_roots, normalise_path, path_allowed
from tandem.domain.lifecycles import ACTION, ATTEMPT, IN_FLIGHT, QUESTION, TASK
from tandem.domain.reasons import Rejected
from tandem.domain.state import USAGE_FIELDS, Action, Grant, State


def record(state: State, value: inp.Input, seq: int, file: str | None, line: int | None) -> list[ev.Event]:
    """The events one input causes, its own record first. Never raises Rejected."""
    try:
        events = decide(state, value, seq)
    except Rejected as rejection:
        return [
            ev.InputRejected(
                seq=seq, file=file, line=line, input=value, reason=rejection.reason, detail=rejection.detail
            ),
            *rejection.consequences,
        ]
    return [ev.InputAccepted(seq=seq, file=file, line=line, input=value), *events]


def decide(state: State, value: inp.Input, seq: int) -> list[ev.Event]:
    if value.id is not None:
        known = state.idempotency.get(value.id)
        if known is not None:
            if known == hashlib.sha256(inp.canonical_body(value)).digest():
                raise Rejected("duplicate_input", f"input id {value.id!r} was already recorded")
            raise Rejected("idempotency_conflict", f"input id {value.id!r} was recorded with another body")
    accepted = inp.accepted_actors(value.input_type)
    if value.sender not in accepted:
        raise Rejected("not_authorized", f"{value.input_type} accepts {', '.join(accepted)}, not {value.sender}")
    return DECIDERS[type(value)](state, value, seq)


# ------------------------------------------------------------------ helpers


def _task(state: State, task_id: str):
    task = state.tasks.get(task_id)
    if task is None:
        raise Rejected("unknown_task", f"no task {task_id!r}")
    return task


def _grant(state: State, grant_id: str) -> Grant:
    grant = state.grants.get(grant_id)
    if grant is None:
        raise Rejected("unknown_grant", f"no grant {grant_id!r}")
    return grant


def _action(state: State, operation_id: str) -> Action:
    action = state.actions.get(operation_id)
    if action is None:
        raise Rejected("unknown_operation", f"no operation {operation_id!r}")
    return action


def _conversation(state: State, conversation_id: str, role: str | None = None):
    conversation = state.conversations.get(conversation_id)
    if conversation is None or (role is not None and conversation.role != role):
        what = f"{role} conversation" if role else "conversation"
        raise Rejected("unknown_conversation", f"no {what} {conversation_id!r}")
    return conversation


def _narrow(state: State, request_ops: list[str], request_roots: list[str]):
    operations, dropped_operations = narrow_operations(request_ops, state.policy.operations)
    roots, dropped_roots = narrow_roots(request_roots, state.policy.roots)
    if not operations or not roots:
        missing = "operation" if not operations else "write root"
        raise Rejected("grant_outside_policy", f"no requested {missing} survives the policy (revision {state.policy.revision})")
    return operations, roots, dropped_operations, dropped_roots


def _allows(state: State, action: Action, operations: tuple[str, ...], roots: tuple[str, ...]) -> bool:
    """Does the effective authority (grant ∩ policy) still allow this action?"""
    return _disallowed(action, operations, roots, state.policy.operations, state.policy.roots) is None


def _disallowed(
    action: Action,
    operations: tuple[str, ...] | frozenset[str],
    roots: tuple[str, ...],
    policy_operations: frozenset[str],
    policy_roots: tuple[str, ...],
) -> str | None:
    """Why the effective authority (grant ∩ policy) no longer allows this
    action, or None if it does (recorded with a fence, spec section 8)."""
    if action.operation not in operations:
        return f"operation {action.operation} is not granted"
    if action.operation not in policy_operations:
        return f"operation {action.operation} is not allowed by the policy"
    for path in action.write_paths:
        if not path_allowed(path, roots, policy_roots):
            return f"write path {path} is outside the write roots"
    return None


# ------------------------------------------------------- 3.1 configuration


def _configure(state: State, value: inp.ConfigureEngine, seq: int) -> list[ev.Event]:
    if not state.configurable:
        raise Rejected("too_late", "engine.configure is accepted only before any other input")
    settings = {
        name: getattr(state.config, name) if getattr(value, name) is UNSET else getattr(value, name)
        for name in ("watchdog_max_age_s", "fallback_after_s", "question_resurface_s", "wake_batch_max")
    }
    return [ev.EngineConfigured(cause=seq, **settings)]


def _set_policy(state: State, value: inp.SetPolicy, seq: int) -> list[ev.Event]:
    operations = list(dict.fromkeys(value.allowed_operations))
    roots: list[str] = []
    for root in value.write_roots:
        normalised = normalise_path(root)
        if normalised is not None and normalised not in roots:
            roots.append(normalised)
    policy_ops, policy_roots = frozenset(operations), tuple(roots)
    fenced: list[str] = []
    restamped: list[str] = []
    because: dict[str, str] = {}
    for operation_id in sorted(state.pending | state.fenced, key=lambda op: state.actions[op].order):
        action = state.actions[operation_id]
        grant = state.grants[action.grant_id]
        reason = _disallowed(action, grant.operations, grant.roots, policy_ops, policy_roots)
        if reason is None:
            restamped.append(operation_id)
        else:
            fenced.append(operation_id)
            because[operation_id] = reason
    fenced = [op for op in fenced if state.actions[op].state == "pending"]
    return [
        ev.PolicySet(
            cause=seq,
            revision=state.policy.revision + 1,
            allowed_operations=operations,
            write_roots=roots,
            fenced=fenced,
            restamped=restamped,
            fenced_because={op: because[op] for op in fenced},
        )
    ]


def _issue_grant(
    state: State, seq: int, request: inp.GrantRequest, task_id: str | None, rule_id: str | None
) -> ev.GrantIssued:
    operations, roots, dropped_operations, dropped_roots = _narrow(state, request.allowed_operations, request.write_roots)
    return ev.GrantIssued(
        cause=seq,
        grant_id=request.grant_id,
        revision=1,
        task_id=task_id,
        rule_id=rule_id,
        allowed_operations=operations,
        write_roots=roots,
        max_attempts=request.max_attempts,
        token_limit=request.token_limit,
        policy_revision=state.policy.revision,
        dropped_operations=dropped_operations,
        dropped_roots=dropped_roots,
    )


def _revise_grant_events(
    state: State,
    seq: int,
    grant: Grant,
    operations_request: list[str],
    roots_request: list[str],
    max_attempts: int,
    token_limit: int | None,
) -> list[ev.Event]:
    # "Narrowed like delegation": the whole grant, named parts and kept ones,
    # is narrowed to the policy in force, which the event records.
    operations, roots, dropped_operations, dropped_roots = _narrow(state, operations_request, roots_request)
    fenced: list[str] = []
    restamped: list[str] = []
    because: dict[str, str] = {}
    operation_set, root_tuple = tuple(operations), tuple(roots)
    for operation_id in state.pending_of_grant(grant.grant_id):
        action = state.actions[operation_id]
        reason = _disallowed(action, operation_set, root_tuple, state.policy.operations, state.policy.roots)
        if reason is None:
            restamped.append(operation_id)
        else:
            fenced.append(operation_id)
            because[operation_id] = reason
    return [
        ev.GrantRevised(
            cause=seq,
            grant_id=grant.grant_id,
            revision=grant.revision + 1,
            allowed_operations=operations,
            write_roots=roots,
            max_attempts=max_attempts,
            token_limit=token_limit,
            policy_revision=state.policy.revision,
            dropped_operations=dropped_operations,
            dropped_roots=dropped_roots,
            fenced=fenced,
            restamped=restamped,
            fenced_because=because,
        )
    ]


def _set_rule(state: State, value: inp.SetRule, seq: int) -> list[ev.Event]:
    request = value.grant
    current = state.rules.get(value.rule_id)
    if current is None:
        if request.grant_id in state.grants:
            raise Rejected("already_exists", f"grant {request.grant_id!r} already exists")
        grant_event = _issue_grant(state, seq, request, None, value.rule_id)
        return [grant_event, ev.RuleSet(cause=seq, rule_id=value.rule_id, grant_id=request.grant_id)]
    if current != request.grant_id:
        raise Rejected("already_exists", f"rule {value.rule_id!r} already holds grant {current!r}")
    grant = state.grants[current]
    return _revise_grant_events(
        state, seq, grant, request.allowed_operations, request.write_roots, request.max_attempts, request.token_limit
    )


# ------------------------------------------------- 3.2 tasks, grants, questions


def _delegate(state: State, value: inp.DelegateTask, seq: int) -> list[ev.Event]:
    conversation = _conversation(state, value.conversation_id)
    depends_on = list(dict.fromkeys(given(value.depends_on) or []))
    for dependency in depends_on:
        _task(state, dependency)
    grant_event = _issue_grant(state, seq, value.grant, value.task_id, None)
    if value.task_id in state.tasks:
        raise Rejected("already_exists", f"task {value.task_id!r} already exists")
    if value.grant.grant_id in state.grants:
        raise Rejected("already_exists", f"grant {value.grant.grant_id!r} already exists")
    return [
        grant_event,
        ev.TaskDelegated(
            cause=seq,
            task_id=value.task_id,
            conversation_id=conversation.conversation_id,
            message_refs=list(value.message_refs),
            goal=value.goal,
            done_when=list(value.done_when),
            constraints=given(value.constraints) or {},
            fallback_decisions=given(value.fallback_decisions) or {},
            depends_on=depends_on,
            grant_id=value.grant.grant_id,
        ),
    ]


def _revise_task(state: State, value: inp.ReviseTask, seq: int) -> list[ev.Event]:
    task = _task(state, value.task_id)
    if value.expected_revision != task.revision:
        raise Rejected("stale_revision", f"task {task.task_id!r} is at revision {task.revision}, not {value.expected_revision}")
    if not TASK.allows(task.state, "revise"):
        raise Rejected("task_not_active", f"task {task.task_id!r} is {task.state}")
    return [
        ev.TaskRevised(
            cause=seq,
            task_id=task.task_id,
            revision=task.revision + 1,
            goal=value.goal if value.goal is not UNSET else task.goal,
            done_when=list(value.done_when) if value.done_when is not UNSET else task.done_when,
            constraints=value.constraints if value.constraints is not UNSET else task.constraints,
            fallback_decisions=value.fallback_decisions if value.fallback_decisions is not UNSET else task.fallback_decisions,
            fenced=state.pending_of_task(task.task_id),
        )
    ]


def _revise_grant(state: State, value: inp.ReviseGrant, seq: int) -> list[ev.Event]:
    grant = _grant(state, value.grant_id)
    if value.expected_revision != grant.revision:
        raise Rejected("stale_revision", f"grant {grant.grant_id!r} is at revision {grant.revision}, not {value.expected_revision}")
    if grant.state != "live":
        raise Rejected("task_not_active", f"grant {grant.grant_id!r} was revoked with its task")
    return _revise_grant_events(
        state,
        seq,
        grant,
        value.allowed_operations if value.allowed_operations is not UNSET else list(grant.operations),
        value.write_roots if value.write_roots is not UNSET else list(grant.roots),
        value.max_attempts if value.max_attempts is not UNSET else grant.max_attempts,
        value.token_limit if value.token_limit is not UNSET else grant.token_limit,
    )


def _cancel_task(state: State, value: inp.CancelTask, seq: int) -> list[ev.Event]:
    task = _task(state, value.task_id)
    if not TASK.allows(task.state, "cancel"):
        raise Rejected("task_not_active", f"task {task.task_id!r} is {task.state}")
    events: list[ev.Event] = [ev.TaskCancelled(cause=seq, task_id=task.task_id), ev.GrantRevoked(cause=seq, grant_id=task.grant_id)]
    for operation_id in task.actions:
        state_now = state.actions[operation_id].state
        if ACTION.allows(state_now, "cancel"):
            events.append(ev.ActionCancelled(cause=seq, operation_id=operation_id))
        elif ACTION.allows(state_now, "request_cancel"):
            events.append(ev.ActionCancelRequested(cause=seq, operation_id=operation_id, reason="task_cancelled"))
    return events


def _complete_task(state: State, value: inp.CompleteTask, seq: int) -> list[ev.Event]:
    task = _task(state, value.task_id)
    if not TASK.allows(task.state, "complete"):
        raise Rejected("task_not_active", f"task {task.task_id!r} is {task.state}")
    outstanding = [op for op in task.actions if not state.actions[op].terminal]
    if outstanding:
        raise Rejected("work_outstanding", f"actions not terminal: {', '.join(outstanding)}")
    if not any(state.actions[op].state == "succeeded" for op in task.actions):
        raise Rejected("unverified", f"no action of task {task.task_id!r} succeeded")
    return [
        ev.TaskCompleted(cause=seq, task_id=task.task_id, evidence_refs=list(value.evidence_refs)),
        ev.GrantRevoked(cause=seq, grant_id=task.grant_id),
    ]


def _raise_question(state: State, value: inp.RaiseQuestion, seq: int) -> list[ev.Event]:
    task = _task(state, value.task_id)
    if task.state != "active":
        raise Rejected("task_not_active", f"task {task.task_id!r} is {task.state}")
    existing = state.questions.get((value.task_id, value.question_key))
    affected = list(dict.fromkeys(value.affected)) if isinstance(value.affected, list) else value.affected
    if existing is None:
        first_seen_at, times_raised, reopened = value.at, 1, False
    else:
        if existing.state == "answered" and value.evidence_revision <= existing.evidence_revision:
            raise Rejected(
                "stale_revision",
                f"question {value.question_key!r} was answered at evidence revision {existing.evidence_revision}",
            )
        event_name = "raise_again" if existing.state == "open" else "reopen"
        assert QUESTION.allows(existing.state, event_name)
        first_seen_at, times_raised, reopened = existing.first_seen_at, existing.times_raised + 1, existing.state == "answered"
    return [
        ev.QuestionRaised(
            cause=seq,
            task_id=value.task_id,
            question_key=value.question_key,
            recipient=value.recipient,
            blocking_reason=value.blocking_reason,
            affected=affected,
            evidence_revision=value.evidence_revision,
            times_raised=times_raised,
            first_seen_at=first_seen_at,
            reopened=reopened,
        )
    ]


def _answer_question(state: State, value: inp.AnswerQuestion, seq: int) -> list[ev.Event]:
    task = _task(state, value.task_id)
    question = state.questions.get((value.task_id, value.question_key))
    if question is None:
        raise Rejected("unknown_question", f"no question {value.question_key!r} on task {value.task_id!r}")
    if not QUESTION.allows(question.state, "answer"):
        raise Rejected("not_open", f"question {value.question_key!r} is {question.state}")
    return [
        ev.QuestionAnswered(cause=seq, task_id=task.task_id, question_key=value.question_key, answer=value.answer),
        ev.TaskRevised(
            cause=seq,
            task_id=task.task_id,
            revision=task.revision + 1,
            goal=task.goal,
            done_when=task.done_when,
            constraints=task.constraints,
            fallback_decisions={**task.fallback_decisions, value.question_key: value.answer},
            fenced=state.pending_of_task(task.task_id),
        ),
    ]


# ----------------------------------------------------------- 3.3 actions


def _check_generation(state: State, value: Any, task_id: str | None) -> None:
    if value.sender != "background":
        return
    conversation = state.conversations[state.tasks[task_id].conversation_id] if task_id else None
    bound = conversation.generation if conversation is not None else None
    if bound is None or value.generation != bound:
        raise Rejected("generation_fenced", f"generation {value.generation} is not the bound generation ({bound})")


def _check_authority(state: State, operation: str, write_paths: list[str], grant: Grant) -> None:
    if operation not in grant.operations or operation not in state.policy.operations:
        raise Rejected("operation_not_granted", f"grant {grant.grant_id!r} does not allow {operation!r}")
    for path in write_paths:
        if not path_allowed(path, grant.roots, state.policy.roots):
            raise Rejected("write_outside_roots", f"{path!r} is outside the roots of grant {grant.grant_id!r}")


def _check_revisions(state: State, revisions: inp.InputRevisions, grant: Grant, task_id: str | None) -> None:
    if revisions.grant != grant.revision:
        raise Rejected("stale_revision", f"grant {grant.grant_id!r} is at revision {grant.revision}, not {revisions.grant}")
    if task_id is None:
        return
    task = state.tasks[task_id]
    if revisions.task is not UNSET and revisions.task != task.revision:
        raise Rejected("stale_revision", f"task {task_id!r} is at revision {task.revision}, not {revisions.task}")
    if revisions.intent is not UNSET:
        intent = state.conversations[task.conversation_id].intent_revision
        if revisions.intent != intent:
            raise Rejected("stale_revision", f"intent is at revision {intent}, not {revisions.intent}")


def _revisions(state: State, revisions: inp.InputRevisions, grant: Grant, task_id: str | None) -> ev.Revisions:
    """What the action was validated under (given or not, the current ones)."""
    if task_id is None:
        return ev.Revisions(task=None, grant=grant.revision, intent=None)
    task = state.tasks[task_id]
    return ev.Revisions(
        task=task.revision, grant=grant.revision, intent=state.conversations[task.conversation_id].intent_revision
    )


def _propose(state: State, value: inp.ProposeAction, seq: int) -> list[ev.Event]:
    task_id = given(value.task_id)
    rule_id = given(value.rule_id)
    task = _task(state, task_id) if task_id is not None else None
    grant = _grant(state, value.grant_id)
    for prerequisite in value.prerequisites:
        _action(state, prerequisite.operation_id)
    if value.operation_id in state.actions:
        raise Rejected("already_exists", f"operation {value.operation_id!r} already exists")
    # grant_scope: task grants serve their own task; a rule grant serves only
    # its rule's proposals from the daemon (models cannot claim that exception).
    if rule_id is not None:
        if value.sender != "daemon" or grant.rule_id != rule_id:
            raise Rejected("grant_scope", f"grant {grant.grant_id!r} does not serve rule {rule_id!r} from {value.sender}")
    elif grant.task_id != task_id:
        raise Rejected("grant_scope", f"grant {grant.grant_id!r} is not scoped to task {task_id!r}")
    _check_generation(state, value, task_id)
    if task is not None and task.state != "active":
        raise Rejected("task_not_active", f"task {task.task_id!r} is {task.state}")
    _check_authority(state, value.operation, value.write_paths, grant)
    _check_revisions(state, value.input_revisions, grant, task_id)
    _check_duplicate_cause(state, value.cause_key)
    return [
        ev.ActionProposed(
            cause=seq,
            operation_id=value.operation_id,
            cause_key=value.cause_key,
            operation=value.operation,
            target=value.target,
            resource=value.resource,
            write_paths=list(value.write_paths),
            task_id=task_id,
            rule_id=rule_id,
            grant_id=grant.grant_id,
            prerequisites=[
                ev.PrerequisiteSpec(
                    operation_id=p.operation_id, outcome=p.outcome, artifact_revision=given(p.artifact_revision)
                )
                for p in value.prerequisites
            ],
            input_revisions=_revisions(state, value.input_revisions, grant, task_id),
            unattended=value.unattended,
            proposed_by=value.sender,
            generation=given(value.generation),
            cause_revision=state.update_revision(value.cause_key),
        )
    ]


def _check_duplicate_cause(state: State, cause_key: str) -> None:
    for operation_id in state.actions_by_cause.get(cause_key, ()):
        other = state.actions[operation_id]
        if not other.terminal:
            raise Rejected("duplicate_cause", f"{operation_id!r} is {other.state} for cause {cause_key!r}")
        if other.state == "succeeded" and state.update_revision(cause_key) <= other.cause_revision:
            raise Rejected("duplicate_cause", f"{operation_id!r} already succeeded for this revision of {cause_key!r}")


def _revalidate(state: State, value: inp.RevalidateAction, seq: int) -> list[ev.Event]:
    action = _action(state, value.operation_id)
    if not ACTION.allows(action.state, "revalidate"):
        raise Rejected("not_fenced", f"{action.operation_id!r} is {action.state}")
    if value.sender == "background" and action.task_id is None:
        raise Rejected("grant_scope", f"{action.operation_id!r} is a rule action: only the daemon's rule may use its grant")
    _check_generation(state, value, action.task_id)
    if action.task_id is not None and state.tasks[action.task_id].state != "active":
        raise Rejected("task_not_active", f"task {action.task_id!r} is {state.tasks[action.task_id].state}")
    grant = state.grants[action.grant_id]
    _check_authority(state, action.operation, action.write_paths, grant)
    _check_revisions(state, value.input_revisions, grant, action.task_id)
    return [
        ev.ActionRevalidated(
            cause=seq,
            operation_id=action.operation_id,
            input_revisions=_revisions(state, value.input_revisions, grant, action.task_id),
        )
    ]


def _cancel_action(state: State, value: inp.CancelAction, seq: int) -> list[ev.Event]:
    action = _action(state, value.operation_id)
    if ACTION.allows(action.state, "cancel"):
        return [ev.ActionCancelled(cause=seq, operation_id=action.operation_id)]
    if ACTION.allows(action.state, "request_cancel"):
        return [ev.ActionCancelRequested(cause=seq, operation_id=action.operation_id, reason="human")]
    raise Rejected("not_cancellable", f"{action.operation_id!r} is {action.state}")


def _latest_attempt(action: Action, attempt_id: str):
    if not action.attempts or action.attempts[-1].attempt_id != attempt_id:
        raise Rejected("stale_attempt", f"{attempt_id!r} is not the latest attempt of {action.operation_id!r}")
    return action.attempts[-1]


# attempt event -> action event, for each receipt/reconcile result
_RECEIPT_EVENTS = {
    "queued": ("receipt_queued", "queue"),
    "accepted": ("receipt_accepted", "accept"),
    "unknown": ("receipt_unknown", "lose_track"),
    "refused": ("receipt_refused", "refuse"),
}
_RECONCILE_EVENTS = {
    "accepted": ("reconcile_accepted", "accept"),
    "not_received": ("reconcile_not_received", "refuse"),
}


def _attempt_transition(
    state: State, seq: int, action: Action, attempt_id: str, attempt_event: str, action_event: str
) -> list[ev.Event]:
    attempt = _latest_attempt(action, attempt_id)
    attempt_state = ATTEMPT.target(attempt.state, attempt_event)
    if attempt_state is None:
        raise Rejected("stale_attempt", f"{attempt_id!r} is {attempt.state}")
    restamped = None
    refusal = None
    if action_event == "refuse" and action.state != "cancel_requested":
        if len(action.attempts) >= state.grants[action.grant_id].max_attempts:
            action_event, reason = "exhaust", "max_attempts"
        else:
            action_event, restamped, reason = _back_to_pending(state, action)
        refusal = _refusal_facts(state, action, reason)
    action_state = ACTION.target(action.state, action_event)
    assert action_state is not None, (action.state, action_event)
    return [
        ev.AttemptUpdated(
            cause=seq,
            operation_id=action.operation_id,
            attempt_id=attempt_id,
            attempt_state=attempt_state,
            action_state=action_state,
            restamped=restamped,
            refusal=refusal,
        )
    ]


def _back_to_pending(state: State, action: Action) -> tuple[str, ev.Revisions | None, str]:
    """A refused action goes back to pending only under current authority: if
    its task was revised, or its grant or the policy no longer allows it,
    while the attempt was out, it is fenced (revalidate to go on)."""
    grant = state.grants[action.grant_id]
    if action.task_id is not None and action.revisions.task != state.tasks[action.task_id].revision:
        return "refuse_stale", None, "task_revised"
    if not _allows(state, action, grant.operations, grant.roots):
        return "refuse_stale", None, "authority_narrowed"
    if action.revisions.grant != grant.revision:
        return "refuse", msgspec.structs.replace(action.revisions, grant=grant.revision), "retry"
    return "refuse", None, "retry"


def _refusal_facts(state: State, action: Action, reason: str) -> ev.RefusalFacts:
    task = state.tasks[action.task_id] if action.task_id is not None else None
    grant = state.grants[action.grant_id]
    return ev.RefusalFacts(
        reason=reason,
        attempts=len(action.attempts),
        max_attempts=grant.max_attempts,
        task_revision=task.revision if task is not None else None,
        validated_task_revision=action.revisions.task,
        grant_revision=grant.revision,
        policy_revision=state.policy.revision,
    )


def _receipt(state: State, value: inp.ExecutorReceipt, seq: int) -> list[ev.Event]:
    action = _action(state, value.operation_id)
    attempt_event, action_event = _RECEIPT_EVENTS[value.result]
    return _attempt_transition(state, seq, action, value.attempt_id, attempt_event, action_event)


def _reconcile(state: State, value: inp.ExecutorReconcile, seq: int) -> list[ev.Event]:
    action = _action(state, value.operation_id)
    attempt_event, action_event = _RECONCILE_EVENTS[value.observed]
    return _attempt_transition(state, seq, action, value.attempt_id, attempt_event, action_event)


_OUTCOME_EVENTS = {"succeeded": "succeed", "failed": "fail", "cancelled": "confirm_cancel"}


def _outcome(state: State, value: inp.ExecutorOutcome, seq: int) -> list[ev.Event]:
    action = _action(state, value.operation_id)
    action_state = ACTION.target(action.state, _OUTCOME_EVENTS[value.outcome])
    if action_state is None:
        raise Rejected("stale_attempt", f"{action.operation_id!r} is {action.state}: no outcome {value.outcome!r} expected")
    attempt = action.attempts[-1] if action.attempts else None
    attempt_state = None
    if attempt is not None:
        attempt_state = ATTEMPT.target(attempt.state, "observe_outcome") or attempt.state
    return [
        ev.ActionOutcomeReported(
            cause=seq,
            operation_id=action.operation_id,
            outcome=value.outcome,
            artifact_revision=given(value.artifact_revision),
            evidence_ref=given(value.evidence_ref),
            attempt_id=attempt.attempt_id if attempt else None,
            attempt_state=attempt_state,
            action_state=action_state,
        ),
        *update.outcome_update_events(state, action, value.outcome, seq, value.at),
    ]


def _usage(state: State, value: inp.ReportUsage, seq: int) -> list[ev.Event]:
    grant_id = None
    grant_usage = None
    events: list[ev.Event] = []
    if value.operation_id is not UNSET:
        action = _action(state, value.operation_id)
        role, conversation_id, operation_id = "workers", None, action.operation_id
        grant = state.grants[action.grant_id]
        grant_id = grant.grant_id
        grant_usage = grant.usage + (given(value.input_tokens) or 0) + (given(value.output_tokens) or 0)
        if grant.token_limit is not None and grant.usage < grant.token_limit <= grant_usage:
            events.append(
                ev.BudgetExhausted(
                    cause=seq,
                    grant_id=grant_id,
                    usage=grant_usage,
                    token_limit=grant.token_limit,
                    operation_id=action.operation_id,
                )
            )
            if action.state in IN_FLIGHT and ACTION.allows(action.state, "request_cancel"):
                events.append(
                    ev.ActionCancelRequested(cause=seq, operation_id=action.operation_id, reason="budget_exhausted")
                )
    else:
        conversation = _conversation(state, value.conversation_id)
        role, conversation_id, operation_id = conversation.role, conversation.conversation_id, None
    report = ev.UsageReported(
        cause=seq,
        role=role,
        conversation_id=conversation_id,
        operation_id=operation_id,
        grant_id=grant_id,
        context_tokens=given(value.context_tokens),
        grant_usage=grant_usage,
        **{name: given(getattr(value, name)) for name in USAGE_FIELDS},
    )
    return [report, *events]


# ------------------------------------------------------------- health, scope


def _heartbeat(state: State, value: inp.Heartbeat, seq: int) -> list[ev.Event]:
    if state.heartbeat_generation is not None and value.generation < state.heartbeat_generation:
        raise Rejected("stale_generation", f"generation {value.generation} is below {state.heartbeat_generation}")
    return [ev.HeartbeatRecorded(cause=seq, generation=value.generation, at=value.at)]


def _scope_target(state: State, scope: str) -> None:
    if scope != "*":
        _task(state, scope)


def _pause(state: State, value: inp.PauseScope, seq: int) -> list[ev.Event]:
    _scope_target(state, value.scope)
    return [] if value.scope in state.paused else [ev.ScopePaused(cause=seq, scope=value.scope)]


def _resume(state: State, value: inp.ResumeScope, seq: int) -> list[ev.Event]:
    _scope_target(state, value.scope)
    return [ev.ScopeResumed(cause=seq, scope=value.scope)] if value.scope in state.paused else []


def _tick(state: State, value: inp.Tick, seq: int) -> list[ev.Event]:
    return []


# ------------------------------------------------------------- conversations


def _open_conversation(state: State, value: inp.OpenConversation, seq: int) -> list[ev.Event]:
    if value.conversation_id in state.conversations:
        raise Rejected("already_exists", f"conversation {value.conversation_id!r} already exists")
    foreground_id = given(value.foreground_id)
    if foreground_id is not None:
        _conversation(state, foreground_id, "foreground")
    return [
        ev.ConversationOpened(
            cause=seq,
            conversation_id=value.conversation_id,
            role=value.role,
            context_limit=value.context_limit,
            reserve=value.reserve,
            steer=value.steer,
            foreground_id=foreground_id,
        )
    ]


def _bind(state: State, value: inp.BindBackground, seq: int) -> list[ev.Event]:
    _conversation(state, value.conversation_id, "background")
    foreground = _conversation(state, value.foreground_id, "foreground")
    if foreground.generation is not None and value.generation <= foreground.generation:
        raise Rejected("stale_generation", f"generation {value.generation} does not exceed {foreground.generation}")
    return [
        ev.BackgroundBound(
            cause=seq, conversation_id=value.conversation_id, foreground_id=value.foreground_id, generation=value.generation
        )
    ]


def _human_message(state: State, value: inp.HumanMessage, seq: int) -> list[ev.Event]:
    conversation = _conversation(state, value.conversation_id, "foreground")
    if value.message_id in conversation.messages:
        raise Rejected("already_exists", f"message {value.message_id!r} already exists")
    return [
        ev.MessageQueued(
            cause=seq,
            conversation_id=conversation.conversation_id,
            message_id=value.message_id,
            text=value.text,
            tokens=given(value.tokens),
            intent_revision=conversation.intent_revision + 1,
        )
    ]


def _queue_edit(state: State, value: inp.EditQueue, seq: int) -> list[ev.Event]:
    conversation = _conversation(state, value.conversation_id, "foreground")
    message = conversation.messages.get(value.message_id)
    if message is None or message.state != "queued":
        state_text = message.state if message else "not in this conversation"
        raise Rejected("already_dispatched", f"message {value.message_id!r} is {state_text}")
    events: list[ev.Event] = [
        ev.QueueEdited(
            cause=seq,
            conversation_id=conversation.conversation_id,
            message_id=value.message_id,
            op=value.op,
            text=given(value.text),
            intent_revision=conversation.intent_revision + 1,
        )
    ]
    if conversation.recovery == "message":
        # The message that did not fit was edited or withdrawn: try again.
        events.append(ev.RecoveryChanged(cause=seq, conversation_id=conversation.conversation_id, recovery=None))
    return events


def _intent_synced(state: State, value: inp.SyncIntent, seq: int) -> list[ev.Event]:
    conversation = _conversation(state, value.conversation_id, "foreground")
    if conversation.generation is None or value.generation != conversation.generation:
        raise Rejected(
            "generation_fenced", f"generation {value.generation} is not the bound generation ({conversation.generation})"
        )
    if value.intent_revision > conversation.intent_revision:
        raise Rejected("stale_revision", f"intent is at revision {conversation.intent_revision}, not {value.intent_revision}")
    if value.intent_revision <= conversation.synced_intent_revision:
        return []  # never lowers it
    return [ev.IntentSynced(cause=seq, conversation_id=conversation.conversation_id, synced_revision=value.intent_revision)]


DECIDERS: dict[type, Callable[[State, Any, int], list[ev.Event]]] = {
    inp.ProviderReceipt: conversation_rules.decide_provider_receipt,
    inp.ProviderReconcile: conversation_rules.decide_provider_reconcile,
    inp.EndTurn: conversation_rules.decide_turn_ended,
    inp.ResetContext: conversation_rules.decide_context_reset,
    inp.RequireApproval: conversation_rules.decide_approval_required,
    inp.ResolveApproval: conversation_rules.decide_approval_resolved,
    inp.HoldFailure: conversation_rules.decide_hold_failure,
    inp.ReleaseHold: conversation_rules.decide_hold_release,
    inp.Observe: update.decide_observe,
    inp.ClassifyTriage: update.decide_triage,
    inp.ProposeCard: update.decide_card,
    inp.LogBatch: consumer.decide_batch,
    inp.LogPruned: consumer.decide_pruned,
    inp.LogReconcile: consumer.decide_reconcile,
    inp.ConfigureEngine: _configure,
    inp.SetPolicy: _set_policy,
    inp.SetRule: _set_rule,
    inp.DelegateTask: _delegate,
    inp.ReviseTask: _revise_task,
    inp.ReviseGrant: _revise_grant,
    inp.CancelTask: _cancel_task,
    inp.CompleteTask: _complete_task,
    inp.RaiseQuestion: _raise_question,
    inp.AnswerQuestion: _answer_question,
    inp.ProposeAction: _propose,
    inp.RevalidateAction: _revalidate,
    inp.CancelAction: _cancel_action,
    inp.ExecutorReceipt: _receipt,
    inp.ExecutorReconcile: _reconcile,
    inp.ExecutorOutcome: _outcome,
    inp.ReportUsage: _usage,
    inp.Heartbeat: _heartbeat,
    inp.PauseScope: _pause,
    inp.ResumeScope: _resume,
    inp.Tick: _tick,
    inp.RaiseIncident: alerts.decide_incident,
    inp.RecoverIncident: alerts.decide_recovered,
    inp.StopDaemon: alerts.decide_daemon_stop,
    inp.StartDaemon: alerts.decide_daemon_start,
    inp.SeeAlert: alerts.decide_alert_seen,
    inp.ResolveAlert: alerts.decide_alert_resolve,
    inp.OpenConversation: _open_conversation,
    inp.BindBackground: _bind,
    inp.HumanMessage: _human_message,
    inp.EditQueue: _queue_edit,
    inp.SyncIntent: _intent_synced,
}
assert set(DECIDERS) == set(inp.AnyInput.__args__), "every input kind needs a decider"  # type: ignore[attr-defined]
