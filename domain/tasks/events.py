"""The events of the tasks area: immutable facts, in the past tense, one frozen
msgspec Struct each (domain/events.py assembles every area's into the one
union the log is written in)."""

from __future__ import annotations

import datetime
from typing import Any

from msgspec import UNSET, UnsetType
from tandem.domain.event_base import (  # the bases, re-exported: `ev.Decision`
    Decision,
)
from tandem.domain.facts import (  # the Structs events carry: `ev.BlockFact` is facts.BlockFact
    BlockFact,
)


class TaskDelegated(Decision, frozen=True, kw_only=True):
    task_id: str
    conversation_id: str
    message_refs: list[str]
    goal: str
    done_when: list[str]
    constraints: dict[str, Any]
    fallback_decisions: dict[str, str]
    depends_on: list[str]
    grant_id: str
    progress_deadline_s: int | UnsetType = UNSET  # contract v1.2 section 4.4, only when given


class TaskRevised(Decision, frozen=True, kw_only=True):
    task_id: str
    revision: int
    goal: str
    done_when: list[str]
    constraints: dict[str, Any]
    fallback_decisions: dict[str, str]
    fenced: list[str]
    progress_deadline_s: int | UnsetType = UNSET  # contract v1.2 section 4.4, only when given


class TaskCompleted(Decision, frozen=True, kw_only=True):
    task_id: str
    evidence_refs: list[str]


class TaskCancelled(Decision, frozen=True, kw_only=True):
    task_id: str


class QuestionRaised(Decision, frozen=True, kw_only=True):
    task_id: str
    question_key: str
    recipient: str
    blocking_reason: str
    affected: list[str] | str
    evidence_revision: int
    times_raised: int
    first_seen_at: datetime.datetime
    reopened: bool


class QuestionAnswered(Decision, frozen=True, kw_only=True):
    task_id: str
    question_key: str
    answer: str


class TaskHoldsChanged(Decision, frozen=True, kw_only=True):
    task_id: str
    holds: list[str]
    # One per hold, in the same order: what makes it apply (see BlockFact).
    facts: list[BlockFact] = []


class QuestionResurfaced(Decision, frozen=True, kw_only=True):
    """An open question reached `first_seen_at + k x question_resurface_s`."""

    task_id: str
    question_key: str
    k: int
    due_at: datetime.datetime | None = None  # first_seen_at + k x question_resurface_s



class TaskStalled(Decision, frozen=True, kw_only=True):
    """An active, unheld task reached `last_progress_at + progress_deadline_s`
    with no progress (`no_progress:{task_id}`): its last progress was
    `last_progress_event` at `last_progress_at`."""

    task_id: str
    due_at: datetime.datetime
    last_progress_at: datetime.datetime
    last_progress_event: str
    progress_deadline_s: int


__all__ = ['TaskDelegated', 'TaskRevised', 'TaskCompleted', 'TaskCancelled', 'QuestionRaised', 'QuestionAnswered', 'TaskHoldsChanged', 'QuestionResurfaced', 'TaskStalled']  # every name here is the registry's: `ev.Name`
