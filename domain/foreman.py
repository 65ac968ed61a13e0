"""Foreman (contract v1.2 section 8): maintenance work yields to the owner.

An action proposed with `priority: "maintenance"` is maintenance work. The
owner is active while some foreground has a queued human message or a
running human turn (`State.owner_active`). A `human.message` asks every
maintenance action out with the executor to stop (`cancel_requested`, reason
`preempted`, through the action lifecycle's `request_cancel`, like the
token budget's stop), in the same transaction; it ends only on the
executor's word. While the owner is active a pending maintenance action is
blocked `owner_active` (domain/dispatch.py's `blockers`).

A failure hold's stop of a running turn (section 8.2) records nothing: the
held conversation is not dispatchable already (contract section 5.3), and its
`stop_requested` is the conversations view's, computed from events a v1
trace already records.
"""

from __future__ import annotations

from tandem.domain import events as ev
from tandem.domain.lifecycles import ACTION
from tandem.domain.state import State


def preempt_maintenance(state: State, conversation_id: str, message_id: str, seq: int) -> list[ev.Event]:
    """Section 8.1: the stop of every maintenance action out with the executor
    (submitting, queued, accepted, unknown), in proposal order."""
    if not state.maintenance:
        return []
    facts = ev.PreemptFacts(conversation_id=conversation_id, message_id=message_id)
    running = sorted(
        (state.actions[op] for op in state.maintenance if ACTION.allows(state.actions[op].state, "request_cancel")),
        key=lambda action: action.order,
    )
    return [
        ev.ActionCancelRequested(cause=seq, operation_id=action.operation_id, reason="preempted", preempted_by=facts)
        for action in running
    ]


def owner_fact(state: State) -> ev.BlockFact:
    """What makes the owner active (owner_active's BlockFact): the first such
    foreground, with its queued messages or its running human turn."""
    conversation = state.owner_active()
    assert conversation is not None
    turn = conversation.running_turn
    return ev.BlockFact(
        code="owner_active",
        conversation_id=conversation.conversation_id,
        messages=list(conversation.queue) or None,
        turn_id=turn.turn_id if turn is not None and turn.kind == "human" else None,
    )
