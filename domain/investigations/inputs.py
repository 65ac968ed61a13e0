"""The input kinds of the investigations area: one tagged msgspec Struct per kind, fields
of bounded types (domain/input_base.py); domain/inputs.py assembles every
area's into the one union a trace line is decoded into."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from msgspec import UNSET, Meta, UnsetType
from tandem.domain.input_base import Actor, Identifier, Input, Revision, Tokens

evidence_refs_max = 256  # a checkpoint's (and a closed investigation's) evidence refs


summary_chars_max = 16_384  # a checkpoint's bounded summary


EvidenceRefs = Annotated[list[Identifier], Meta(max_length=evidence_refs_max)]


class OpenInvestigation(Input, tag="investigation.open"):
    actors: ClassVar[tuple[Actor, ...]] = ("background",)
    conversation_id: Identifier
    generation: Revision
    investigation_id: Identifier
    cause_key: Identifier
    task_id: Identifier | UnsetType = UNSET


class CloseInvestigation(Input, tag="investigation.close"):
    actors: ClassVar[tuple[Actor, ...]] = ("background",)
    conversation_id: Identifier
    generation: Revision
    investigation_id: Identifier
    outcome: Literal["concluded", "abandoned", "delegated"]
    evidence_refs: EvidenceRefs = []
    operation_id: Identifier | UnsetType = UNSET

    def __post_init__(self) -> None:
        if (self.outcome == "delegated") != (self.operation_id is not UNSET):
            raise ValueError("`operation_id` is required with outcome `delegated`, and only with it")


class CheckpointBackground(Input, tag="background.checkpoint"):
    actors: ClassVar[tuple[Actor, ...]] = ("background",)
    conversation_id: Identifier
    generation: Revision
    epoch: Annotated[int, Meta(ge=1)]
    intent_revision: Revision
    sync_cursor: Identifier
    evidence_refs: EvidenceRefs = []
    summary: Annotated[str, Meta(max_length=summary_chars_max)] = ""
    tokens: Tokens | UnsetType = UNSET


__all__ = ['OpenInvestigation', 'CloseInvestigation', 'CheckpointBackground']  # every name here is the registry's: `inp.Name`
