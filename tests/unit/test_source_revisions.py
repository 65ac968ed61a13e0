"""Source revisions at dispatch (contract v1.2 section 2): a proposal names
the cause's revision it answers, and the engine rechecks it before every
claim (the source rule), supersedes a stale unaccepted command, and keeps a
dependent pending while its prerequisite lacks the evidence it requires."""

from __future__ import annotations

import msgspec
import pytest

from tandem.domain import events as ev
from tandem.domain.inputs import decode_input
from tests.unit.helpers import (
    PR,
    action_row,
    action_state,
    grant_request,
    attach_evidence,
    blocked_by,
    cancel_action,
    complete_task,
    given,
    kinds,
    observe,
    of_type,
    outcome,
    propose,
    receipt,
    rejection,
    revalidate,
    rule,
    when,
    world,
)

CAUSE = f"ci:{PR}"


def fail(version: str = "1", sha: str = "abc123", **kw):
    kw.setdefault("fingerprint", f"f-fail-{version}")
    return observe(source_version=version, status="failure", commit_sha=sha, **kw)


def passed(version: str = "2", sha: str = "abc123", **kw):
    kw.setdefault("fingerprint", f"f-pass-{version}")
    return observe(source_version=version, status="success", commit_sha=sha, **kw)


def repair(operation_id: str = "r1", source_revision: int | None = 1, cause_key: str = CAUSE, **kw):
    """A rule's CI repair on resource wt (busy while `hold` is out)."""
    line = propose(operation_id, task_id=None, actor="daemon", rule_id="ci-repair", revisions={"grant": 1},
                   cause_key=cause_key, resource="wt", **kw)
    if source_revision is not None:
        line.update(source_revision=source_revision, moot_statuses=["success"])
    return line


def task_repair(operation_id: str = "op-1", source_revision: int = 1, **kw):
    return propose(operation_id, cause_key=CAUSE, resource="wt", source_revision=source_revision, **kw)


def hold():
    """An action in flight on wt, so a later one there stays pending (resource_busy)."""
    return propose("hold", resource="wt")


def setup(*more):
    return given(world(), rule(), hold(), fail(), *more)


# ------------------------------------------------------------ proposal checks (2.1)


def test_a_proposal_records_its_source_revision_target_and_moot_statuses() -> None:
    engine = setup()
    events = when(engine, repair(target_sha="abc123"))
    proposed = of_type(events, ev.ActionProposed)[0]
    assert (proposed.source_revision, proposed.target_sha, proposed.moot_statuses) == (1, "abc123", ["success"])
    row = action_row(engine, "r1")
    assert (row["state"], row["blocked_by"], row["source_revision"], row["reason"]) == ("pending", ["resource_busy"], 1, None)


def test_a_v1_proposal_records_none_of_the_new_fields() -> None:
    engine = setup()
    proposed = of_type(when(engine, repair(source_revision=None)), ev.ActionProposed)[0]
    assert b"source_revision" not in msgspec.json.encode(proposed)
    assert action_row(engine, "r1")["source_revision"] is None


@pytest.mark.parametrize("field", ["target_sha", "moot_statuses"])
def test_target_sha_and_moot_statuses_need_a_source_revision(field: str) -> None:
    line = repair(source_revision=None, **{field: "abc123" if field == "target_sha" else ["success"]})
    line["at"] = "2026-03-01T09:00:00Z"
    import json

    with pytest.raises(msgspec.ValidationError, match="needs `source_revision`"):
        decode_input(json.dumps(line))


def test_a_proposal_for_an_older_revision_is_stale_revision() -> None:
    engine = setup(fail("2", sha="abc123", fingerprint="f-other"))
    assert rejection(when(engine, repair(source_revision=1))) == "stale_revision"
    assert rejection(when(engine, repair(source_revision=2))) is None


def test_a_proposal_for_another_commit_than_the_latest_is_target_moved() -> None:
    engine = setup()
    assert rejection(when(engine, repair(target_sha="def456"))) == "target_moved"


def test_a_proposal_whose_cause_is_moot_is_source_resolved() -> None:
    engine = given(world(), rule(), passed("1"))
    assert rejection(when(engine, repair(source_revision=1))) == "source_resolved"


def test_a_deleted_latest_is_moot_whatever_the_statuses() -> None:
    engine = given(world(), rule(), observe(fingerprint="gone", deleted=True))
    line = repair(source_revision=1)
    line["moot_statuses"] = []
    assert rejection(when(engine, line)) == "source_resolved"


def test_a_partial_latest_is_never_moot() -> None:
    engine = given(world(), rule(), passed("1", complete=False))
    assert rejection(when(engine, repair(source_revision=1))) is None


def test_a_rule_not_opted_in_for_the_scope_is_rule_opted_out() -> None:
    engine = given(world(), rule(scopes=["https://scm/pr/8"]), fail())
    assert rejection(when(engine, repair())) == "rule_opted_out"
    engine = given(world(), rule(scopes=[PR]), fail())
    assert rejection(when(engine, repair())) is None


def test_a_cause_with_no_observation_is_in_no_scope() -> None:
    engine = given(world(), rule(scopes=[PR]))
    assert rejection(when(engine, repair(source_revision=None, cause_key="manual:x"))) == "rule_opted_out"


# ------------------------------------------------------------------ the source rule (2.2)


def test_a_pending_action_whose_cause_became_moot_is_superseded_before_any_claim() -> None:
    engine = setup(repair())
    events = when(engine, passed())
    applied = of_type(events, ev.SourceRuleApplied)[0]
    assert (applied.outcome, applied.reason, applied.source_revision) == ("superseded", "source_resolved", 1)
    assert applied.facts == ev.SourceFacts(
        source_revision=1, cause_revision=2, moot_statuses=["success"], status="success",
        commit_sha="abc123", deleted=False, complete=True, observed_by=applied.cause,
    )
    row = action_row(engine, "r1")
    assert (row["state"], row["reason"], row["blocked_by"], row["attempts"]) == ("superseded", "source_resolved", [], [])
    events = when(engine, outcome("hold"))  # wt frees: nothing is claimed
    assert not of_type(events, ev.ActionClaimed)


def test_a_push_supersedes_an_action_for_the_old_commit_with_target_moved() -> None:
    engine = setup(repair(target_sha="abc123"))
    when(engine, fail("2", sha="def456"))
    row = action_row(engine, "r1")
    assert (row["state"], row["reason"]) == ("superseded", "target_moved")


def test_a_rule_action_whose_cause_moved_but_is_not_moot_is_restamped_and_claimed() -> None:
    engine = setup(repair())
    events = when(engine, fail("2", fingerprint="f-fail-again"))
    applied = of_type(events, ev.SourceRuleApplied)[0]
    assert (applied.outcome, applied.reason, applied.source_revision) == ("restamped", None, 2)
    assert action_row(engine, "r1")["source_revision"] == 2 and action_state(engine, "r1") == "pending"
    claim = of_type(when(engine, outcome("hold")), ev.ActionClaimed)[0]
    assert claim.envelope.source_revision == 2


def test_a_task_action_whose_cause_moved_is_fenced_source_moved_until_revalidated() -> None:
    engine = setup(task_repair())
    when(engine, fail("2", fingerprint="f-fail-again"))
    row = action_row(engine, "op-1")
    assert (row["state"], row["reason"], row["source_revision"]) == ("fenced", "source_moved", 1)
    assert rejection(when(engine, revalidate("op-1"))) == "stale_revision"  # no source revision given
    assert rejection(when(engine, revalidate("op-1", source_revision=1))) == "stale_revision"
    events = when(engine, revalidate("op-1", source_revision=2))
    assert of_type(events, ev.ActionRevalidated)[0].source_revision == 2
    row = action_row(engine, "op-1")
    assert (row["state"], row["reason"], row["source_revision"]) == ("pending", None, 2)


def test_a_fenced_task_action_stays_fenced_when_its_cause_moves_again() -> None:
    engine = setup(task_repair(), fail("2", fingerprint="f-2"))
    events = when(engine, fail("3", fingerprint="f-3"))
    assert not of_type(events, ev.SourceRuleApplied)
    assert action_state(engine, "op-1") == "fenced"


def test_a_fenced_action_is_superseded_when_its_cause_becomes_moot() -> None:
    engine = setup(task_repair(moot_statuses=["success"]), fail("2", fingerprint="f-2"))
    when(engine, passed("3"))
    assert (action_state(engine, "op-1"), action_row(engine, "op-1")["reason"]) == ("superseded", "source_resolved")


def test_an_action_in_flight_keeps_its_delivery_state() -> None:
    engine = given(world(), rule(), fail(), repair())
    assert action_state(engine, "r1") == "submitting"
    events = when(engine, passed())
    assert not of_type(events, ev.SourceRuleApplied)
    assert action_state(engine, "r1") == "submitting"


def test_a_refused_action_back_at_pending_meets_the_rule_before_it_could_be_claimed_again() -> None:
    engine = given(world(), rule(), fail(), repair(), passed())
    events = when(engine, receipt("r1", result="refused"))
    assert kinds(events)[1:3] == ["AttemptUpdated", "SourceRuleApplied"]
    assert not of_type(events, ev.ActionClaimed)
    assert action_state(engine, "r1") == "superseded"


def test_superseded_is_terminal_not_cancellable_and_no_duplicate_cause() -> None:
    engine = setup(repair(), passed())
    assert rejection(when(engine, cancel_action("r1"))) == "not_cancellable"
    when(engine, fail("3", sha="def456", fingerprint="f-fail-3"))
    events = when(engine, repair("r2", source_revision=3, target_sha="def456"))
    assert rejection(events) is None  # r1 is superseded, not succeeded: the recurrence is repaired


def test_superseded_fails_a_dependent_and_counts_as_terminal_for_task_complete() -> None:
    engine = setup(task_repair(moot_statuses=["success"]), propose("op-2", prerequisites=["op-1"]))
    when(engine, passed())
    assert blocked_by(engine, "op-2") == ["prerequisite_failed"]
    when(engine, cancel_action("op-2"))
    when(engine, outcome("hold"))
    assert rejection(when(engine, complete_task("t1", evidence_refs=["ev/1"]))) is None


# ------------------------------------------------------------------ rule opt-in (2.4)


def test_a_pending_rule_action_no_longer_opted_in_is_blocked_until_it_is_again() -> None:
    engine = setup(repair())
    events = when(engine, rule(scopes=["https://scm/pr/8"]))
    blocked = of_type(events, ev.ActionBlocked)[0]
    assert blocked.blocked_by == ["resource_busy", "rule_opted_out"]
    assert blocked.facts[1] == ev.BlockFact(
        code="rule_opted_out", rule_id="ci-repair", scopes=["https://scm/pr/8"], scope=PR
    )
    when(engine, outcome("hold"))
    assert blocked_by(engine, "r1") == ["rule_opted_out"]
    events = when(engine, rule(scopes=["*"]))
    assert [c.operation_id for c in of_type(events, ev.ActionClaimed)] == ["r1"]


def test_a_rule_set_again_without_scopes_keeps_its_scopes() -> None:
    engine = given(world(), rule(scopes=[PR]), fail())
    events = when(engine, rule())
    assert not of_type(events, ev.RuleSet)
    assert rejection(when(engine, repair(input_revisions={"grant": 2}))) is None  # set again: grant revision 2
    engine = given(world(), rule(scopes=["https://scm/pr/8"]), fail(), rule())
    assert rejection(when(engine, repair(input_revisions={"grant": 2}))) == "rule_opted_out"


# -------------------------------------------------------- evidence (2.5, evidence.attach)


def evidence_world(required_artifact: str | None = "form@def456", **more):
    prerequisite = {"operation_id": "op-form", "outcome": "succeeded", "evidence_required": True}
    if required_artifact is not None:
        prerequisite["artifact_revision"] = required_artifact
    return given(world(), propose("op-form"), propose("op-it", prerequisites=[prerequisite]))


def test_a_success_without_its_required_artifact_keeps_an_evidence_dependent_pending() -> None:
    engine = evidence_world()
    events = when(engine, outcome("op-form"))
    blocked = of_type(events, ev.ActionBlocked)[0]
    assert blocked.blocked_by == ["prerequisite_pending"]  # v1: prerequisite_failed
    assert blocked.facts[0].prerequisites == [
        ev.PrerequisiteFact(operation_id="op-form", state="succeeded", artifact_revision=None,
                            required_artifact_revision="form@def456", evidence_required=True, evidence_refs=[])
    ]
    events = when(engine, attach_evidence("op-form", "ev/form-tests", artifact_revision="form@def456"))
    assert kinds(events) == ["InputAccepted", "EvidenceAttached", "ActionClaimed"]
    row = action_row(engine, "op-form")
    assert (row["artifact_revision"], row["evidence_refs"]) == ("form@def456", ["ev/form-tests"])


def test_a_success_with_its_artifact_but_no_evidence_keeps_the_dependent_pending() -> None:
    engine = evidence_world()
    when(engine, outcome("op-form", artifact_revision="form@def456"))
    assert blocked_by(engine, "op-it") == ["prerequisite_pending"]
    when(engine, attach_evidence("op-form", "ev/form-tests"))
    assert action_state(engine, "op-it") == "submitting"


def test_an_outcome_with_evidence_and_the_artifact_unblocks_at_once() -> None:
    engine = evidence_world()
    when(engine, outcome("op-form", artifact_revision="form@def456", evidence_ref="ev/1"))
    assert action_state(engine, "op-it") == "submitting"
    assert action_row(engine, "op-form")["evidence_refs"] == ["ev/1"]


def test_evidence_for_another_artifact_fails_the_dependent() -> None:
    engine = evidence_world()
    when(engine, outcome("op-form"))
    when(engine, attach_evidence("op-form", "ev/x", artifact_revision="form@zzz999"))
    assert blocked_by(engine, "op-it") == ["prerequisite_failed"]


def test_no_required_artifact_needs_only_evidence() -> None:
    engine = evidence_world(required_artifact=None)
    when(engine, outcome("op-form"))
    assert blocked_by(engine, "op-it") == ["prerequisite_pending"]
    when(engine, attach_evidence("op-form", "ev/1"))
    assert action_state(engine, "op-it") == "submitting"


def test_evidence_attaches_only_to_a_success() -> None:
    engine = evidence_world()
    assert rejection(when(engine, attach_evidence("op-form"))) == "not_succeeded"
    assert rejection(when(engine, attach_evidence("op-nope"))) == "unknown_operation"


def test_an_artifact_revision_once_known_never_changes() -> None:
    engine = evidence_world()
    when(engine, outcome("op-form", artifact_revision="form@def456"))
    assert rejection(when(engine, attach_evidence("op-form", artifact_revision="form@zzz999"))) == "artifact_mismatch"
    assert rejection(when(engine, attach_evidence("op-form", artifact_revision="form@def456"))) is None


def test_a_ref_is_kept_once_and_at_most_64() -> None:
    engine = evidence_world()
    when(engine, outcome("op-form"))
    when(engine, attach_evidence("op-form", "ev/0"))
    assert kinds(when(engine, attach_evidence("op-form", "ev/0"))) == ["InputAccepted"]
    for n in range(1, 64):
        when(engine, attach_evidence("op-form", f"ev/{n}"))
    assert len(action_row(engine, "op-form")["evidence_refs"]) == 64
    assert rejection(when(engine, attach_evidence("op-form", "ev/64"))) == "limit_reached"


def test_evidence_attach_is_for_the_executor_or_a_source() -> None:
    engine = evidence_world()
    when(engine, outcome("op-form"))
    assert rejection(when(engine, attach_evidence("op-form", actor="source"))) is None
    assert rejection(when(engine, attach_evidence("op-form", "ev/2", actor="background"))) == "not_authorized"


# ------------------------------------------------------------------ the view's reason (2.6)


def test_reason_by_state() -> None:
    engine = given(world(), propose("op-1"), propose("op-2", resource="res:op-1"))
    assert action_row(engine, "op-1")["reason"] is None  # submitting
    when(engine, cancel_action("op-1"))
    assert action_row(engine, "op-1")["reason"] == "human"  # cancel_requested
    when(engine, cancel_action("op-2"))
    row = action_row(engine, "op-2")
    assert (row["state"], row["reason"]) == ("cancelled", "human")  # from pending
    when(engine, outcome("op-1", result="cancelled"))
    assert action_row(engine, "op-1")["reason"] == "human"  # cancelled after a human's request


def test_an_action_superseded_while_backing_off_no_longer_degrades_health() -> None:
    """health.degraded's action_backoff lists actions a refusal's back-off holds
    (contract v1.2 sections 3.5, 3.9); one the source rule then supersedes is
    held by nothing and leaves the list."""
    backoff = rule(grant=grant_request("g-rule", operations=("worker.start",), retry_backoff_s=60))
    engine = given(world(), backoff, fail(), repair(), receipt("r1", result="refused"))
    assert engine.views.view("actions")[0]["blocked_by"] == ["retry_backoff"]
    assert engine.views.view("health")["degraded"] == ["action_backoff"]
    events = when(engine, passed())
    assert of_type(events, ev.SourceRuleApplied)[0].outcome == "superseded"
    assert action_state(engine, "r1") == "superseded"
    assert engine.views.view("health")["degraded"] == []
