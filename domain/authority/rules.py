"""Authority (contract section 3.1, 3.2): engine.configure, the policy, grants and rules.

What a grant may do is the intersection of what the human asked for and what
the policy allows. Model prose never reaches here: only human-sent grant
requests and the policy do. A root or path is normalised (`.` and `..`
collapsed) before it is compared, so `/repo/../etc` is `/etc` and a relative
path is never inside. A change of authority fences the pending actions it no
longer allows (and re-stamps the rest); the actions area asks `check_authority`
of a proposal and `allows` of a refused attempt going back to pending, and the
tasks area `issue_grant` for a delegation.
"""

from __future__ import annotations

import dataclasses
import functools
import posixpath
from collections.abc import Iterable, Sequence
from typing import Any

from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain import inputs as inp
from tandem.domain.lifecycles import ACTION, GRANT
from tandem.domain.inputs import given
from tandem.domain.lookups import known_grant
from tandem.domain.reasons import Rejected
from tandem.domain.records import Action, Grant, Policy
from tandem.domain.actions.state import move_action
from tandem.domain.actions.state import restamp_grant
from tandem.domain.state import State

normalised_paths_cached_max = 65_536
replace_config = dataclasses.replace


@functools.lru_cache(maxsize=normalised_paths_cached_max)  # pure: a memo, not state
def normalise_path(path: str) -> str | None:
    """The absolute, normalised form of `path`, or None if it is not absolute."""
    if not path.startswith("/") or "\x00" in path:
        return None
    normalised = posixpath.normpath(path)
    if normalised.startswith("//"):  # POSIX keeps a leading "//"; we do not.
        normalised = "/" + normalised.lstrip("/")
    return normalised


def is_inside(path: str, root: str) -> bool:
    """Both normalised: is `path` equal to `root` or below it?"""
    if root == "/":
        return True
    return path == root or path.startswith(root + "/")


def inside_any(path: str, roots: Iterable[str]) -> bool:
    return any(is_inside(path, root) for root in roots)


def narrow_operations(requested: Sequence[str], allowed: frozenset[str]) -> tuple[list[str], list[str]]:
    """(kept, dropped), in request order, without duplicates."""
    kept: list[str] = []
    dropped: list[str] = []
    for operation in dict.fromkeys(requested):
        (kept if operation in allowed else dropped).append(operation)
    return kept, dropped


def narrow_roots(requested: Sequence[str], policy_roots: Sequence[str]) -> tuple[list[str], list[str]]:
    """(kept, dropped): a root is kept, normalised, if it is absolute and equal
    to or inside a policy root; relative roots and escapes are dropped."""
    kept: list[str] = []
    dropped: list[str] = []
    for root in dict.fromkeys(requested):
        normalised = normalise_path(root)
        if normalised is not None and inside_any(normalised, policy_roots):
            if normalised not in kept:
                kept.append(normalised)
        else:
            dropped.append(root)
    return kept, dropped


def path_allowed(path: str, grant_roots: Sequence[str], policy_roots: Sequence[str]) -> bool:
    """A write path is allowed when it is inside the grant's own roots and
    inside the current policy's (the effective authority is their intersection)."""
    normalised = normalise_path(path)
    return normalised is not None and inside_any(normalised, grant_roots) and inside_any(normalised, policy_roots)


# ------------------------------------------------------------ what is allowed


def disallowed(
    action: Action,
    operations: tuple[str, ...] | frozenset[str],
    roots: tuple[str, ...],
    policy_operations: frozenset[str],
    policy_roots: tuple[str, ...],
) -> str | None:
    """Why the effective authority (grant ∩ policy) no longer allows this
    action, or None if it does (recorded with a fence, contract section 8)."""
    if action.operation not in operations:
        return f"operation {action.operation} is not granted"
    if action.operation not in policy_operations:
        return f"operation {action.operation} is not allowed by the policy"
    for path in action.write_paths:
        if not path_allowed(path, roots, policy_roots):
            return f"write path {path} is outside the write roots"
    return None


def allows(state: State, action: Action, operations: tuple[str, ...], roots: tuple[str, ...]) -> bool:
    """Does the effective authority (grant ∩ policy) still allow this action?"""
    return disallowed(action, operations, roots, state.authority.policy.operations, state.authority.policy.roots) is None


def check_authority(state: State, operation: str, write_paths: list[str], grant: Grant) -> None:
    """A proposal's authority: `operation_not_granted`, then `write_outside_roots`."""
    if operation not in grant.operations or operation not in state.authority.policy.operations:
        raise Rejected("operation_not_granted", f"grant {grant.grant_id!r} does not allow {operation!r}")
    for path in write_paths:
        if not path_allowed(path, grant.roots, state.authority.policy.roots):
            raise Rejected("write_outside_roots", f"{path!r} is outside the roots of grant {grant.grant_id!r}")


def _narrow(state: State, request_ops: list[str], request_roots: list[str]):
    operations, dropped_operations = narrow_operations(request_ops, state.authority.policy.operations)
    roots, dropped_roots = narrow_roots(request_roots, state.authority.policy.roots)
    if not operations or not roots:
        missing = "operation" if not operations else "write root"
        raise Rejected("grant_outside_policy", f"no requested {missing} survives the policy (revision {state.authority.policy.revision})")
    return operations, roots, dropped_operations, dropped_roots


def _sort_out(
    state: State, operation_ids: Iterable[str], operations: Any, roots: Any, policy_ops: Any, policy_roots: Any
) -> tuple[list[str], list[str], dict[str, str]]:
    """(fenced, restamped, why each fenced one is): the actions, in the given
    order, that the new authority no longer allows, and those it still does."""
    fenced: list[str] = []
    restamped: list[str] = []
    because: dict[str, str] = {}
    for operation_id in operation_ids:
        action = state.actions.by_id[operation_id]
        if operations is None:  # each under its own grant
            grant = state.authority.grants[action.grant_id]
            reason = disallowed(action, grant.operations, grant.roots, policy_ops, policy_roots)
        else:
            reason = disallowed(action, operations, roots, policy_ops, policy_roots)
        if reason is None:
            restamped.append(operation_id)
        else:
            fenced.append(operation_id)
            because[operation_id] = reason
    return fenced, restamped, because


# ----------------------------------------------------------------- deciders


def decide_configure(state: State, value: inp.ConfigureEngine, seq: int) -> list[ev.Event]:
    if not state.configurable:
        raise Rejected("too_late", "engine.configure is accepted only before any other input")
    settings = {
        name: getattr(state.authority.config, name) if getattr(value, name) is UNSET else getattr(value, name)
        for name in ("watchdog_max_age_s", "fallback_after_s", "question_resurface_s", "wake_batch_max")
    }
    budgets = {name: getattr(value, name) for name in BUDGET_SETTINGS}  # UNSET when not given
    # Contract v1.2: recorded only when given, so a v1 configuration keeps its bytes.
    return [
        ev.EngineConfigured(
            cause=seq, **settings, **budgets, suspend_gap_s=value.suspend_gap_s, payload_required=value.payload_required
        )
    ]


# Contract v1.2 section 3.2: recorded only when given (with section 5.1's investigation bounds).
BUDGET_SETTINGS = (
    "wake_min_interval_s", "wake_batch_wait_s", "delivery_backoff_s", "delivery_retries_max",
    "backlog_degraded_at", "exhausted_alerts", "investigation_max_s", "investigation_calls_max",
)  # fmt: skip


def grant_budgets(execution_deadline_s: Any, retry_backoff_s: Any, call_limit: Any = UNSET) -> dict[str, Any]:
    """A grant's budgets (contract v1.2 section 3.1) as its events record them:
    only when set, so a v1 grant's events are unchanged."""
    budgets: dict[str, Any] = {}
    if execution_deadline_s not in (None, UNSET):
        budgets["execution_deadline_s"] = execution_deadline_s
    if retry_backoff_s not in (0, UNSET):
        budgets["retry_backoff_s"] = retry_backoff_s
    if call_limit not in (None, UNSET):
        budgets["call_limit"] = call_limit
    return budgets


def decide_policy(state: State, value: inp.SetPolicy, seq: int) -> list[ev.Event]:
    operations = list(dict.fromkeys(value.allowed_operations))
    roots: list[str] = []
    for root in value.write_roots:
        normalised = normalise_path(root)
        if normalised is not None and normalised not in roots:
            roots.append(normalised)
    live = sorted(state.actions.pending | state.actions.fenced, key=lambda op: state.actions.by_id[op].order)
    fenced, restamped, because = _sort_out(state, live, None, None, frozenset(operations), tuple(roots))
    fenced = [op for op in fenced if state.actions.by_id[op].state == "pending"]  # a fenced one stays fenced
    return [
        ev.PolicySet(
            cause=seq,
            revision=state.authority.policy.revision + 1,
            allowed_operations=operations,
            write_roots=roots,
            fenced=fenced,
            restamped=restamped,
            fenced_because={op: because[op] for op in fenced},
        )
    ]


def issue_grant(
    state: State, seq: int, request: inp.GrantRequest, task_id: str | None, rule_id: str | None
) -> ev.GrantIssued:
    """A new grant, narrowed to the policy in force (for task.delegate and rule.set)."""
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
        policy_revision=state.authority.policy.revision,
        dropped_operations=dropped_operations,
        dropped_roots=dropped_roots,
        **grant_budgets(request.execution_deadline_s, request.retry_backoff_s, request.call_limit),
    )


def _revise_grant_events(
    state: State,
    seq: int,
    grant: Grant,
    operations_request: list[str],
    roots_request: list[str],
    max_attempts: int,
    token_limit: int | None,
    budgets: dict[str, Any],
) -> list[ev.Event]:
    # "Narrowed like delegation": the whole grant, named parts and kept ones,
    # is narrowed to the policy in force, which the event records.
    operations, roots, dropped_operations, dropped_roots = _narrow(state, operations_request, roots_request)
    policy = state.authority.policy
    fenced, restamped, because = _sort_out(
        state, state.pending_of_grant(grant.grant_id), tuple(operations), tuple(roots), policy.operations, policy.roots
    )
    return [
        ev.GrantRevised(
            cause=seq,
            grant_id=grant.grant_id,
            revision=grant.revision + 1,
            allowed_operations=operations,
            write_roots=roots,
            max_attempts=max_attempts,
            token_limit=token_limit,
            policy_revision=state.authority.policy.revision,
            dropped_operations=dropped_operations,
            dropped_roots=dropped_roots,
            fenced=fenced,
            restamped=restamped,
            fenced_because=because,
            **budgets,
        )
    ]


def decide_rule(state: State, value: inp.SetRule, seq: int) -> list[ev.Event]:
    request = value.grant
    current = state.authority.rules.get(value.rule_id)
    if current is None:
        if request.grant_id in state.authority.grants:
            raise Rejected("already_exists", f"grant {request.grant_id!r} already exists")
        grant_event = issue_grant(state, seq, request, None, value.rule_id)
        rule = ev.RuleSet(cause=seq, rule_id=value.rule_id, grant_id=request.grant_id, scopes=_scopes(value))
        return [grant_event, rule]
    if current != request.grant_id:
        raise Rejected("already_exists", f"rule {value.rule_id!r} already holds grant {current!r}")
    grant = state.authority.grants[current]
    events = _revise_grant_events(
        state, seq, grant, request.allowed_operations, request.write_roots, request.max_attempts, request.token_limit,
        grant_budgets(request.execution_deadline_s, request.retry_backoff_s, request.call_limit),
    )  # fmt: skip
    if value.scopes is not UNSET:  # set again without scopes, a rule keeps its own (v1: no event)
        events.append(ev.RuleSet(cause=seq, rule_id=value.rule_id, grant_id=current, scopes=_scopes(value)))
    return events


def _scopes(value: inp.SetRule) -> Any:
    """The rule's scopes, each once, in the order given (UNSET when not given)."""
    return UNSET if value.scopes is UNSET else list(dict.fromkeys(value.scopes))


def decide_grant_revision(state: State, value: inp.ReviseGrant, seq: int) -> list[ev.Event]:
    grant = known_grant(state, value.grant_id)
    if value.expected_revision != grant.revision:
        raise Rejected("stale_revision", f"grant {grant.grant_id!r} is at revision {grant.revision}, not {value.expected_revision}")
    if not GRANT.allows(grant.state, "revise"):
        raise Rejected("task_not_active", f"grant {grant.grant_id!r} was revoked with its task")
    return _revise_grant_events(
        state,
        seq,
        grant,
        value.allowed_operations if value.allowed_operations is not UNSET else list(grant.operations),
        value.write_roots if value.write_roots is not UNSET else list(grant.roots),
        value.max_attempts if value.max_attempts is not UNSET else grant.max_attempts,
        value.token_limit if value.token_limit is not UNSET else grant.token_limit,
        grant_budgets(
            value.execution_deadline_s if value.execution_deadline_s is not UNSET else grant.execution_deadline_s,
            value.retry_backoff_s if value.retry_backoff_s is not UNSET else grant.retry_backoff_s,
            value.call_limit if value.call_limit is not UNSET else grant.call_limit,
        ),
    )


# ----------------------------------------------------------------- evolvers


def fence(state: State, operation_ids: list[str], event: ev.Event) -> None:
    """The actions an authority change lists in `fenced` (PolicySet,
    GrantRevised, TaskRevised) are fenced (`ACTION.after`)."""
    fenced = ACTION.after[type(event)]
    for operation_id in operation_ids:
        move_action(state, state.actions.by_id[operation_id], fenced)


def _engine_configured(state: State, event: ev.EngineConfigured) -> None:
    budgets = {name: getattr(event, name) for name in BUDGET_SETTINGS if getattr(event, name) is not UNSET}
    state.authority.config = replace_config(
        state.authority.config,
        watchdog_max_age_s=event.watchdog_max_age_s,
        fallback_after_s=event.fallback_after_s,
        question_resurface_s=event.question_resurface_s,
        wake_batch_max=event.wake_batch_max,
        **budgets,
        **({"suspend_gap_s": event.suspend_gap_s} if event.suspend_gap_s is not UNSET else {}),
        **({"payload_required": event.payload_required} if event.payload_required is not UNSET else {}),
    )


def _policy_set(state: State, event: ev.PolicySet) -> None:
    state.authority.policy = Policy(event.revision, frozenset(event.allowed_operations), tuple(event.write_roots))
    fence(state, event.fenced, event)


def _grant_issued(state: State, event: ev.GrantIssued) -> None:
    state.authority.grants[event.grant_id] = Grant(
        grant_id=event.grant_id,
        revision=event.revision,
        task_id=event.task_id,
        rule_id=event.rule_id,
        operations=tuple(event.allowed_operations),
        roots=tuple(event.write_roots),
        max_attempts=event.max_attempts,
        token_limit=event.token_limit,
        state=GRANT.after[ev.GrantIssued],
        execution_deadline_s=given(event.execution_deadline_s),
        retry_backoff_s=given(event.retry_backoff_s) or 0,
        call_limit=given(event.call_limit),
    )


def _grant_revised(state: State, event: ev.GrantRevised) -> None:
    grant = state.authority.grants[event.grant_id]
    was_exhausted = grant.budget_exhausted
    grant.revision = event.revision
    grant.operations = tuple(event.allowed_operations)
    grant.roots = tuple(event.write_roots)
    grant.max_attempts = event.max_attempts
    grant.token_limit = event.token_limit
    grant.execution_deadline_s = given(event.execution_deadline_s)
    grant.retry_backoff_s = given(event.retry_backoff_s) or 0
    grant.call_limit = given(event.call_limit)
    fence(state, event.fenced, event)
    for operation_id in event.restamped:
        restamp_grant(state, operation_id, event.revision)
    if grant.budget_exhausted != was_exhausted:
        state.touch_grant(grant.grant_id)


def _grant_revoked(state: State, event: ev.GrantRevoked) -> None:
    state.authority.grants[event.grant_id].state = GRANT.after[ev.GrantRevoked]


def _rule_set(state: State, event: ev.RuleSet) -> None:
    state.authority.rules[event.rule_id] = event.grant_id
    if event.scopes is not UNSET:
        state.authority.rule_scopes[event.rule_id] = tuple(event.scopes)
        state.touch_grant(event.grant_id)  # its pending actions: opted in or not (blocked_by)


DECIDERS = {
    inp.ConfigureEngine: decide_configure,
    inp.SetPolicy: decide_policy,
    inp.SetRule: decide_rule,
    inp.ReviseGrant: decide_grant_revision,
}
EVOLVERS = {
    ev.EngineConfigured: _engine_configured,
    ev.PolicySet: _policy_set,
    ev.GrantIssued: _grant_issued,
    ev.GrantRevised: _grant_revised,
    ev.GrantRevoked: _grant_revoked,
    ev.RuleSet: _rule_set,
}
REACTIONS: dict[type, Any] = {}
