"""The `inbox` view: one row per cause, its revision, triage and retention.

A burst of observations of one cause updates one row: the view's size grows
with the number of causes, never with the number of observations.
"""

from __future__ import annotations

from typing import Any

from domain import events as ev
from projections.base import View, rfc3339, sorted_rows

DELIVERABLE = frozenset({"actionable", "urgent", "needs_input"})


class InboxView(View):
    name = "inbox"

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, Any]] = {}

    def _revised(self, cause_key: str, kind: str, revision: int, at: Any, partial: bool) -> None:
        row = self.rows.get(cause_key)
        if row is None:
            row = self.rows[cause_key] = {
                "cause_key": cause_key,
                "revision": revision,
                "kind": kind,
                "triage_state": "untriaged",
                "disposition": None,
                "action_priority": None,
                "notification_priority": None,
                "partial": partial,
                "repeats": 0,
                "first_seen_at": rfc3339(at),
                "last_seen_at": rfc3339(at),
                "delivered_revision": None,
                "retained": True,
            }
        row.update(
            revision=revision,
            kind=kind,
            triage_state="untriaged",
            disposition=None,
            action_priority=None,
            notification_priority=None,
            partial=partial,
            last_seen_at=rfc3339(at),
        )

    def _recorded(self, event: ev.ObservationRecorded) -> None:
        if event.update_revision is not None:
            self._revised(event.cause_key, event.kind, event.update_revision, event.at, not event.complete)

    def _repeated(self, event: ev.ObservationRepeated) -> None:
        if event.counted:
            row = self.rows[event.cause_key]
            row["repeats"] += 1
            row["last_seen_at"] = rfc3339(event.at)

    def _engine_revised(self, event: ev.UpdateRevised) -> None:
        self._revised(event.cause_key, event.kind, event.revision, event.at, False)

    def _triaged(self, event: ev.UpdateTriaged) -> None:
        self.rows[event.cause_key].update(
            triage_state="triaged",
            disposition=event.disposition,
            action_priority=event.action_priority,
            notification_priority=event.notification_priority,
        )

    handlers = {
        ev.ObservationRecorded: _recorded,
        ev.ObservationRepeated: _repeated,
        ev.UpdateRevised: _engine_revised,
        ev.UpdateTriaged: _triaged,
    }

    def render(self) -> list[dict[str, Any]]:
        rows = sorted_rows(self.rows)
        for row in rows:
            # Retained while untriaged or deliverable (no delivery holds it yet).
            row["retained"] = row["triage_state"] == "untriaged" or row["disposition"] in DELIVERABLE
        return rows
