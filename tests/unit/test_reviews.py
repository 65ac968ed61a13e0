"""Reviews: batches and aliases (contract v1.2 section 7): observations name
the batch they were delivered in, a cause joins a batch once and moves its
revision, `source.alias` makes an SCM path's observations judged as the
internal run's, and `duplicate_batch` keeps a batch to one fix."""

from __future__ import annotations

import msgspec
import pytest

from tandem.adapters.store import open_store
from tandem.domain import events as ev
from tandem.replay.engine import Engine, Located
from tandem.replay.explain import ExplainError, document, encode_json, render_text
from tests.unit.helpers import (
    action_row,
    decode,
    entry,
    given,
    grant_request,
    inbox_row,
    kinds,
    line,
    log_batch,
    log_pruned,
    log_reconcile,
    observation,
    observe,
    of_type,
    outcome,
    propose,
    receipt,
    rejection,
    revise_task,
    rule,
    when,
    world,
)

PR = "https://scm/pr/9"
INTERNAL, SCM = "ao:review:555", "github:acme/app:review:555"


def cause(subject: str) -> str:
    return f"review:{PR}:{subject}"


def review(source_id: str = INTERNAL, subject: str = "555", fingerprint: str = "h555", **kw):
    kw.setdefault("source_version", "run-77@1")
    return observe(source_id=source_id, kind="review", scope=PR, subject=subject, fingerprint=fingerprint,
                   status="changes_requested", **kw)


def fix(operation_id: str, subject: str, **kw):
    """A rule's fix for review `subject` (its own resource: never resource_busy)."""
    return propose(operation_id, task_id=None, actor="daemon", rule_id="ci-repair", revisions={"grant": 1},
                   cause_key=cause(subject), resource=f"wt-{operation_id}", **kw)


def alias(source_id: str = SCM, alias_of: str = INTERNAL, actor: str = "source"):
    return line("source.alias", actor, source_id=source_id, alias_of=alias_of)


def batch(engine, batch_id: str):
    return engine.state.reviews.batches[batch_id]


def setup(*more):
    return given(world(), rule(), *more)


# --------------------------------------------------------------- 7.1 batch_id


def test_a_v1_observation_records_no_batch_and_no_judgement() -> None:
    engine = setup()
    events = when(engine, review())
    recorded = of_type(events, ev.ObservationRecorded)[0]
    encoded = msgspec.json.encode(recorded)
    assert b"batch_id" not in encoded and b"judged_as" not in encoded
    assert not of_type(events, ev.BatchRevised)
    assert inbox_row(engine, cause("555"))["batch_id"] is None


def test_a_cause_joins_the_batch_its_first_observation_names_and_stays_in_it() -> None:
    engine = setup(review(batch_id="b77"), review(subject="556", fingerprint="h556", batch_id="b77"))
    assert engine.state.reviews.batch_of == {cause("555"): "b77", cause("556"): "b77"}
    assert (batch(engine, "b77").revision, batch(engine, "b77").joined) == (2, {cause("555"): 1, cause("556"): 2})
    events = when(engine, review(fingerprint="h555b", source_version="run-81@1", batch_id="b81"))
    assert of_type(events, ev.ObservationRecorded)[0].batch_id == "b81"  # recorded as given
    revised = of_type(events, ev.BatchRevised)
    assert [(e.batch_id, e.revision, e.joined) for e in revised] == [("b77", 3, False)]  # moves nothing
    assert inbox_row(engine, cause("555"))["batch_id"] == "b77" and "b81" not in engine.state.reviews.batches


def test_a_repeat_joins_no_batch_and_moves_none() -> None:
    engine = setup(review(batch_id="b77"))
    events = when(engine, review(batch_id="b78"))  # same version: a repeat
    assert of_type(events, ev.ObservationRepeated) and not of_type(events, ev.BatchRevised)
    assert batch(engine, "b77").revision == 1 and "b78" not in engine.state.reviews.batches


def test_a_later_observation_naming_no_batch_still_moves_the_cause_s_batch() -> None:
    engine = setup(review(batch_id="b77"))
    when(engine, review(fingerprint="h2", source_version="run-78@1"))
    assert batch(engine, "b77").revision == 2


def test_an_out_of_order_observation_joins_nothing() -> None:
    engine = setup(review(source_time="2026-03-01T09:00:10Z"))
    events = when(engine, review(fingerprint="old", source_version="v0", source_time="2026-03-01T09:00:05Z", batch_id="b77"))
    assert of_type(events, ev.ObservationRecorded)[0].out_of_order is True
    assert not of_type(events, ev.BatchRevised) and not engine.state.reviews.batches


def test_change_log_entries_and_reconcile_facts_carry_batch_id() -> None:
    reviewed = {"kind": "review", "scope": PR, "status": "changes_requested"}
    engine = setup(
        log_batch([entry(1, source_id="ao:review:1", subject="1", batch_id="b9", **reviewed),
                   entry(2, source_id="ao:review:2", subject="2", batch_id="b9", **reviewed)]),
    )
    assert (batch(engine, "b9").revision, sorted(batch(engine, "b9").joined)) == (2, [cause("1"), cause("2")])
    when(engine, log_pruned(5))  # history deleted beyond the cursor: scm/r1 is open
    events = when(engine, log_reconcile(facts=[observation(source_id="ao:review:3", subject="3", batch_id="b9", **reviewed)]))
    assert [(e.cause_key, e.revision, e.joined) for e in of_type(events, ev.BatchRevised)] == [(cause("3"), 3, True)]
    assert inbox_row(engine, cause("3"))["batch_id"] == "b9"


# -------------------------------------------------------------- 7.2 source.alias


def test_source_alias_is_for_the_source_or_the_daemon() -> None:
    engine = setup(review())
    assert rejection(when(engine, alias(actor="human"))) == "not_authorized"
    assert rejection(when(engine, alias(actor="daemon"))) is None


def test_an_alias_of_a_source_never_observed_is_unknown_source() -> None:
    engine = setup()
    assert rejection(when(engine, alias())) == "unknown_source"


@pytest.mark.parametrize(
    ("source_id", "alias_of"),
    [(INTERNAL, INTERNAL), (INTERNAL, SCM), (SCM, "ao:review:556"), ("ao:review:556", INTERNAL)],
    ids=["itself", "its-own-alias", "alias-of-another", "has-aliases"],
)
def test_already_exists(source_id: str, alias_of: str) -> None:
    engine = setup(review(), review("ao:review:556", subject="556", fingerprint="h556"), alias())
    if source_id == "ao:review:556" and alias_of == INTERNAL:
        when(engine, alias("gh:other", "ao:review:556"))  # 556 now has an alias of its own
    assert rejection(when(engine, alias(source_id, alias_of))) == "already_exists"


def test_the_same_alias_again_is_accepted_and_changes_nothing() -> None:
    engine = setup(review(), alias())
    events = when(engine, alias())
    assert rejection(events) is None and len(events) == 1  # its record, nothing else
    assert engine.state.reviews.aliases == {SCM: INTERNAL}


def test_an_alias_of_an_alias_means_its_canonical_source() -> None:
    engine = setup(review(), alias())
    aliased = of_type(when(engine, alias("gitlab:555", SCM)), ev.SourceAliased)[0]
    assert aliased.alias_of == INTERNAL and engine.state.reviews.aliases["gitlab:555"] == INTERNAL


def test_an_alias_s_copy_with_the_canonical_s_fingerprint_is_a_repeat_whatever_its_version() -> None:
    engine = setup(review(batch_id="b77"), alias())
    events = when(engine, review(SCM, source_version="555@1"))
    repeated = of_type(events, ev.ObservationRepeated)[0]
    assert (repeated.source_id, repeated.judged_as, repeated.cause_key, repeated.counted) == (SCM, INTERNAL, cause("555"), True)
    row = inbox_row(engine, cause("555"))
    assert (row["revision"], row["repeats"], row["batch_id"]) == (1, 1, "b77")


def test_without_the_alias_the_copy_is_a_new_revision() -> None:
    engine = setup(review(batch_id="b77"))
    when(engine, review(SCM, source_version="555@1"))
    assert inbox_row(engine, cause("555"))["revision"] == 2


def test_an_alias_s_copy_with_a_version_recorded_for_the_canonical_is_a_repeat() -> None:
    engine = setup(review(), alias())
    assert of_type(when(engine, review(SCM, fingerprint="other")), ev.ObservationRepeated)  # run-77@1 seen


def test_an_alias_s_new_observation_gets_the_canonical_s_next_local_revision_and_its_latest_cause() -> None:
    engine = setup(review(), review(subject="555-b", fingerprint="hb", source_version="run-77@2"), alias())
    events = when(engine, observe(source_id=SCM, kind="review", scope=PR, fingerprint="new", source_version="9@1"))
    recorded = of_type(events, ev.ObservationRecorded)[0]
    assert (recorded.source_id, recorded.judged_as, recorded.local_revision) == (SCM, INTERNAL, 3)
    assert recorded.cause_key == cause("555-b")  # the canonical's latest cause, not review:{PR}
    assert SCM not in engine.state.inbox.sources and engine.state.inbox.sources[INTERNAL].count == 3


def test_an_alias_s_observation_with_an_explicit_cause_key_keeps_it() -> None:
    engine = setup(review(), alias())
    events = when(engine, review(SCM, fingerprint="new", source_version="9@1", cause_key="mine"))
    assert of_type(events, ev.ObservationRecorded)[0].cause_key == "mine"


def test_an_alias_s_order_is_judged_against_the_canonical_s() -> None:
    engine = setup(review(source_time="2026-03-01T09:00:10Z"), alias())
    events = when(engine, review(SCM, fingerprint="old", source_version="9@1", source_time="2026-03-01T09:00:05Z"))
    assert of_type(events, ev.ObservationRecorded)[0].out_of_order is True


def test_scm_first_its_causes_join_the_batch_of_the_canonical_s_latest_cause() -> None:
    engine = setup(review(batch_id="b77"), review(SCM, subject="r-9001", source_version="9001@1"))
    events = when(engine, alias())
    joined = of_type(events, ev.BatchJoined)
    assert [(e.batch_id, e.cause_key, e.revision, e.source_id) for e in joined] == [("b77", cause("r-9001"), 1, SCM)]
    assert inbox_row(engine, cause("r-9001"))["batch_id"] == "b77"


def test_scm_first_with_no_batch_both_causes_join_the_alias_batch() -> None:
    engine = setup(review(), review(SCM, subject="r-9001", source_version="9001@1"))
    joined = of_type(when(engine, alias()), ev.BatchJoined)
    assert [(e.batch_id, e.cause_key, e.revision) for e in joined] == [
        (f"alias:{INTERNAL}", cause("555"), 0), (f"alias:{INTERNAL}", cause("r-9001"), 0),
    ]


# ---------------------------------------------------------- 7.3 duplicate_batch


def batched(*more):
    return setup(review(batch_id="b77"), review("ao:review:556", subject="556", fingerprint="h556", batch_id="b77"), *more)


def test_a_proposal_records_its_cause_s_batch_and_revision() -> None:
    engine = batched()
    proposed = of_type(when(engine, fix("rv1", "555")), ev.ActionProposed)[0]
    assert (proposed.batch_id, proposed.batch_revision) == ("b77", 2)
    assert action_row(engine, "rv1")["batch_id"] == "b77"
    # The last key of v1.2's; the executor's extension comes after it (docs/contract/views.md).
    assert list(action_row(engine, "rv1"))[-6:] == ["batch_id", "target", "write_paths", "input_revisions", "attempt_id", "envelope"]


def test_a_proposal_for_a_cause_in_no_batch_records_none() -> None:
    engine = setup(review())
    proposed = of_type(when(engine, fix("rv1", "555")), ev.ActionProposed)[0]
    assert b"batch" not in msgspec.json.encode(proposed)
    assert action_row(engine, "rv1")["batch_id"] is None


def test_another_cause_s_live_fix_is_duplicate_batch() -> None:
    engine = batched(fix("rv1", "555"))
    events = when(engine, fix("rv2", "556"))
    assert rejection(events) == "duplicate_batch"
    assert "'rv1'" in events[0].detail and "'b77'" in events[0].detail and "revision 2" in events[0].detail


def test_duplicate_cause_comes_before_duplicate_batch() -> None:
    engine = batched(fix("rv1", "555"))
    assert rejection(when(engine, fix("rv3", "555"))) == "duplicate_cause"


def test_a_failed_fix_does_not_hold_the_batch() -> None:
    engine = batched(fix("rv1", "555"), outcome("rv1", "failed"))
    assert rejection(when(engine, fix("rv2", "556"))) is None


def test_a_succeeded_fix_holds_the_batch_until_it_moves() -> None:
    engine = batched(fix("rv1", "555"), outcome("rv1"))
    assert rejection(when(engine, fix("rv2", "556"))) == "duplicate_batch"
    when(engine, review("ao:review:556", subject="556", fingerprint="h556b", source_version="run-78@1"))
    assert rejection(when(engine, fix("rv2", "556"))) is None


def test_a_fix_proposed_before_its_cause_joined_counts_at_the_joining_revision() -> None:
    engine = setup(review(), fix("b0", "555"), outcome("b0"))
    when(engine, review(fingerprint="h555b", source_version="run-80@1", batch_id="b80"))  # joins at revision 1
    when(engine, review("ao:review:556", subject="556", fingerprint="h556", batch_id="b80"))  # revision 2
    assert rejection(when(engine, fix("f556", "556"))) is None  # moved past 1
    engine = setup(review(), fix("b0", "555"))
    when(engine, review(fingerprint="h555b", source_version="run-80@1", batch_id="b80"))
    when(engine, review("ao:review:556", subject="556", fingerprint="h556", batch_id="b80"))
    assert rejection(when(engine, fix("f556", "556"))) == "duplicate_batch"  # b0 is live
    assert action_row(engine, "b0")["batch_id"] is None  # it recorded no batch


# ------------------------------------------------------------------- explain


def test_explain_names_the_batch_the_alias_and_the_duplicate_batch_facts() -> None:
    store = open_store("memory:")
    engine = Engine(store)
    lines = [*world(), rule(), review(batch_id="b77"), review("ao:review:556", subject="556", fingerprint="h556", batch_id="b77"),
             alias(), fix("rv1", "555"), fix("rv2", "556"), review(SCM)]
    for number, each in enumerate(lines, start=1):
        engine.submit(Located(decode(each), line=number))
    text = render_text(document(store, cause("555")))
    assert "joined batch b77" in text and f"{SCM} is an alias of {INTERNAL}" in text
    assert "batch b77 at revision 2" in render_text(document(store, "rv1"))
    with pytest.raises(ExplainError, match=r"rejected duplicate_batch \('rv1' is submitting for .* of batch 'b77'"):
        document(store, "rv2")


# --------------------------------------- 7.3 one live fix per batch (issue 23)


def joins(subject: str, batch_id: str = "b90", **kw):
    """A new review state of `subject` naming `batch_id`: its cause joins it (if in none yet)."""
    kw.setdefault("fingerprint", f"h{subject}-{batch_id}")
    kw.setdefault("source_version", f"run-{batch_id}@1")
    return review(f"ao:review:{subject}", subject=subject, batch_id=batch_id, **kw)


def unbatched(*more):
    """Reviews 555 and 556 observed in no batch yet."""
    return setup(review(), review("ao:review:556", subject="556", fingerprint="h556"), *more)


def test_a_pending_fix_whose_cause_joins_a_batch_with_an_earlier_live_fix_is_superseded() -> None:
    waiting = {**fix("rv2", "556"), "resource": "wt-rv1"}  # the same worktree: resource_busy
    engine = unbatched(fix("rv1", "555"), receipt("rv1"), waiting, joins("555"))
    assert action_row(engine, "rv2")["blocked_by"] == ["resource_busy"]
    events = when(engine, joins("556"))
    assert kinds(events)[1:] == ["ObservationRecorded", "BatchRevised", "BatchFixSuperseded"]
    superseded = of_type(events, ev.BatchFixSuperseded)[0]
    assert superseded.operation_id == "rv2"
    assert msgspec.to_builtins(superseded.facts) == {
        "batch_id": "b90", "revision": 2, "joined": cause("556"), "kept": "rv1", "kept_cause": cause("555"),
    }
    row = action_row(engine, "rv2")
    assert (row["state"], row["reason"], row["blocked_by"], row["attempts"]) == ("superseded", "duplicate_batch", [], [])
    assert action_row(engine, "rv1")["state"] == "accepted"  # the survivor: untouched
    when(engine, outcome("rv1"))  # the worktree is free: rv2 is terminal, never claimed
    assert action_row(engine, "rv2")["state"] == "superseded" and not engine.state.actions.by_id["rv2"].attempts


def test_an_accepted_fix_is_asked_to_stop_and_its_attempt_stays_until_the_executor_s_word() -> None:
    engine = unbatched(fix("rv1", "555"), receipt("rv1"), fix("rv2", "556"), receipt("rv2"), joins("555"))
    events = when(engine, joins("556"))
    requested = of_type(events, ev.ActionCancelRequested)
    assert [(e.operation_id, e.reason, e.duplicate_batch.kept) for e in requested] == [("rv2", "duplicate_batch", "rv1")]
    assert not of_type(events, ev.BatchFixSuperseded)
    row = action_row(engine, "rv2")
    assert (row["state"], row["reason"], row["attempts"]) == (
        "cancel_requested", "duplicate_batch", [{"attempt_id": "rv2/a1", "state": "accepted"}]
    )
    assert action_row(engine, "rv1")["state"] == "accepted"
    when(engine, outcome("rv2", "cancelled"))
    assert (action_row(engine, "rv2")["state"], action_row(engine, "rv2")["reason"]) == ("cancelled", "duplicate_batch")


def test_a_v1_cancel_request_encodes_no_batch_facts() -> None:
    engine = unbatched(fix("rv1", "555"), receipt("rv1"))
    requested = of_type(when(engine, line("action.cancel", "human", operation_id="rv1")), ev.ActionCancelRequested)[0]
    assert b"duplicate_batch" not in msgspec.json.encode(requested)


def test_the_earliest_fix_survives_whichever_cause_joins_last() -> None:
    engine = unbatched(fix("rv1", "555"), fix("rv2", "556"), joins("556"))
    events = when(engine, joins("555"))  # the earlier fix's cause joins last
    requested = of_type(events, ev.ActionCancelRequested)
    assert [(e.operation_id, e.duplicate_batch.joined, e.duplicate_batch.kept) for e in requested] == [
        ("rv2", cause("555"), "rv1")
    ]
    assert action_row(engine, "rv1")["state"] == "submitting"


def test_a_fenced_fix_is_superseded_too() -> None:
    waiting = propose("tk2", cause_key=cause("556"), resource="wt-rv1")  # task t1's, behind rv1
    engine = unbatched(fix("rv1", "555"), waiting, revise_task("t1"), joins("555"))
    assert action_row(engine, "tk2")["state"] == "fenced"
    events = when(engine, joins("556"))
    assert [e.operation_id for e in of_type(events, ev.BatchFixSuperseded)] == ["tk2"]
    assert (action_row(engine, "tk2")["state"], action_row(engine, "tk2")["reason"]) == ("superseded", "duplicate_batch")


def test_a_join_with_one_live_fix_stops_nothing_and_a_revision_in_the_batch_changes_no_membership() -> None:
    engine = unbatched(fix("rv1", "555"), outcome("rv1", "failed"), fix("rv2", "556"), joins("555"))
    assert not of_type(when(engine, joins("556")), ev.ActionCancelRequested)  # rv1 failed: rv2 is the only fix
    engine = unbatched(fix("rv1", "555"), joins("555"), joins("556"))
    events = when(engine, joins("555", fingerprint="h555-again", source_version="run-b90@2"))
    assert [e.joined for e in of_type(events, ev.BatchRevised)] == [False]
    assert not of_type(events, ev.ActionCancelRequested) and not of_type(events, ev.BatchFixSuperseded)


def test_a_fix_already_asked_to_stop_is_not_live() -> None:
    engine = unbatched(fix("rv1", "555"), receipt("rv1"), line("action.cancel", "human", operation_id="rv1"),
                       fix("rv2", "556"), receipt("rv2"), joins("555"))
    events = when(engine, joins("556"))  # rv1 cancel_requested (human): rv2 is the batch's one live fix
    assert not of_type(events, ev.ActionCancelRequested) and not of_type(events, ev.BatchFixSuperseded)
    assert action_row(engine, "rv2")["state"] == "accepted"
    # At action.propose a fix asked to stop still counts (section 7.3): nothing new while it may finish.
    when(engine, outcome("rv2", "failed"))
    when(engine, joins("557"))
    assert rejection(when(engine, fix("rv3", "557"))) == "duplicate_batch"


def test_a_late_alias_join_stops_the_scm_cause_s_fix() -> None:
    engine = setup(review(batch_id="b77"), fix("rv1", "555"), review(SCM, subject="r-9001", source_version="9001@1"),
                   fix("rv9", "r-9001"), receipt("rv9"))
    events = when(engine, alias())
    assert kinds(events)[1:] == ["SourceAliased", "BatchJoined", "ActionCancelRequested"]
    requested = of_type(events, ev.ActionCancelRequested)[0]
    assert (requested.operation_id, requested.duplicate_batch.batch_id, requested.duplicate_batch.kept) == ("rv9", "b77", "rv1")
    assert engine.state.actions.by_id["rv9"].attempts[-1].state == "accepted"


def test_scm_first_with_no_batch_the_alias_batch_keeps_one_fix() -> None:
    engine = setup(review(), fix("rv1", "555"), review(SCM, subject="r-9001", source_version="9001@1"), fix("rv9", "r-9001"))
    events = when(engine, alias())
    requested = of_type(events, ev.ActionCancelRequested)  # rv9 was claimed: submitting, in flight
    assert [(e.operation_id, e.duplicate_batch.batch_id) for e in requested] == [("rv9", f"alias:{INTERNAL}")]


def test_explain_names_duplicate_batch_the_batch_and_the_surviving_fix() -> None:
    store = open_store("memory:")
    engine = Engine(store)
    waiting = {**fix("rv2", "556"), "resource": "wt-rv1"}
    lines = [*world(), rule(), review(), review("ao:review:556", subject="556", fingerprint="h556"),
             review("ao:review:557", subject="557", fingerprint="h557"),
             fix("rv1", "555"), receipt("rv1"), waiting, fix("rv3", "557"), receipt("rv3"),
             joins("555"), joins("556"), joins("557")]
    for number, each in enumerate(lines, start=1):
        engine.submit(Located(decode(each), line=number))
    superseded = render_text(document(store, "rv2"))
    assert "superseded (duplicate_batch): batch b90 keeps its earlier live fix rv1" in superseded
    assert f"{cause('556')} joined batch b90 (revision 2)" in superseded
    assert f"the batch's earlier live fix rv1, for {cause('555')}, survives" in superseded
    stopped = render_text(document(store, "rv3"))
    assert "cancel requested (duplicate_batch): batch b90 keeps its earlier live fix rv1" in stopped
    assert "it ends on the executor's word" in stopped
    facts = {fact["name"]: fact for link in encode_steps(store, "rv2") for fact in link["facts"]}
    assert facts["duplicate_batch"]["value"]["kept"] == "rv1" and facts["duplicate_batch"]["source"]["event"] == "BatchRevised"
    assert facts["kept"]["now"]["state"] == "accepted"


def encode_steps(store, identifier: str) -> list[dict]:
    return msgspec.json.decode(encode_json(document(store, identifier)))["matches"][0]["steps"]


def test_a_superseded_fix_backing_off_no_longer_degrades_health() -> None:
    backoff = rule(grant=grant_request("g-rule", operations=("worker.start",), retry_backoff_s=60))
    engine = given(world(), backoff, review(), review("ao:review:556", subject="556", fingerprint="h556"),
                   fix("rv1", "555"), fix("rv2", "556"), receipt("rv2", result="refused"), joins("555"))
    assert action_row(engine, "rv2")["blocked_by"] == ["retry_backoff"]
    assert engine.views.view("health")["degraded"] == ["action_backoff"]
    when(engine, joins("556"))
    assert action_row(engine, "rv2")["state"] == "superseded"
    assert engine.views.view("health")["degraded"] == []
