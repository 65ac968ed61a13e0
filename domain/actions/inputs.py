"""The input kinds of the actions area: one tagged msgspec Struct per kind, fields
of bounded types (domain/input_base.py); domain/inputs.py assembles every
area's into the one union a trace line is decoded into."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from msgspec import UNSET, Meta, Struct, UnsetType
from tandem.domain.input_base import (
    Actor,
    Identifier,
    Input,
    Revision,
    Text,
    Tokens,
    list_items_max,
    require_exactly_one,
    require_from,
)


class Prerequisite(Struct, frozen=True, forbid_unknown_fields=True):
    operation_id: Identifier
    outcome: Literal["succeeded"]
    artifact_revision: Identifier | UnsetType = UNSET
    # Contract v1.2 section 2.5: the dependent stays pending until it has evidence.
    evidence_required: bool | UnsetType = UNSET


class InputRevisions(Struct, frozen=True, forbid_unknown_fields=True):
    grant: Revision
    task: Revision | UnsetType = UNSET
    intent: Revision | UnsetType = UNSET


class ProposeAction(Input, tag="action.propose"):
    actors: ClassVar[tuple[Actor, ...]] = ("background", "daemon", "human")
    operation_id: Identifier
    cause_key: Identifier
    operation: Identifier
    target: Text
    resource: Identifier
    grant_id: Identifier
    input_revisions: InputRevisions
    write_paths: Annotated[list[Text], Meta(max_length=list_items_max)] = []
    task_id: Identifier | UnsetType = UNSET
    rule_id: Identifier | UnsetType = UNSET
    prerequisites: Annotated[list[Prerequisite], Meta(max_length=list_items_max)] = []
    unattended: bool = True
    generation: Revision | UnsetType = UNSET
    # Contract v1.2 section 2.1: the cause's revision it answers, rechecked before every claim.
    source_revision: Revision | UnsetType = UNSET
    target_sha: Identifier | UnsetType = UNSET
    moot_statuses: Annotated[list[Text], Meta(max_length=list_items_max)] | UnsetType = UNSET
    # Contract v1.2 section 1.4: the worker runtime that will execute it.
    runtime_id: Identifier | UnsetType = UNSET
    priority: Literal["normal", "maintenance"] | UnsetType = UNSET  # contract v1.2 section 8.1

    def __post_init__(self) -> None:
        self.check_named_sender()  # naming no actor, it is checked by decode_input, for its sender

    def check_sent_by(self, sender: str | None) -> None:
        require_exactly_one(self, "task_id", "rule_id")
        require_from(self, sender, "background", "generation")
        for name in ("target_sha", "moot_statuses"):
            if getattr(self, name) is not UNSET and self.source_revision is UNSET:
                raise ValueError(f"`{name}` needs `source_revision`")


class RevalidateAction(Input, tag="action.revalidate"):
    actors: ClassVar[tuple[Actor, ...]] = ("background", "human")
    operation_id: Identifier
    input_revisions: InputRevisions
    generation: Revision | UnsetType = UNSET
    source_revision: Revision | UnsetType = UNSET  # contract v1.2 section 2.3

    def __post_init__(self) -> None:
        self.check_named_sender()  # naming no actor, it is checked by decode_input, for its sender

    def check_sent_by(self, sender: str | None) -> None:
        require_from(self, sender, "background", "generation")


class CancelAction(Input, tag="action.cancel"):
    operation_id: Identifier


class ExecutorReceipt(Input, tag="executor.receipt"):
    actors: ClassVar[tuple[Actor, ...]] = ("executor",)
    operation_id: Identifier
    attempt_id: Identifier
    result: Literal["queued", "accepted", "refused", "unknown"]


class ExecutorReconcile(Input, tag="executor.reconcile"):
    actors: ClassVar[tuple[Actor, ...]] = ("executor", "daemon")
    operation_id: Identifier
    attempt_id: Identifier
    observed: Literal["accepted", "not_received"]


class ExecutorOutcome(Input, tag="executor.outcome"):
    actors: ClassVar[tuple[Actor, ...]] = ("executor",)
    operation_id: Identifier
    outcome: Literal["succeeded", "failed", "cancelled"]
    artifact_revision: Identifier | UnsetType = UNSET
    evidence_ref: Identifier | UnsetType = UNSET


class AttachEvidence(Input, tag="evidence.attach"):
    """Contract v1.2 section 2.5: evidence of a succeeded action, after its outcome."""
    actors: ClassVar[tuple[Actor, ...]] = ("executor", "source")

    operation_id: Identifier
    evidence_ref: Identifier
    artifact_revision: Identifier | UnsetType = UNSET


class ReportUsage(Input, tag="usage.report"):
    actors: ClassVar[tuple[Actor, ...]] = ("daemon", "executor")
    conversation_id: Identifier | UnsetType = UNSET
    operation_id: Identifier | UnsetType = UNSET
    input_tokens: Tokens | UnsetType = UNSET
    cached_input_tokens: Tokens | UnsetType = UNSET
    cache_write_tokens: Tokens | UnsetType = UNSET
    output_tokens: Tokens | UnsetType = UNSET
    context_tokens: Tokens | UnsetType = UNSET

    def __post_init__(self) -> None:
        require_exactly_one(self, "conversation_id", "operation_id")


class PauseScope(Input, tag="scope.pause"):
    scope: Identifier


class ResumeScope(Input, tag="scope.resume"):
    scope: Identifier


__all__ = ['Prerequisite', 'InputRevisions', 'ProposeAction', 'RevalidateAction', 'CancelAction', 'ExecutorReceipt', 'ExecutorReconcile', 'ExecutorOutcome', 'AttachEvidence', 'ReportUsage', 'PauseScope', 'ResumeScope']  # every name here is the registry's: `inp.Name`
