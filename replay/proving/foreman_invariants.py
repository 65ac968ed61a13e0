"""The catalog's invariant of contract v1.2 section 8 (Foreman): maintenance
work yields to the owner. Restated from the state (replay/proving/restated.py's
`owner_active`), not asked of domain/foreman.py or domain/dispatch.py, so the
check does not share the code it checks."""

from __future__ import annotations

from tandem.replay.proving.model import World, state_invariant
from tandem.replay.proving.restated import owner_active

# Out with the executor and not asked to stop: what a preempted action never is.
RUNNING = frozenset({"submitting", "queued", "accepted", "unknown"})


@state_invariant
def maintenance_yields_to_the_owner(world: World) -> str | None:
    """Maintenance work yields to the owner: the production loop's "Owner
    input preempts a Dreaming batch; the step still ends only after its
    executor is confirmed stopped". While a foreground has a queued human
    message or a running human turn, no maintenance action is submitting,
    queued, accepted or unknown: none is claimed while the owner is active,
    and a human message asks every running one to stop (cancel_requested) in
    its own transaction."""
    state = world.state
    if not owner_active(state):
        return None
    for action in sorted(state.actions.values(), key=lambda a: a.order):
        if action.priority == "maintenance" and action.state in RUNNING:
            return f"maintenance action {action.operation_id} is {action.state} while the owner is active"
    return None
