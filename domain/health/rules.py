"""Health probes (contract v1.2 section 4): heartbeats and their own times,
provider readiness, the host's suspend and resume (task progress against its
deadline, section 4.4, is the tasks area's: domain/tasks/progress.py).

A heartbeat counts at its **beat time**, `min(beat_at, at)` (`at` without
`beat_at`): rows the daemon imports after downtime carry the time the
watchdog wrote them, so they never look fresh (section 4.1). A provider that
reports itself not ready (or whose known credential expiry passes) has the
incident `provider/{provider}`; while it is open, the foreground pass
delivers nothing to a conversation on that provider (section 4.3). A
suspended host is not fresh, nor a resumed one until a heartbeat written
since it woke (section 4.5).

The alerts area's time rules read the timers below (`unannounced_resume`,
`expiry_due`) in the order of contract v1.2 section 9; the alerts area
raises and resolves the alerts.
"""

from __future__ import annotations

import datetime
from typing import Any

from msgspec import UNSET, UnsetType

from tandem.domain import events as ev
from tandem.domain import inputs as inp
from tandem.domain.inputs import given
from tandem.domain.lifecycles import HOST
from tandem.domain.reasons import Rejected
from tandem.domain.records import Provider
from tandem.domain.state import State

AUTH_EXPIRED = "auth_expired"
EXPIRY_DETAIL = "known credential expiry passed"
ENGINE = "engine"  # reported_by of the incident a known expiry opens


def provider_incident(provider: str) -> str:
    return f"provider/{provider}"


def beat_time(event: ev.HeartbeatRecorded) -> datetime.datetime:
    """When the heartbeat was written, as far as the engine believes it."""
    return event.beat_at if event.beat_at is not UNSET else event.at


# ----------------------------------------------------------------- deciders


def decide_heartbeat(state: State, value: inp.Heartbeat, seq: int) -> list[ev.Event]:
    if state.health.heartbeat_generation is not None and value.generation < state.health.heartbeat_generation:
        raise Rejected("stale_generation", f"generation {value.generation} is below {state.health.heartbeat_generation}")
    beat_at = min(value.beat_at, value.at) if value.beat_at is not UNSET else UNSET  # a clock ahead earns nothing
    return [ev.HeartbeatRecorded(cause=seq, generation=value.generation, at=value.at, beat_at=beat_at)]


def decide_readiness(state: State, value: inp.ReportProviderReadiness, seq: int) -> list[ev.Event]:
    """Record the report; not ready opens the provider's incident (unless it
    is open: a continuing condition), ready recovers it."""
    observed_at = min(given(value.observed_at) or value.at, value.at)
    reason = given(value.reason)
    events: list[ev.Event] = [
        ev.ProviderReadinessRecorded(
            cause=seq,
            provider=value.provider,
            ready=value.ready,
            reason=reason,
            observed_at=observed_at,
            auth_expires_at=given(value.auth_expires_at),
        )
    ]
    incident_id = provider_incident(value.provider)
    is_open = bool(state.alerts.incidents.get(incident_id))
    if not value.ready and not is_open:
        events.append(
            ev.IncidentOpened(
                cause=seq,
                incident_id=incident_id,
                kind=reason,
                detail=f"{value.provider} is not ready: {reason}",
                reported_by=value.sender,
                observed_at=observed_at,
                last_success_at=_last_ready(state, value.provider),
            )
        )
    elif value.ready and is_open:
        events.append(ev.IncidentRecovered(cause=seq, incident_id=incident_id))
    return events


def decide_suspend(state: State, value: inp.SuspendHost, seq: int) -> list[ev.Event]:
    return [ev.HostSuspended(cause=seq)]


def decide_resume(state: State, value: inp.ResumeHost, seq: int) -> list[ev.Event]:
    return [ev.HostResumed(cause=seq, at=value.at, announced=True, running=_beaten_since(state, value.at))]


def _beaten_since(state: State, at: datetime.datetime) -> bool:
    return state.health.heartbeat_at is not None and state.health.heartbeat_at >= at


# --------------------------------------------------- the time rules' timers


def unannounced_resume(state: State, cause: int, at: datetime.datetime) -> ev.HostResumed | None:
    """Section 4.5: an input more than `suspend_gap_s` after the previous one
    is a resume at its `at` (before its own effects: a heartbeat it carried,
    written at `at`, rechecks health at once). A `host.suspend` or
    `host.resume` at this `at` announced the host's state itself."""
    gap = state.authority.config.suspend_gap_s
    previous = state.previous_at
    if not gap or previous is None or (at - previous).total_seconds() <= gap or state.health.host_announced_at == at:
        return None
    return ev.HostResumed(cause=cause, at=at, announced=False, running=_beaten_since(state, at), previous_at=previous)


def expiry_due(state: State, cause: int) -> tuple[datetime.datetime, ev.IncidentOpened] | None:
    """Section 4.3: the earliest known credential expiry not yet checked
    (ties by provider) whose incident is not open, and the incident it opens."""
    due = [
        (provider.auth_expires_at, name)
        for name, provider in state.health.providers.items()
        if provider.expiry_due
        and provider.auth_expires_at is not None
        and not state.alerts.incidents.get(provider_incident(name))
    ]
    if not due:
        return None
    expires_at, name = min(due)
    return expires_at, ev.IncidentOpened(
        cause=cause,
        incident_id=provider_incident(name),
        kind=AUTH_EXPIRED,
        detail=EXPIRY_DETAIL,
        reported_by=ENGINE,
        observed_at=expires_at,
        last_success_at=_last_ready(state, name),
    )


def _last_ready(state: State, name: str) -> datetime.datetime | UnsetType:
    """A provider incident's last success: the provider's last ready report."""
    provider = state.health.providers.get(name)
    return provider.last_ready_at if provider is not None and provider.last_ready_at is not None else UNSET


# ----------------------------------------------------------------- evolvers


def _heartbeat_recorded(state: State, event: ev.HeartbeatRecorded) -> None:
    state.health.heartbeat_generation = event.generation
    beat = beat_time(event)
    if state.health.heartbeat_at is None or beat >= state.health.heartbeat_at:
        state.health.heartbeat_at = beat
        state.health.heartbeat_imported_at = event.at
    if HOST.allows(state.health.host, "recheck") and state.health.last_resume_at is not None and state.health.heartbeat_at >= state.health.last_resume_at:
        state.health.host = HOST.table[(state.health.host, "recheck")]  # "recheck health on resume": a heartbeat written since


def _readiness_recorded(state: State, event: ev.ProviderReadinessRecorded) -> None:
    provider = state.health.providers.get(event.provider)
    if provider is None:
        provider = state.health.providers[event.provider] = Provider(event.provider, event.ready, event.reason, event.observed_at)
    provider.ready, provider.reason, provider.observed_at = event.ready, event.reason, event.observed_at
    if event.auth_expires_at is not None:
        provider.auth_expires_at = event.auth_expires_at
        provider.expiry_due = True
    if event.ready:
        provider.last_ready_at = event.observed_at
        if provider.auth_expires_at is not None and event.observed_at >= provider.auth_expires_at:
            provider.expiry_due = False  # a ready report observed since the expiry: renewed


def _host_suspended(state: State, event: ev.HostSuspended) -> None:
    state.health.host = HOST.after[ev.HostSuspended]
    state.health.host_announced_at = state.last_at


def _host_resumed(state: State, event: ev.HostResumed) -> None:
    state.health.host = HOST.after[ev.HostResumed, event.running]
    state.health.last_resume_at = event.at
    if event.announced:
        state.health.host_announced_at = event.at


def provider_incident_opened(state: State, event: ev.IncidentOpened) -> None:
    """An open provider incident covers a known expiry that has passed; its
    observed_at is what a provider_unready deferral says (section 4.3)."""
    provider = state.health.providers.get(event.incident_id.removeprefix("provider/"))
    if provider is not None and event.incident_id.startswith("provider/"):
        provider.incident_observed_at = given(event.observed_at) or state.last_at
    if (
        provider is not None
        and event.incident_id.startswith("provider/")
        and provider.auth_expires_at is not None
        and state.last_at is not None
        and provider.auth_expires_at <= state.last_at
    ):
        provider.expiry_due = False


DECIDERS = {
    inp.Heartbeat: decide_heartbeat,
    inp.ReportProviderReadiness: decide_readiness,
    inp.SuspendHost: decide_suspend,
    inp.ResumeHost: decide_resume,
}
EVOLVERS = {
    ev.HeartbeatRecorded: _heartbeat_recorded,
    ev.ProviderReadinessRecorded: _readiness_recorded,
    ev.HostSuspended: _host_suspended,
    ev.HostResumed: _host_resumed,
}
REACTIONS: dict[type, Any] = {}
