"""Which ids each event of the conversation area concerns (domain/keys.py says how a
`"kind: path"` is read, and merges every area's `KEYS`)."""

from __future__ import annotations

from tandem.domain import events as ev

KEYS: dict[type[ev.Event], tuple[str, ...]] = {
    ev.ConversationOpened: (),
    ev.BackgroundBound: ("binding: foreground_id",),
    ev.MessageQueued: ("intent: conversation_id",),
    ev.QueueEdited: ("intent: conversation_id",),
    ev.IntentSynced: ("intent: conversation_id",),
    ev.ContextReset: ("conversation: conversation_id",),
    ev.RecoveryChanged: ("conversation: conversation_id",),
    ev.ApprovalOpened: ("approval: conversation_id/request_id",),
    ev.ApprovalResolved: ("approval: conversation_id/request_id",),
    ev.FailureHoldChanged: (),
    ev.TurnStarted: ("turn: turn_id",),
    ev.DeliveryCreated: ("delivery: delivery_id", "turn: turn_id", "update: included[].0", "checkpoint: checkpoint"),
    ev.DeliveryReceipted: ("delivery: delivery_id",),
    ev.TurnEnded: ("turn: turn_id", "delivery: released[]", "delivery: delivery_id"),
    ev.DeliveryComposed: ("delivery: delivery_id",),
}
