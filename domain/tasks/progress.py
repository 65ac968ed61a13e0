"""Task progress against its deadline (contract v1.2 section 4.4). A task's
progress (its delegation, revisions, its actions proposed, claimed, accepted
and finished, its holds lifting) restarts its clock; an active, unheld task
that reaches `last_progress_at + progress_deadline_s` is stalled.

The task's progress fields and the timers are the tasks area's; the actions
area notes progress through `note_progress`; the alerts area's time rules
read `progress_due` in the order of contract v1.2 section 9 and raise and
resolve no_progress.
"""

from __future__ import annotations

import datetime
from typing import Any

from tandem.domain import events as ev
from tandem.domain.records import Task
from tandem.domain.state import State


def progress_due(state: State, cause: int) -> tuple[datetime.datetime, ev.TaskStalled] | None:
    """The earliest progress due time (ties by task id) and its stall."""
    entries = state.tasks.progress_timers.entries
    if not entries:
        return None
    due_at, task_id = entries[0]
    task = state.tasks.by_id[task_id]
    assert task.last_progress_at is not None and task.progress_deadline_s is not None
    return due_at, ev.TaskStalled(
        cause=cause,
        task_id=task_id,
        due_at=due_at,
        last_progress_at=task.last_progress_at,
        last_progress_event=task.last_progress_event,
        progress_deadline_s=task.progress_deadline_s,
    )


def note_progress(state: State, task_id: str, event_name: str) -> None:
    """Section 4.4: the task progressed now (the input's `at`): its clock
    restarts, and a raised no_progress is to be resolved (`state.unstalled`
    keeps it until the alerts area resolves it)."""
    task = state.tasks.by_id[task_id]
    task.last_progress_at = state.last_at
    task.last_progress_event = event_name
    if task.stalled_at is not None:
        task.stalled_at = None
        state.unstalled.add(task_id)
    reschedule_progress(state, task)


def reschedule_progress(state: State, task: Task) -> None:
    """Keep the task's progress timer in step: due at last progress +
    deadline while it is active, unheld and not stalled; no timer otherwise."""
    if task.progress_due_at is not None:
        state.tasks.progress_timers.discard((task.progress_due_at, task.task_id))
        task.progress_due_at = None
    if task.state == "active" and task.progress_deadline_s is not None and not task.holds and task.stalled_at is None:
        assert task.last_progress_at is not None
        task.progress_due_at = task.last_progress_at + datetime.timedelta(seconds=task.progress_deadline_s)
        state.tasks.progress_timers.add((task.progress_due_at, task.task_id))


def task_ended(state: State, task: Task) -> None:
    """A task no longer active: no timer, and its no_progress is resolved."""
    if task.stalled_at is not None:
        task.stalled_at = None
        state.unstalled.add(task.task_id)
    reschedule_progress(state, task)


def _task_stalled(state: State, event: ev.TaskStalled) -> None:
    task = state.tasks.by_id[event.task_id]
    task.stalled_at = state.last_at
    reschedule_progress(state, task)  # raised once per occurrence: no timer until it progresses


DECIDERS: dict[type, Any] = {}
EVOLVERS = {ev.TaskStalled: _task_stalled}
REACTIONS: dict[type, Any] = {}
