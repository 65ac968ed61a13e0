"""Foreman (contract v1.2 section 8): maintenance work yields to the owner of
the session it concerns.

An action proposed with `priority: "maintenance"` is maintenance work. A
foreground's owner is active while it has a queued human message or a running
human turn (`owner_active`). A maintenance action is affected by a foreground
F (`affected_via`, in the order of `AFFECTED_VIA`): its task is F's (`task`),
it serialises on F itself (`session`), or its resource is one a non-terminal
action of F's tasks names (`resource`, `state.actions.work_resources`). Anything else
is no business of F's owner (section 8.1's Decision: "supersede affected
pending intents through the same resource controls").

A `human.message` on F asks every maintenance action F affects that is out
with the executor to stop (`cancel_requested`, reason `preempted`, through the
action lifecycle's `request_cancel`, like the token budget's stop), in the
same transaction; so does a proposal of F's work while F's owner is active,
for the maintenance running on its resource (`_on_proposal`, a reaction). It
ends only on the executor's word. A pending maintenance action is blocked
`owner_active` while a foreground that affects it has its owner active
(domain/dispatch.py's `blockers`, `affecting_owner`).

A failure hold's stop of a running turn (section 8.2) records nothing: the
held conversation is not dispatchable already (contract section 5.3), and its
`stop_requested` is the conversations view's, computed from events a v1
trace already records.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tandem.domain import events as ev
from tandem.domain.lifecycles import ACTION
from tandem.domain.records import Action, Conversation
from tandem.domain.state import State


def owner_active(conversation: Conversation) -> bool:
    """Section 8.1: a queued human message or a running human turn (a wake is not the owner)."""
    turn = conversation.running_turn
    return bool(conversation.queue) or (turn is not None and turn.kind == "human")


def affected_via(state: State, action: Action, conversation_id: str) -> str | None:
    """How the foreground affects the maintenance action ("task", "session",
    "resource"), the first that applies; None: it does not."""
    for via, affects in AFFECTED_VIA.items():
        if affects(state, action, conversation_id):
            return via
    return None


def affecting_owner(state: State, action: Action) -> tuple[Conversation, str] | None:
    """The first foreground (in id order) whose owner is active and that
    affects the action, and how; None: no active owner affects it."""
    for conversation_id in state.conversation.foregrounds:
        conversation = state.conversation.by_id[conversation_id]
        if owner_active(conversation):
            via = affected_via(state, action, conversation_id)
            if via is not None:
                return conversation, via
    return None


def _named_by(state: State, conversation_id: str, resource: str) -> list[str]:
    """The non-terminal actions of the conversation's tasks naming the resource, in proposal order."""
    named = state.actions.work_resources.get(conversation_id, {}).get(resource, ())
    return sorted(named, key=lambda op: state.actions.by_id[op].order)


def _scope(state: State, action: Action, conversation_id: str, via: str) -> dict[str, Any]:
    """The facts of `via`: the resource (session, resource) and the work naming it (resource)."""
    if via == "task":
        return {}
    if via == "session":
        return {"resource": action.resource}
    return {"resource": action.resource, "operations": _named_by(state, conversation_id, action.resource)}


def _running(state: State, operation_ids: Any) -> list[Action]:
    """The maintenance actions among them out with the executor (request_cancel allowed), in proposal order."""
    actions = (state.actions.by_id[op] for op in operation_ids)
    return sorted((a for a in actions if ACTION.allows(a.state, "request_cancel")), key=lambda a: a.order)


def preempt_maintenance(state: State, conversation_id: str, message_id: str, seq: int) -> list[ev.Event]:
    """Section 8.1: a human message on a foreground stops every maintenance
    action it affects that is out with the executor (submitting, queued,
    accepted, unknown), in proposal order."""
    if not state.actions.maintenance:
        return []
    events: list[ev.Event] = []
    for action in _running(state, state.actions.maintenance):
        via = affected_via(state, action, conversation_id)
        if via is None:
            continue
        facts = ev.PreemptFacts(
            conversation_id=conversation_id, message_id=message_id, via=via,
            **_scope(state, action, conversation_id, via),
        )  # fmt: skip
        events.append(
            ev.ActionCancelRequested(cause=seq, operation_id=action.operation_id, reason="preempted", preempted_by=facts)
        )
    return events


def _on_proposal(state: State, event: ev.ActionProposed) -> list[ev.Event]:
    """Section 8.1: a proposal of a foreground's work while its owner is
    active makes the maintenance out with the executor on its resource
    affected (`resource`): it is asked to stop, right after the proposal."""
    if event.task_id is None or not state.actions.maintenance:
        return []
    conversation = state.conversation.by_id[state.tasks.by_id[event.task_id].conversation_id]
    if conversation.role != "foreground" or not owner_active(conversation):
        return []
    on_resource = [op for op in state.actions.maintenance if state.actions.by_id[op].resource == event.resource]
    named = _named_by(state, conversation.conversation_id, event.resource)
    return [
        ev.ActionCancelRequested(
            cause=event.cause,
            operation_id=action.operation_id,
            reason="preempted",
            preempted_by=ev.PreemptFacts(
                conversation_id=conversation.conversation_id, operation_id=event.operation_id, via="resource",
                resource=event.resource, operations=named,
            ),  # fmt: skip
        )
        for action in _running(state, on_resource)
    ]


def owner_fact(state: State, action: Action) -> ev.BlockFact:
    """owner_active's BlockFact: the first foreground whose owner is active
    and that affects the action, with its queued messages or its running
    human turn, and how it affects it."""
    found = affecting_owner(state, action)
    assert found is not None
    conversation, via = found
    turn = conversation.running_turn
    return ev.BlockFact(
        code="owner_active",
        conversation_id=conversation.conversation_id,
        messages=list(conversation.queue) or None,
        turn_id=turn.turn_id if turn is not None and turn.kind == "human" else None,
        via=via,
        **_scope(state, action, conversation.conversation_id, via),
    )


# ------------------------------------------------------------------- the maps

Affects = Callable[[State, Action, str], bool]

# Section 8.1: how a foreground affects a maintenance action, in this order.
AFFECTED_VIA: dict[str, Affects] = {
    "task": lambda state, action, fg: action.task_id is not None and state.tasks.by_id[action.task_id].conversation_id == fg,
    "session": lambda state, action, fg: action.resource == fg,
    "resource": lambda state, action, fg: action.resource in state.actions.work_resources.get(fg, {}),
}

DECIDERS: dict[type, Any] = {}
EVOLVERS: dict[type, Any] = {}
REACTIONS = {
    ev.ActionProposed: _on_proposal,
}
