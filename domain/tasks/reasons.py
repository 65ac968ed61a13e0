"""The reason codes of the tasks area, each with its words: the rejections its
deciders are the first to raise (contract Appendix A and v1.2 section 13:
when each is given) and the blocking codes it is the cause of (why a pending
action is not claimed). domain/reasons.py merges every area's and keeps the
codes several areas share."""

from __future__ import annotations

REJECTIONS: dict[str, str] = {
    "unknown_question": "`question.answer` of a question that does not exist",
    "work_outstanding": "one of its actions is not terminal",
    "unverified": "none of its actions `succeeded`",
}
BLOCKS: dict[str, str] = {
    "question_hold": "held by an open question",
    "wider_hold": "held by a question whose scope is unknown",
    "task_held": "a task it depends on is not completed",
}
# A task's own holds (the tasks view's `held_by`), in words.
HOLDS: dict[str, str] = {
    "question_hold": "held by an open question",
    "wider_hold": "held by a question whose scope is unknown",
    "scope_paused": "paused",
    "task_held": "a task it depends on is not completed",
}
