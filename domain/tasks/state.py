"""The tasks area's part of the decision state: its records, one mutable
dataclass per thing, and its part of the State (`state.<area>`: the records
and the indexes over them), written only by this area's code (domain/records.py
gathers every area's records; domain/state.py holds the parts). A record's
`state` starts where its lifecycle starts and moves only as its events say.
Records are pickled in snapshots: their module is part of the snapshot
fingerprint."""

from __future__ import annotations

from typing import TYPE_CHECKING

import datetime
from dataclasses import dataclass, field

from tandem.domain.indexes import Timers
from typing import Any
from tandem.domain.authority.state import Seconds
from tandem.domain.lifecycles import (
    QUESTION,
    TASK,
)


if TYPE_CHECKING:
    from tandem.domain.state import State


@dataclass(slots=True)
class Task:
    task_id: str
    conversation_id: str
    message_refs: list[str]
    goal: str
    done_when: list[str]
    constraints: dict[str, Any]
    fallback_decisions: dict[str, str]
    depends_on: list[str]
    grant_id: str
    revision: int = 1
    state: str = TASK.initial
    holds: tuple[str, ...] = ()
    actions: list[str] = field(default_factory=list)
    dependents: list[str] = field(default_factory=list)  # tasks whose depends_on names this one
    open_questions: int = 0
    # Contract v1.2 section 4.4: the latest progress (its time and event), the
    # deadline, and the due time the progress timer holds (None: no timer).
    last_progress_at: datetime.datetime | None = None
    last_progress_event: str = "TaskDelegated"
    progress_deadline_s: Seconds | None = None
    progress_due_at: datetime.datetime | None = None
    stalled_at: datetime.datetime | None = None  # while no_progress is raised: when


@dataclass(slots=True)
class Question:
    task_id: str
    question_key: str
    recipient: str
    blocking_reason: str
    affected: list[str] | str
    evidence_revision: int
    first_seen_at: datetime.datetime
    times_raised: int = 1
    state: str = QUESTION.initial
    answer: str | None = None
    resurfaced: int = 0  # the greatest k for which it resurfaced (question_stale)


@dataclass(slots=True)
class TasksState:
    """The tasks area's part of the decision state (`state.tasks.by_id`): written
    only by this area's evolvers, read by others through it."""

    by_id: dict[str, Task] = field(default_factory=dict)
    questions: dict[tuple[str, str], Question] = field(default_factory=dict)
    # Time rules (contract section 6): (due_at, kind, key, key) in time order, checked on every
    # input's `at`. Only evolve adds and removes entries, so every entry applies.
    question_timers: Timers = field(default_factory=Timers)  # questions: (due_at, "question", task_id, key)
    question_ops: dict[str, set[tuple[str, str]]] = field(default_factory=dict)  # op id -> open questions listing it
    task_questions: dict[str, set[str]] = field(default_factory=dict)  # task -> open "task" question keys
    unknown_questions: set[tuple[str, str]] = field(default_factory=set)  # open "unknown" questions
    # Contract v1.2 section 4.4: (progress_due_at, task_id) of each active, unheld task with a
    # deadline (the stalled tasks that progressed or ended since are the pass's: State.unstalled).
    progress_timers: Timers = field(default_factory=Timers)



def index_question(state: State, key: tuple[str, str], question: Question) -> None:
    """An open question, by what it holds (operations, its task, everything)."""
    if question.affected == "unknown":
        state.tasks.unknown_questions.add(key)
    elif question.affected == "task":
        state.tasks.task_questions.setdefault(question.task_id, set()).add(key[1])
    else:
        for operation_id in question.affected:
            state.tasks.question_ops.setdefault(operation_id, set()).add(key)


def unindex_question(state: State, key: tuple[str, str], question: Question) -> None:
    if question.affected == "unknown":
        state.tasks.unknown_questions.discard(key)
    elif question.affected == "task":
        keys = state.tasks.task_questions.get(question.task_id)
        if keys is not None:
            keys.discard(key[1])
            if not keys:
                del state.tasks.task_questions[question.task_id]
    else:
        for operation_id in question.affected:
            listed = state.tasks.question_ops.get(operation_id)
            if listed is not None:
                listed.discard(key)
                if not listed:
                    del state.tasks.question_ops[operation_id]


# ------------------------------------------- what other areas ask of a task


def add_task_action(state: State, task_id: str, operation_id: str) -> None:
    """An action proposed for the task (the actions area's ActionProposed)."""
    state.tasks.by_id[task_id].actions.append(operation_id)


__all__ = ['add_task_action', 'index_question', 'unindex_question', 'TasksState', 'Task', 'Question']  # re-exported by domain/records.py
