"""The input kinds of the conversation area: one tagged msgspec Struct per kind, fields
of bounded types (domain/input_base.py); domain/inputs.py assembles every
area's into the one union a trace line is decoded into."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from msgspec import UNSET, Meta, UnsetType
from tandem.domain.input_base import (
    Actor,
    Count,
    Identifier,
    Input,
    Positive,
    Revision,
    Text,
    Tokens,
    list_items_max,
)


class OpenConversation(Input, tag="conversation.open"):
    actors: ClassVar[tuple[Actor, ...]] = ("daemon",)
    conversation_id: Identifier
    role: Literal["foreground", "background"]
    context_limit: Positive
    reserve: Count
    steer: bool = False
    foreground_id: Identifier | UnsetType = UNSET
    provider: Identifier | UnsetType = UNSET  # contract v1.2 section 4.3: the provider account

    def __post_init__(self) -> None:
        if self.role == "background" and self.foreground_id is UNSET:
            raise ValueError("a background conversation needs `foreground_id`")
        if self.role == "foreground" and self.foreground_id is not UNSET:
            raise ValueError("`foreground_id` is only for a background conversation")


class BindBackground(Input, tag="background.bind"):
    actors: ClassVar[tuple[Actor, ...]] = ("daemon",)
    conversation_id: Identifier
    foreground_id: Identifier
    generation: Revision


class HumanMessage(Input, tag="human.message"):
    conversation_id: Identifier
    message_id: Identifier
    text: Text
    tokens: Tokens | UnsetType = UNSET


class EditQueue(Input, tag="human.queue_edit"):
    conversation_id: Identifier
    message_id: Identifier
    op: Literal["edit", "withdraw"]
    text: Text | UnsetType = UNSET

    def __post_init__(self) -> None:
        if self.op == "edit" and self.text is UNSET:
            raise ValueError("`op: edit` needs `text`")
        if self.op == "withdraw" and self.text is not UNSET:
            raise ValueError("`op: withdraw` takes no `text`")


class SyncIntent(Input, tag="intent.synced"):
    actors: ClassVar[tuple[Actor, ...]] = ("background",)
    conversation_id: Identifier
    intent_revision: Revision
    generation: Revision


class ResetContext(Input, tag="context.reset"):
    actors: ClassVar[tuple[Actor, ...]] = ("daemon",)
    conversation_id: Identifier
    reason: Literal["compaction", "rollover", "fork", "rollback", "handoff", "provider_loss"]


class RequireApproval(Input, tag="approval.required"):
    actors: ClassVar[tuple[Actor, ...]] = ("daemon",)
    conversation_id: Identifier
    request_id: Identifier
    detail: Text


class ResolveApproval(Input, tag="approval.resolved"):
    conversation_id: Identifier
    request_id: Identifier


class HoldFailure(Input, tag="hold.failure"):
    actors: ClassVar[tuple[Actor, ...]] = ("daemon",)
    conversation_id: Identifier


class ReleaseHold(Input, tag="hold.release"):
    conversation_id: Identifier


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
__all__ = ['OpenConversation', 'BindBackground', 'HumanMessage', 'EditQueue', 'SyncIntent', 'ResetContext', 'RequireApproval', 'ResolveApproval', 'HoldFailure', 'ReleaseHold', 'ProviderReceipt', 'ProviderReconcile', 'EndTurn', 'ComposeDelivery']
