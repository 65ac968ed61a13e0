"""Which ids each event of the health area concerns (domain/keys.py says how a
`"kind: path"` is read, and merges every area's `KEYS`)."""

from __future__ import annotations

from tandem.domain import events as ev

KEYS: dict[type[ev.Event], tuple[str, ...]] = {
    ev.HeartbeatRecorded: ("heartbeat",),
    ev.ProviderReadinessRecorded: ("provider: provider",),
    ev.HostSuspended: ("host",),
    ev.HostResumed: ("host",),
}
