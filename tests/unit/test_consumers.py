"""Change-log consumers (spec/TRACE.md 3.4: `log.batch`, `log.pruned`,
`log.reconcile`; the `consumers` view of section 7; reconciliation ids of
section 2).

Given inputs, when one more input, then its events and the `consumers` view
row `{consumer_id, epoch, seq, max_deleted_seq, state, gaps, skipped}`.

Engine decisions where the spec is silent, taken as given here: `log.batch`
skips (and counts, contract v1.1) entries whose seq is at or below the
cursor it started from, and refuses a batch whose seq do not strictly
increase (`bad_sequence`); every
`log.reconcile` counts one gap; a `log.batch` in another epoch is rejected
`reconciliation_required` and its `InputRejected` is followed by a
`ReconciliationStarted` in the same transaction.
"""

from __future__ import annotations

import copy

from tandem.domain import events as ev
from tests.unit.helpers import (
    PR,
    consumer_row,
    entry,
    expecting,
    given,
    inbox_row,
    kinds,
    log_batch,
    log_pruned,
    log_reconcile,
    observation,
    observe,
    of_type,
    rejection,
    snapshot,
    when,
    world,
)

CI = f"ci:{PR}"


def row(engine, consumer_id: str = "scm") -> tuple:
    """(epoch, seq, max_deleted_seq, state, gaps) of a consumer's view row."""
    found = consumer_row(engine, consumer_id)
    assert found is not None, f"no consumer {consumer_id}"
    return found["epoch"], found["seq"], found["max_deleted_seq"], found["state"], found["gaps"]


def started(events) -> list[str]:
    return [e.reconciliation_id for e in of_type(events, ev.ReconciliationStarted)]


def observations(events) -> list:
    return of_type(events, ev.ObservationRecorded) + of_type(events, ev.ObservationRepeated)


def consumed_to(seq: int, epoch: int = 1) -> list:
    """A consumer `scm` that consumed entries 1..seq of `epoch`."""
    return [log_batch(range(1, seq + 1), epoch=epoch)] if seq else [log_batch([], epoch=epoch)]


def reconciling(seq: int = 3, epoch: int = 1, other_epoch: int = 2) -> list:
    """Consumer `scm` at (epoch, seq) that entered reconciliation scm/r1 through a batch in another epoch."""
    return [*consumed_to(seq, epoch), expecting("reconciliation_required", log_batch([seq + 1], epoch=other_epoch))]


# ------------------------------------------------------------ creation


def test_the_first_batch_creates_the_consumer_at_its_epoch_seq_0_watermark_0():
    engine = given(world())
    events = when(engine, log_batch([], epoch=4))
    assert kinds(events)[:2] == ["InputAccepted", "ConsumerCreated"]
    assert consumer_row(engine) == {
        "consumer_id": "scm", "epoch": 4, "seq": 0, "max_deleted_seq": 0, "state": "consuming", "gaps": 0, "skipped": 0,
    }  # fmt: skip


def test_the_first_pruned_creates_the_consumer_too():
    engine = given(world())
    when(engine, log_pruned(0, epoch=2))
    assert row(engine) == (2, 0, 0, "consuming", 0)


def test_a_first_pruned_above_seq_0_creates_the_consumer_and_enters_reconciliation():
    engine = given(world())
    events = when(engine, log_pruned(5, epoch=2))
    assert started(events) == ["scm/r1"]
    assert row(engine) == (2, 0, 5, "reconciliation_required", 0)


def test_a_reconcile_for_an_unknown_consumer_is_stale_and_creates_nothing():
    engine = given(world())
    assert rejection(when(engine, log_reconcile("scm/r1"))) == "stale_reconciliation"
    assert engine.views.view("consumers") == []


def test_consumers_are_independent_and_listed_by_id():
    engine = given(world(), log_batch([1, 2], consumer_id="zeta"), log_batch([7], consumer_id="alpha", epoch=3))
    assert [r["consumer_id"] for r in engine.views.view("consumers")] == ["alpha", "zeta"]
    assert row(engine, "alpha") == (3, 7, 0, "consuming", 0)
    assert row(engine, "zeta") == (1, 2, 0, "consuming", 0)


def test_log_inputs_need_the_source_actor():
    engine = given(world())
    assert rejection(when(engine, log_batch([1], actor="daemon"))) == "not_authorized"
    assert rejection(when(engine, log_pruned(1, actor="human"))) == "not_authorized"
    assert rejection(when(engine, log_reconcile(actor="background"))) == "not_authorized"
    assert engine.views.view("consumers") == []


# ------------------------------------------------------------ batches


def test_a_batch_applies_its_entries_in_order_and_moves_the_cursor_in_the_same_transaction():
    engine = given(world())
    events = when(engine, log_batch([entry(1, fingerprint="a"), entry(2, fingerprint="b"), entry(3, fingerprint="c")]))
    assert kinds(events)[:6] == [
        "InputAccepted", "ConsumerCreated",
        "ObservationRecorded", "ObservationRecorded", "ObservationRecorded", "CursorMoved",
    ]  # fmt: skip
    input_seq = events[0].seq
    assert all(e.cause == input_seq for e in events[1:6])  # all caused by this one input
    assert [e.fingerprint for e in of_type(events, ev.ObservationRecorded)] == ["a", "b", "c"]
    assert [e.via for e in of_type(events, ev.ObservationRecorded)] == ["log"] * 3
    assert [e.update_revision for e in of_type(events, ev.ObservationRecorded)] == [1, 2, 3]
    [moved] = of_type(events, ev.CursorMoved)
    assert (moved.epoch, moved.seq) == (1, 3)
    assert row(engine) == (1, 3, 0, "consuming", 0)
    assert inbox_row(engine, CI)["revision"] == 3


def test_the_cursor_becomes_the_greatest_seq_even_with_holes():
    engine = given(world())
    when(engine, log_batch([1, 2, 9]))
    assert row(engine) == (1, 9, 0, "consuming", 0)


def test_entries_at_or_below_the_cursor_are_skipped():
    engine = given(world(), log_batch([1, 2, 3]))
    events = when(engine, log_batch([entry(2, fingerprint="x"), entry(3, fingerprint="y"), 4, 5]))
    assert [e.fingerprint for e in of_type(events, ev.ObservationRecorded)] == ["seq-4", "seq-5"]
    assert not of_type(events, ev.ObservationRepeated)  # skipped, not repeats
    assert row(engine) == (1, 5, 0, "consuming", 0)
    assert inbox_row(engine, CI)["repeats"] == 0


def test_a_batch_entirely_at_or_below_the_cursor_changes_nothing_but_the_skipped_count():
    """A resend (each entry a repeat of what the inbox holds: Tandem's
    "Sequence resets" tell it from a reset)."""
    engine = given(world(), log_batch([entry(n, source_id=f"ci-{n}") for n in (1, 2, 3)]))
    before = snapshot(engine)
    events = when(engine, log_batch([entry(1, source_id="ci-1"), entry(3, source_id="ci-3")]))
    assert rejection(events) is None
    assert kinds(events) == ["InputAccepted", "EntriesSkipped"]
    (skipped,) = of_type(events, ev.EntriesSkipped)
    assert (skipped.consumer_id, skipped.epoch, skipped.count, skipped.cursor_seq) == ("scm", 1, 2, 3)
    assert consumer_row(engine)["skipped"] == 2
    before["consumers"][0]["skipped"] = 2
    assert snapshot(engine) == before  # nothing else


def test_a_producer_that_restarted_its_seq_is_seen_as_skipped_entries():
    """Contract v1.1: a producer that restarted `seq` at 1 in the same epoch
    has its whole batch skipped, and the consumers view counts every entry."""
    engine = given(world(), log_batch([1, 2, 3, 4, 5]))
    events = when(
        engine, log_batch([entry(1, fingerprint="new-1"), entry(2, fingerprint="new-2"), entry(6, fingerprint="new-6")])
    )
    assert consumer_row(engine)["skipped"] == 2
    # Tandem's extension ("Sequence resets"): not silent; seq 1 is the first entry named.
    (reset,) = of_type(events, ev.SequenceReset)
    assert (reset.entry_seq, reset.cursor_seq, reset.read_seq, reset.fingerprint) == (1, 5, 5, "new-1")
    assert [e.alert_id for e in of_type(events, ev.AlertRaised)] == ["consumer_sequence_reset:scm"]
    assert row(engine) == (1, 6, 0, "consuming", 0)
    assert inbox_row(engine, CI)["revision"] == 6  # five, then seq 6 only


def test_a_batch_whose_seq_do_not_strictly_increase_is_rejected_bad_sequence():
    """Nothing of it is applied: not the entries before the bad one, not the cursor."""
    engine = given(world(), log_batch([1, 2]))
    before = snapshot(engine)
    for entries in ([5, 3, 7], [4, 4], [3, 9, 8]):
        events = when(engine, log_batch([entry(seq, fingerprint=f"f{seq}") for seq in entries]))
        assert rejection(events) == "bad_sequence", entries
        assert kinds(events) == ["InputRejected"]
        assert snapshot(engine) == before
    assert consumer_row(engine)["skipped"] == 0


def test_entries_go_through_the_observe_rules():
    engine = given(world())
    when(engine, log_batch([
        entry(1, source_id="c-1", kind="comment", fingerprint="hi"),
        entry(2, source_id="c-1", kind="comment", fingerprint="hi"),  # repeat by fingerprint
        entry(3, fingerprint="run", complete=False),
    ]))  # fmt: skip
    comment = inbox_row(engine, f"comment:{PR}:c-1")
    assert (comment["revision"], comment["repeats"]) == (1, 1)
    assert inbox_row(engine, CI)["partial"] is True
    assert row(engine) == (1, 3, 0, "consuming", 0)


# ------------------------------------------------------------ another epoch


def test_a_batch_in_another_epoch_is_rejected_and_enters_reconciliation():
    engine = given(world(), consumed_to(3))
    before_inbox = engine.views.view("inbox")
    before_sources = copy.deepcopy(engine.state.inbox.sources)
    events = when(engine, log_batch([entry(4, fingerprint="new"), entry(5, fingerprint="newer")], epoch=2))
    assert rejection(events) == "reconciliation_required"
    assert kinds(events)[:2] == ["InputRejected", "ReconciliationStarted"]
    assert started(events) == ["scm/r1"]
    assert events[1].cause == events[0].seq
    assert not observations(events) and not of_type(events, ev.CursorMoved)
    assert row(engine) == (1, 3, 0, "reconciliation_required", 0)
    assert engine.views.view("inbox") == before_inbox
    assert engine.state.inbox.sources == before_sources
    assert engine.state.consumer.by_id["scm"].reconciliation_id == "scm/r1"


def test_a_batch_in_an_earlier_epoch_is_another_epoch_too():
    engine = given(world(), consumed_to(3, epoch=5))
    events = when(engine, log_batch([9], epoch=4))
    assert rejection(events) == "reconciliation_required" and started(events) == ["scm/r1"]


def test_a_rejected_batch_applies_none_of_its_entries():
    engine = given(world(), observe(fingerprint="live"), consumed_to(2))
    before = snapshot(engine)
    before_state = (copy.deepcopy(engine.state.inbox.sources), copy.deepcopy(engine.state.inbox.updates))
    when(engine, log_batch([entry(3, fingerprint="x", source_version="v3"), entry(4, source_id="ci-9")], epoch=2))
    after = snapshot(engine)
    assert after["inbox"] == before["inbox"]
    assert after["health"]["backlog"] == before["health"]["backlog"]
    assert (engine.state.inbox.sources, engine.state.inbox.updates) == before_state
    # v3 was never recorded: seen later it is new, not a repeat
    assert of_type(when(engine, observe(source_version="v3", fingerprint="x2")), ev.ObservationRecorded)


def test_re_entering_reconciliation_issues_nothing():
    engine = given(world(), reconciling())
    again = when(engine, log_batch([5], epoch=3))
    assert rejection(again) == "reconciliation_required"
    assert started(again) == []
    pruned_above = when(engine, log_pruned(50))
    pruned_elsewhere = when(engine, log_pruned(2, epoch=7))
    assert started(pruned_above) == [] and started(pruned_elsewhere) == []
    assert engine.state.consumer.by_id["scm"].reconciliations == 1
    assert engine.state.consumer.by_id["scm"].reconciliation_id == "scm/r1"


def test_every_batch_is_refused_during_reconciliation_even_in_the_cursors_epoch():
    engine = given(world(), reconciling(seq=3))
    before = snapshot(engine)
    events = when(engine, log_batch([4, 5], epoch=1))
    assert rejection(events) == "reconciliation_required"
    assert kinds(events) == ["InputRejected"]
    after = snapshot(engine)
    assert after == before
    assert row(engine) == (1, 3, 0, "reconciliation_required", 0)


# ------------------------------------------------------------ pruned


def test_a_watermark_at_or_below_the_cursor_does_not_enter_reconciliation():
    engine = given(world(), consumed_to(5))
    events = when(engine, log_pruned(5))
    assert started(events) == []
    assert row(engine) == (1, 5, 5, "consuming", 0)
    assert started(when(engine, log_pruned(2))) == []
    assert row(engine) == (1, 5, 5, "consuming", 0)


def test_a_watermark_above_the_cursor_enters_reconciliation():
    engine = given(world(), consumed_to(5))
    events = when(engine, log_pruned(6))
    assert started(events) == ["scm/r1"]
    assert row(engine) == (1, 5, 6, "reconciliation_required", 0)
    assert rejection(when(engine, log_batch([6, 7]))) == "reconciliation_required"


def test_interior_deletions_count():
    """Entries 3..4 deleted while 1..2 and 5.. survive: max_deleted_seq 4 > cursor 2."""
    engine = given(world(), consumed_to(2))
    assert started(when(engine, log_pruned(4))) == ["scm/r1"]


def test_the_watermark_is_the_maximum_seen_per_epoch_also_during_reconciliation():
    engine = given(world(), consumed_to(10))
    when(engine, log_pruned(4))
    when(engine, log_pruned(2))
    assert row(engine)[2] == 4
    when(engine, log_pruned(12))  # enters reconciliation
    when(engine, log_pruned(15))  # raised during it
    when(engine, log_pruned(13))
    assert row(engine) == (1, 10, 15, "reconciliation_required", 0)
    assert engine.state.consumer.by_id["scm"].watermarks == {1: 15}


def test_a_pruned_in_another_epoch_enters_reconciliation_and_keeps_that_epochs_watermark():
    engine = given(world(), consumed_to(10))
    events = when(engine, log_pruned(3, epoch=2))
    assert started(events) == ["scm/r1"]
    assert row(engine) == (1, 10, 0, "reconciliation_required", 0)  # the view shows the cursor epoch's watermark
    assert engine.state.consumer.by_id["scm"].watermarks == {2: 3}


def test_a_pruned_in_another_epoch_with_nothing_deleted_still_enters_reconciliation():
    engine = given(world(), consumed_to(10))
    assert started(when(engine, log_pruned(0, epoch=2))) == ["scm/r1"]


# ------------------------------------------------------------ reconcile


def test_a_reconcile_naming_another_id_is_stale():
    engine = given(world(), reconciling())
    before = snapshot(engine)
    assert rejection(when(engine, log_reconcile("scm/r2", retained_head=9, epoch=2))) == "stale_reconciliation"
    assert rejection(when(engine, log_reconcile("other/r1", retained_head=9, epoch=2))) == "stale_reconciliation"
    assert snapshot(engine) == before
    assert row(engine)[3] == "reconciliation_required"


def test_a_reconcile_while_consuming_is_stale():
    engine = given(world(), consumed_to(3))
    assert rejection(when(engine, log_reconcile("scm/r1", retained_head=9))) == "stale_reconciliation"
    assert row(engine) == (1, 3, 0, "consuming", 0)


def test_a_committed_reconciliation_cannot_be_committed_again():
    engine = given(world(), reconciling(), log_reconcile("scm/r1", retained_head=8, epoch=2))
    events = when(engine, log_reconcile("scm/r1", retained_head=20, epoch=2, facts=[observation(fingerprint="zz")]))
    assert rejection(events) == "stale_reconciliation"
    assert not observations(events)
    assert row(engine) == (2, 8, 0, "consuming", 1)


def test_commit_to_the_epoch_and_the_retained_head_above_the_watermark():
    engine = given(world(), reconciling(seq=3), log_pruned(5, epoch=2))
    events = when(engine, log_reconcile("scm/r1", retained_head=9, epoch=2))
    [committed] = of_type(events, ev.ReconciliationCommitted)
    assert (committed.epoch, committed.seq, committed.gaps, committed.reconciliation_id) == (2, 9, 1, "scm/r1")
    assert row(engine) == (2, 9, 5, "consuming", 1)
    assert engine.state.consumer.by_id["scm"].reconciliation_id is None


def test_commit_to_the_epochs_watermark_above_the_retained_head():
    engine = given(world(), reconciling(seq=3), log_pruned(12, epoch=2))
    when(engine, log_reconcile("scm/r1", retained_head=7, epoch=2))
    assert row(engine) == (2, 12, 12, "consuming", 1)


def test_commit_uses_the_watermark_of_the_committed_epoch_only():
    engine = given(world(), consumed_to(3), log_pruned(40))  # epoch 1 watermark 40 -> r1
    when(engine, log_reconcile("scm/r1", retained_head=6, epoch=2))
    assert row(engine) == (2, 6, 0, "consuming", 1)


def test_within_an_epoch_the_cursor_never_goes_backwards():
    engine = given(world(), consumed_to(10), log_pruned(11))
    when(engine, log_reconcile("scm/r1", retained_head=4, epoch=1))
    assert row(engine) == (1, 11, 11, "consuming", 1)


def test_an_empty_log_never_resets_the_cursor_to_0():
    engine = given(world(), consumed_to(10), expecting("reconciliation_required", log_batch([11], epoch=2)))  # r1
    events = when(engine, log_reconcile("scm/r1", retained_head=0, epoch=1))
    assert rejection(events) is None
    assert row(engine) == (1, 10, 0, "consuming", 1)


def test_a_cursor_that_left_an_epoch_does_not_go_backwards_in_it_on_return():
    """Spec 3.4: "Within an epoch the cursor never goes backwards: an empty log
    never resets it to 0." The cursor reached (1, 10); after a spell in epoch 2
    the log is back in epoch 1 and empty: committing to (1, 0) would move the
    cursor of epoch 1 backwards (and re-apply entries 1..10 if they reappear)."""
    engine = given(
        world(),
        consumed_to(10),
        expecting("reconciliation_required", log_batch([1], epoch=2)),  # r1
        log_reconcile("scm/r1", retained_head=5, epoch=2),  # -> (2, 5)
        expecting("reconciliation_required", log_batch([6], epoch=1)),  # r2
    )
    assert row(engine) == (2, 5, 0, "reconciliation_required", 1)
    when(engine, log_reconcile("scm/r2", retained_head=0, epoch=1))
    epoch, seq, _, state, gaps = row(engine)
    assert (epoch, state, gaps) == (1, "consuming", 2)
    assert seq >= 10, f"the cursor of epoch 1 went back from 10 to {seq}"


def test_reconcile_resumes_consuming_and_skips_what_the_cursor_covers():
    engine = given(world(), reconciling(seq=3), log_reconcile("scm/r1", retained_head=8, epoch=2))
    events = when(engine, log_batch([7, 8, 9, 10], epoch=2))
    assert rejection(events) is None
    assert [e.fingerprint for e in of_type(events, ev.ObservationRecorded)] == ["seq-9", "seq-10"]
    assert row(engine) == (2, 10, 0, "consuming", 1)


def test_gaps_are_counted_and_ids_are_never_reused():
    engine = given(world(), consumed_to(2))
    ids = []
    for n in range(1, 4):
        events = when(engine, log_pruned(10 * n + 5, epoch=1))
        ids += started(events)
        when(engine, log_reconcile(f"scm/r{n}", retained_head=0, epoch=1))
    assert ids == ["scm/r1", "scm/r2", "scm/r3"]
    assert row(engine) == (1, 35, 35, "consuming", 3)


def test_reconciliation_ids_are_per_consumer():
    engine = given(world(), log_pruned(3, consumer_id="a"), log_pruned(3, consumer_id="b"))
    assert engine.state.consumer.by_id["a"].reconciliation_id == "a/r1"
    assert engine.state.consumer.by_id["b"].reconciliation_id == "b/r1"


def test_reconcile_facts_are_applied_as_observations_with_the_repeat_rules():
    engine = given(
        world(),
        log_batch([entry(1, source_version="v1", fingerprint="red"), entry(2, source_version="v2", fingerprint="green")]),
        log_pruned(4),
    )
    events = when(engine, log_reconcile("scm/r1", retained_head=6, epoch=1, facts=[
        observation(source_version="v2", fingerprint="green"),  # already seen on the change log: a repeat
        observation(source_version="v5", fingerprint="red"),  # survived: new
        observation(source_version="v5", fingerprint="red"),  # seen a moment ago: a repeat
        observation(source_id="rv-1", kind="review", fingerprint="lgtm"),
    ]))  # fmt: skip
    assert kinds(events)[1:6] == [
        "ObservationRepeated", "ObservationRecorded", "ObservationRepeated", "ObservationRecorded",
        "ReconciliationCommitted",
    ]  # fmt: skip
    assert {e.via for e in observations(events)} == {"reconcile"}
    assert inbox_row(engine, CI)["revision"] == 3
    assert inbox_row(engine, CI)["repeats"] == 2
    assert inbox_row(engine, f"review:{PR}")["revision"] == 1
    assert row(engine) == (1, 6, 4, "consuming", 1)


def test_reconcile_facts_without_versions_repeat_by_the_latest_fingerprint():
    engine = given(world(), log_batch([entry(1, fingerprint="green")]), log_pruned(3))
    events = when(engine, log_reconcile("scm/r1", retained_head=3, facts=[observation(fingerprint="green")]))
    assert len(of_type(events, ev.ObservationRepeated)) == 1
    assert inbox_row(engine, CI)["revision"] == 1


def test_a_version_first_seen_on_a_reconcile_is_a_repeat_on_the_log_afterwards():
    engine = given(world(), reconciling(seq=0), log_reconcile("scm/r1", retained_head=0, epoch=2,
                                                               facts=[observation(source_version="v1")]))
    events = when(engine, log_batch([entry(1, source_version="v1", fingerprint="other")], epoch=2))
    assert len(of_type(events, ev.ObservationRepeated)) == 1
    assert row(engine) == (2, 1, 0, "consuming", 1)


def test_a_stale_reconcile_applies_none_of_its_facts():
    engine = given(world(), consumed_to(1))
    before = snapshot(engine)
    events = when(engine, log_reconcile("scm/r1", retained_head=9, facts=[observation(fingerprint="new")]))
    assert rejection(events) == "stale_reconciliation"
    assert kinds(events) == ["InputRejected"]
    assert snapshot(engine) == before
