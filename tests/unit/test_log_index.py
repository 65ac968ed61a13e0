"""LogIndex (replay/index.py): what it holds of a small log, built from the
store and commit by commit, and its bounds."""

from __future__ import annotations

import pytest

import tandem.replay.index as index_module
from tandem.adapters.ingest import ingest
from tandem.adapters.store import open_store
from tandem.adapters.trace import parse_trace
from tandem.domain import events as ev
from tandem.replay.engine import Engine
from tandem.replay.index import IndexFull, IndexGap, LogIndex
from tandem.replay.port import EventStore

TRACE = b"""\
{"type":"policy.set","at":"2026-03-01T09:00:00Z","actor":"daemon","allowed_operations":["worker.start"],"write_roots":["/repo"]}
{"type":"conversation.open","at":"2026-03-01T09:00:01Z","actor":"daemon","conversation_id":"fg","role":"foreground","context_limit":200000,"reserve":20000}
{"type":"watchdog.heartbeat","at":"2026-03-01T09:00:02Z","actor":"watchdog","generation":1}
{"type":"task.delegate","at":"2026-03-01T09:00:03Z","task_id":"t1","conversation_id":"nobody","message_refs":[],"goal":"g","done_when":["d"],"grant":{"grant_id":"g1","allowed_operations":["worker.start"],"write_roots":["/repo"]}}
{"type":"watchdog.heartbeat","at":"2026-03-01T09:00:04Z","actor":"watchdog","generation":1}
"""


def store_of(*files: tuple[str, bytes], batch: int = 2) -> EventStore:
    engine = Engine(open_store("memory:"), with_views=False, snapshot_every=0)
    for file, data in files:
        ingest(engine, parse_trace(data, file), batch_inputs=batch)
    assert engine.store is not None
    return engine.store


def test_it_holds_types_records_inputs_and_batches() -> None:
    store = store_of(("a.jsonl", TRACE))
    index = LogIndex.build(store)
    log = list(store.read())
    assert index.head == len(log) == store.head()
    for position, event in log:
        assert index.type_at(position) is type(event)
    records = [p for p, e in log if isinstance(e, (ev.InputAccepted, ev.InputRejected))]
    progress = [p for p, e in log if isinstance(e, ev.SourceProgressed)]
    assert list(index.records()) == records and len(progress) == 3  # batches of 2 inputs
    assert list(index.records("watchdog.heartbeat")) == [records[2], records[4]]
    assert index.records("no.such") == ()
    assert index.input_types() == ["policy.set", "conversation.open", "watchdog.heartbeat", "task.delegate"]
    assert index.input_type_of(records[3]) == "task.delegate"
    rejected = [e for _, e in log if isinstance(e, ev.InputRejected)]
    assert rejected and rejected[0].input.input_type == "task.delegate"  # the conversation is unknown
    for position, event in log:
        expected = None if isinstance(event, ev.SourceProgressed) else max(r for r in records if r <= position)
        assert index.record_of(position) == expected
        if expected is not None:
            assert index.input_end(expected) >= position
    assert index.input_end(records[1]) == progress[0] - 1  # the batch's SourceProgressed is no input's
    assert list(index.positions(("heartbeat",))) == [p for p, e in log if isinstance(e, ev.HeartbeatRecorded)]
    assert list(index.positions(("heartbeat",), after=index.positions(("heartbeat",))[0])) == [index.positions(("heartbeat",))[1]]
    assert index.count(("heartbeat",)) == 2 and index.count(("policy",)) == 1 and index.count(("task", "nope")) == 0
    assert index.kinds_of("fg") == [] and index.kinds_of("") == []
    assert index.files_seen() == {"a.jsonl"}


def test_commit_by_commit_is_the_same_as_from_the_store_and_skips_what_it_has() -> None:
    store = store_of(("a.jsonl", TRACE), ("b.jsonl", TRACE.replace(b"09:00:0", b"09:01:0")), batch=1)
    whole = LogIndex.build(store)
    live = LogIndex()
    log = list(store.read())
    assert live.add(0, [event for _, event in log[:5]])
    assert not live.add(0, [event for _, event in log[:5]])  # already held: skipped
    assert not live.add(2, [event for _, event in log[2:4]])
    with pytest.raises(IndexGap):
        live.add(6, [event for _, event in log[6:8]])
    assert live.head == 5
    live.add(5, [event for _, event in log[5:]])
    assert live.head == whole.head
    assert [live.type_at(p) for p in range(1, live.head + 1)] == [whole.type_at(p) for p in range(1, whole.head + 1)]
    assert list(live.records()) == list(whole.records())
    assert live.input_types() == whole.input_types()
    assert live.files_seen() == whole.files_seen() == {"a.jsonl", "b.jsonl"}
    first_b = min(p for p, e in log if getattr(e, "file", None) == "b.jsonl")
    assert whole.files_seen(until=first_b - 1) == {"a.jsonl"}
    for key in (("heartbeat",), ("policy",), ("task", "t1")):
        assert list(live.positions(key)) == list(whole.positions(key)), key
    assert whole.bytes_used() > 0


def test_catch_up_goes_on_from_its_head() -> None:
    store = store_of(("a.jsonl", TRACE))
    index = LogIndex.build(store, until=4)
    assert index.head == 4
    assert index.catch_up(store) == store.head()
    assert list(index.positions(("heartbeat",))) == list(LogIndex.build(store).positions(("heartbeat",)))


def test_the_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    store = store_of(("a.jsonl", TRACE))
    monkeypatch.setattr(index_module, "keys_max", 1)
    with pytest.raises(IndexFull):
        LogIndex.build(store)
    monkeypatch.setattr(index_module, "keys_max", 100)
    monkeypatch.setattr(index_module, "input_types_max", 3)
    with pytest.raises(IndexFull):
        LogIndex.build(store)
    monkeypatch.setattr(index_module, "input_types_max", 255)
    monkeypatch.setattr(index_module, "files_seen_max", 1)
    two = store_of(("a.jsonl", TRACE), ("b.jsonl", TRACE.replace(b"09:00:0", b"09:01:0")))
    assert LogIndex.build(two).files_seen() == {"a.jsonl"}
    monkeypatch.setattr(index_module, "positions_max", 3)
    with pytest.raises(IndexFull):
        LogIndex.build(store)
    with pytest.raises(IndexFull):
        LogIndex().add(0, [event for _, event in store.read()])
