"""The events of the conversation area: immutable facts, in the past tense, one frozen
msgspec Struct each (domain/events.py assembles every area's into the one
union the log is written in)."""

from __future__ import annotations

from msgspec import UNSET, UnsetType
from tandem.domain.event_base import (  # the bases, re-exported: `ev.Decision`
    Decision,
)


class ConversationOpened(Decision, frozen=True, kw_only=True):
    conversation_id: str
    role: str
    context_limit: int
    reserve: int
    steer: bool
    foreground_id: str | None
    provider: str | UnsetType = UNSET  # contract v1.2 section 4.3, only when given


class BackgroundBound(Decision, frozen=True, kw_only=True):
    conversation_id: str
    foreground_id: str
    generation: int


class MessageQueued(Decision, frozen=True, kw_only=True):
    conversation_id: str
    message_id: str
    text: str
    tokens: int | None
    intent_revision: int


class QueueEdited(Decision, frozen=True, kw_only=True):
    conversation_id: str
    message_id: str
    op: str
    text: str | None
    intent_revision: int


class IntentSynced(Decision, frozen=True, kw_only=True):
    conversation_id: str
    synced_revision: int


class ContextReset(Decision, frozen=True, kw_only=True):
    conversation_id: str
    epoch: int
    reason: str


class RecoveryChanged(Decision, frozen=True, kw_only=True):
    conversation_id: str
    recovery: str | None  # "message" (a human turn did not fit), "reseed", or None
    # When the pass enters recovery: the tokens needed (the queued messages,
    # or the reseed's required part) and the room there was.
    needed: int | None = None
    room: int | None = None


class ApprovalOpened(Decision, frozen=True, kw_only=True):
    conversation_id: str
    request_id: str
    detail: str


class ApprovalResolved(Decision, frozen=True, kw_only=True):
    conversation_id: str
    request_id: str


class FailureHoldChanged(Decision, frozen=True, kw_only=True):
    conversation_id: str
    held: bool
    # Contract v1.2 section 3.6: the engine's own hold (`by: "engine"`) after its retries.
    by: str | UnsetType = UNSET
    refusals: int | UnsetType = UNSET
    delivery_retries_max: int | UnsetType = UNSET


__all__ = ['ConversationOpened', 'BackgroundBound', 'MessageQueued', 'QueueEdited', 'IntentSynced', 'ContextReset', 'RecoveryChanged', 'ApprovalOpened', 'ApprovalResolved', 'FailureHoldChanged']  # every name here is the registry's: `ev.Name`
