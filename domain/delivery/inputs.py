"""The input kinds of the delivery area: one tagged msgspec Struct per kind, fields
of bounded types (domain/input_base.py); domain/inputs.py assembles every
area's into the one union a trace line is decoded into."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from msgspec import UNSET, Meta, UnsetType
from tandem.domain.input_base import (
    Actor,
    Identifier,
    Input,
    Tokens,
    list_items_max,
)


class ProviderReceipt(Input, tag="provider.receipt"):
    actors: ClassVar[tuple[Actor, ...]] = ("daemon",)
    delivery_id: Identifier
    result: Literal["accepted", "unknown", "refused"]


class ProviderReconcile(Input, tag="provider.reconcile"):
    actors: ClassVar[tuple[Actor, ...]] = ("daemon",)
    delivery_id: Identifier
    observed: Literal["accepted", "not_received"]


class EndTurn(Input, tag="turn.ended"):
    actors: ClassVar[tuple[Actor, ...]] = ("daemon",)
    turn_id: Identifier
    outcome: Literal["completed", "failed", "interrupted"]
    delivered: Annotated[list[Identifier], Meta(max_length=list_items_max)] | UnsetType = UNSET


# Contract v1.2 section 6: `sha256:` and 64 lowercase hex digits (schema).
PayloadDigest = Annotated[str, Meta(pattern="^sha256:[0-9a-f]{64}$")]


class ComposeDelivery(Input, tag="delivery.composed"):
    actors: ClassVar[tuple[Actor, ...]] = ("daemon",)
    delivery_id: Identifier
    payload_ref: Identifier
    payload_digest: PayloadDigest
    adapter: Identifier
    tokens: Tokens | UnsetType = UNSET


__all__ = ['ProviderReceipt', 'ProviderReconcile', 'EndTurn', 'ComposeDelivery']  # every name here is the registry's: `inp.Name`
