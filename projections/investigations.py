"""The `investigations` view (contract v1.2 section 5.5): each background
investigation, its bounds and how it ended, by `investigation_id`.

The states each event leaves an investigation in are the lifecycle's (`INVESTIGATION`)."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain.lifecycles import INVESTIGATION
from tandem.projections.base import View, rfc3339, sorted_rows


class InvestigationsView(View):
    name = "investigations"
    key = "investigation_id"  # each handler returns the investigation it touched

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, Any]] = {}

    def _opened(self, event: ev.InvestigationOpened) -> str:
        self.rows[event.investigation_id] = {
            "investigation_id": event.investigation_id,
            "conversation_id": event.conversation_id,
            "cause_key": event.cause_key,
            "task_id": event.task_id,
            "state": INVESTIGATION.after[ev.InvestigationOpened],
            "opened_at": rfc3339(event.opened_at),
            "due_at": rfc3339(event.due_at),
            "calls": 0,
            "evidence_refs": [],
            "operation_id": None,
        }
        return event.investigation_id

    def _exhausted(self, event: ev.InvestigationExhausted) -> str:
        self.rows[event.investigation_id]["state"] = INVESTIGATION.after[ev.InvestigationExhausted]
        return event.investigation_id

    def _closed(self, event: ev.InvestigationClosed) -> str:
        row = self.rows[event.investigation_id]
        row["state"] = INVESTIGATION.state_after(event)
        row["evidence_refs"] = list(event.evidence_refs)
        row["operation_id"] = event.operation_id
        return event.investigation_id

    def _allowed(self, event: ev.ToolCallAllowed) -> str | bool:
        if event.investigation_id is UNSET:
            return False
        self.rows[event.investigation_id]["calls"] += 1
        return event.investigation_id

    handlers = {
        ev.InvestigationOpened: _opened,
        ev.InvestigationExhausted: _exhausted,
        ev.InvestigationClosed: _closed,
        ev.ToolCallAllowed: _allowed,
    }

    def render(self) -> list[dict[str, Any]]:
        return sorted_rows(self.rows)
