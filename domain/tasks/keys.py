"""Which ids each event of the tasks area concerns (domain/keys.py says how a
`"kind: path"` is read, and merges every area's `KEYS`)."""

from __future__ import annotations

from tandem.domain import events as ev

KEYS: dict[type[ev.Event], tuple[str, ...]] = {
    ev.TaskDelegated: ("task: task_id",),
    ev.TaskRevised: ("task: task_id", "action: fenced[]"),
    ev.TaskCompleted: ("task: task_id",),
    ev.TaskCancelled: ("task: task_id",),
    ev.QuestionRaised: ("question: task_id/question_key", "task: task_id"),
    ev.QuestionAnswered: ("question: task_id/question_key", "task: task_id"),
    ev.QuestionResurfaced: ("question: task_id/question_key",),
    ev.TaskHoldsChanged: ("task: task_id", "holds: facts[].questions[].task_id/question_key"),
    ev.TaskStalled: ("task: task_id",),
}
