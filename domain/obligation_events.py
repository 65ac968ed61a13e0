"""Obligations and resurfacing questions: the engine's time-driven facts about
what is owed to a conversation (contract section 6), in a module of their own
(domain/events.py's size); re-exported there as `ev.ObligationOpened` etc."""

from __future__ import annotations

import datetime

from tandem.domain.event_base import Decision


class ObligationOpened(Decision, frozen=True, kw_only=True):
    """A task action's outcome: the task's conversation must be told."""

    operation_id: str
    cause_key: str
    conversation_id: str
    due_at: datetime.datetime  # the outcome's time + fallback_after_s


class ObligationMet(Decision, frozen=True, kw_only=True):
    operation_id: str
    cause_key: str
    turn_id: str
    delivery_id: str


class ObligationDue(Decision, frozen=True, kw_only=True):
    """`reason`: "left_out" (a completed turn held it but did not list it in
    `delivered`) or "overdue" (`fallback_after_s` passed)."""

    operation_id: str
    reason: str
    turn_id: str | None = None
    # left_out: the accepted delivery of that turn that held it (overdue: the
    # due time is the ObligationOpened's).
    delivery_id: str | None = None


class QuestionResurfaced(Decision, frozen=True, kw_only=True):
    """An open question reached `first_seen_at + k x question_resurface_s`."""

    task_id: str
    question_key: str
    k: int
    due_at: datetime.datetime | None = None  # first_seen_at + k x question_resurface_s
