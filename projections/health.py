"""The `health` view: watchdog freshness, unattended dispatch, incidents, backlog;
and (contract v1.2 section 4.6) when the freshest heartbeat was imported, the
host's suspend and resume, the open incidents' times, the providers' readiness."""

from __future__ import annotations

import datetime
from typing import Any

from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain.health import beat_time
from tandem.domain.lifecycles import HOST
from tandem.projections.base import View, rfc3339


PROVIDER_KEYS = ("provider", "ready", "reason", "observed_at", "auth_expires_at", "last_ready_at")


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
        self.heartbeat_imported_at: datetime.datetime | None = None
        self.host = HOST.initial
        self.last_resume_at: datetime.datetime | None = None
        self.incidents: dict[str, dict[str, Any]] = {}  # open incident -> its row
        self.providers: dict[str, dict[str, Any]] = {}

    def _input(self, event: ev.InputAccepted | ev.InputRejected) -> bool:
        fresh = self._fresh()
        self.now = event.input.at
        return fresh != self._fresh()  # time only shows through freshness

    def _configured(self, event: ev.EngineConfigured) -> None:
        self.max_age_s = event.watchdog_max_age_s

    def _heartbeat(self, event: ev.HeartbeatRecorded) -> None:
        self.generation = event.generation
        beat = beat_time(event)
        if self.heartbeat_at is None or beat >= self.heartbeat_at:
            self.heartbeat_at = beat
            self.heartbeat_imported_at = event.at
        if HOST.allows(self.host, "recheck") and self.last_resume_at is not None and self.heartbeat_at >= self.last_resume_at:
            self.host = HOST.table[(self.host, "recheck")]

    def _suspended(self, event: ev.HostSuspended) -> None:
        self.host = HOST.after[ev.HostSuspended]

    def _resumed(self, event: ev.HostResumed) -> None:
        self.host = HOST.after[ev.HostResumed, event.running]
        self.last_resume_at = event.at

    def _readiness(self, event: ev.ProviderReadinessRecorded) -> None:
        row = self.providers.setdefault(event.provider, dict.fromkeys(PROVIDER_KEYS))
        row.update(provider=event.provider, ready=event.ready, reason=event.reason, observed_at=rfc3339(event.observed_at))
        if event.auth_expires_at is not None:
            row["auth_expires_at"] = rfc3339(event.auth_expires_at)
        if event.ready:
            row["last_ready_at"] = rfc3339(event.observed_at)

    def _recorded(self, event: ev.ObservationRecorded) -> None:
        if event.update_revision is not None:
            self.untriaged[event.cause_key] = event.at

    def _revised(self, event: ev.UpdateRevised) -> None:
        self.untriaged[event.cause_key] = event.at

    def _triaged(self, event: ev.UpdateTriaged) -> None:
        self.untriaged.pop(event.cause_key, None)

    def _incident(self, event: ev.IncidentOpened) -> None:
        self.open_incidents.add(event.incident_id)
        self.incidents[event.incident_id] = {
            "incident_id": event.incident_id,
            "kind": event.kind,
            "observed_at": rfc3339(event.observed_at) if event.observed_at is not UNSET else None,
            "last_success_at": rfc3339(event.last_success_at) if event.last_success_at is not UNSET else None,
        }

    def _recovered(self, event: ev.IncidentRecovered) -> None:
        self.open_incidents.discard(event.incident_id)
        self.incidents.pop(event.incident_id, None)

    handlers = {
        ev.IncidentOpened: _incident,
        ev.IncidentRecovered: _recovered,
        ev.ObservationRecorded: _recorded,
        ev.UpdateRevised: _revised,
        ev.UpdateTriaged: _triaged,
        ev.InputAccepted: _input,
        ev.InputRejected: _input,
        ev.EngineConfigured: _configured,
        ev.HeartbeatRecorded: _heartbeat,
        ev.HostSuspended: _suspended,
        ev.HostResumed: _resumed,
        ev.ProviderReadinessRecorded: _readiness,
    }

    def _fresh(self) -> bool:
        return (
            self.host == HOST.initial  # running
            and self.heartbeat_at is not None
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
            "last_heartbeat_imported_at": rfc3339(self.heartbeat_imported_at),
            "host": self.host,
            "last_resume_at": rfc3339(self.last_resume_at),
            "incidents": [dict(self.incidents[incident_id]) for incident_id in sorted(self.open_incidents)],
            "providers": [dict(self.providers[name]) for name in sorted(self.providers)],
        }
