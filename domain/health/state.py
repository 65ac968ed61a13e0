"""The health area's part of the decision state: its records, one mutable
dataclass per thing, and its part of the State (`state.<area>`: the records
and the indexes over them), written only by this area's code (domain/records.py
gathers every area's records; domain/state.py holds the parts). A record's
`state` starts where its lifecycle starts and moves only as its events say.
Records are pickled in snapshots: their module is part of the snapshot
fingerprint."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field



@dataclass(slots=True)
class Provider:
    """A provider account's readiness (contract v1.2 section 4.3): its latest
    report, its known credential expiry, and whether that expiry still needs
    checking (`expiry_due`: not yet passed, or passed and not yet checked)."""

    provider: str
    ready: bool
    reason: str | None
    observed_at: datetime.datetime
    auth_expires_at: datetime.datetime | None = None
    last_ready_at: datetime.datetime | None = None
    expiry_due: bool = False
    incident_observed_at: datetime.datetime | None = None  # its open incident's observed_at (section 4.3)


@dataclass(slots=True)
class HealthState:
    """The health area's part of the decision state (`state.health`): written
    only by this area's evolvers, read by others through it."""

    heartbeat_generation: int | None = None
    heartbeat_at: datetime.datetime | None = None  # the greatest beat time (contract v1.2 section 4.1)
    heartbeat_imported_at: datetime.datetime | None = None  # the `at` of the heartbeat that set it
    host: str = "running"  # running, suspended, resuming
    last_resume_at: datetime.datetime | None = None
    host_announced_at: datetime.datetime | None = None  # the latest host.suspend/resume's `at`
    providers: dict[str, Provider] = field(default_factory=dict)  # contract v1.2 section 4.3


__all__ = ['HealthState', 'Provider']  # re-exported by domain/records.py
