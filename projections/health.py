"""The `health` view: watchdog freshness, unattended dispatch, incidents, backlog."""

from __future__ import annotations

import datetime
from typing import Any

from tandem.domain import events as ev
from tandem.projections.base import View, rfc3339


class HealthView(View):
    name = "health"

    def __init__(self) -> None:
        super().__init__()
        self.generation: int | None = None
        self.heartbeat_at: datetime.datetime | None = None
        self.max_age_s = 120
        self.now: datetime.datetime | None = None  # the last input's `at`: the engine's clock
        self.untriaged: dict[str, datetime.datetime] = {}  # cause -> when it got its current revision
        self.open_incidents: set[str] = set()
        self.tool_policy_revision = 0  # contract v1.2 section 1.6
        self.refused_runtimes: set[str] = set()

    def _input(self, event: ev.InputAccepted | ev.InputRejected) -> bool:
        fresh = self._fresh()
        self.now = event.input.at
        return fresh != self._fresh()  # time only shows through freshness

    def _configured(self, event: ev.EngineConfigured) -> None:
        self.max_age_s = event.watchdog_max_age_s

    def _heartbeat(self, event: ev.HeartbeatRecorded) -> None:
        self.generation = event.generation
        self.heartbeat_at = event.at

    def _recorded(self, event: ev.ObservationRecorded) -> None:
        if event.update_revision is not None:
            self.untriaged[event.cause_key] = event.at

    def _revised(self, event: ev.UpdateRevised) -> None:
        self.untriaged[event.cause_key] = event.at

    def _triaged(self, event: ev.UpdateTriaged) -> None:
        self.untriaged.pop(event.cause_key, None)

    def _incident(self, event: ev.IncidentOpened) -> None:
        self.open_incidents.add(event.incident_id)

    def _recovered(self, event: ev.IncidentRecovered) -> None:
        self.open_incidents.discard(event.incident_id)

    def _tool_policy(self, event: ev.ToolPolicySet) -> None:
        self.tool_policy_revision = event.revision
        self.refused_runtimes.update(event.revoked)

    def _runtime_admitted(self, event: ev.RuntimeAdmitted) -> None:
        self.refused_runtimes.discard(event.runtime_id)

    def _runtime_refused(self, event: ev.RuntimeRefused) -> None:
        self.refused_runtimes.add(event.runtime_id)

    handlers = {
        ev.ToolPolicySet: _tool_policy,
        ev.RuntimeAdmitted: _runtime_admitted,
        ev.RuntimeRefused: _runtime_refused,
        ev.IncidentOpened: _incident,
        ev.IncidentRecovered: _recovered,
        ev.ObservationRecorded: _recorded,
        ev.UpdateRevised: _revised,
        ev.UpdateTriaged: _triaged,
        ev.InputAccepted: _input,
        ev.InputRejected: _input,
        ev.EngineConfigured: _configured,
        ev.HeartbeatRecorded: _heartbeat,
    }

    def _fresh(self) -> bool:
        return (
            self.heartbeat_at is not None
            and self.now is not None
            and (self.now - self.heartbeat_at).total_seconds() <= self.max_age_s
        )

    def render(self) -> dict[str, Any]:
        fresh = self._fresh()
        return {
            "watchdog_generation": self.generation,
            "last_heartbeat_at": rfc3339(self.heartbeat_at),
            "watchdog_fresh": fresh,
            "unattended_dispatch": "allowed" if fresh else "held",
            "open_incidents": sorted(self.open_incidents),
            "backlog": {
                "untriaged": len(self.untriaged),
                "oldest_untriaged_at": rfc3339(min(self.untriaged.values())) if self.untriaged else None,
            },
            "tool_policy_revision": self.tool_policy_revision,
            "isolation_unavailable": sorted(self.refused_runtimes),
        }
