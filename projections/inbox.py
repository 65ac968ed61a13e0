"""The `inbox` view: one row per cause, its revision, triage and retention.

A burst of observations of one cause updates one row: the view's size grows
with the number of causes, never with the number of observations.
"""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain.lifecycles import DELIVERY, UPDATE
from tandem.domain.records import DELIVERABLE_DISPOSITIONS
from tandem.projections.base import View, rfc3339, sorted_rows

excerpt_chars_max = 280  # the latest observation's text shown in the row (contract v1.1)


def _latest(latest: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if latest is None else {**latest, "source_time": rfc3339(latest["source_time"])}


class InboxView(View):
    name = "inbox"
    # Each handler returns the causes it touched: those whose row changed,
    # and those whose `retained` or `batch_id` may have (they are computed
    # when read, from the holders, the deliveries' states, the obligations,
    # the alerts and the batches).
    key = "cause_key"

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, Any]] = {}
        # What retention and delivered_revision need of the deliveries:
        self.deliveries: dict[str, tuple[str, int, list[tuple[str, int]]]] = {}  # id -> (conversation, epoch, included)
        self.delivery_states: dict[str, str] = {}
        self.epochs: dict[str, int] = {}  # conversation -> current epoch
        self.holder: dict[str, str] = {}  # cause -> delivery holding its current revision
        self.delivered_in: dict[str, set[str]] = {}  # conversation -> causes with a delivered_revision
        self.obligated: set[str] = set()  # causes named by an open obligation (due ones too)
        self.alerted: dict[str, set[str]] = {}  # cause -> raised alerts naming it
        self.alert_causes: dict[str, str] = {}  # alert -> the cause it names
        self.batch_of: dict[str, str] = {}  # cause -> the batch it joined (contract v1.2 section 7.1)
        # What a page lists, at the cost of what it shows: the causes whose
        # row is retained now and those with ignored observations, each in
        # the order they became so. Kept from the keys the handlers return
        # (`_keeping`): those name every row whose rendering may change.
        self.retained: dict[str, None] = {}
        self.ignoring: dict[str, None] = {}

    def _revised(
        self,
        event: ev.ObservationRecorded | ev.UpdateRevised,
        revision: int,
        partial: bool,
        latest: dict[str, Any] | None,
    ) -> None:
        cause_key, kind, at = event.cause_key, event.kind, event.at
        triage_state = UPDATE.after[type(event)]
        self.holder.pop(cause_key, None)  # holds are per revision
        row = self.rows.get(cause_key)
        if row is None:
            self.rows[cause_key] = {
                "cause_key": cause_key,
                "revision": revision,
                "kind": kind,
                "triage_state": triage_state,
                "disposition": None,
                "action_priority": None,
                "notification_priority": None,
                "partial": partial,
                "repeats": 0,
                "out_of_order": 0,
                "first_seen_at": at,  # datetimes until render: formatting is the costly part
                "last_seen_at": at,
                "delivered_revision": None,
                "retained": True,
                "latest": latest,
                "batch_id": None,
                "ignored": 0,
            }
            return
        row.update(
            revision=revision,
            kind=kind,
            triage_state=triage_state,
            disposition=None,
            action_priority=None,
            notification_priority=None,
            partial=partial,
            last_seen_at=at,
            latest=latest,
        )

    def _ignored(self, event: ev.ObservationRecorded) -> str:
        """Extension (docs/sources.md): counted on its cause's row, made at
        revision 0 (nothing to triage, not retained) when it has none."""
        row = self.rows.get(event.cause_key)
        if row is None:
            self._revised(event, 0, False, None)
            row = self.rows[event.cause_key]
            row["triage_state"] = None
        row["ignored"] += 1
        row["last_seen_at"] = event.at
        self.ignoring[event.cause_key] = None
        return event.cause_key

    def _recorded(self, event: ev.ObservationRecorded) -> str | bool:
        if event.ignored is True:
            return self._ignored(event)
        if event.out_of_order is True:
            self.rows[event.cause_key]["out_of_order"] += 1  # an earlier one set the time it is behind
            return event.cause_key
        if event.update_revision is None:
            return False  # a background's own activity: no update
        latest = {
            "status": event.status,
            "deleted": event.deleted,
            "source_time": event.source_time if event.source_time is not UNSET else None,
            "evidence_ref": event.evidence_ref,
            "excerpt": event.text[:excerpt_chars_max] if event.text is not None else None,
            "truncated": event.truncated is True,
        }
        self._revised(event, event.update_revision, not event.complete, latest)
        return event.cause_key

    def _repeated(self, event: ev.ObservationRepeated) -> str | tuple[()]:
        if not event.counted:
            return ()
        row = self.rows[event.cause_key]
        row["repeats"] += 1
        row["last_seen_at"] = event.at
        return event.cause_key

    def _engine_revised(self, event: ev.UpdateRevised) -> str:
        self._revised(event, event.revision, False, None)  # no observation behind it: no latest
        return event.cause_key

    def _triaged(self, event: ev.UpdateTriaged) -> str:
        self.rows[event.cause_key].update(
            triage_state=UPDATE.after[ev.UpdateTriaged],
            disposition=event.disposition,
            action_priority=event.action_priority,
            notification_priority=event.notification_priority,
        )
        return event.cause_key

    def _delivery(self, event: ev.DeliveryCreated) -> list[str]:
        included = [(cause_key, revision) for cause_key, revision in event.included]
        self.deliveries[event.delivery_id] = (event.conversation_id, event.epoch, included)
        self.delivery_states[event.delivery_id] = DELIVERY.after[ev.DeliveryCreated]
        held = []
        for cause_key, revision in included:
            if self.rows[cause_key]["revision"] == revision:
                self.holder[cause_key] = event.delivery_id
                held.append(cause_key)
        return held

    def _release(self, delivery_id: str) -> list[str]:
        """The causes `delivery_id` held, released now: those it no longer holds."""
        released = []
        for cause_key, _ in self.deliveries[delivery_id][2]:
            if self.holder.get(cause_key) == delivery_id:
                del self.holder[cause_key]
                released.append(cause_key)
        return released

    def _receipted(self, event: ev.DeliveryReceipted) -> list[str]:
        """Touches every cause it includes: its state shows in the rows it
        holds (`retained`), and an acceptance in their delivered revision."""
        self.delivery_states[event.delivery_id] = event.attempt_state
        conversation_id, epoch, included = self.deliveries[event.delivery_id]
        if event.releases:
            self._release(event.delivery_id)
        if event.attempt_state == "accepted" and epoch == self.epochs.get(conversation_id, 1):
            for cause_key, revision in included:
                row = self.rows[cause_key]
                if row["delivered_revision"] is None or revision > row["delivered_revision"]:
                    row["delivered_revision"] = revision
                self.delivered_in.setdefault(conversation_id, set()).add(cause_key)
        return [cause_key for cause_key, _ in included]

    def _turn_ended(self, event: ev.TurnEnded) -> list[str]:
        return [cause_key for delivery_id in event.released for cause_key in self._release(delivery_id)]

    def _reset(self, event: ev.ContextReset) -> list[str]:
        self.epochs[event.conversation_id] = event.epoch
        touched = [
            cause_key
            for delivery_id, (conversation_id, epoch, _) in self.deliveries.items()
            if conversation_id == event.conversation_id and epoch < event.epoch
            for cause_key in self._release(delivery_id)
        ]
        for cause_key in self.delivered_in.pop(event.conversation_id, set()):
            self.rows[cause_key]["delivered_revision"] = None  # earlier epochs count for nothing now
            touched.append(cause_key)
        return touched

    def _obligation(self, event: ev.ObligationOpened) -> str:
        self.obligated.add(event.cause_key)
        return event.cause_key

    def _obligation_met(self, event: ev.ObligationMet) -> str:
        self.obligated.discard(event.cause_key)
        return event.cause_key

    def _alert_raised(self, event: ev.AlertRaised) -> str | tuple[()]:
        if event.cause_key is None:
            return ()
        self.alert_causes[event.alert_id] = event.cause_key
        self.alerted.setdefault(event.cause_key, set()).add(event.alert_id)
        return event.cause_key

    def _alert_lowered(self, event: ev.AlertSeen | ev.AlertResolved) -> str | tuple[()]:
        cause_key = self.alert_causes.get(event.alert_id)
        alerts = self.alerted.get(cause_key) if cause_key is not None else None
        if alerts is None:
            return ()
        alerts.discard(event.alert_id)
        if not alerts:
            del self.alerted[cause_key]  # type: ignore[arg-type]
        return cause_key  # type: ignore[return-value]

    def _joined(self, event: ev.BatchJoined | ev.BatchRevised) -> str | bool:
        if type(event) is ev.BatchRevised and not event.joined:
            return False
        self.batch_of[event.cause_key] = event.batch_id
        return event.cause_key

    def _kept(self, touched: Any) -> None:
        """`retained` brought up to date for the causes a handler touched."""
        rows, retained = self.rows, self.retained
        for cause_key in (touched,) if type(touched) is str else touched:
            row = rows.get(cause_key)
            if row is not None and self._retains(row):
                retained.setdefault(cause_key, None)
            else:
                retained.pop(cause_key, None)

    handlers = {
        ev.BatchJoined: _joined,
        ev.BatchRevised: _joined,
        ev.ObligationOpened: _obligation,
        ev.ObligationMet: _obligation_met,
        ev.AlertRaised: _alert_raised,
        ev.AlertSeen: _alert_lowered,
        ev.AlertResolved: _alert_lowered,
        ev.DeliveryCreated: _delivery,
        ev.DeliveryReceipted: _receipted,
        ev.TurnEnded: _turn_ended,
        ev.ContextReset: _reset,
        ev.ObservationRecorded: _recorded,
        ev.ObservationRepeated: _repeated,
        ev.UpdateRevised: _engine_revised,
        ev.UpdateTriaged: _triaged,
    }

    def _retains(self, row: dict[str, Any]) -> bool:
        cause_key = row["cause_key"]
        holder = self.holder.get(cause_key)
        deliverable = row["disposition"] in DELIVERABLE_DISPOSITIONS and holder is None
        in_flight = holder is not None and self.delivery_states[holder] in DELIVERY.in_flight
        return (
            row["triage_state"] == UPDATE.initial
            or deliverable
            or in_flight
            or cause_key in self.obligated
            or cause_key in self.alerted
        )

    def rendered(self, row: dict[str, Any]) -> dict[str, Any]:
        cause_key = row["cause_key"]
        return {
            **row,
            "first_seen_at": rfc3339(row["first_seen_at"]),
            "last_seen_at": rfc3339(row["last_seen_at"]),
            "retained": self._retains(row),
            "latest": _latest(row["latest"]),
            "batch_id": self.batch_of.get(cause_key),
        }

    def render(self) -> list[dict[str, Any]]:
        return [self.rendered(row) for row in sorted_rows(self.rows)]


def _keeping(handler: Any) -> Any:
    """The handler, then `retained` kept for the causes it touched."""

    def handle(view: InboxView, event: Any) -> Any:
        touched = handler(view, event)
        if touched is not False:
            view._kept(touched)
        return touched

    return handle


InboxView.handlers = {event_type: _keeping(handler) for event_type, handler in InboxView.handlers.items()}
