"""The `conversations` view: identity, epoch, binding generation, intent and queue."""

from __future__ import annotations

from typing import Any

from domain import events as ev
from projections.base import View, sorted_rows


class ConversationsView(View):
    name = "conversations"

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, Any]] = {}

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
    }

    def render(self) -> list[dict[str, Any]]:
        return sorted_rows(self.rows)
