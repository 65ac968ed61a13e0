"""Lookups every area shares: the records an input names, or the `unknown_*`
rejection that says it names nothing (contract section 3: checked in the order a
kind's checks list them, so each decider calls these where its turn comes).

Also the one reading of numbered ids (`{conversation_id}/t{n}`, `/d{n}`):
whose they are.
"""

from __future__ import annotations

from tandem.domain.reasons import Rejected
from tandem.domain.records import Action, Alert, Conversation, Delivery, Grant, Task
from tandem.domain.state import State


def known_task(state: State, task_id: str) -> Task:
    task = state.tasks.by_id.get(task_id)
    if task is None:
        raise Rejected("unknown_task", f"no task {task_id!r}")
    return task


def known_alert(state: State, alert_id: str) -> Alert:
    alert = state.alerts.by_id.get(alert_id)
    if alert is None:
        raise Rejected("unknown_alert", f"no alert {alert_id!r}")
    return alert


def known_grant(state: State, grant_id: str) -> Grant:
    grant = state.authority.grants.get(grant_id)
    if grant is None:
        raise Rejected("unknown_grant", f"no grant {grant_id!r}")
    return grant


def known_action(state: State, operation_id: str) -> Action:
    action = state.actions.by_id.get(operation_id)
    if action is None:
        raise Rejected("unknown_operation", f"no operation {operation_id!r}")
    return action


def known_conversation(state: State, conversation_id: str, role: str | None = None) -> Conversation:
    """The conversation, of `role` if one is given."""
    conversation = state.conversation.by_id.get(conversation_id)
    if conversation is None or (role is not None and conversation.role != role):
        what = f"{role} conversation" if role else "conversation"
        raise Rejected("unknown_conversation", f"no {what} {conversation_id!r}")
    return conversation


def numbered_owner(identifier: str, marker: str) -> str | None:
    """The conversation id of `{conversation_id}/{marker}{n}`, or None."""
    head, separator, number = identifier.rpartition(f"/{marker}")
    return head if separator and number.isdigit() else None


def known_delivery(state: State, delivery_id: str) -> tuple[Conversation, Delivery]:
    """The delivery and its conversation; a delivery that does not exist is `stale_attempt`
    (contract section 5.1: a receipt of nothing in flight)."""
    conversation = state.conversation.by_id.get(numbered_owner(delivery_id, "d") or "")
    delivery = conversation.deliveries.get(delivery_id) if conversation is not None else None
    if conversation is None or delivery is None:
        raise Rejected("stale_attempt", f"no delivery {delivery_id!r}")
    return conversation, delivery
