"""explain with a LogIndex (replay/index.py) prints what explain without one
prints: for every fixture trace, every id test_explain_digests.py asks about
(and a few that name nothing), byte for byte — with the index built from the
store, and with one built commit by commit as a live engine's listener
builds it. An index behind the store explains as of its own head."""

from __future__ import annotations

from pathlib import Path

import pytest

from tandem.adapters.ingest import ingest
from tandem.adapters.store import open_store
from tandem.adapters.trace import read_trace
from tandem.domain.keys import event_keys
from tandem.replay.engine import Engine
from tandem.replay.explain import KINDS, ExplainError, document, encode_json
from tandem.replay.index import LogIndex, keys_of
from tandem.replay.port import EventStore
from tests.integration.test_event_digests import name, traces
from tests.integration.test_explain_digests import identifiers, stored


def explained(store: EventStore, identifier: str, **options: object) -> bytes:
    try:
        return encode_json(document(store, identifier, **options))  # type: ignore[arg-type]
    except ExplainError as error:
        return f"ExplainError: {error}".encode()


class Counting:
    """A store that counts the events its reads return."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.read_events = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)

    def read_encoded(self, after: int = 0, until: int | None = None):  # type: ignore[no-untyped-def]
        for item in self.store.read_encoded(after, until):
            self.read_events += 1
            yield item

    def read_positions(self, positions):  # type: ignore[no-untyped-def]
        found = self.store.read_positions(positions)
        self.read_events += len(found)
        return found


def built_by_commits(path: Path) -> tuple[EventStore, LogIndex]:
    """The fixture ingested by an engine whose commits are indexed one by one."""
    index = LogIndex()
    engine = Engine(open_store("memory:"), with_views=False, snapshot_every=0)
    submit = engine.submit_batch

    def indexed(items, trailer=()):  # type: ignore[no-untyped-def]
        head = engine.state.position
        produced = submit(items, trailer)
        index.add(head, produced)
        return produced

    engine.submit_batch = indexed  # type: ignore[method-assign]
    ingest(engine, read_trace(str(path)), batch_inputs=7)  # several commits, none a whole file
    assert engine.store is not None
    return engine.store, index


@pytest.mark.parametrize("path", traces(), ids=name)
def test_explain_with_an_index_prints_the_same_for_every_id(path: Path) -> None:
    store = stored(path)
    index = LogIndex.build(store)
    assert index.head == store.head()
    named = identifiers(store) + ["nothing-here", "fg", "op-api/a9"]
    for identifier in named:
        plain = explained(store, identifier)
        assert explained(store, identifier, index=index) == plain, identifier
        for kind in KINDS[:3]:
            assert explained(store, identifier, kind=kind, index=index) == explained(store, identifier, kind=kind), (identifier, kind)


@pytest.mark.parametrize("path", traces(), ids=name)
def test_an_index_built_commit_by_commit_explains_the_same(path: Path) -> None:
    store, index = built_by_commits(path)
    assert index.head == store.head()
    for identifier in identifiers(store):
        assert explained(store, identifier, index=index) == explained(store, identifier), identifier


@pytest.mark.parametrize("path", traces(), ids=name)
def test_the_index_holds_each_events_keys_as_domain_keys_gives_them(path: Path) -> None:
    store = stored(path)
    index = LogIndex.build(store)
    live = LogIndex()
    everything = list(store.read())
    live.add(0, [event for _, event in everything])
    expected: dict[tuple[str, ...], list[int]] = {}
    for position, event in everything:
        assert keys_of(event) == event_keys(event), event
        for key in event_keys(event):
            expected.setdefault(key, []).append(position)
    for key, positions in expected.items():
        assert list(index.positions(key)) == positions == list(live.positions(key)), key
    assert index.bytes_used() > 0


def test_an_index_behind_the_store_explains_as_of_its_head() -> None:
    path = next(path for path in traces() if path.name == "02_prerequisite_user_away.jsonl")
    store = stored(path)
    half = store.head() // 2
    index = LogIndex.build(store, until=half)
    assert index.head == half
    short = Engine(open_store("memory:"), with_views=False, snapshot_every=0)
    assert short.store is not None
    short.store.append([event for _, event in store.read(until=half)], expected_head=0)
    for identifier in identifiers(short.store):
        assert explained(store, identifier, index=index) == explained(short.store, identifier), identifier


def test_with_an_index_explain_reads_only_what_it_keeps() -> None:
    path = next(path for path in traces() if path.name == "02_prerequisite_user_away.jsonl")
    store = Counting(stored(path))
    index = LogIndex.build(store.store)
    explained(store, "op-form")  # type: ignore[arg-type]
    full = store.read_events
    store.read_events = 0
    explained(store, "op-form", index=index)  # type: ignore[arg-type]
    assert 0 < store.read_events < full / 2, (store.read_events, full)


@pytest.mark.parametrize("path", traces(), ids=name)
def test_explain_until_a_position_is_what_a_store_cut_there_explains(path: Path) -> None:
    """`until=P` (the console's ?at=P), with and without the index: byte for
    byte the document of a store holding only the events up to P."""
    store = stored(path)
    index = LogIndex.build(store)
    for until in sorted({1, store.head() // 3, store.head() // 2, store.head() - 1}):
        cut = open_store("memory:")
        cut.append([event for _, event in store.read(until=until)], expected_head=0)
        for identifier in identifiers(store)[:12] + ["nothing-here"]:
            expected = explained(cut, identifier)
            assert explained(store, identifier, until=until) == expected, (until, identifier)
            assert explained(store, identifier, until=until, index=index) == expected, (until, identifier)
