"""The input kinds of the inbox area: one tagged msgspec Struct per kind, fields
of bounded types (domain/input_base.py); domain/inputs.py assembles every
area's into the one union a trace line is decoded into."""

from __future__ import annotations

import datetime
from typing import Annotated, ClassVar, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType
from tandem.domain.input_base import (
    Actor,
    Identifier,
    Input,
    Revision,
    Text,
    Tokens,
)


class Observe(Input, tag="observe"):
    actors: ClassVar[tuple[Actor, ...]] = ("source",)
    # What an observation is (ObservationFields, below, is made of these
    # fields); `observation()` gives that shape.
    source_id: Identifier
    kind: Identifier
    scope: Text
    fingerprint: Text
    complete: bool
    cause_key: Identifier | UnsetType = UNSET
    source_version: Identifier | UnsetType = UNSET
    status: Text | UnsetType = UNSET
    commit_sha: Identifier | UnsetType = UNSET
    text: Text | UnsetType = UNSET
    evidence_ref: Identifier | UnsetType = UNSET
    tokens: Tokens | UnsetType = UNSET
    deleted: bool = False
    origin_conversation: Identifier | UnsetType = UNSET
    # Contract v1.1 (section 10): unset when left out, so a v1 input is stored as before.
    subject: Identifier | UnsetType = UNSET
    source_time: Annotated[datetime.datetime, Meta(tz=True)] | UnsetType = UNSET
    truncated: bool | UnsetType = UNSET
    batch_id: Identifier | UnsetType = UNSET  # contract v1.2 section 7.1
    # Extension (docs/sources.md): recorded for audit, counted on its cause's
    # inbox row, never a revision, a repeat, out of order or a batch member.
    ignored: bool | UnsetType = UNSET

    def observation(self) -> ObservationFields:
        return ObservationFields(**{f: getattr(self, f) for f in ObservationFields.__struct_fields__})


def _observation_fields() -> type[Struct]:
    """Observe's own fields (not those every input has) as a Struct of their
    own: an observation where another input carries it (consumer.reconcile's
    facts, consumer.observe's). Made from Observe's, so written once
    (msgspec Structs cannot inherit fields from two bases)."""
    common = set(Input.__struct_fields__)
    fields = [
        (f.name, f.type) if f.required else (f.name, f.type, f.default)
        for f in msgspec.structs.fields(Observe)
        if f.name not in common
    ]
    return msgspec.defstruct(
        "ObservationFields", fields, frozen=True, forbid_unknown_fields=True, kw_only=True, module=__name__
    )


ObservationFields = _observation_fields()


class ClassifyTriage(Input, tag="triage.classify"):
    actors: ClassVar[tuple[Actor, ...]] = ("background",)
    conversation_id: Identifier
    generation: Revision
    cause_key: Identifier
    update_revision: Revision
    disposition: Literal["routine", "actionable", "urgent", "needs_input"]
    action_priority: int
    notification_priority: int


class ProposeCard(Input, tag="card.propose"):
    actors: ClassVar[tuple[Actor, ...]] = ("background",)
    card_id: Identifier
    cause_key: Identifier
    summary: Text
    generation: Revision


__all__ = ['ObservationFields', 'Observe', 'ClassifyTriage', 'ProposeCard']  # every name here is the registry's: `inp.Name`
