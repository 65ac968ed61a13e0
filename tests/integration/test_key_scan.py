"""replay/key_scan.py answers as the LogIndex of the same log (replay/index.py)
for every key it is asked, for every fixture trace: in a memory store
(`read_matching` filtered in Python) and in SQLite (filtered in the
database), every key's positions, their types and their inputs' records;
explain through it gives what a full read gives; a `Spliced` index of a
prefix and a tail answers as the whole log's index. And `tandem whatif
--store`, which reads through them (or through the store's LogIndex),
answers what it answers with full reads."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

import tandem.adapters.whatif_store as whatif_store_module
from tandem.adapters.store import open_store
from tandem.adapters.whatif import explainer
from tandem.domain import events as ev
from tandem.replay.explain import ExplainError, document, explain
from tandem.replay.index import LogIndex, keys_of
from tandem.replay.key_scan import KeyScan, Spliced
from tandem.replay.key_table import index_keys
from tandem.replay.snapshot import code_fingerprint
from tandem.replay.port import EventStore
from tandem.replay.whatif.edits import PARSERS, EditInvalid
from tests.integration.test_event_digests import name, traces
from tests.integration.test_explain_digests import identifiers, stored


def in_sqlite(store: EventStore, directory: Path) -> EventStore:
    copy = open_store(f"sqlite:///{directory / 'copy.db'}")
    copy.append_encoded([data for _, data in store.read_encoded()], 0)
    return copy


def every_key(store: EventStore) -> list[tuple[str, ...]]:
    found = {key for _, event in store.read() for key in keys_of(event)}
    return list(dict.fromkeys([*sorted(found), ("action", "nothing-here"), ("heartbeat",), ("task", "op")]))


def agrees(index: object, whole: LogIndex, keys: list[tuple[str, ...]]) -> None:
    for key in keys:
        positions = list(index.positions(key))  # type: ignore[attr-defined]
        assert positions == list(whole.positions(key)), key
        middle = whole.head // 2
        assert list(index.positions(key, after=middle)) == list(whole.positions(key, after=middle)), key  # type: ignore[attr-defined]
        assert list(index.positions(key, until=middle)) == list(whole.positions(key, until=middle)), key  # type: ignore[attr-defined]
        for position in positions:
            assert index.type_at(position) is whole.type_at(position), (key, position)  # type: ignore[attr-defined]
            assert index.record_before(position) == whole.record_before(position), (key, position)  # type: ignore[attr-defined]


@pytest.mark.parametrize("path", traces(), ids=name)
def test_a_key_scan_answers_as_the_log_index(path: Path, tmp_path: Path) -> None:
    memory = stored(path)
    for store in (memory, in_sqlite(memory, tmp_path)):
        whole = LogIndex.build(store)
        keys = every_key(store)
        scan = KeyScan(store, store.head())
        scan.prefetch(keys[::2])  # one scan for half of them, the rest one by one as asked
        agrees(scan, whole, keys)
        assert scan.scans == 1 + len(keys[1::2])
        boundary = store.head() // 2
        tail = LogIndex.after(boundary)
        tail.add(boundary, [event for _, event in store.read(after=boundary)])
        spliced = Spliced(KeyScan(store, boundary), boundary, tail)
        assert spliced.head == whole.head
        agrees(spliced, whole, keys)


@pytest.mark.parametrize("path", traces()[::5], ids=name)
def test_a_key_scan_reads_the_key_table_to_its_mark_and_scans_after_it(path: Path, tmp_path: Path) -> None:
    """With the store's key table at any mark (none, inside, the head, past
    the scan's head), answers as the LogIndex; scanning only when the mark
    is before the scan's head."""
    for store in (stored(path), in_sqlite(stored(path), tmp_path)):
        whole = LogIndex.build(store)
        keys = every_key(store)
        head = store.head()
        for mark in (head // 3, head):
            index_keys(store, code_fingerprint(), until=mark)
            for scanned_to in (head, head * 2 // 3):
                scan = KeyScan(store, scanned_to)
                scan.prefetch(keys)
                agrees(scan, LogIndex.build(store, until=scanned_to) if scanned_to < head else whole, keys)
                assert scan.scans == (1 if mark < scanned_to else 0), (mark, scanned_to)
        other = KeyScan(store, head)
        store.write_keys("other-code", 0, 0, [])  # another code's table: never read
        other.prefetch(keys)
        assert other.scans == 1
        agrees(other, whole, keys)


def test_read_matching_filters_alike_in_the_database_and_in_python(tmp_path: Path) -> None:
    memory = stored(traces()[0])
    sqlite = in_sqlite(memory, tmp_path)
    head = memory.head()
    many = {f"needle-{number}".encode() for number in range(1_000)}  # past the statement's parameters: in Python
    filters = [
        {"ActionProposed": {b"op-"}, "HeartbeatRecorded": {b""}},
        {name: {b"fg", b"nothing"} for name in ev.EVENT_TYPES},
        {"ActionProposed": many | {b"op-"}},
        {},
    ]
    for needles in filters:
        for after, until in ((0, None), (head // 3, head // 2), (head, None)):
            expected = list(memory.read_matching(needles, after, until))
            assert list(sqlite.read_matching(needles, after, until)) == expected, (sorted(needles)[:3], after, until)
    assert list(memory.read_matching(filters[0])), "the filters keep something"


@pytest.mark.parametrize("path", traces()[::3], ids=name)
def test_explain_through_a_key_scan_is_a_full_reads(path: Path, tmp_path: Path) -> None:
    store = in_sqlite(stored(path), tmp_path)
    scan = KeyScan(store, store.head())
    for identifier in identifiers(store):
        try:
            full = msgspec.json.encode(document(store, identifier).matches)
        except ExplainError:
            with pytest.raises(ExplainError):
                explain(store, identifier, index=scan)
            continue
        assert msgspec.json.encode(explain(store, identifier, index=scan)) == full, identifier


def full_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The what-if as it was before the key scans: each side explains by reading its whole log."""
    monkeypatch.setattr(whatif_store_module, "explainer", lambda store, until, index=None: explainer(store, until))
    monkeypatch.setattr(whatif_store_module.PrefixReads, "explained", lambda self, original, fork: (original, fork))


@pytest.mark.parametrize("path", traces()[::4], ids=name)
def test_a_whatif_over_a_store_answers_as_with_full_reads(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = in_sqlite(stored(path), tmp_path)
    seqs = [e.seq for _, e in store.read() if type(e) in (ev.InputAccepted, ev.InputRejected)]  # type: ignore[union-attr]
    cases = [[("drop", str(seq))] for seq in {seqs[0], seqs[len(seqs) // 2], seqs[-1]}]
    cases.append([("set", f"{seqs[len(seqs) // 2]}.at=\"2020-01-01T00:00:00Z\""), ("drop", str(seqs[-1]))])
    index = LogIndex.build(store)  # a served store's: no scan
    answers = [[whatif(store, edits) for edits in cases], [whatif(store, edits, index) for edits in cases]]
    full_reads(monkeypatch)
    answers.append([whatif(store, edits) for edits in cases])
    assert answers[0] == answers[2]
    assert answers[1] == answers[2]


def whatif(store: EventStore, edits: list[tuple[str, str]], index: LogIndex | None = None) -> bytes:
    try:
        result = whatif_store_module.whatif_store(store, "url", [PARSERS[op](text) for op, text in edits], index=index)
    except EditInvalid as error:  # an edit the store refuses: refused the same way
        return f"{type(error).__name__}: {error}".encode()
    return msgspec.json.encode(result)
