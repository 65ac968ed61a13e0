"""The alerts area's part of the decision state: its records, one mutable
dataclass per thing, and its part of the State (`state.<area>`: the records
and the indexes over them), written only by this area's code (domain/records.py
gathers every area's records; domain/state.py holds the parts). A record's
`state` starts where its lifecycle starts and moves only as its events say.
Records are pickled in snapshots: their module is part of the snapshot
fingerprint."""

from __future__ import annotations

import datetime
from collections import OrderedDict
from dataclasses import dataclass, field
from tandem.domain.lifecycles import (
    ALERT,
    OBLIGATION,
)


@dataclass(slots=True)
class Alert:
    """An alert (contract section 6): its view state, and whether its condition is still
    on (`open`): a continuing condition is not raised again; the engine closes
    it when it observes the end. `revision`: the update revision an `urgent`
    alert is about."""

    alert_id: str
    kind: str
    first_raised_at: datetime.datetime
    last_raised_at: datetime.datetime
    count: int = 1
    state: str = ALERT.initial  # its view state; `open`: whether its condition is on
    open: bool = True
    cause_key: str | None = None
    revision: int | None = None


@dataclass(slots=True)
class Obligation:
    """A delivery obligation: tell the task's conversation about an outcome."""

    operation_id: str
    cause_key: str
    conversation_id: str
    due_at: datetime.datetime
    state: str = OBLIGATION.initial  # due: its fallback alert is raised


@dataclass(slots=True)
class AlertsState:
    """The alerts area's part of the decision state (`state.alerts.by_id`): written
    only by this area's evolvers, read by others through it."""

    by_id: dict[str, Alert] = field(default_factory=dict)
    incidents: dict[str, bool] = field(default_factory=dict)  # incident_id -> open
    crashes: int = 0  # daemon_crash/{n} incidents issued
    daemon_last: str | None = None  # the latest daemon.stop/start: start, expected_stop, unexpected_stop
    obligations: dict[str, Obligation] = field(default_factory=dict)  # by operation_id
    obligations_by_cause: dict[str, str] = field(default_factory=dict)  # cause_key -> operation_id
    # Open obligations by due time. Due = outcome `at` + a fixed fallback_after_s and
    # `at` never goes backwards, so insertion order is due order: O(1) in and out.
    obligation_timers: OrderedDict[str, datetime.datetime] = field(default_factory=OrderedDict)


__all__ = ['AlertsState', 'Alert', 'Obligation']  # re-exported by domain/records.py
