"""Which ids each event of the alerts area concerns (domain/keys.py says how a
`"kind: path"` is read, and merges every area's `KEYS`)."""

from __future__ import annotations

from tandem.domain import events as ev

KEYS: dict[type[ev.Event], tuple[str, ...]] = {
    ev.AlertRaised: (
        "alert: alert_id", "delivery: facts.delivery_id", "update: cause_key", "investigation: facts.investigation_id",
    ),  # fmt: skip
    ev.AlertSeen: ("alert: alert_id",),
    ev.AlertResolved: ("alert: alert_id", "delivery: facts.delivery_id"),
    ev.IncidentOpened: ("incident: incident_id",),
    ev.IncidentRecovered: ("incident: incident_id",),
    ev.DaemonStopped: (),
    ev.DaemonStarted: (),
    ev.ObligationOpened: ("obligation: operation_id",),
    ev.ObligationMet: ("obligation: operation_id", "turn: turn_id", "delivery: delivery_id"),
    ev.ObligationDue: ("obligation: operation_id", "turn: turn_id", "delivery: delivery_id"),
}
