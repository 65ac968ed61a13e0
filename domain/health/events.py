"""The events of the health area: immutable facts, in the past tense, one frozen
msgspec Struct each (domain/events.py assembles every area's into the one
union the log is written in)."""

from __future__ import annotations

import datetime

from msgspec import UNSET, UnsetType
from tandem.domain.event_base import (  # the bases, re-exported: `ev.Decision`
    Decision,
)


class HeartbeatRecorded(Decision, frozen=True, kw_only=True):
    generation: int
    at: datetime.datetime
    beat_at: datetime.datetime | UnsetType = UNSET  # v1.2: min(beat_at, at), only when given


class ProviderReadinessRecorded(Decision, frozen=True, kw_only=True):
    """A `provider.readiness` report, as recorded: `observed_at` is the
    report's (else its `at`); `auth_expires_at` the credential's known expiry,
    when the report gave one."""

    provider: str
    ready: bool
    reason: str | None
    observed_at: datetime.datetime
    auth_expires_at: datetime.datetime | None


class HostSuspended(Decision, frozen=True, kw_only=True):
    """`host.suspend`: the host announced it goes to sleep."""


class HostResumed(Decision, frozen=True, kw_only=True):
    """The host woke at `at`: announced (`host.resume`), or not (an input more
    than `suspend_gap_s` after the previous one, whose `at` is `previous_at`).
    `running`: a heartbeat at or after `at` is recorded already, so health is
    rechecked at once."""

    at: datetime.datetime
    announced: bool
    running: bool
    previous_at: datetime.datetime | None = None


__all__ = ['HeartbeatRecorded', 'ProviderReadinessRecorded', 'HostSuspended', 'HostResumed']  # every name here is the registry's: `ev.Name`
