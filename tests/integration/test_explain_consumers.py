"""`tandem explain` knows change-log consumers (issue 26, point 4): the chain of
`gh` in fixtures/traces/consumer_sequence_reset.jsonl, each batch, skip, reset
and reconciliation with its input; the same through a LogIndex; `--kind
consumer`; and the message of an id that names nothing, which does not list
the kind (the explain digests of stores with consumers stay what they were)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tandem.adapters.ingest import ingest
from tandem.adapters.store import open_store
from tandem.adapters.trace import read_trace
from tandem.replay.engine import Engine
from tandem.replay.explain import KINDS, ExplainError, document, explain, render_text, to_json
from tandem.replay.index import LogIndex

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "fixtures" / "traces" / "consumer_sequence_reset.jsonl"


@pytest.fixture(scope="module")
def store():
    engine = Engine(open_store("memory:"), with_views=False, snapshot_every=0)
    ingest(engine, read_trace(str(TRACE)))
    return engine.store


def test_a_consumer_is_a_kind_of_its_own(store):
    assert "consumer" in KINDS
    (explained,) = explain(store, "gh")
    assert (explained.kind, explained.id, explained.state) == ("consumer", "gh", "consuming")
    assert explained.summary == (
        "consumer gh: cursor at epoch 2, seq 7; 6 batch(es), skipped 8, gaps 1, resets 2, reconciliations 1"
    )


def test_each_step_names_its_input(store):
    (explained,) = explain(store, "gh", kind="consumer")
    steps = [(step.event, step.input.line, step.input.type) for step in explained.steps]
    assert steps == [
        ("ConsumerCreated", 13, "log.batch"),
        ("CursorMoved", 13, "log.batch"),
        ("CursorMoved", 14, "log.batch"),
        ("EntriesSkipped", 16, "log.batch"),
        ("CursorMoved", 16, "log.batch"),
        ("EntriesSkipped", 18, "log.batch"),
        ("SequenceReset", 18, "log.batch"),
        ("EntriesSkipped", 20, "log.batch"),
        ("SequenceReset", 20, "log.batch"),
        ("ReconciliationStarted", 22, "log.batch"),
        ("ReconciliationCommitted", 24, "log.reconcile"),
        ("CursorMoved", 25, "log.batch"),
    ]
    reset = explained.steps[6]
    assert reset.summary.startswith("sequence reset: seq 1 carried n1 on comment:https://scm/pr/30:n1")
    assert [(fact.name, fact.value) for fact in reset.facts] == [("read_seq", 7), ("entry_seq", 1)]
    assert explained.steps[9].input.rejected == "reconciliation_required"
    assert explained.steps[9].state == "reconciliation_required" and explained.steps[10].state == "consuming"
    assert explained.related == [
        "alert reconciliation_required:gh", "alert consumer_sequence_reset:gh", "reconciliation gh/r1",
    ]  # fmt: skip


def test_an_open_reconciliation_is_waited_for(store):
    until = next(s.position for s in explain(store, "gh")[0].steps if s.event == "ReconciliationStarted")
    (explained,) = document(store, "gh", until=until).matches
    assert explained.state == "reconciliation_required"
    assert [(w.code, w.text) for w in explained.waiting] == [
        ("log.reconcile", "every batch is refused until log.reconcile names gh/r1")
    ]


def test_an_index_explains_it_the_same(store):
    index = LogIndex.build(store)
    full, indexed = document(store, "gh"), document(store, "gh", index=index)
    assert to_json(indexed) == to_json(full)
    assert "sequence reset: seq 4 carried n4" in render_text(full)


def test_the_message_of_an_unnamed_id_does_not_list_consumers(store):
    with pytest.raises(ExplainError) as raised:
        explain(store, "fg")
    assert "consumer" not in str(raised.value).partition("(kinds: ")[2].partition(")")[0]
    with pytest.raises(ExplainError, match="'fg' is no consumer|nothing in the store is named 'fg'"):
        explain(store, "fg", kind="consumer")
