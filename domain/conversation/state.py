"""The conversation area's part of the decision state: its records, one mutable
dataclass per thing, and its part of the State (`state.<area>`: the records
and the indexes over them), written only by this area's code (domain/records.py
gathers every area's records; domain/state.py holds the parts). A record's
`state` starts where its lifecycle starts and moves only as its events say.
Records are pickled in snapshots: their module is part of the snapshot
fingerprint."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tandem.domain.inbox.state import DELIVERABLE_DISPOSITIONS, Update
from tandem.domain.investigations.state import Checkpoint
from tandem.domain.lifecycles import (
    MESSAGE,
)

if TYPE_CHECKING:
    from tandem.domain.state import State
from tandem.domain.lifecycles import (
    DELIVERY,
    TURN,
)


@dataclass(slots=True)
class Message:
    message_id: str
    text: str
    tokens: int | None
    state: str = MESSAGE.initial


@dataclass(slots=True)
class Conversation:
    conversation_id: str
    role: str
    context_limit: int
    reserve: int
    steer: bool
    foreground_id: str | None
    provider: str | None = None  # contract v1.2 section 4.3
    epoch: int = 1
    generation: int | None = None  # the bound background's generation (foreground only)
    background_id: str | None = None
    intent_revision: int = 0
    synced_intent_revision: int = 0
    queue: list[str] = field(default_factory=list)
    messages: dict[str, Message] = field(default_factory=dict)
    context_tokens: int = 0
    tasks: list[str] = field(default_factory=list)
    turns: int = 0  # turn ids issued: {conversation_id}/t{n}, never reused
    deliveries: dict[str, Delivery] = field(default_factory=dict)  # by n: {conversation_id}/d{n}
    running_turn: Turn | None = None
    approvals: dict[str, str] = field(default_factory=dict)  # open request_id -> detail
    failure_held: bool = False
    recovery: str | None = None  # "message" or "reseed": context_recovery_required
    reseed_id: str | None = None  # this epoch's reseed delivery, once made
    reseed_due: bool = False  # a reset asked for a reseed not yet made
    # While in recovery: the tokens needed and the room there was, as last recorded (RecoveryChanged).
    recovery_needed: int | None = None
    recovery_room: int | None = None
    not_steered: set[tuple[str, int]] = field(default_factory=set)  # refused steers, this turn
    last_turn: Turn | None = None  # the turn that ended last (what its end settles)
    # Updates belonging to this foreground whose current revision is not held:
    deliverable: set[str] = field(default_factory=set)  # actionable, urgent, needs_input
    optional: set[str] = field(default_factory=set)  # routine: ride along in a human turn
    urgent: set[str] = field(default_factory=set)  # the deliverable ones triaged urgent
    # Budgets (contract v1.2 sections 3.6, 3.7):
    refusals: int = 0  # refused or not received deliveries since the last accepted one
    refused_at: datetime.datetime | None = None  # the latest of them
    refused_id: str | None = None  # and its delivery
    engine_held: bool = False  # its failure hold is the engine's, after its retries
    last_wake_at: datetime.datetime | None = None  # the previous wake turn's start
    # (reason, until, the urgent update it holds back: v1.2 section 3.7), as the last pass left it
    deferred: tuple[str, datetime.datetime | None, str | None] | None = None
    # Contract v1.2 section 5.2 (a background): its latest checkpoint, and how many it wrote.
    checkpoint: Checkpoint | None = None
    checkpoints: int = 0

    @property
    def intent_unsynced(self) -> bool:
        return self.intent_revision > self.synced_intent_revision

    @property
    def unreseeded(self) -> bool:
        """Contract v1.2 section 5.4 (a background): a reset made its reseed
        due, and that epoch's reseed is not accepted (none made, not settled,
        refused, or too big: context recovery)."""
        if self.reseed_due or self.recovery == "reseed":
            return True
        return self.reseed_id is not None and self.deliveries[self.reseed_id].attempt_state != "accepted"

    @property
    def view_state(self) -> str:
        if self.recovery is not None:
            return "context_recovery_required"
        if self.failure_held:
            return "failure_held"
        return "running" if self.running_turn is not None else "idle"


@dataclass(slots=True)
class ConversationState:
    """The conversation area's part of the decision state (`state.conversation`): written
    only by this area's evolvers, read by others through it."""

    by_id: dict[str, Conversation] = field(default_factory=dict)
    foregrounds: list[str] = field(default_factory=list)  # in id order: the foreground pass's order
    backgrounds: list[str] = field(default_factory=list)  # in id order: the background pass's (v1.2 section 5.3)



def drop_candidate(state: State, update: Update) -> None:
    """The update is no candidate of its foreground's pass (until refreshed)."""
    if update.foreground_id is not None:
        conversation = state.conversation.by_id[update.foreground_id]
        conversation.deliverable.discard(update.cause_key)
        conversation.optional.discard(update.cause_key)
        conversation.urgent.discard(update.cause_key)


def refresh_candidate(state: State, update: Update) -> None:
    """Keep the foreground's deliverable/optional sets in step with the
    update's triage and hold (the foreground pass reads only those sets)."""
    if update.foreground_id is None:
        return
    drop_candidate(state, update)
    if update.triage_state != "triaged" or update.held_by is not None:
        return
    conversation = state.conversation.by_id[update.foreground_id]
    if update.disposition in DELIVERABLE_DISPOSITIONS:
        conversation.deliverable.add(update.cause_key)
        if update.disposition == "urgent":
            conversation.urgent.add(update.cause_key)
    elif update.disposition == "routine":
        conversation.optional.add(update.cause_key)


@dataclass(slots=True)
class Delivery:
    """A context manifest: what one turn, steer or reseed payload held."""

    delivery_id: str
    turn_id: str | None
    epoch: int
    kind: str
    included: list[tuple[str, int]]
    messages: list[str]
    tokens: int
    attempt_state: str = DELIVERY.initial
    released: bool = False  # its turn failed or was interrupted: it holds nothing now
    orphaned: bool = False  # its turn failed while it was unknown: released once reconciled
    payload: Payload | None = None  # its exact payload, once composed (contract v1.2 section 6)
    checkpoint: str | None = None  # a background reseed's checkpoint (contract v1.2 section 5.3)


@dataclass(slots=True, frozen=True)
class Payload:
    """What `delivery.composed` recorded of a delivery's provider payload."""

    ref: str
    digest: str
    adapter: str
    tokens: int | None


@dataclass(slots=True)
class Turn:
    turn_id: str
    epoch: int
    kind: str
    messages: list[str] = field(default_factory=list)
    deliveries: list[str] = field(default_factory=list)
    state: str = TURN.initial


# ------------------------------------- what other areas ask of a conversation


def add_conversation_task(state: State, conversation_id: str, task_id: str) -> None:
    """A task delegated from the conversation (the tasks area's TaskDelegated)."""
    state.conversation.by_id[conversation_id].tasks.append(task_id)


def set_context_tokens(state: State, conversation_id: str, tokens: int) -> None:
    """The conversation's context as a usage report measured it."""
    state.conversation.by_id[conversation_id].context_tokens = tokens


def set_deferred(state: State, conversation_id: str, deferred: tuple[Any, ...] | None) -> None:
    """What holds the conversation's next delivery back (contract v1.2 section 3.7), or None."""
    state.conversation.by_id[conversation_id].deferred = deferred


def record_checkpoint(state: State, conversation_id: str, checkpoint: Checkpoint) -> None:
    """A background's checkpoint (contract v1.2 section 5.2): its latest, counted."""
    conversation = state.conversation.by_id[conversation_id]
    conversation.checkpoints += 1
    conversation.checkpoint = checkpoint


__all__ = ['add_conversation_task', 'set_context_tokens', 'set_deferred', 'record_checkpoint', 'drop_candidate', 'refresh_candidate', 'ConversationState', 'Message', 'Conversation', 'Delivery', 'Payload', 'Turn']
