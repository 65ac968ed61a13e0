"""The catalog's invariants of contract v1.2 section 8 (Foreman): maintenance
work yields to the owner of the session it concerns, and only to that owner.
Restated from the state (replay/proving/restated.py's `active_owners`,
`affected_via`, `owners_affecting`), not asked of domain/actions/foreman.py or
domain/dispatch.py, so the checks do not share the code they check."""

from __future__ import annotations

from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain.state import State
from tandem.replay.proving.model import World, state_invariant
from tandem.replay.proving.restated import ACTION_EVENTS, active_owners, affected_via, owners_affecting

# Out with the executor and not asked to stop: what a preempted action never is.
RUNNING = frozenset({"submitting", "queued", "accepted", "unknown"})


@state_invariant
def maintenance_yields_to_the_owner(world: World) -> str | None:
    """Maintenance work yields to the owner it concerns: the production loop's
    "Owner input preempts a Dreaming batch; the step still ends only after
    its executor is confirmed stopped"; the RFC's "Human commands ...
    supersede affected pending intents through the same resource controls".
    While a foreground has a queued human message or a running human turn,
    no maintenance action it affects (its task's or its grant's task's, on
    its session, or on a resource a non-terminal action of its tasks names)
    is submitting, queued, accepted or unknown: none is claimed, and a human
    message (or a proposal of its work) asks every running one to stop
    (cancel_requested) in its own transaction."""
    state = world.state
    if not active_owners(state):
        return None
    for action in sorted(state.actions.by_id.values(), key=lambda a: a.order):
        if action.priority == "maintenance" and action.state in RUNNING:
            owners = owners_affecting(state, action)
            if owners:
                via = affected_via(state, action, owners[0])
                return (
                    f"maintenance action {action.operation_id} is {action.state} while {owners[0]}'s owner, "
                    f"which affects it ({via}), is active"
                )
    return None


@state_invariant
def preemption_is_scoped(world: World) -> str | None:
    """An owner preempts only what it affects: "supersede affected pending
    intents", not every intent. No maintenance action is asked to stop as
    `preempted`, or is blocked `owner_active`, unless a foreground that
    affects it (its task's, its session, a resource its tasks' work names)
    has its owner active; the preemption names that foreground and how it
    affects the action, the block (when recorded) the first such foreground
    in id order and how. Checked after every input, so a block that outlives
    the owner that justified it (another owner still speaking) is caught too."""
    state, events = world.state, world.applying.events
    touched = frozenset(e.operation_id for e in events if isinstance(e, ACTION_EVENTS))
    for event in events:
        if isinstance(event, ev.ActionCancelRequested) and event.reason == "preempted":
            problem = _preemption_problem(state, event, touched)
            if problem:
                return problem
    recorded = {e.operation_id: e for e in events if isinstance(e, ev.ActionBlocked)}
    for action in sorted(state.actions.by_id.values(), key=lambda a: a.order):
        if action.state != "pending" or "owner_active" not in action.blocked_by:
            continue
        operation_id = action.operation_id
        owners = owners_affecting(state, action)
        if not owners:
            return f"{operation_id} is blocked owner_active, but no active owner affects it"
        facts = recorded[operation_id].facts if operation_id in recorded else []
        fact = next((f for f in facts if f.code == "owner_active"), None)
        via = affected_via(state, action, owners[0])
        if fact is not None and (fact.conversation_id, fact.via) != (owners[0], via):
            return f"{operation_id} blocked owner_active naming {fact.conversation_id} ({fact.via}), not {owners[0]} ({via})"
    return None


def _preemption_problem(state: State, event: ev.ActionCancelRequested, touched: frozenset[str]) -> str | None:
    """A preemption of this input: its foreground's owner is active (a message
    or a running turn outlasts the input) and it affects the action as
    recorded (its work counted with what this input's events touched, so work
    that ended later in the same input still counts)."""
    facts = event.preempted_by
    if facts is UNSET:
        return f"{event.operation_id} preempted naming no foreground"
    named = facts.conversation_id
    if named not in active_owners(state):
        return f"{event.operation_id} preempted by {named}, whose owner is not active"
    via = affected_via(state, state.actions.by_id[event.operation_id], named, touched)
    if via is None or facts.via != via:
        return f"{event.operation_id} preempted by {named}'s owner, which affects it {via or 'not at all'} (recorded {facts.via})"
    return None
