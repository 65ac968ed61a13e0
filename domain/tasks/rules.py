"""Tasks and questions (contract section 3.2): delegation, revision, cancellation and
completion of a task, and the clarifications raised on it.

A task is delegated with its own grant (narrowed by the authority area);
revising it fences its pending actions (revalidate to go on); cancelling it
cancels or asks to cancel its actions and revokes its grant; completing it
needs every action terminal and one succeeded. An open question holds what
it lists (operations, its task, or everything: `affected: "unknown"`) until
it is answered, which revises the task; it resurfaces every
`question_resurface_s` while it stays open (a timer the alerts area's time
rules read).
"""

from __future__ import annotations

import datetime
from typing import Any

from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain import inputs as inp
from tandem.domain.authority.rules import fence, issue_grant
from tandem.domain.tasks import progress
from tandem.domain.tasks.progress import note_progress, reschedule_progress, task_ended
from tandem.domain.inputs import given
from tandem.domain.lifecycles import ACTION, QUESTION, TASK
from tandem.domain.lookups import known_conversation, known_task
from tandem.domain.reasons import Rejected
from tandem.domain.records import Question, Task
from tandem.domain.tasks.state import index_question, unindex_question
from tandem.domain.conversation.state import add_conversation_task
from tandem.domain.state import State
from tandem.domain.tools.rules import check_background_gates

# ----------------------------------------------------------------- deciders


def decide_delegation(state: State, value: inp.DelegateTask, seq: int) -> list[ev.Event]:
    conversation = known_conversation(state, value.conversation_id)
    depends_on = list(dict.fromkeys(given(value.depends_on) or []))
    for dependency in depends_on:
        known_task(state, dependency)
    grant_event = issue_grant(state, seq, value.grant, value.task_id, None)
    if value.task_id in state.tasks.by_id:
        raise Rejected("already_exists", f"task {value.task_id!r} already exists")
    if value.grant.grant_id in state.authority.grants:
        raise Rejected("already_exists", f"grant {value.grant.grant_id!r} already exists")
    return [
        grant_event,
        ev.TaskDelegated(
            cause=seq,
            task_id=value.task_id,
            conversation_id=conversation.conversation_id,
            message_refs=list(value.message_refs),
            goal=value.goal,
            done_when=list(value.done_when),
            constraints=given(value.constraints) or {},
            fallback_decisions=given(value.fallback_decisions) or {},
            depends_on=depends_on,
            grant_id=value.grant.grant_id,
            progress_deadline_s=value.progress_deadline_s,
        ),
    ]


def decide_task_revision(state: State, value: inp.ReviseTask, seq: int) -> list[ev.Event]:
    task = known_task(state, value.task_id)
    if value.expected_revision != task.revision:
        raise Rejected("stale_revision", f"task {task.task_id!r} is at revision {task.revision}, not {value.expected_revision}")
    if not TASK.allows(task.state, "revise"):
        raise Rejected("task_not_active", f"task {task.task_id!r} is {task.state}")
    return [
        ev.TaskRevised(
            cause=seq,
            task_id=task.task_id,
            revision=task.revision + 1,
            goal=value.goal if value.goal is not UNSET else task.goal,
            done_when=list(value.done_when) if value.done_when is not UNSET else task.done_when,
            constraints=value.constraints if value.constraints is not UNSET else task.constraints,
            fallback_decisions=value.fallback_decisions if value.fallback_decisions is not UNSET else task.fallback_decisions,
            fenced=state.pending_of_task(task.task_id),
            progress_deadline_s=value.progress_deadline_s,
        )
    ]


def decide_task_cancel(state: State, value: inp.CancelTask, seq: int) -> list[ev.Event]:
    task = known_task(state, value.task_id)
    if not TASK.allows(task.state, "cancel"):
        raise Rejected("task_not_active", f"task {task.task_id!r} is {task.state}")
    events: list[ev.Event] = [ev.TaskCancelled(cause=seq, task_id=task.task_id), ev.GrantRevoked(cause=seq, grant_id=task.grant_id)]
    for operation_id in task.actions:
        state_now = state.actions.by_id[operation_id].state
        if ACTION.allows(state_now, "cancel"):
            events.append(ev.ActionCancelled(cause=seq, operation_id=operation_id))
        elif ACTION.allows(state_now, "request_cancel"):
            events.append(ev.ActionCancelRequested(cause=seq, operation_id=operation_id, reason="task_cancelled"))
    return events


def _check_runtime(state: State, value: inp.Input, task: Task) -> None:
    """runtime_not_admitted (contract v1.2 section 1.3): the background bound to the task's conversation."""
    check_background_gates(state, value, [state.conversation.by_id[task.conversation_id].background_id])


def decide_task_completion(state: State, value: inp.CompleteTask, seq: int) -> list[ev.Event]:
    task = known_task(state, value.task_id)
    _check_runtime(state, value, task)
    if not TASK.allows(task.state, "complete"):
        raise Rejected("task_not_active", f"task {task.task_id!r} is {task.state}")
    outstanding = [op for op in task.actions if not state.actions.by_id[op].terminal]
    if outstanding:
        raise Rejected("work_outstanding", f"actions not terminal: {', '.join(outstanding)}")
    if not any(state.actions.by_id[op].state == "succeeded" for op in task.actions):
        raise Rejected("unverified", f"no action of task {task.task_id!r} succeeded")
    return [
        ev.TaskCompleted(cause=seq, task_id=task.task_id, evidence_refs=list(value.evidence_refs)),
        ev.GrantRevoked(cause=seq, grant_id=task.grant_id),
    ]


def decide_question(state: State, value: inp.RaiseQuestion, seq: int) -> list[ev.Event]:
    task = known_task(state, value.task_id)
    _check_runtime(state, value, task)
    if task.state != "active":
        raise Rejected("task_not_active", f"task {task.task_id!r} is {task.state}")
    existing = state.tasks.questions.get((value.task_id, value.question_key))
    affected = list(dict.fromkeys(value.affected)) if isinstance(value.affected, list) else value.affected
    if existing is None:
        first_seen_at, times_raised, reopened = value.at, 1, False
    else:
        if existing.state == "answered" and value.evidence_revision <= existing.evidence_revision:
            raise Rejected(
                "stale_revision",
                f"question {value.question_key!r} was answered at evidence revision {existing.evidence_revision}",
            )
        event_name = "raise_again" if existing.state == "open" else "reopen"
        assert QUESTION.allows(existing.state, event_name)
        first_seen_at, times_raised, reopened = existing.first_seen_at, existing.times_raised + 1, existing.state == "answered"
    return [
        ev.QuestionRaised(
            cause=seq,
            task_id=value.task_id,
            question_key=value.question_key,
            recipient=value.recipient,
            blocking_reason=value.blocking_reason,
            affected=affected,
            evidence_revision=value.evidence_revision,
            times_raised=times_raised,
            first_seen_at=first_seen_at,
            reopened=reopened,
        )
    ]


def decide_answer(state: State, value: inp.AnswerQuestion, seq: int) -> list[ev.Event]:
    task = known_task(state, value.task_id)
    question = state.tasks.questions.get((value.task_id, value.question_key))
    if question is None:
        raise Rejected("unknown_question", f"no question {value.question_key!r} on task {value.task_id!r}")
    if not QUESTION.allows(question.state, "answer"):
        raise Rejected("not_open", f"question {value.question_key!r} is {question.state}")
    return [
        ev.QuestionAnswered(cause=seq, task_id=task.task_id, question_key=value.question_key, answer=value.answer),
        ev.TaskRevised(
            cause=seq,
            task_id=task.task_id,
            revision=task.revision + 1,
            goal=task.goal,
            done_when=task.done_when,
            constraints=task.constraints,
            fallback_decisions={**task.fallback_decisions, value.question_key: value.answer},
            fenced=state.pending_of_task(task.task_id),
        ),
    ]


# ----------------------------------------------------------------- evolvers


def _task_delegated(state: State, event: ev.TaskDelegated) -> None:
    task = Task(
        task_id=event.task_id,
        conversation_id=event.conversation_id,
        message_refs=list(event.message_refs),
        goal=event.goal,
        done_when=list(event.done_when),
        constraints=dict(event.constraints),
        fallback_decisions=dict(event.fallback_decisions),
        depends_on=list(event.depends_on),
        grant_id=event.grant_id,
        state=TASK.after[ev.TaskDelegated],
    )
    state.tasks.by_id[event.task_id] = task
    for dependency in event.depends_on:
        state.tasks.by_id[dependency].dependents.append(event.task_id)
    add_conversation_task(state, event.conversation_id, event.task_id)
    state.dirty_tasks.add(event.task_id)
    task.progress_deadline_s = given(event.progress_deadline_s)
    note_progress(state, event.task_id, "TaskDelegated")


def _task_revised(state: State, event: ev.TaskRevised) -> None:
    task = state.tasks.by_id[event.task_id]
    task.revision = event.revision
    task.goal = event.goal
    task.done_when = list(event.done_when)
    task.constraints = dict(event.constraints)
    task.fallback_decisions = dict(event.fallback_decisions)
    fence(state, event.fenced, event)
    if event.progress_deadline_s is not UNSET:
        task.progress_deadline_s = event.progress_deadline_s
    note_progress(state, event.task_id, "TaskRevised")  # an answer included


def _task_ended(state: State, event: ev.TaskCompleted | ev.TaskCancelled) -> None:
    task_id = event.task_id
    task = state.tasks.by_id[task_id]
    task.state = TASK.after[type(event)]
    task_ended(state, task)
    # Its questions stop holding anything; tasks depending on it change task_held.
    state.touch_task(task_id)
    if any(state.tasks.questions[key].state == "open" for key in state.tasks.unknown_questions if key[0] == task_id):
        state.touch_all_tasks()
    for key in [k for k in state.tasks.questions if k[0] == task_id]:
        question = state.tasks.questions[key]
        if question.state == "open":
            state.tasks.question_timers.discard(_resurface_timer(state, question))  # resurfaces only while its task is active
            if isinstance(question.affected, list):
                state.touch_question(question)


def _question_raised(state: State, event: ev.QuestionRaised) -> None:
    key = (event.task_id, event.question_key)
    task = state.tasks.by_id[event.task_id]
    question = state.tasks.questions.get(key)
    opens = question is None or question.state != "open"
    if question is not None:
        if question.state == "open":
            unindex_question(state, key, question)
            state.touch_question(question)
        else:
            task.open_questions += 1
        question.recipient = event.recipient
        question.blocking_reason = event.blocking_reason
        question.affected = event.affected
        question.evidence_revision = event.evidence_revision
        question.times_raised = event.times_raised
        question.state = QUESTION.after[ev.QuestionRaised]
    else:
        question = Question(
            task_id=event.task_id,
            question_key=event.question_key,
            recipient=event.recipient,
            blocking_reason=event.blocking_reason,
            affected=event.affected,
            evidence_revision=event.evidence_revision,
            first_seen_at=event.first_seen_at,
            times_raised=event.times_raised,
            state=QUESTION.after[ev.QuestionRaised],
        )
        state.tasks.questions[key] = question
        task.open_questions += 1
    index_question(state, key, question)
    state.touch_question(question)
    if opens:
        state.tasks.question_timers.add(_resurface_timer(state, question))


def _resurface_timer(state: State, question: Question) -> tuple[Any, ...]:
    """When an open question next resurfaces: first_seen_at + k x period, new k."""
    due = question.first_seen_at + datetime.timedelta(
        seconds=(question.resurfaced + 1) * state.authority.config.question_resurface_s
    )
    return (due, "question", question.task_id, question.question_key)


def _question_resurfaced(state: State, event: ev.QuestionResurfaced) -> None:
    question = state.tasks.questions[(event.task_id, event.question_key)]
    state.tasks.question_timers.discard(_resurface_timer(state, question))
    question.resurfaced = event.k
    state.tasks.question_timers.add(_resurface_timer(state, question))


def _question_answered(state: State, event: ev.QuestionAnswered) -> None:
    key = (event.task_id, event.question_key)
    question = state.tasks.questions[key]
    unindex_question(state, key, question)
    state.tasks.question_timers.discard(_resurface_timer(state, question))
    question.state = QUESTION.after[ev.QuestionAnswered]
    question.answer = event.answer
    state.tasks.by_id[event.task_id].open_questions -= 1
    state.touch_question(question)


def _task_holds_changed(state: State, event: ev.TaskHoldsChanged) -> None:
    task = state.tasks.by_id[event.task_id]
    task.holds = tuple(event.holds)
    if task.holds or task.state != "active":
        reschedule_progress(state, task)  # held is waiting, not stalled: no timer
    else:
        note_progress(state, task.task_id, "TaskHoldsChanged")  # the holds lifted: its clock restarts


DECIDERS = {
    inp.DelegateTask: decide_delegation,
    inp.ReviseTask: decide_task_revision,
    inp.CancelTask: decide_task_cancel,
    inp.CompleteTask: decide_task_completion,
    inp.RaiseQuestion: decide_question,
    inp.AnswerQuestion: decide_answer,
}
EVOLVERS = {
    ev.TaskDelegated: _task_delegated,
    ev.TaskRevised: _task_revised,
    ev.TaskCompleted: _task_ended,
    ev.TaskCancelled: _task_ended,
    ev.QuestionRaised: _question_raised,
    ev.QuestionResurfaced: _question_resurfaced,
    ev.QuestionAnswered: _question_answered,
    ev.TaskHoldsChanged: _task_holds_changed,
}
REACTIONS: dict[type, Any] = {}

# Task progress against its deadline (contract v1.2 section 4.4), with maps of its own.
MORE_RULES = (progress,)
