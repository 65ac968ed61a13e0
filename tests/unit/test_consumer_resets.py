"""Sequence resets (Tandem's extension, docs/contract/consumer.md "Sequence
resets"): a producer that restarted its seq in the same epoch is no longer
silent. Its batch is still applied as the contract says (entries at or below
the cursor skipped and counted), and a `SequenceReset` naming the first entry
that, at a seq the consumer read, is not a resend raises
`consumer_sequence_reset:{consumer_id}`; a reconciliation's commit resolves it.
"""

from __future__ import annotations

from tandem.domain import events as ev
from tests.unit.helpers import (
    consumer_row,
    entry,
    expecting,
    given,
    kinds,
    log_batch,
    log_pruned,
    log_reconcile,
    of_type,
    rejection,
    snapshot,
    when,
    world,
)

ALERT = "consumer_sequence_reset:scm"


def read_to(n: int) -> list:
    """Consumer `scm` that read seq 1..n from batches, each entry its own source (so a resend is a repeat)."""
    return [log_batch([entry(seq, source_id=f"s{seq}") for seq in range(1, n + 1)])]


def alert_row(engine, alert_id: str = ALERT) -> dict | None:
    return next((row for row in engine.views.view("alerts") if row["alert_id"] == alert_id), None)


def test_a_resend_of_what_was_read_is_no_reset():
    engine = given(world(), *read_to(4))
    events = when(engine, log_batch([entry(2, source_id="s2"), entry(3, source_id="s3"), entry(5, source_id="s5")]))
    assert not of_type(events, ev.SequenceReset) and not of_type(events, ev.AlertRaised)
    assert consumer_row(engine)["skipped"] == 2


def test_new_content_at_a_read_seq_is_a_reset_naming_the_first_such_entry():
    engine = given(world(), *read_to(4))
    before = snapshot(engine)
    batch = log_batch([entry(1, source_id="s1"), entry(2, source_id="new-a"), entry(3, source_id="new-b")])
    events = when(engine, batch)
    assert rejection(events) is None  # the contract's skip stays: nothing of it applied, counted
    assert kinds(events) == ["InputAccepted", "EntriesSkipped", "SequenceReset", "AlertRaised"]
    (reset,) = of_type(events, ev.SequenceReset)
    assert (reset.consumer_id, reset.epoch, reset.cursor_seq, reset.read_seq) == ("scm", 1, 4, 4)
    assert (reset.entry_seq, reset.source_id, reset.fingerprint) == (2, "new-a", "seq-2")  # seq 1 is a resend
    (raised,) = of_type(events, ev.AlertRaised)
    assert raised.facts == ev.AlertFacts(
        reason="sequence_reset", consumer_id="scm", entry_seq=2, read_seq=4, source_id="new-a"
    )
    assert "seq 2 carried new-a" in raised.detail and "restarted its seq" in raised.detail
    after = snapshot(engine)
    assert after["consumers"][0]["skipped"] == 3 and after["inbox"] == before["inbox"]
    assert alert_row(engine)["state"] == "raised"


def test_a_continuing_reset_raises_nothing_more():
    engine = given(world(), *read_to(4), log_batch([entry(1, source_id="new-a")]))
    events = when(engine, log_batch([entry(2, source_id="new-b")]))
    assert kinds(events) == ["InputAccepted", "EntriesSkipped", "SequenceReset"]
    assert alert_row(engine)["count"] == 1


def test_a_seq_only_a_reconciliation_passed_was_never_read_and_is_no_reset():
    """The gap a reconciliation counted (gate 6's ci-log): skipped as before."""
    engine = given(world(), *read_to(2), log_pruned(5), log_reconcile("scm/r1", retained_head=0))
    assert consumer_row(engine)["seq"] == 5
    events = when(engine, log_batch([entry(4, source_id="unread"), entry(6, source_id="s6")]))
    assert not of_type(events, ev.SequenceReset)
    assert consumer_row(engine)["skipped"] == 1


def test_an_older_version_than_the_inbox_holds_is_a_resend():
    t1, t2 = "2026-03-01T08:00:00Z", "2026-03-01T08:05:00Z"
    engine = given(world(), log_batch([entry(1, source_time=t1), entry(2, source_time=t2)]))  # one source, two versions
    events = when(engine, log_batch([entry(1, source_time=t1)]))
    assert not of_type(events, ev.SequenceReset)


def test_a_reconciliation_commit_resolves_it_and_a_later_reset_is_a_new_occurrence():
    engine = given(
        world(), *read_to(4), log_batch([entry(1, source_id="new-a")]),
        expecting("reconciliation_required", log_batch([], epoch=2)),  # the producer says its log is new: scm/r1
    )  # fmt: skip
    events = when(engine, log_reconcile("scm/r1", epoch=2, retained_head=3, facts=[]))
    assert [e.alert_id for e in of_type(events, ev.AlertResolved)] == ["reconciliation_required:scm", ALERT]
    (resolved,) = [e for e in of_type(events, ev.AlertResolved) if e.alert_id == ALERT]
    assert (resolved.by, resolved.facts.reason, resolved.facts.reconciliation_id) == ("engine", "reconciled", "scm/r1")
    assert alert_row(engine)["state"] == "resolved"
    when(engine, log_batch([entry(4, source_id="e4")], epoch=2))
    events = when(engine, log_batch([entry(4, source_id="other")], epoch=2))
    assert of_type(events, ev.SequenceReset)[0].entry_seq == 4
    assert alert_row(engine)["count"] == 2 and alert_row(engine)["state"] == "raised"
