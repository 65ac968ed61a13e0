"""The `conversations` view: identity, epoch, binding generation, intent and queue."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain.lifecycles import DELIVERY
from tandem.projections.base import View, rfc3339, sorted_rows


class ConversationsView(View):
    name = "conversations"

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, Any]] = {}
        self.running: dict[str, str] = {}  # conversation -> running turn
        self.delivery_rows: dict[str, dict[str, Any]] = {}
        self.recovery: dict[str, bool] = {}
        self.failure_held: dict[str, bool] = {}

    def _opened(self, event: ev.ConversationOpened) -> None:
        self.rows[event.conversation_id] = {
            "conversation_id": event.conversation_id,
            "role": event.role,
            "state": "idle",
            "epoch": 1,
            "generation": None,
            "intent_revision": 0,
            "synced_intent_revision": 0,
            "queue": [],
            "context_tokens": 0,
            "deliveries": [],
            "provider": event.provider if event.provider is not UNSET else None,  # contract v1.2 section 4.3
            # Contract v1.2 section 3.10:
            "refusals": 0,
            "deferred": None,
            "checkpoint": None,  # contract v1.2 section 5.5
        }

    def _bound(self, event: ev.BackgroundBound) -> None:
        self.rows[event.foreground_id]["generation"] = event.generation

    def _queued(self, event: ev.MessageQueued) -> None:
        row = self.rows[event.conversation_id]
        row["queue"].append(event.message_id)
        row["intent_revision"] = event.intent_revision

    def _edited(self, event: ev.QueueEdited) -> None:
        row = self.rows[event.conversation_id]
        if event.op == "withdraw":
            row["queue"].remove(event.message_id)
        row["intent_revision"] = event.intent_revision

    def _synced(self, event: ev.IntentSynced) -> None:
        self.rows[event.conversation_id]["synced_intent_revision"] = event.synced_revision

    def _turn_started(self, event: ev.TurnStarted) -> None:
        self.running[event.conversation_id] = event.turn_id

    def _delivery(self, event: ev.DeliveryCreated) -> None:
        row = self.rows[event.conversation_id]
        delivery: dict[str, Any]
        row["deliveries"].append(
            delivery := {
                "delivery_id": event.delivery_id,
                "turn_id": event.turn_id,
                "epoch": event.epoch,
                "kind": event.kind,
                "included": [[cause_key, revision] for cause_key, revision in event.included],
                "messages": list(event.messages),
                "tokens": event.tokens,
                "attempt_state": DELIVERY.after[ev.DeliveryCreated],
                "checkpoint": event.checkpoint if event.checkpoint is not UNSET else None,  # v1.2 section 5.5
            }
        )
        self.delivery_rows[event.delivery_id] = delivery
        if event.messages:
            sent = set(event.messages)
            row["queue"] = [m for m in row["queue"] if m not in sent]

    def _receipted(self, event: ev.DeliveryReceipted) -> None:
        self.delivery_rows[event.delivery_id]["attempt_state"] = event.attempt_state
        row = self.rows[event.conversation_id]
        row["context_tokens"] = event.context_tokens
        if event.attempt_state == "accepted":
            row["refusals"] = 0
        elif event.attempt_state in ("refused", "not_received"):
            row["refusals"] += 1

    def _turn_ended(self, event: ev.TurnEnded) -> None:
        self.running.pop(event.conversation_id, None)
        row = self.rows[event.conversation_id]
        row["queue"] = list(event.requeued) + row["queue"]

    def _reset(self, event: ev.ContextReset) -> None:
        row = self.rows[event.conversation_id]
        row["epoch"] = event.epoch
        row["context_tokens"] = 0

    def _recovery(self, event: ev.RecoveryChanged) -> None:
        self.recovery[event.conversation_id] = event.recovery is not None

    def _failure_hold(self, event: ev.FailureHoldChanged) -> None:
        self.failure_held[event.conversation_id] = event.held
        if not event.held:
            self.rows[event.conversation_id]["refusals"] = 0  # the human's release (contract v1.2 section 3.6)

    def _deferred(self, event: ev.DeliveryDeferred) -> None:
        deferred = None if event.reason is None else {"until": rfc3339(event.until), "reason": event.reason}
        self.rows[event.conversation_id]["deferred"] = deferred

    def _checkpointed(self, event: ev.BackgroundCheckpointed) -> None:
        self.rows[event.conversation_id]["checkpoint"] = {
            "checkpoint_id": event.checkpoint_id,
            "at": rfc3339(event.at),
            "generation": event.generation,
            "epoch": event.epoch,
            "intent_revision": event.intent_revision,
            "sync_cursor": event.sync_cursor,
            "investigations": list(event.investigations),
            "evidence_refs": list(event.evidence_refs),
            "tokens": event.tokens,
        }

    def _usage(self, event: ev.UsageReported) -> None:
        if event.conversation_id is not None and event.context_tokens is not None:
            self.rows[event.conversation_id]["context_tokens"] = event.context_tokens

    handlers = {
        ev.ConversationOpened: _opened,
        ev.BackgroundBound: _bound,
        ev.MessageQueued: _queued,
        ev.QueueEdited: _edited,
        ev.IntentSynced: _synced,
        ev.UsageReported: _usage,
        ev.TurnStarted: _turn_started,
        ev.DeliveryCreated: _delivery,
        ev.DeliveryReceipted: _receipted,
        ev.TurnEnded: _turn_ended,
        ev.ContextReset: _reset,
        ev.RecoveryChanged: _recovery,
        ev.FailureHoldChanged: _failure_hold,
        ev.DeliveryDeferred: _deferred,
        ev.BackgroundCheckpointed: _checkpointed,
    }

    def render(self) -> list[dict[str, Any]]:
        rows = sorted_rows(self.rows)
        for row in rows:
            conversation_id = row["conversation_id"]
            # The first that applies (contract section 7).
            if self.recovery.get(conversation_id):
                row["state"] = "context_recovery_required"
            elif self.failure_held.get(conversation_id):
                row["state"] = "failure_held"
            elif conversation_id in self.running:
                row["state"] = "running"
            else:
                row["state"] = "idle"
        return rows
