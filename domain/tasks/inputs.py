"""The input kinds of the tasks area: one tagged msgspec Struct per kind, fields
of bounded types (domain/input_base.py); domain/inputs.py assembles every
area's into the one union a trace line is decoded into."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from msgspec import UNSET, Meta, UnsetType
from tandem.domain.authority.inputs import GrantRequest
from tandem.domain.input_base import (
    Actor,
    Identifier,
    Input,
    Positive,
    Revision,
    Text,
    list_items_max,
    require_one_of,
)


class DelegateTask(Input, tag="task.delegate"):
    task_id: Identifier
    conversation_id: Identifier
    message_refs: Annotated[list[Identifier], Meta(max_length=list_items_max)]
    goal: Text
    done_when: Annotated[list[Text], Meta(min_length=1, max_length=list_items_max)]
    grant: GrantRequest
    constraints: dict[str, Any] | UnsetType = UNSET
    fallback_decisions: dict[str, Text] | UnsetType = UNSET
    depends_on: Annotated[list[Identifier], Meta(max_length=list_items_max)] | UnsetType = UNSET
    progress_deadline_s: Positive | UnsetType = UNSET  # contract v1.2 section 4.4


class ReviseTask(Input, tag="task.revise"):
    task_id: Identifier
    expected_revision: Revision
    goal: Text | UnsetType = UNSET
    done_when: Annotated[list[Text], Meta(min_length=1, max_length=list_items_max)] | UnsetType = UNSET
    constraints: dict[str, Any] | UnsetType = UNSET
    fallback_decisions: dict[str, Text] | UnsetType = UNSET
    progress_deadline_s: Positive | UnsetType = UNSET  # contract v1.2 section 4.4

    def __post_init__(self) -> None:
        require_one_of(self, "goal", "done_when", "constraints", "fallback_decisions", "progress_deadline_s")


class CancelTask(Input, tag="task.cancel"):
    task_id: Identifier


class CompleteTask(Input, tag="task.complete"):
    actors: ClassVar[tuple[Actor, ...]] = ("background", "human")
    task_id: Identifier
    evidence_refs: Annotated[list[Identifier], Meta(min_length=1, max_length=list_items_max)]


class RaiseQuestion(Input, tag="question.raise"):
    actors: ClassVar[tuple[Actor, ...]] = ("background", "foreground")
    task_id: Identifier
    question_key: Identifier
    recipient: Identifier
    blocking_reason: Text
    affected: Annotated[list[Identifier], Meta(max_length=list_items_max)] | Literal["task", "unknown"]
    evidence_revision: Revision


class AnswerQuestion(Input, tag="question.answer"):
    task_id: Identifier
    question_key: Identifier
    answer: Text


__all__ = ['DelegateTask', 'ReviseTask', 'CancelTask', 'CompleteTask', 'RaiseQuestion', 'AnswerQuestion']  # every name here is the registry's: `inp.Name`
