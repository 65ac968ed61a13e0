"""An alert's reason as the console shows it (adapters/console/alert_reasons.py):
the same through the log's index and by a filtered read of the log, on every
fixture, now and at a position halfway; and what it
holds is the last AlertRaised's (and, resolved, the last AlertResolved's) as
the log read forwards says."""

from __future__ import annotations

from pathlib import Path

import pytest
from tandem.adapters.console.alert_reasons import AlertReason, alert_reasons
from tandem.domain import events as ev
from tandem.replay.index import LogIndex
from tandem.replay.port import EventStore

from tests.integration.test_event_digests import name, traces
from tests.integration.test_explain_digests import stored


def forwards(store: EventStore, until: int) -> dict[str, AlertReason]:
    raised: dict[str, ev.AlertRaised] = {}
    resolved: dict[str, ev.AlertResolved] = {}
    for _, event in store.read(until=until):
        if isinstance(event, ev.AlertRaised):
            raised[event.alert_id] = event
        elif isinstance(event, ev.AlertResolved):
            resolved[event.alert_id] = event
    return {
        alert_id: AlertReason(
            event.detail, event.cause_key, event.revision,
            resolved[alert_id].by if alert_id in resolved else None, resolved[alert_id].detail if alert_id in resolved else "",
        )  # fmt: skip
        for alert_id, event in raised.items()
    }


@pytest.mark.parametrize("path", traces(), ids=name)
def test_the_index_and_the_log_give_the_same_reasons(path: Path) -> None:
    store = stored(path)
    head = store.head()
    index = LogIndex.build(store)
    for until in (head, head // 2):
        expected = forwards(store, until)
        ids = [*expected, "no such alert"]
        assert alert_reasons(store, index, ids, until) == expected, until
        assert alert_reasons(store, None, ids, until) == expected, until


def test_some_fixture_has_reasons_to_show() -> None:
    stores = [stored(path) for path in traces()]
    shown = [reason for store in stores for reason in forwards(store, store.head()).values()]
    assert len(shown) > 20 and any(reason.detail for reason in shown) and any(reason.resolved_by for reason in shown)
