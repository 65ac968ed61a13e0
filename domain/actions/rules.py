"""Managed actions (contract section 3.3, 4): proposals, revalidation, cancellation, the
executor's receipts, reconciles and outcomes on an action's attempts, usage
and budgets, and the pause of a scope.

An action is proposed under a grant (task or rule), checked in the contract's
order (scope, generation, task state, authority, revisions, duplicate cause),
and then waits, pending, for the dispatch pass to claim it (domain/dispatch.py).
A claimed attempt's receipts and reconciles move the attempt and the action
along their lifecycles; a refusal goes back to pending only under current
authority (else it is fenced), and never past `max_attempts`. An outcome
revises the inbox update `outcome:{operation_id}` (the inbox area's rule).
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain import inputs as inp
from tandem.domain.actions import foreman, source_rule
from tandem.domain.authority.rules import allows, check_authority
from tandem.domain.budgets.rules import retry_at
from tandem.domain.tasks.progress import note_progress
from tandem.domain.inbox.rules import outcome_update_events
from tandem.domain.inputs import given
from tandem.domain.lifecycles import ACTION, ATTEMPT, IN_FLIGHT
from tandem.domain.lookups import known_action, known_conversation, known_grant, known_task
from tandem.domain.reasons import Rejected
from tandem.domain.records import Action, Attempt, Grant
from tandem.domain.reviews.rules import check_duplicate_batch, proposal_batch
from tandem.domain.actions.state import add_action, move_action
from tandem.domain.tasks.state import add_task_action
from tandem.domain.authority.state import add_grant_action, set_grant_usage
from tandem.domain.conversation.state import set_context_tokens
from tandem.domain.state import State
from tandem.domain.tools.rules import check_background_gates

# ------------------------------------------------------------ proposal checks


def _check_generation(state: State, value: Any, task_id: str | None) -> None:
    if value.sender != "background":
        return
    conversation = state.conversation.by_id[state.tasks.by_id[task_id].conversation_id] if task_id else None
    bound = conversation.generation if conversation is not None else None
    if bound is None or value.generation != bound:
        raise Rejected("generation_fenced", f"generation {value.generation} is not the bound generation ({bound})")


def _check_runtime(state: State, value: Any, task_id: str | None) -> None:
    """runtime_not_admitted (contract v1.2 section 1.3): the background bound to the task's conversation."""
    conversation = state.conversation.by_id[state.tasks.by_id[task_id].conversation_id] if task_id else None
    check_background_gates(state, value, [conversation.background_id if conversation is not None else None])


def _check_revisions(state: State, revisions: inp.InputRevisions, grant: Grant, task_id: str | None) -> None:
    if revisions.grant != grant.revision:
        raise Rejected("stale_revision", f"grant {grant.grant_id!r} is at revision {grant.revision}, not {revisions.grant}")
    if task_id is None:
        return
    task = state.tasks.by_id[task_id]
    if revisions.task is not UNSET and revisions.task != task.revision:
        raise Rejected("stale_revision", f"task {task_id!r} is at revision {task.revision}, not {revisions.task}")
    if revisions.intent is not UNSET:
        intent = state.conversation.by_id[task.conversation_id].intent_revision
        if revisions.intent != intent:
            raise Rejected("stale_revision", f"intent is at revision {intent}, not {revisions.intent}")


def _revisions(state: State, revisions: inp.InputRevisions, grant: Grant, task_id: str | None) -> ev.Revisions:
    """What the action was validated under (given or not, the current ones)."""
    if task_id is None:
        return ev.Revisions(task=None, grant=grant.revision, intent=None)
    task = state.tasks.by_id[task_id]
    return ev.Revisions(
        task=task.revision, grant=grant.revision, intent=state.conversation.by_id[task.conversation_id].intent_revision
    )


def _check_scope(value: inp.ProposeAction, grant: Grant, task_id: str | None, rule_id: str | None) -> None:
    """grant_scope: task grants serve their own task; a rule grant serves only
    its rule's proposals from the daemon (models cannot claim that exception)."""
    if rule_id is not None:
        if value.sender != "daemon" or grant.rule_id != rule_id:
            raise Rejected("grant_scope", f"grant {grant.grant_id!r} does not serve rule {rule_id!r} from {value.sender}")
    elif grant.task_id != task_id:
        raise Rejected("grant_scope", f"grant {grant.grant_id!r} is not scoped to task {task_id!r}")


def check_source(
    state: State, cause_key: str, source_revision: int, target_sha: str | None, moot_statuses: tuple[str, ...]
) -> None:
    """Contract v1.2 section 2.1, checks 7a-7c: the revision answered is the
    cause's current one, the latest is on the target commit and is not moot."""
    current = state.update_revision(cause_key)
    if source_revision != current:
        raise Rejected("stale_revision", f"cause {cause_key!r} is at revision {current}, not {source_revision}")
    latest = state.latest_observation(cause_key)
    if latest is None:
        return
    if latest.moved_from(target_sha):
        raise Rejected("target_moved", f"the latest of {cause_key!r} is on {latest.commit_sha}, not {target_sha}")
    if latest.moot(moot_statuses):
        why = "deleted" if latest.deleted else f"status {latest.status}"
        raise Rejected("source_resolved", f"the latest of {cause_key!r} is {why}: nothing to act on")


def _check_proposal_source(state: State, value: inp.ProposeAction, rule_id: str | None) -> None:
    """Checks 7a-7d (contract v1.2 section 2.1). 7a-7c only for a proposal
    naming a source revision (a v1 proposal names none, and meets only 7d,
    which a rule without scopes always passes)."""
    if value.source_revision is not UNSET:
        moot = tuple(value.moot_statuses) if value.moot_statuses is not UNSET else ()
        check_source(state, value.cause_key, value.source_revision, given(value.target_sha), moot)
    if not state.opted_in(rule_id, value.cause_key):
        raise Rejected("rule_opted_out", f"rule {rule_id!r} is not opted in for the scope of {value.cause_key!r}")


def _check_duplicate_cause(state: State, cause_key: str) -> None:
    for operation_id in state.actions.by_cause.get(cause_key, ()):
        other = state.actions.by_id[operation_id]
        if not other.terminal:
            raise Rejected("duplicate_cause", f"{operation_id!r} is {other.state} for cause {cause_key!r}")
        if other.state == "succeeded" and state.update_revision(cause_key) <= other.cause_revision:
            raise Rejected("duplicate_cause", f"{operation_id!r} already succeeded for this revision of {cause_key!r}")


# ----------------------------------------------------------------- deciders


def decide_proposal(state: State, value: inp.ProposeAction, seq: int) -> list[ev.Event]:
    task_id = given(value.task_id)
    rule_id = given(value.rule_id)
    task = known_task(state, task_id) if task_id is not None else None
    grant = known_grant(state, value.grant_id)
    for prerequisite in value.prerequisites:
        known_action(state, prerequisite.operation_id)
    runtime_id = given(value.runtime_id)
    if runtime_id is not None:
        runtime = state.tools.runtimes.get(runtime_id)
        if runtime is None or runtime.role != "worker":
            raise Rejected("unknown_runtime", f"no worker runtime {runtime_id!r}")
    if value.operation_id in state.actions.by_id:
        raise Rejected("already_exists", f"operation {value.operation_id!r} already exists")
    _check_scope(value, grant, task_id, rule_id)
    _check_generation(state, value, task_id)
    _check_runtime(state, value, task_id)
    if task is not None and task.state != "active":
        raise Rejected("task_not_active", f"task {task.task_id!r} is {task.state}")
    check_authority(state, value.operation, value.write_paths, grant)
    _check_revisions(state, value.input_revisions, grant, task_id)
    _check_proposal_source(state, value, rule_id)
    _check_duplicate_cause(state, value.cause_key)
    check_duplicate_batch(state, value.cause_key)
    batch_id, batch_revision = proposal_batch(state, value.cause_key)
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
                    operation_id=p.operation_id,
                    outcome=p.outcome,
                    artifact_revision=given(p.artifact_revision),
                    evidence_required=True if p.evidence_required is True else UNSET,
                )
                for p in value.prerequisites
            ],
            input_revisions=_revisions(state, value.input_revisions, grant, task_id),
            unattended=value.unattended,
            proposed_by=value.sender,
            generation=given(value.generation),
            cause_revision=state.update_revision(value.cause_key),
            source_revision=value.source_revision,
            target_sha=value.target_sha,
            moot_statuses=list(dict.fromkeys(value.moot_statuses)) if value.moot_statuses is not UNSET else UNSET,
            runtime_id=value.runtime_id,
            priority=value.priority,
            batch_id=batch_id,
            batch_revision=batch_revision,
        )
    ]


def decide_revalidation(state: State, value: inp.RevalidateAction, seq: int) -> list[ev.Event]:
    action = known_action(state, value.operation_id)
    if not ACTION.allows(action.state, "revalidate"):
        raise Rejected("not_fenced", f"{action.operation_id!r} is {action.state}")
    if value.sender == "background" and action.task_id is None:
        raise Rejected("grant_scope", f"{action.operation_id!r} is a rule action: only the daemon's rule may use its grant")
    _check_generation(state, value, action.task_id)
    _check_runtime(state, value, action.task_id)
    if action.task_id is not None and state.tasks.by_id[action.task_id].state != "active":
        raise Rejected("task_not_active", f"task {action.task_id!r} is {state.tasks.by_id[action.task_id].state}")
    grant = state.authority.grants[action.grant_id]
    check_authority(state, action.operation, action.write_paths, grant)
    _check_revisions(state, value.input_revisions, grant, action.task_id)
    source_revision: Any = UNSET
    if action.source_revision is not None:  # contract v1.2 section 2.3
        if value.source_revision is UNSET:
            current = state.update_revision(action.cause_key)
            raise Rejected("stale_revision", f"{action.operation_id!r} answers a source revision: give it ({current})")
        check_source(state, action.cause_key, value.source_revision, action.target_sha, action.moot_statuses)
        source_revision = value.source_revision
    return [
        ev.ActionRevalidated(
            cause=seq,
            operation_id=action.operation_id,
            input_revisions=_revisions(state, value.input_revisions, grant, action.task_id),
            source_revision=source_revision,
        )
    ]


def decide_action_cancel(state: State, value: inp.CancelAction, seq: int) -> list[ev.Event]:
    action = known_action(state, value.operation_id)
    if ACTION.allows(action.state, "cancel"):
        return [ev.ActionCancelled(cause=seq, operation_id=action.operation_id)]
    if ACTION.allows(action.state, "request_cancel"):
        return [ev.ActionCancelRequested(cause=seq, operation_id=action.operation_id, reason="human")]
    raise Rejected("not_cancellable", f"{action.operation_id!r} is {action.state}")


def _latest_attempt(action: Action, attempt_id: str) -> Attempt:
    if not action.attempts or action.attempts[-1].attempt_id != attempt_id:
        raise Rejected("stale_attempt", f"{attempt_id!r} is not the latest attempt of {action.operation_id!r}")
    return action.attempts[-1]


# attempt event -> action event, for each receipt/reconcile result (and, below, each
# outcome's action event): what the work queue offers an executor, projections/work.py
RECEIPT_EVENTS = {
    "queued": ("receipt_queued", "queue"),
    "accepted": ("receipt_accepted", "accept"),
    "unknown": ("receipt_unknown", "lose_track"),
    "refused": ("receipt_refused", "refuse"),
}
RECONCILE_EVENTS = {
    "accepted": ("reconcile_accepted", "accept"),
    "not_received": ("reconcile_not_received", "refuse"),
}


def _attempt_transition(
    state: State, value: Any, seq: int, action: Action, attempt_event: str, action_event: str
) -> list[ev.Event]:
    attempt_id = value.attempt_id
    attempt = _latest_attempt(action, attempt_id)
    attempt_state = ATTEMPT.target(attempt.state, attempt_event)
    if attempt_state is None:
        raise Rejected("stale_attempt", f"{attempt_id!r} is {attempt.state}")
    restamped = None
    refusal = None
    backoff: dict[str, Any] = {}
    if action_event == "refuse" and action.state != "cancel_requested":
        if len(action.attempts) >= state.authority.grants[action.grant_id].max_attempts:
            action_event, reason = "exhaust", "max_attempts"
        else:
            action_event, restamped, reason = _back_to_pending(state, action)
            until = retry_at(state, action, value.at) if action_event == "refuse" else None
            backoff = {"retry_at": until} if until is not None else {}
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
            **backoff,
        )
    ]


def _back_to_pending(state: State, action: Action) -> tuple[str, ev.Revisions | None, str]:
    """A refused action goes back to pending only under current authority: if
    its task was revised, or its grant or the policy no longer allows it,
    while the attempt was out, it is fenced (revalidate to go on)."""
    grant = state.authority.grants[action.grant_id]
    if action.task_id is not None and action.revisions.task != state.tasks.by_id[action.task_id].revision:
        return "refuse_stale", None, "task_revised"
    if not allows(state, action, grant.operations, grant.roots):
        return "refuse_stale", None, "authority_narrowed"
    if action.revisions.grant != grant.revision:
        return "refuse", msgspec.structs.replace(action.revisions, grant=grant.revision), "retry"
    return "refuse", None, "retry"


def _refusal_facts(state: State, action: Action, reason: str) -> ev.RefusalFacts:
    task = state.tasks.by_id[action.task_id] if action.task_id is not None else None
    grant = state.authority.grants[action.grant_id]
    return ev.RefusalFacts(
        reason=reason,
        attempts=len(action.attempts),
        max_attempts=grant.max_attempts,
        task_revision=task.revision if task is not None else None,
        validated_task_revision=action.revisions.task,
        grant_revision=grant.revision,
        policy_revision=state.authority.policy.revision,
    )


def decide_receipt(state: State, value: inp.ExecutorReceipt, seq: int) -> list[ev.Event]:
    action = known_action(state, value.operation_id)
    attempt_event, action_event = RECEIPT_EVENTS[value.result]
    return _attempt_transition(state, value, seq, action, attempt_event, action_event)


def decide_reconcile(state: State, value: inp.ExecutorReconcile, seq: int) -> list[ev.Event]:
    action = known_action(state, value.operation_id)
    attempt_event, action_event = RECONCILE_EVENTS[value.observed]
    return _attempt_transition(state, value, seq, action, attempt_event, action_event)


OUTCOME_EVENTS = {"succeeded": "succeed", "failed": "fail", "cancelled": "confirm_cancel"}


def decide_outcome(state: State, value: inp.ExecutorOutcome, seq: int) -> list[ev.Event]:
    action = known_action(state, value.operation_id)
    action_state = ACTION.target(action.state, OUTCOME_EVENTS[value.outcome])
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
        *outcome_update_events(state, action, value.outcome, seq, value.at),
    ]


evidence_refs_max = 64


def decide_evidence(state: State, value: inp.AttachEvidence, seq: int) -> list[ev.Event]:
    """Contract v1.2 section 2.5: evidence attaches only to a success, and an
    artifact revision once known never changes."""
    action = known_action(state, value.operation_id)
    if action.state != "succeeded":
        raise Rejected("not_succeeded", f"{action.operation_id!r} is {action.state}: evidence of unfinished work proves nothing")
    artifact = given(value.artifact_revision)
    if artifact is not None and action.artifact_revision is not None and artifact != action.artifact_revision:
        raise Rejected("artifact_mismatch", f"{action.operation_id!r} produced {action.artifact_revision}, not {artifact}")
    if len(action.evidence_refs) >= evidence_refs_max:
        raise Rejected("limit_reached", f"{action.operation_id!r} already holds {evidence_refs_max} evidence refs")
    sets_artifact = artifact if action.artifact_revision is None else None
    if value.evidence_ref in action.evidence_refs and sets_artifact is None:
        return []  # attached already: refs are kept once
    return [
        ev.EvidenceAttached(
            cause=seq, operation_id=action.operation_id, evidence_ref=value.evidence_ref, artifact_revision=sets_artifact
        )
    ]


def _worker_usage(state: State, value: inp.ReportUsage, seq: int, action: Action) -> tuple[int, list[ev.Event]]:
    """The grant's usage after a worker's report, and the budget it reached, if it did."""
    grant = state.authority.grants[action.grant_id]
    grant_usage = grant.usage + (given(value.input_tokens) or 0) + (given(value.output_tokens) or 0)
    events: list[ev.Event] = []
    if grant.token_limit is not None and grant.usage < grant.token_limit <= grant_usage:
        events.append(
            ev.BudgetExhausted(
                cause=seq,
                grant_id=grant.grant_id,
                usage=grant_usage,
                token_limit=grant.token_limit,
                operation_id=action.operation_id,
            )
        )
        if action.state in IN_FLIGHT and ACTION.allows(action.state, "request_cancel"):
            events.append(ev.ActionCancelRequested(cause=seq, operation_id=action.operation_id, reason="budget_exhausted"))
    return grant_usage, events


def decide_usage(state: State, value: inp.ReportUsage, seq: int) -> list[ev.Event]:
    grant_id = None
    grant_usage = None
    events: list[ev.Event] = []
    if value.operation_id is not UNSET:
        action = known_action(state, value.operation_id)
        role, conversation_id, operation_id = "workers", None, action.operation_id
        grant_id = action.grant_id
        grant_usage, events = _worker_usage(state, value, seq, action)
    else:
        conversation = known_conversation(state, value.conversation_id)
        role, conversation_id, operation_id = conversation.role, conversation.conversation_id, None
    report = ev.UsageReported(
        cause=seq,
        role=role,
        conversation_id=conversation_id,
        operation_id=operation_id,
        grant_id=grant_id,
        context_tokens=given(value.context_tokens),
        grant_usage=grant_usage,
        **{name: given(getattr(value, name)) for name in ev.USAGE_FIELDS},
    )
    return [report, *events]


def _scope_target(state: State, scope: str) -> None:
    if scope != "*":
        known_task(state, scope)


def decide_pause(state: State, value: inp.PauseScope, seq: int) -> list[ev.Event]:
    _scope_target(state, value.scope)
    return [] if value.scope in state.actions.paused else [ev.ScopePaused(cause=seq, scope=value.scope)]


def decide_resume(state: State, value: inp.ResumeScope, seq: int) -> list[ev.Event]:
    _scope_target(state, value.scope)
    return [ev.ScopeResumed(cause=seq, scope=value.scope)] if value.scope in state.actions.paused else []


# ----------------------------------------------------------------- evolvers

_PROPOSED = ACTION.after[ev.ActionProposed]
_REVALIDATED = ACTION.after[ev.ActionRevalidated]
_CANCELLED = ACTION.after[ev.ActionCancelled]
_CANCEL_REQUESTED = ACTION.after[ev.ActionCancelRequested]
_CLAIMED = ACTION.after[ev.ActionClaimed]
_ATTEMPT_CLAIMED = ATTEMPT.after[ev.ActionClaimed]


def _action_proposed(state: State, event: ev.ActionProposed) -> None:
    action = Action(
        proposal=event,
        order=len(state.actions.by_id),
        revisions=event.input_revisions,
        state=_PROPOSED,
        source_revision=given(event.source_revision),
    )
    if action.runtime_id is not None:
        state.actions.by_runtime.setdefault(action.runtime_id, set()).add(event.operation_id)
    for prerequisite in event.prerequisites:
        state.actions.by_id[prerequisite.operation_id].dependents.append(event.operation_id)
    if event.task_id is not None:
        add_task_action(state, event.task_id, event.operation_id)
    add_grant_action(state, event.grant_id, event.operation_id)
    state.actions.by_cause.setdefault(event.cause_key, []).append(event.operation_id)
    add_action(state, action)
    _progressed(state, action, event)


def _action_revalidated(state: State, event: ev.ActionRevalidated) -> None:
    action = state.actions.by_id[event.operation_id]
    action.revisions = event.input_revisions
    if event.source_revision is not UNSET:
        action.source_revision = event.source_revision
    move_action(state, action, _REVALIDATED)


def _action_cancelled(state: State, event: ev.ActionCancelled) -> None:
    move_action(state, state.actions.by_id[event.operation_id], _CANCELLED)


def _action_cancel_requested(state: State, event: ev.ActionCancelRequested) -> None:
    move_action(state, state.actions.by_id[event.operation_id], _CANCEL_REQUESTED)


def _action_claimed(state: State, event: ev.ActionClaimed) -> None:
    action = state.actions.by_id[event.operation_id]
    action.attempts.append(Attempt(event.attempt_id, _ATTEMPT_CLAIMED, event.envelope))
    action.retry_at = None
    deadline_at = event.envelope.deadline_at
    if deadline_at is not UNSET and action.deadline_at is None:
        action.deadline_at, action.first_claim_at = deadline_at, state.last_at
        state.actions.deadline_timers.add((deadline_at, action.operation_id))
    move_action(state, action, _CLAIMED)
    _progressed(state, action, event)


def _attempt_updated(state: State, event: ev.AttemptUpdated) -> None:
    action = state.actions.by_id[event.operation_id]
    action.attempts[-1].state = event.attempt_state
    if event.restamped is not None:
        action.revisions = event.restamped
    move_action(state, action, event.action_state)
    if event.retry_at is not UNSET:
        action.retry_at = event.retry_at
        state.actions.backing_off[action.operation_id] = event.retry_at
    if event.attempt_state == "accepted":
        _progressed(state, action, event)


def _action_outcome_reported(state: State, event: ev.ActionOutcomeReported) -> None:
    action = state.actions.by_id[event.operation_id]
    action.outcome = event.outcome
    action.artifact_revision = event.artifact_revision
    action.evidence_ref = event.evidence_ref
    action.evidence_refs = [event.evidence_ref] if event.evidence_ref is not None else []
    if event.attempt_state is not None:
        action.attempts[-1].state = event.attempt_state
    move_action(state, action, event.action_state)
    _progressed(state, action, event)


def _progressed(state: State, action: Action, event: ev.Event) -> None:
    """Contract v1.2 section 4.4: what a task's action does is its task's progress."""
    task_id = action.proposal.task_id
    if task_id is not None and state.tasks.by_id[task_id].state == "active":
        note_progress(state, task_id, type(event).__name__)


def _evidence_attached(state: State, event: ev.EvidenceAttached) -> None:
    action = state.actions.by_id[event.operation_id]
    if event.evidence_ref not in action.evidence_refs:
        action.evidence_refs.append(event.evidence_ref)
    if event.artifact_revision is not None:
        action.artifact_revision = event.artifact_revision
    state.touch_dependents(action.operation_id)  # re-evaluated in the same pass
    _progressed(state, action, event)  # evidence attached to one of its actions (v1.2 sections 2.5, 4.4)


def _action_blocked(state: State, event: ev.ActionBlocked) -> None:
    action = state.actions.by_id[event.operation_id]
    action.blocked_by = tuple(event.blocked_by)
    # The succeeded prerequisites its facts name as still pending (for their evidence).
    action.awaiting_evidence = tuple(
        p.operation_id
        for fact in event.facts
        if fact.code == "prerequisite_pending"
        for p in fact.prerequisites or ()
        if p.state == "succeeded"
    )


def _scope_changed(state: State, event: ev.ScopePaused | ev.ScopeResumed) -> None:
    if type(event) is ev.ScopePaused:
        state.actions.paused.add(event.scope)
    else:
        state.actions.paused.discard(event.scope)
    if event.scope == "*":
        state.touch_all_tasks()
    else:
        state.touch_task(event.scope)


def _usage_reported(state: State, event: ev.UsageReported) -> None:
    # Role totals are the usage view's; decisions need the context and budgets.
    if event.conversation_id is not None and event.context_tokens is not None:
        set_context_tokens(state, event.conversation_id, event.context_tokens)
    if event.grant_id is not None and event.grant_usage is not None:
        if set_grant_usage(state, event.grant_id, event.grant_usage):
            state.touch_grant(event.grant_id)


def _budget_exhausted(state: State, event: ev.BudgetExhausted) -> None:
    state.touch_grant(event.grant_id)


DECIDERS = {
    inp.ProposeAction: decide_proposal,
    inp.RevalidateAction: decide_revalidation,
    inp.CancelAction: decide_action_cancel,
    inp.ExecutorReceipt: decide_receipt,
    inp.ExecutorReconcile: decide_reconcile,
    inp.ExecutorOutcome: decide_outcome,
    inp.AttachEvidence: decide_evidence,
    inp.ReportUsage: decide_usage,
    inp.PauseScope: decide_pause,
    inp.ResumeScope: decide_resume,
}
EVOLVERS = {
    ev.ActionProposed: _action_proposed,
    ev.ActionRevalidated: _action_revalidated,
    ev.ActionCancelled: _action_cancelled,
    ev.ActionCancelRequested: _action_cancel_requested,
    ev.ActionClaimed: _action_claimed,
    ev.AttemptUpdated: _attempt_updated,
    ev.ActionOutcomeReported: _action_outcome_reported,
    ev.ActionBlocked: _action_blocked,
    ev.EvidenceAttached: _evidence_attached,
    ev.ScopePaused: _scope_changed,
    ev.ScopeResumed: _scope_changed,
    ev.UsageReported: _usage_reported,
    ev.BudgetExhausted: _budget_exhausted,
}
REACTIONS: dict[type, Any] = {}

# The action area's other rules: the source rule (contract v1.2 section 2.2)
# and the foreman (section 8), each with maps of its own.
MORE_RULES = (source_rule, foreman)
