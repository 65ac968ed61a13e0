"""The `conversations` view: identity, epoch, binding generation, intent and queue.

Contract v1.2 adds, after the v1 keys: `provider` (section 4.3), `refusals`
and `deferred` (section 3.10), `stop_requested` (section 8.2: while a failure
hold is on a conversation whose turn runs, that turn's id; computed, so a v1
trace with such a hold shows it). A delivery's `display_digest` and
`untrusted` (section 6) are computed here from events every trace records:
the texts of its messages as they were when it was made (after edits), and
which of its causes' included revisions came from an observation.
"""

from __future__ import annotations

import hashlib
from typing import Any

from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain.lifecycles import DELIVERY
from tandem.projections.base import View, rfc3339, sorted_rows


class ConversationsView(View):
    name = "conversations"
    key = "conversation_id"  # each handler returns the conversation it touched

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, Any]] = {}
        self.running: dict[str, str] = {}  # conversation -> running turn
        self.delivery_rows: dict[str, dict[str, Any]] = {}
        self.recovery: dict[str, bool] = {}
        self.failure_held: dict[str, bool] = {}
        # Contract v1.2 section 6: the texts of messages that may still be dispatched,
        # by (conversation, message); and the causes whose current revision was observed.
        self.texts: dict[tuple[str, str], str] = {}
        self.turn_messages: dict[str, list[str]] = {}  # a human turn's messages (forgotten when it completes)
        self.observed: set[str] = set()

    def _opened(self, event: ev.ConversationOpened) -> str:
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
            "stop_requested": None,  # contract v1.2 section 8.2 (computed in render)
            "checkpoint": None,  # contract v1.2 section 5.5
        }
        return event.conversation_id

    def _bound(self, event: ev.BackgroundBound) -> str:
        self.rows[event.foreground_id]["generation"] = event.generation
        return event.foreground_id

    def _queued(self, event: ev.MessageQueued) -> str:
        row = self.rows[event.conversation_id]
        row["queue"].append(event.message_id)
        row["intent_revision"] = event.intent_revision
        self.texts[event.conversation_id, event.message_id] = event.text
        return event.conversation_id

    def _edited(self, event: ev.QueueEdited) -> str:
        row = self.rows[event.conversation_id]
        if event.op == "withdraw":
            row["queue"].remove(event.message_id)
            self.texts.pop((event.conversation_id, event.message_id), None)  # never dispatched now
        else:
            self.texts[event.conversation_id, event.message_id] = event.text or ""
        row["intent_revision"] = event.intent_revision
        return event.conversation_id

    def _observed(self, event: ev.ObservationRecorded) -> bool:
        """Its cause's new revision is external text (contract v1.2 section 6)."""
        if event.update_revision is not None and event.out_of_order is not True:
            self.observed.add(event.cause_key)
        return False  # nothing the view shows changed

    def _revised(self, event: ev.UpdateRevised) -> bool:
        """The engine's own update (an executor outcome): no external text."""
        self.observed.discard(event.cause_key)
        return False

    def _display_digest(self, conversation_id: str, messages: list[str]) -> str | None:
        """`sha256:` + hex SHA-256 of the messages' texts, UTF-8, joined by U+001E."""
        if not messages:
            return None
        joined = "\x1e".join(self.texts[conversation_id, message_id] for message_id in messages)
        return "sha256:" + hashlib.sha256(joined.encode("utf-8")).hexdigest()

    def _synced(self, event: ev.IntentSynced) -> str:
        self.rows[event.conversation_id]["synced_intent_revision"] = event.synced_revision
        return event.conversation_id

    def _turn_started(self, event: ev.TurnStarted) -> str:
        self.running[event.conversation_id] = event.turn_id
        return event.conversation_id

    def _delivery(self, event: ev.DeliveryCreated) -> str:
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
                # Contract v1.2 section 6:
                "payload": None,
                "display_digest": self._display_digest(event.conversation_id, event.messages),
                "untrusted": [cause_key for cause_key, _ in event.included if cause_key in self.observed],
                "checkpoint": event.checkpoint if event.checkpoint is not UNSET else None,  # v1.2 section 5.5
            }
        )
        self.delivery_rows[event.delivery_id] = delivery
        if event.turn_id is not None and event.messages:
            self.turn_messages.setdefault(event.turn_id, []).extend(event.messages)
        if event.messages:
            sent = set(event.messages)
            row["queue"] = [m for m in row["queue"] if m not in sent]
        return event.conversation_id

    def _composed(self, event: ev.DeliveryComposed) -> str:
        self.delivery_rows[event.delivery_id]["payload"] = {
            "ref": event.payload_ref,
            "digest": event.payload_digest,
            "adapter": event.adapter,
            "tokens": event.tokens,
        }
        return event.conversation_id

    def _receipted(self, event: ev.DeliveryReceipted) -> str:
        self.delivery_rows[event.delivery_id]["attempt_state"] = event.attempt_state
        row = self.rows[event.conversation_id]
        row["context_tokens"] = event.context_tokens
        if event.attempt_state == "accepted":
            row["refusals"] = 0
        elif event.attempt_state in ("refused", "not_received"):
            row["refusals"] += 1
        return event.conversation_id

    def _turn_ended(self, event: ev.TurnEnded) -> str:
        self.running.pop(event.conversation_id, None)
        row = self.rows[event.conversation_id]
        row["queue"] = list(event.requeued) + row["queue"]
        handled = self.turn_messages.pop(event.turn_id, [])
        if event.outcome == "completed":
            for message_id in handled:  # handled: never dispatched again
                self.texts.pop((event.conversation_id, message_id), None)
        return event.conversation_id

    def _reset(self, event: ev.ContextReset) -> str:
        row = self.rows[event.conversation_id]
        row["epoch"] = event.epoch
        row["context_tokens"] = 0
        return event.conversation_id

    def _recovery(self, event: ev.RecoveryChanged) -> str:
        self.recovery[event.conversation_id] = event.recovery is not None
        return event.conversation_id

    def _failure_hold(self, event: ev.FailureHoldChanged) -> str:
        self.failure_held[event.conversation_id] = event.held
        if not event.held:
            self.rows[event.conversation_id]["refusals"] = 0  # the human's release (contract v1.2 section 3.6)
        return event.conversation_id

    def _deferred(self, event: ev.DeliveryDeferred) -> str:
        deferred = None if event.reason is None else {"until": rfc3339(event.until), "reason": event.reason}
        self.rows[event.conversation_id]["deferred"] = deferred
        return event.conversation_id

    def _checkpointed(self, event: ev.BackgroundCheckpointed) -> str:
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
        return event.conversation_id

    def _usage(self, event: ev.UsageReported) -> str | tuple[()]:
        if event.conversation_id is None or event.context_tokens is None:
            return ()
        self.rows[event.conversation_id]["context_tokens"] = event.context_tokens
        return event.conversation_id

    handlers = {
        ev.ConversationOpened: _opened,
        ev.BackgroundBound: _bound,
        ev.MessageQueued: _queued,
        ev.QueueEdited: _edited,
        ev.IntentSynced: _synced,
        ev.UsageReported: _usage,
        ev.TurnStarted: _turn_started,
        ev.DeliveryCreated: _delivery,
        ev.DeliveryComposed: _composed,
        ev.ObservationRecorded: _observed,
        ev.UpdateRevised: _revised,
        ev.DeliveryReceipted: _receipted,
        ev.TurnEnded: _turn_ended,
        ev.ContextReset: _reset,
        ev.RecoveryChanged: _recovery,
        ev.FailureHoldChanged: _failure_hold,
        ev.DeliveryDeferred: _deferred,
        ev.BackgroundCheckpointed: _checkpointed,
    }

    def rendered(self, row: dict[str, Any]) -> dict[str, Any]:
        # A copy: `state` and `stop_requested` are computed here, never
        # written into the fold (a snapshot keeps the fold alone).
        row = dict(row)
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
        # Contract v1.2 section 8.2: a failure hold asks the running turn to stop, until its end.
        held = self.failure_held.get(conversation_id, False)
        row["stop_requested"] = self.running.get(conversation_id) if held else None
        return row

    def render(self) -> list[dict[str, Any]]:
        return [self.rendered(row) for row in sorted_rows(self.rows)]
