"""The input kinds of the consumer area: one tagged msgspec Struct per kind, fields
of bounded types (domain/input_base.py); domain/inputs.py assembles every
area's into the one union a trace line is decoded into."""

from __future__ import annotations

from typing import Annotated, ClassVar

from msgspec import Meta, Struct
from tandem.domain.inbox.inputs import ObservationFields
from tandem.domain.input_base import (
    Actor,
    Count,
    Identifier,
    Input,
    list_items_max,
)


class LogEntry(Struct, frozen=True, forbid_unknown_fields=True):
    seq: Count
    observation: ObservationFields


class LogBatch(Input, tag="log.batch"):
    actors: ClassVar[tuple[Actor, ...]] = ("source",)
    consumer_id: Identifier
    epoch: Count
    entries: Annotated[list[LogEntry], Meta(max_length=list_items_max)]


class LogPruned(Input, tag="log.pruned"):
    actors: ClassVar[tuple[Actor, ...]] = ("source",)
    consumer_id: Identifier
    epoch: Count
    max_deleted_seq: Count


class LogReconcile(Input, tag="log.reconcile"):
    actors: ClassVar[tuple[Actor, ...]] = ("source",)
    consumer_id: Identifier
    reconciliation_id: Identifier
    epoch: Count
    retained_head: Count
    facts: Annotated[list[ObservationFields], Meta(max_length=list_items_max)]


__all__ = ['LogEntry', 'LogBatch', 'LogPruned', 'LogReconcile']  # every name here is the registry's: `inp.Name`
