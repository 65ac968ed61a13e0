"""The events of the conversation area: immutable facts, in the past tense, one frozen
msgspec Struct each (domain/events.py assembles every area's into the one
union the log is written in)."""

from __future__ import annotations

from msgspec import UNSET, UnsetType
from tandem.domain.event_base import (  # the bases, re-exported: `ev.Decision`
    Decision,
)
from tandem.domain.facts import (  # the Structs events carry: `ev.BlockFact` is facts.BlockFact
    CandidateUpdate,
    DeliveryBudget,
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


class TurnStarted(Decision, frozen=True, kw_only=True):
    conversation_id: str
    turn_id: str
    epoch: int
    kind: str  # "human" or "wake"
    rule: str = ""  # the contract section 5.3 rule that applied: "human_turn" (3) or "wake" (4)


class DeliveryCreated(Decision, frozen=True, kw_only=True):
    """A manifest frozen before any provider I/O: exactly which messages and
    (cause, revision) pairs the delivery holds, in which epoch."""

    conversation_id: str
    delivery_id: str
    turn_id: str | None
    epoch: int
    kind: str  # "turn", "steer" or "reseed"
    included: list[tuple[str, int]]
    messages: list[str]
    tokens: int
    control_tokens: int  # a reseed's required part (0 otherwise)
    # Why (contract section 5.3): the rule that applied ("human_turn", "wake", "steer",
    # "reseed"), the budget, and the ranked updates considered (at most
    # `candidates_recorded_max`; `candidates_total` counts them all).
    rule: str = ""
    budget: DeliveryBudget | None = None
    candidates: list[CandidateUpdate] = []
    candidates_total: int = 0
    checkpoint: str | UnsetType = UNSET  # a background reseed's (contract v1.2 section 5.3)


class DeliveryReceipted(Decision, frozen=True, kw_only=True):
    """A provider receipt or reconcile: the delivery's new attempt state."""

    conversation_id: str
    delivery_id: str
    attempt_state: str  # accepted, unknown, refused, not_received
    context_tokens: int  # the conversation's context after it
    # It holds nothing from now on: refused or not received, or reconciled
    # after its turn failed or was interrupted (it stayed held until now).
    releases: bool = False


class TurnEnded(Decision, frozen=True, kw_only=True):
    conversation_id: str
    turn_id: str
    outcome: str  # completed, failed, interrupted
    requeued: list[str]  # messages put back at the front of the queue, in order
    delivered: list[str] | None
    released: list[str]  # deliveries whose revisions are no longer held
    # The delivery whose refused / not_received receipt ended the turn failed, if that is why.
    delivery_id: str | None = None


class DeliveryComposed(Decision, frozen=True, kw_only=True):
    """A `submitting` delivery's exact payload, recorded before the provider's
    acceptance: where it is stored, the digest of its bytes, the adapter that
    serialized it and its measured size (None when not reported)."""

    conversation_id: str
    delivery_id: str
    payload_ref: str
    payload_digest: str
    adapter: str
    tokens: int | None
__all__ = ['ConversationOpened', 'BackgroundBound', 'MessageQueued', 'QueueEdited', 'IntentSynced', 'ContextReset', 'RecoveryChanged', 'ApprovalOpened', 'ApprovalResolved', 'FailureHoldChanged', 'TurnStarted', 'DeliveryCreated', 'DeliveryReceipted', 'TurnEnded', 'DeliveryComposed']
