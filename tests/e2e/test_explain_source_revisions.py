"""`tandem explain` of contract v1.2 section 2's decisions (its section 10):
the source rule names the action's source revision and target, the cause's
revision and its latest observation (with the input that recorded it); a
dependent kept pending for evidence names what its prerequisite lacks."""

from __future__ import annotations

from pathlib import Path

from tandem.replay.explain import explain
from tests.e2e.test_explain import chain, stored

GATES = Path(__file__).resolve().parents[2] / "fixtures" / "gates"
SUPERSEDED = GATES / "37_ci_repair_superseded_when_ci_passes_before_claim.jsonl"
EVIDENCE = GATES / "38_missing_evidence_keeps_dependency_pending.jsonl"
RECHECKED = GATES / "45_target_sha_and_opt_in_rechecked_at_dispatch.jsonl"


def test_a_superseded_repair_names_its_revision_the_causes_and_the_latest_observation() -> None:
    store, _ = stored(SUPERSEDED)
    (r1,) = explain(store, "r1", kind="operation")
    assert r1.state == "superseded" and r1.waiting == []
    assert chain(r1)[-1] == ("SourceRuleApplied", 20, "superseded")
    step = r1.steps[-1]
    assert "source_resolved" in step.summary
    facts = {fact.name: fact for fact in step.facts}
    assert facts["source_revision"].value == {"source_revision": 1, "target_sha": "abc123", "cause_revision": 2}
    latest = facts["latest_observation"]
    assert latest.value == {"status": "success", "commit_sha": "abc123", "deleted": False, "complete": True}
    assert latest.source is not None and latest.source.event == "ObservationRecorded" and latest.source.input.line == 20


def test_the_recurrence_is_claimed_for_its_current_revision() -> None:
    store, _ = stored(SUPERSEDED)
    (r2,) = explain(store, "r2", kind="operation")
    claim = next(step for step in r2.steps if step.event == "ActionClaimed")
    assert any(f.name == "source_revision" and f.value == 3 for f in claim.facts)


def test_a_dependent_pending_for_evidence_names_what_its_prerequisite_lacks() -> None:
    store, _ = stored(EVIDENCE)
    (op_it,) = explain(store, "op-it", kind="operation")
    blocked = [step for step in op_it.steps if step.event == "ActionBlocked"][-1]
    assert blocked.input.line == 27  # op-form's outcome: same code, its facts recorded again
    (fact,) = blocked.facts
    assert fact.value["operation_id"] == "op-form" and fact.value["state"] == "succeeded"
    assert fact.value["evidence_refs"] == [] and fact.value["required_artifact_revision"] == "form@def456"
    assert "evidence required, refs: none yet" in fact.text
    assert chain(op_it)[-1] == ("ActionClaimed", 30, "submitting")


def test_a_task_action_fenced_source_moved_and_revalidated_at_the_new_revision() -> None:
    store, _ = stored(RECHECKED)
    (t1,) = explain(store, "t1", kind="operation")
    events = [event for event, _, _ in chain(t1)]
    assert events.index("SourceRuleApplied") < events.index("ActionRevalidated") < events.index("ActionClaimed")
    revalidated = next(step for step in t1.steps if step.event == "ActionRevalidated")
    assert any(f.name == "source_revision" and f.value == 2 for f in revalidated.facts)
