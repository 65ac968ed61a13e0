"""The `cards` view: suggestions for the human (never a task, never a grant)."""

from __future__ import annotations

from typing import Any

from tandem.domain import events as ev
from tandem.projections.base import View, sorted_rows


class CardsView(View):
    name = "cards"
    key = "card_id"  # each handler returns the card it touched

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, Any]] = {}

    def _proposed(self, event: ev.CardProposed) -> str:
        self.rows[event.card_id] = {"card_id": event.card_id, "cause_key": event.cause_key, "summary": event.summary}
        return event.card_id

    handlers = {ev.CardProposed: _proposed}

    def render(self) -> list[dict[str, Any]]:
        return sorted_rows(self.rows)
