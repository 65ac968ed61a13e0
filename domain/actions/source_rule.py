"""The source rule (contract v1.2 section 2.2): before every claim, a pending
or fenced action that answers an older revision of its cause than the
current one is superseded (its cause is now moot, or on another commit),
re-stamped (a rule's action: its eligibility is the rule's predicate, just
checked) or fenced `source_moved` (a task's: the model judged the older
revision, so it waits for action.revalidate at the new one).

So no action is ever claimed for a source revision older than its cause's
current one. Actions that are out with the executor are never touched: their
delivery state stands; one that comes back to pending meets the rule in the
same pass (evolve marks it, `State.dirty_sources`), before any claim.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tandem.domain import events as ev
from tandem.domain.lifecycles import ACTION
from tandem.domain.records import Action
from tandem.domain.actions.state import move_action
from tandem.domain.state import State

Emit = Callable[[ev.Event], None]


def source_facts(state: State, action: Action) -> ev.SourceFacts:
    """What the rule relies on: the action's revision and target, the cause's
    current revision and its latest observation."""
    assert action.source_revision is not None
    latest = state.latest_observation(action.cause_key)
    return ev.SourceFacts(
        source_revision=action.source_revision,
        cause_revision=state.update_revision(action.cause_key),
        target_sha=action.target_sha,
        moot_statuses=list(action.moot_statuses) or None,
        status=latest.status if latest is not None else None,
        commit_sha=latest.commit_sha if latest is not None else None,
        deleted=latest.deleted if latest is not None else None,
        complete=latest.complete if latest is not None else None,
        observed_by=latest.observed_by if latest is not None else None,
    )


def source_decision(state: State, action: Action, cause: int) -> ev.SourceRuleApplied | None:
    """The rule's event for one action, or None when it answers the current
    revision (or is a fenced task action, which stays fenced)."""
    if action.source_revision is None or action.state not in ("pending", "fenced"):
        return None
    current = state.update_revision(action.cause_key)
    if action.source_revision >= current:
        return None
    latest = state.latest_observation(action.cause_key)
    if latest is not None and latest.moot(action.moot_statuses):
        outcome, reason = "superseded", "source_resolved"
    elif latest is not None and latest.moved_from(action.target_sha):
        outcome, reason = "superseded", "target_moved"
    elif action.rule_id is not None:
        outcome, reason = "restamped", None
    elif action.state == "fenced":
        return None  # a fenced one stays fenced
    else:
        outcome, reason = "fenced", "source_moved"
    return ev.SourceRuleApplied(
        cause=cause,
        operation_id=action.operation_id,
        outcome=outcome,
        reason=reason,
        source_revision=current if outcome == "restamped" else action.source_revision,
        facts=source_facts(state, action),
    )


def run_source_rule(state: State, cause: int, emit: Emit) -> None:
    """The rule for every action evolve marked, in proposal order."""
    while state.dirty_sources:
        batch = sorted((state.actions.by_id[op] for op in state.dirty_sources), key=lambda action: action.order)
        state.dirty_sources = set()
        for action in batch:
            event = source_decision(state, action, cause)
            if event is not None:
                emit(event)
        # Fenced by the rule just now: looked at already (it stays fenced until revalidated).
        state.dirty_sources.difference_update(action.operation_id for action in batch if action.state == "fenced")


# ----------------------------------------------------------------- evolvers


def _source_rule_applied(state: State, event: ev.SourceRuleApplied) -> None:
    action = state.actions.by_id[event.operation_id]
    moved = ACTION.state_after(event)
    if moved is not None:  # superseded or fenced
        move_action(state, action, moved)
        return
    action.source_revision = event.source_revision  # re-stamped, state unchanged
    if action.state == "pending":
        state.touch_action(action.operation_id)  # claimable again, in this pass


DECIDERS: dict[type, Any] = {}
EVOLVERS = {ev.SourceRuleApplied: _source_rule_applied}
REACTIONS: dict[type, Any] = {}
