"""The `alerts` view: one row per alert identity, its state, count and times."""

from __future__ import annotations

from typing import Any

from tandem.domain import events as ev
from tandem.domain.lifecycles import ALERT
from tandem.projections.base import ByState, View, rfc3339, sorted_rows


class AlertsView(View):
    name = "alerts"
    key = "alert_id"  # each handler returns the alert it touched

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, Any]] = {}
        self.by_state = ByState()  # what a page lists: rows by state, newest first

    def _raised(self, event: ev.AlertRaised) -> str:
        row = self.rows.get(event.alert_id)
        if row is None:
            self.rows[event.alert_id] = {
                "alert_id": event.alert_id,
                "kind": event.kind,
                "state": ALERT.after[ev.AlertRaised],
                "first_raised_at": event.at,
                "last_raised_at": event.at,
                "count": 1,
            }
            self.by_state.enter(event.alert_id, ALERT.after[ev.AlertRaised])
            return event.alert_id
        self.by_state.enter(event.alert_id, ALERT.after[ev.AlertRaised], row["state"])
        row.update(state=ALERT.after[ev.AlertRaised], last_raised_at=event.at, count=row["count"] + 1)
        return event.alert_id

    def _moved(self, event: ev.AlertSeen | ev.AlertResolved) -> str:
        row = self.rows[event.alert_id]
        state = ALERT.after[type(event)]
        self.by_state.enter(event.alert_id, state, row["state"])
        row["state"] = state
        return event.alert_id

    handlers = {ev.AlertRaised: _raised, ev.AlertSeen: _moved, ev.AlertResolved: _moved}

    def rendered(self, row: dict[str, Any]) -> dict[str, Any]:
        return {**row, "first_raised_at": rfc3339(row["first_raised_at"]), "last_raised_at": rfc3339(row["last_raised_at"])}

    def render(self) -> list[dict[str, Any]]:
        return [self.rendered(row) for row in sorted_rows(self.rows)]
