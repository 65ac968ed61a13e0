"""The timeline of inputs (replay/input_timeline.py): one entry per input,
newest first, with the events it caused, filtered by type, actor, id and time
range (combined); every page followed back from the head, with and without
a LogIndex, against the log read forwards and grouped by hand, on every
fixture."""

from __future__ import annotations

import datetime
from pathlib import Path

import msgspec
import pytest
import tandem.replay.input_timeline as module
from tandem.domain import events as ev
from tandem.domain.keys import event_keys
from tandem.replay.index import LogIndex
from tandem.replay.input_timeline import Chosen, Entry, entry, input_timeline
from tandem.replay.port import EventStore

from tests.integration.test_event_digests import name, traces
from tests.integration.test_explain_digests import stored

RECORDS = (ev.InputAccepted, ev.InputRejected)


def every_entry(store: EventStore) -> list[tuple[Entry, list[ev.Event]]]:
    """Each input, oldest first: its entry and all of its events (from its
    record up to the next record or the head), read forwards."""
    groups: list[list[tuple[int, ev.Event]]] = []
    for position, event in store.read():
        if isinstance(event, RECORDS):
            groups.append([])
        if groups:
            groups[-1].append((position, event))
    return [(entry(group[0][0], group, len(group)), [event for _, event in group]) for group in groups]


def matching(entries: list[tuple[Entry, list[ev.Event]]], chosen: Chosen) -> list[Entry]:
    def concerns(events: list[ev.Event]) -> bool:
        return any(len(key) > 1 and key[1] == chosen.identifier for event in events for key in event_keys(event))

    def at(found: Entry) -> datetime.datetime:
        return datetime.datetime.fromisoformat(found.input.at)

    return [
        found
        for found, events in entries
        if (chosen.kind is None or found.input.type == chosen.kind)
        and (chosen.actor is None or found.input.actor == chosen.actor)
        and (chosen.identifier is None or concerns(events))
        and (chosen.since is None or at(found) >= chosen.since)
        and (chosen.until is None or at(found) <= chosen.until)
    ]


def paged(store: EventStore, limit: int, chosen: Chosen, index: LogIndex | None) -> list[Entry]:
    """Every page from the head back, following `older`."""
    found: list[Entry] = []
    before = None
    for _ in range(10_000):
        page = input_timeline(store, before=before, limit=limit, chosen=chosen, index=index)
        assert len(page.entries) <= limit
        assert all(shown.record < page.before for shown in page.entries)
        found.extend(page.entries)
        if page.older is None:
            return found
        assert page.older <= page.before
        before = page.older
    raise AssertionError("the pages never ended")


def choices(entries: list[tuple[Entry, list[ev.Event]]]) -> list[Chosen]:
    """Each filter alone, a few combined, and ones that match nothing."""
    shown = [found for found, _ in entries]
    kinds = sorted({found.input.type for found in shown})
    actors = sorted({found.input.actor for found in shown})
    ids = sorted({key[1] for found in shown for key in found.concerns if key[1]})
    ats = sorted({datetime.datetime.fromisoformat(found.input.at) for found in shown})
    middle = ats[len(ats) // 2]
    chosen = [Chosen()]
    chosen += [Chosen(kind=kind) for kind in kinds]
    chosen += [Chosen(actor=actor) for actor in actors]
    chosen += [Chosen(identifier=identifier) for identifier in ids[:: max(1, len(ids) // 10)]]
    chosen += [Chosen(since=middle), Chosen(until=middle), Chosen(since=ats[0], until=middle), Chosen(since=middle, until=middle)]
    chosen += [Chosen(kind=kinds[0], identifier=identifier, since=ats[0]) for identifier in ids[:3]]
    chosen += [Chosen(actor=actors[-1], kind=kind, until=ats[-1]) for kind in kinds[:3]]
    chosen += [Chosen(kind="no.such.type"), Chosen(actor="nobody"), Chosen(identifier="no-such-id")]
    return chosen + [Chosen(since=ats[-1] + datetime.timedelta(seconds=1)), Chosen(until=ats[0] - datetime.timedelta(seconds=1))]


@pytest.mark.parametrize("path", traces(), ids=name)
def test_pages_with_and_without_an_index_give_the_inputs_newest_first(path: Path) -> None:
    store = stored(path)
    index = LogIndex.build(store)
    entries = every_entry(store)
    assert sum(len(events) for _, events in entries) == store.head()  # every event belongs to an input
    for chosen in choices(entries):
        expected = list(reversed(matching(entries, chosen)))
        for limit in (1, 7):
            assert paged(store, limit, chosen, index) == expected, (chosen, limit)
            assert paged(store, limit, chosen, None) == expected, (chosen, limit)


def test_an_entry_holds_the_input_as_recorded_its_result_and_its_events() -> None:
    from tandem.adapters.commands.demo import EXAMPLE

    store = stored(EXAMPLE)
    page = input_timeline(store, chosen=Chosen(kind="executor.outcome"), index=LogIndex.build(store))
    newest = page.entries[0]
    assert newest.input.type == "executor.outcome" and newest.input.rejected is None
    record = dict(store.read(after=newest.record - 1, until=newest.record))[newest.record]
    assert isinstance(record, ev.InputAccepted)
    assert newest.value == msgspec.to_builtins(record.input)  # the whole input, `at` as stamped
    assert newest.value["operation_id"] == "op-it" and newest.value["outcome"] == "succeeded"
    assert newest.events[0].event == "InputAccepted"
    assert [row.position for row in newest.events] == list(range(newest.record, newest.record + len(newest.events)))
    assert newest.total == len(newest.events) >= 3
    assert ("action", "op-it") in newest.concerns


def test_one_input_with_more_events_than_shown_says_how_many(monkeypatch: pytest.MonkeyPatch) -> None:
    from tandem.adapters.commands.demo import EXAMPLE

    monkeypatch.setattr(module, "events_shown_max", 2)
    store = stored(EXAMPLE)
    index = LogIndex.build(store)
    grouped = every_entry(store)
    big = max(grouped, key=lambda pair: len(pair[1]))
    count = len(big[1])
    assert count > 3  # more than the scan reads past the page's `before`
    for used in (index, None):
        page = input_timeline(store, before=big[0].record + 1, limit=1, index=used)
        (shown,) = page.entries
        assert shown.record == big[0].record and len(shown.events) == 2
        assert shown.total == (count if used is not None else None)  # the scan does not count past what it shows


def test_the_arguments_are_checked() -> None:
    store = stored(traces()[0])
    for limit in (0, module.limit_max + 1):
        with pytest.raises(ValueError, match="limit"):
            input_timeline(store, limit=limit)
