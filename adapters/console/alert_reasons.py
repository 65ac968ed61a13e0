"""Why each alert a page shows was raised, and how a resolved one ended
(docs/api.md, "The console"): the `detail` of its last `AlertRaised` (what
the engine saw, for a human: "fg was not told: fallback_after_s passed"),
the inbox update it is about (`cause_key`, `revision`), and for a resolved
alert its last `AlertResolved` (by the engine or a person, and what ended).

The alerts view keeps none of this (docs/contract/views.md): it is read from
the log, as of the page's position. Through the server's index of the log
(adapters/log_index.py) once it is built: the alert's events are listed
there, and only the last of each kind is read. Before that, one filtered
read of the log for every alert of the page (the store filters its rows)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from tandem.domain import events as ev
from tandem.replay.explain.keys import needle
from tandem.replay.index import LogIndex
from tandem.replay.port import EventStore


@dataclass(frozen=True)
class AlertReason:
    detail: str  # the last occurrence's, in words ("" when the engine gave none)
    cause_key: str | None  # the inbox update it is about
    revision: int | None
    resolved_by: str | None = None  # "engine" or "human", once resolved
    resolution: str = ""  # what the engine saw end


def _note(found: dict[str, dict[type, ev.Event]], event: ev.Event) -> None:
    found.setdefault(event.alert_id, {})[type(event)] = event  # type: ignore[attr-defined]


def _indexed(store: EventStore, index: LogIndex, ids: Collection[str], until: int) -> dict[str, dict[type, ev.Event]]:
    wanted: list[int] = []
    for alert_id in ids:
        positions = index.positions(("alert", alert_id), until=until)
        for kind in (ev.AlertRaised, ev.AlertResolved):
            last = next((p for p in reversed(positions) if index.type_at(p) is kind), None)
            if last is not None:
                wanted.append(last)
    found: dict[str, dict[type, ev.Event]] = {}
    for _, data in store.read_positions(sorted(wanted)):
        _note(found, ev.decode_event(data))
    return found


def _scanned(store: EventStore, ids: Collection[str], until: int) -> dict[str, dict[type, ev.Event]]:
    needles = {needle(("alert", alert_id)) for alert_id in ids}
    found: dict[str, dict[type, ev.Event]] = {}
    for _, data in store.read_matching({"AlertRaised": needles, "AlertResolved": needles}, until=until):
        event = ev.decode_event(data)
        if isinstance(event, (ev.AlertRaised, ev.AlertResolved)) and event.alert_id in ids:
            _note(found, event)  # in log order: the last one stays
    return found


def alert_reasons(store: EventStore, index: LogIndex | None, ids: Collection[str], until: int) -> dict[str, AlertReason]:
    """Each alert's reason as of position `until` (an alert the log does not raise by then: absent)."""
    ids = set(ids)
    if not ids or until <= 0:
        return {}
    if index is not None and index.head >= until:
        found = _indexed(store, index, ids, until)
    else:
        found = _scanned(store, ids, until)
    reasons = {}
    for alert_id, events in found.items():
        raised = events.get(ev.AlertRaised)
        if raised is None:
            continue
        assert isinstance(raised, ev.AlertRaised)
        resolved = events.get(ev.AlertResolved)
        by, resolution = (resolved.by, resolved.detail) if isinstance(resolved, ev.AlertResolved) else (None, "")
        reasons[alert_id] = AlertReason(raised.detail, raised.cause_key, raised.revision, by, resolution)
    return reasons
