"""The `usage` view: tokens by foreground, background and workers; unknown stays null."""

from __future__ import annotations

from typing import Any

from tandem.domain import events as ev
from tandem.projections.base import View

ROLES = ("foreground", "background", "workers")


class UsageView(View):
    name = "usage"

    def __init__(self) -> None:
        super().__init__()
        self.totals: dict[str, dict[str, int | None]] = {
            role: {**{name: None for name in ev.USAGE_FIELDS}, "reports": 0} for role in ROLES
        }

    def _reported(self, event: ev.UsageReported) -> None:
        totals = self.totals[event.role]
        for name in ev.USAGE_FIELDS:
            value = getattr(event, name)
            if value is not None:
                totals[name] = (totals[name] or 0) + value
        totals["reports"] = (totals["reports"] or 0) + 1

    handlers = {ev.UsageReported: _reported}

    def change(self, touched: Any) -> dict[str, Any]:
        return {"value": self.render()}

    def render(self) -> dict[str, Any]:
        return {role: dict(self.totals[role]) for role in ROLES}
