"""The events of the alerts area: immutable facts, in the past tense, one frozen
msgspec Struct each (domain/events.py assembles every area's into the one
union the log is written in)."""

from __future__ import annotations

import datetime

from msgspec import UNSET, UnsetType
from tandem.domain.event_base import (  # the bases, re-exported: `ev.Decision`
    Decision,
)
from tandem.domain.facts import (  # the Structs events carry: `ev.BlockFact` is facts.BlockFact
    AlertFacts,
)


class AlertRaised(Decision, frozen=True, kw_only=True):
    """A new occurrence of an alert's condition (its first, or one more):
    count + 1, `last_raised_at` = `at`, state `raised` again. `cause_key` and
    `revision` name the inbox update it is about, if any (an `urgent` alert
    is about one revision); `detail` says, for a human, what was seen;
    `facts`, for tools, what it relied on."""

    alert_id: str
    kind: str
    at: datetime.datetime
    cause_key: str | None = None
    revision: int | None = None
    detail: str = ""
    facts: AlertFacts | None = None


class AlertSeen(Decision, frozen=True, kw_only=True):
    alert_id: str


class AlertResolved(Decision, frozen=True, kw_only=True):
    """`by: "engine"` when the engine observed the condition's end (it may
    occur again later); `by: "human"` for `alert.resolve` (the condition may
    go on: it is not raised again until a new occurrence)."""

    alert_id: str
    by: str
    # For the engine's resolutions: what it observed end.
    detail: str = ""
    facts: AlertFacts | None = None


class IncidentOpened(Decision, frozen=True, kw_only=True):
    incident_id: str
    kind: str
    detail: str
    reported_by: str  # the actor: watchdog or daemon ("engine": a known credential expiry)
    observed_at: datetime.datetime | UnsetType = UNSET  # contract v1.2 section 4.2, only when given
    last_success_at: datetime.datetime | UnsetType = UNSET


class IncidentRecovered(Decision, frozen=True, kw_only=True):
    incident_id: str


class DaemonStopped(Decision, frozen=True, kw_only=True):
    expected: bool


class DaemonStarted(Decision, frozen=True, kw_only=True):
    """`after`: what the latest earlier daemon.stop/start was ("expected_stop",
    "unexpected_stop", "start", or None for the very first start)."""

    after: str | None


class ObligationOpened(Decision, frozen=True, kw_only=True):
    """A task action's outcome: the task's conversation must be told."""

    operation_id: str
    cause_key: str
    conversation_id: str
    due_at: datetime.datetime  # the outcome's time + fallback_after_s


class ObligationMet(Decision, frozen=True, kw_only=True):
    operation_id: str
    cause_key: str
    turn_id: str
    delivery_id: str


class ObligationDue(Decision, frozen=True, kw_only=True):
    """`reason`: "left_out" (a completed turn held it but did not list it in
    `delivered`) or "overdue" (`fallback_after_s` passed)."""

    operation_id: str
    reason: str
    turn_id: str | None = None
    # left_out: the accepted delivery of that turn that held it (overdue: the
    # due time is the ObligationOpened's).
    delivery_id: str | None = None


__all__ = ['AlertRaised', 'AlertSeen', 'AlertResolved', 'IncidentOpened', 'IncidentRecovered', 'DaemonStopped', 'DaemonStarted', 'ObligationOpened', 'ObligationMet', 'ObligationDue']  # every name here is the registry's: `ev.Name`
