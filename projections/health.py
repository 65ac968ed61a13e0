"""The `health` view: watchdog freshness, unattended dispatch, incidents,
backlog; (contract v1.2 section 4.6) when the freshest heartbeat was imported,
the host's suspend and resume, the open incidents' times, the providers'
readiness; and the degradation the budgets make visible (contract v1.2
section 3.9): every code that holds after the pass, from the events already
recorded (the deliverable updates as the inbox view follows them, the
deferrals, the engine's holds, the actions blocked by their back-off)."""

from __future__ import annotations

import datetime
from typing import Any

from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain.records import DELIVERABLE_DISPOSITIONS
from tandem.domain.health.rules import beat_time
from tandem.domain.lifecycles import HOST
from tandem.projections.base import View, rfc3339

DEGRADED_CODES = (
    "backlog", "over_wake_batch_max", "delivery_backoff", "delivery_failing", "action_backoff", "provider_unready",
)  # fmt: skip


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
        # Contract v1.2 section 3.9:
        self.wake_batch_max = 20
        self.backlog_degraded_at: int | None = None
        self.revisions: dict[str, int] = {}  # cause -> current revision
        self.candidates: dict[str, str] = {}  # cause -> the foreground it is deliverable to, if not held
        self.holder: dict[str, str] = {}  # cause -> the delivery holding its current revision
        # Foreground -> its deliverable causes (candidates no delivery holds),
        # counted as they change: rendering costs no walk of the candidates.
        self.deliverable: dict[str, int] = {}
        self.deliveries: dict[str, tuple[str, int, list[tuple[str, int]]]] = {}  # id -> (conversation, epoch, included)
        self.backoff: set[str] = set()  # conversations deferred by `backoff`
        self.engine_held: set[str] = set()
        self.backing_off: set[str] = set()  # pending actions blocked by retry_backoff
        self.tool_policy_revision = 0  # contract v1.2 section 1.6
        self.refused_runtimes: set[str] = set()
        self.heartbeat_imported_at: datetime.datetime | None = None
        self.host = HOST.initial
        self.last_resume_at: datetime.datetime | None = None
        self.incidents: dict[str, dict[str, Any]] = {}  # open incident -> its row
        self.providers: dict[str, dict[str, Any]] = {}

    def _clock(self, event: ev.InputAccepted | ev.InputRejected) -> None:
        self.now = event.input.at  # the fold's (`quiet`): one of every four events

    def _input(self, event: ev.InputAccepted | ev.InputRejected) -> bool:
        fresh = self._fresh()
        self._clock(event)
        return fresh != self._fresh()  # time only shows through freshness

    def _configured(self, event: ev.EngineConfigured) -> None:
        self.max_age_s = event.watchdog_max_age_s
        self.wake_batch_max = event.wake_batch_max
        if isinstance(event.backlog_degraded_at, int):
            self.backlog_degraded_at = event.backlog_degraded_at

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
            self._new_revision(event.cause_key, event.update_revision)

    def _revised(self, event: ev.UpdateRevised) -> None:
        self.untriaged[event.cause_key] = event.at
        self._new_revision(event.cause_key, event.revision)

    # A cause counts in `deliverable` while it is a candidate no delivery holds.

    def _new_revision(self, cause_key: str, revision: int) -> None:
        self.revisions[cause_key] = revision
        candidate = self.candidates.pop(cause_key, None)
        if self.holder.pop(cause_key, None) is None and candidate is not None:
            self._count(candidate, -1)

    def _triaged(self, event: ev.UpdateTriaged) -> None:
        cause_key = event.cause_key
        self.untriaged.pop(cause_key, None)
        before = self.candidates.get(cause_key)
        after = event.foreground_id if event.disposition in DELIVERABLE_DISPOSITIONS else None
        if after is not None:
            self.candidates[cause_key] = after
        elif before is not None:
            del self.candidates[cause_key]
        if before != after and cause_key not in self.holder:
            if before is not None:
                self._count(before, -1)
            if after is not None:
                self._count(after, 1)

    def _count(self, foreground_id: str, change: int) -> None:
        left = self.deliverable.get(foreground_id, 0) + change
        if left:
            self.deliverable[foreground_id] = left
        else:
            del self.deliverable[foreground_id]

    # The handlers below return False when nothing the view shows changed
    # (`Views.apply`: the view is not named as changed by that event).

    def _delivery(self, event: ev.DeliveryCreated) -> bool:
        included = [(cause_key, revision) for cause_key, revision in event.included]
        self.deliveries[event.delivery_id] = (event.conversation_id, event.epoch, included)
        changed = False
        for cause_key, revision in included:
            if self.revisions.get(cause_key) == revision:
                candidate = self.candidates.get(cause_key)
                if candidate is not None and cause_key not in self.holder:
                    self._count(candidate, -1)
                self.holder[cause_key] = event.delivery_id
                changed = changed or candidate is not None
        return changed

    def _release(self, delivery_id: str) -> bool:
        changed = False
        for cause_key, _ in self.deliveries[delivery_id][2]:
            if self.holder.get(cause_key) == delivery_id:
                del self.holder[cause_key]
                candidate = self.candidates.get(cause_key)
                if candidate is not None:
                    self._count(candidate, 1)
                changed = changed or candidate is not None
        return changed

    def _receipted(self, event: ev.DeliveryReceipted) -> bool:
        return event.releases and self._release(event.delivery_id)

    def _turn_ended(self, event: ev.TurnEnded) -> bool:
        return any([self._release(delivery_id) for delivery_id in event.released])

    def _reset(self, event: ev.ContextReset) -> bool:
        return any(
            [
                self._release(delivery_id)
                for delivery_id, (conversation_id, epoch, _) in self.deliveries.items()
                if conversation_id == event.conversation_id and epoch < event.epoch
            ]
        )

    @staticmethod
    def _switch(members: set[str], member: str, on: bool) -> bool:
        """Add or discard `member`; whether that changed `members`."""
        if (member in members) == on:
            return False
        (members.add if on else members.discard)(member)
        return True

    def _deferred(self, event: ev.DeliveryDeferred) -> bool:
        return self._switch(self.backoff, event.conversation_id, event.reason == "backoff")

    def _failure_hold(self, event: ev.FailureHoldChanged) -> bool:
        return self._switch(self.engine_held, event.conversation_id, event.held and event.by == "engine")

    def _blocked(self, event: ev.ActionBlocked) -> bool:
        return self._switch(self.backing_off, event.operation_id, "retry_backoff" in event.blocked_by)

    def _left_pending(self, event: ev.ActionClaimed | ev.ActionCancelled | ev.DeadlineExceeded | ev.BatchFixSuperseded) -> bool:
        return self._switch(self.backing_off, event.operation_id, False)

    def _source_rule(self, event: ev.SourceRuleApplied) -> bool:
        """Superseded or fenced by the source rule (contract v1.2 section 2.2):
        no back-off holds it any more; re-stamped, it is still pending."""
        return event.outcome != "restamped" and self._switch(self.backing_off, event.operation_id, False)

    def _fenced(self, event: ev.PolicySet | ev.GrantRevised | ev.TaskRevised) -> bool:
        fenced = self.backing_off.intersection(event.fenced)
        self.backing_off.difference_update(fenced)
        return bool(fenced)

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
        ev.DeliveryCreated: _delivery,
        ev.DeliveryReceipted: _receipted,
        ev.TurnEnded: _turn_ended,
        ev.ContextReset: _reset,
        ev.DeliveryDeferred: _deferred,
        ev.FailureHoldChanged: _failure_hold,
        ev.ActionBlocked: _blocked,
        ev.ActionClaimed: _left_pending,
        ev.ActionCancelled: _left_pending,
        ev.DeadlineExceeded: _left_pending,
        ev.BatchFixSuperseded: _left_pending,  # contract v1.2 section 7.3
        ev.SourceRuleApplied: _source_rule,  # contract v1.2 section 2.2
        ev.PolicySet: _fenced,
        ev.GrantRevised: _fenced,
        ev.TaskRevised: _fenced,
        ev.HostSuspended: _suspended,
        ev.HostResumed: _resumed,
        ev.ProviderReadinessRecorded: _readiness,
    }
    quiet = {ev.InputAccepted: _clock, ev.InputRejected: _clock}

    def change(self, touched: Any) -> dict[str, Any]:
        return {"value": self.render()}

    def _fresh(self) -> bool:
        return (
            self.host == HOST.initial  # running
            and self.heartbeat_at is not None
            and self.now is not None
            and (self.now - self.heartbeat_at).total_seconds() <= self.max_age_s
        )

    def _degraded(self) -> list[str]:
        holds = {
            "backlog": self.backlog_degraded_at is not None and len(self.untriaged) >= self.backlog_degraded_at,
            "over_wake_batch_max": any(count > self.wake_batch_max for count in self.deliverable.values()),
            "delivery_backoff": bool(self.backoff),
            "delivery_failing": bool(self.engine_held),
            "action_backoff": bool(self.backing_off),
            "provider_unready": any(incident.startswith("provider/") for incident in self.open_incidents),  # section 4.3
        }
        return [code for code in DEGRADED_CODES if holds[code]]

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
                "deliverable": sum(self.deliverable.values()),
            },
            "last_heartbeat_imported_at": rfc3339(self.heartbeat_imported_at),
            "host": self.host,
            "last_resume_at": rfc3339(self.last_resume_at),
            "incidents": [dict(self.incidents[incident_id]) for incident_id in sorted(self.open_incidents)],
            "providers": [dict(self.providers[name]) for name in sorted(self.providers)],
            "tool_policy_revision": self.tool_policy_revision,
            "isolation_unavailable": sorted(self.refused_runtimes),
            "degraded": self._degraded(),
        }
