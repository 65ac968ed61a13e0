"""The timeline (replay/timeline.py): newest first, by pages, with and
without a LogIndex, against the log read forwards (every event with its
input, as /v1/events gives it), on every fixture."""

from __future__ import annotations

from pathlib import Path

import pytest

import tandem.replay.timeline as timeline_module
from tandem.adapters.store import open_store
from tandem.domain import events as ev
from tandem.replay.index import LogIndex
from tandem.replay.port import EventStore
from tandem.replay.timeline import Row, row, timeline
from tests.integration.test_event_digests import name, traces
from tests.integration.test_explain_digests import stored


def every_row(store: EventStore) -> list[Row]:
    """Every event with its input, oldest first, read forwards."""
    rows: list[Row] = []
    record = None
    for position, event in store.read():
        if isinstance(event, (ev.InputAccepted, ev.InputRejected)):
            record = event
        elif isinstance(event, ev.SourceProgressed):
            record = None
        rows.append(row(position, event, record))
    return rows


def matching(rows: list[Row], input_type: str | None, identifier: str | None) -> list[Row]:
    return [
        r
        for r in rows
        if (input_type is None or (r.input is not None and r.input.type == input_type))
        and (identifier is None or any(key[1] == identifier for key in r.keys))
    ]


def paged(store: EventStore, limit: int, **options: object) -> list[Row]:
    """Every page from the head back, following `older`."""
    rows: list[Row] = []
    before = None
    for _ in range(10_000):
        page = timeline(store, before=before, limit=limit, **options)  # type: ignore[arg-type]
        assert len(page.rows) <= limit
        assert all(r.position < page.before for r in page.rows)
        rows.extend(page.rows)
        if page.older is None:
            return rows
        assert page.older <= page.before
        before = page.older
    raise AssertionError("the pages never ended")


def filters(rows: list[Row]) -> list[tuple[str | None, str | None]]:
    types = sorted({r.input.type for r in rows if r.input is not None})
    ids = sorted({key[1] for r in rows for key in r.keys if key[1]})
    chosen: list[tuple[str | None, str | None]] = [(None, None)]
    chosen += [(kind, None) for kind in types]
    chosen += [(None, identifier) for identifier in ids[:: max(1, len(ids) // 12)]]
    chosen += [(types[0], identifier) for identifier in ids[:4]] if types else []
    return chosen + [("no.such.type", None), (None, "no-such-id")]


@pytest.mark.parametrize("path", traces(), ids=name)
def test_pages_with_and_without_an_index_give_the_log_newest_first(path: Path) -> None:
    store = stored(path)
    index = LogIndex.build(store)
    rows = every_row(store)
    for input_type, identifier in filters(rows):
        expected = list(reversed(matching(rows, input_type, identifier)))
        for limit in (1, 7):
            options = {"input_type": input_type, "identifier": identifier}
            assert paged(store, limit, index=index, **options) == expected, (input_type, identifier, limit)
            assert paged(store, limit, **options) == expected, (input_type, identifier, limit)


@pytest.mark.parametrize("path", traces()[:12], ids=name)
def test_with_an_index_newer_is_the_page_just_after(path: Path) -> None:
    store = stored(path)
    index = LogIndex.build(store)
    rows = every_row(store)
    for input_type, identifier in filters(rows):
        found = matching(rows, input_type, identifier)
        for before in range(1, store.head() + 2, 5):
            page = timeline(store, before=before, limit=3, input_type=input_type, identifier=identifier, index=index)
            after = [r for r in found if r.position >= before]
            if not after:
                assert page.newer is None
                continue
            newer = timeline(store, before=page.newer, limit=3, input_type=input_type, identifier=identifier, index=index)
            if len(after) >= 3:
                assert newer.rows == list(reversed(after[:3]))
            else:
                assert page.newer == store.head() + 1
                assert newer.rows[: len(after)] == list(reversed(after))


def test_a_bounded_scan_goes_on_where_it_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    path = next(path for path in traces() if path.name == "02_prerequisite_user_away.jsonl")
    store = stored(path)
    index = LogIndex.build(store)
    rows = every_row(store)
    monkeypatch.setattr(timeline_module, "scan_events_max", 5)
    for input_type, identifier in [("executor.outcome", None), (None, "op-form"), ("executor.outcome", "op-form")]:
        expected = list(reversed(matching(rows, input_type, identifier)))
        assert paged(store, 4, input_type=input_type, identifier=identifier) == expected
        assert paged(store, 4, input_type=input_type, identifier=identifier, index=index) == expected
    page = timeline(store, limit=4, input_type="executor.outcome")
    assert page.scanned <= 5


def test_an_index_behind_the_store_shows_the_log_at_its_head() -> None:
    path = next(path for path in traces() if path.name == "02_prerequisite_user_away.jsonl")
    store = stored(path)
    index = LogIndex.build(store, until=20)
    page = timeline(store, limit=5, index=index)
    assert page.head == 20 and [r.position for r in page.rows] == [20, 19, 18, 17, 16]
    assert page.newer is None and page.older == 16
    assert timeline(store, before=999, limit=5, index=index).before == 21


def test_an_empty_store_and_bad_limits() -> None:
    store = open_store("memory:")
    index = LogIndex.build(store)
    for options in ({}, {"index": index}, {"identifier": "x", "index": index}):
        page = timeline(store, **options)  # type: ignore[arg-type]
        assert page.rows == [] and page.older is None and page.newer is None and page.head == 0
    with pytest.raises(ValueError):
        timeline(store, limit=0)
    with pytest.raises(ValueError):
        timeline(store, limit=timeline_module.limit_max + 1)


@pytest.mark.parametrize("path", traces(), ids=name)
def test_latest_inputs_are_the_newest_records_with_and_without_an_index(path: Path) -> None:
    store = stored(path)
    index = LogIndex.build(store)
    records = [r for r in every_row(store) if r.event in ("InputAccepted", "InputRejected")]
    for until in sorted({1, store.head() // 2, store.head(), store.head() + 5}):
        expected = [r for r in records if r.position <= until][::-1][:7]
        assert timeline_module.latest_inputs(store, 7, until=until) == expected, until
        assert timeline_module.latest_inputs(store, 7, until=until, index=index) == expected, until
    assert timeline_module.latest_inputs(store, 3) == records[::-1][:3]
    with pytest.raises(ValueError, match="count 0"):
        timeline_module.latest_inputs(store, 0)
