"""Contract v1.1 observations (spec/TRACE.md section 10): `subject` causes,
repeats per (source, cause), `source_time` out of order, `truncated`, and
the inbox row's `out_of_order` and `latest`.

Given inputs, when one more observation, then its events and the inbox row."""

from __future__ import annotations

import json

import pytest
from msgspec import UNSET

from tandem.domain import events as ev
from tests.unit.helpers import PR, at, given, inbox_row, kinds, observe, of_type, rejection, when, world

CI = f"ci:{PR}"


def t(second: int) -> str:
    """A source's own time (its object's updated_at)."""
    return f"2026-02-01T10:00:{second:02d}Z"


def recorded(events: list[ev.Event]) -> ev.ObservationRecorded:
    (found,) = of_type(events, ev.ObservationRecorded)
    return found


# ------------------------------------------------------------------- subjects


def test_a_subject_makes_its_own_cause_two_checks_on_one_pr_are_two_causes():
    engine = given(world())
    when(engine, observe("run-1", "lint-f", subject="lint", status="failure", at=at(1)))
    when(engine, observe("run-2", "unit-p", subject="unit-tests", status="success", at=at(2)))
    lint, unit = inbox_row(engine, f"{CI}:lint"), inbox_row(engine, f"{CI}:unit-tests")
    assert (lint["revision"], lint["latest"]["status"]) == (1, "failure")  # not merged into the success
    assert (unit["revision"], unit["latest"]["status"]) == (1, "success")
    assert all(row["cause_key"] != CI for row in engine.views.view("inbox"))


def test_comments_keep_their_per_comment_cause_with_a_subject():
    engine = given(world())
    when(engine, observe("c-1", "hi", kind="comment", subject="ignored-for-comments", at=at(1)))
    assert inbox_row(engine, f"comment:{PR}:c-1")["revision"] == 1


def test_an_explicit_cause_key_wins_over_the_subject():
    engine = given(world())
    when(engine, observe("run-1", "f", subject="lint", cause_key="mine", at=at(1)))
    assert inbox_row(engine, "mine")["revision"] == 1


# -------------------------------------------------------------------- repeats


def test_one_source_under_two_causes_is_no_repeat_of_itself():
    """One check run that concerns two PRs: observed once per PR, the second
    is the other PR's first revision, not a repeat."""
    engine = given(world())
    when(engine, observe("run-9", "fail", scope="https://scm/pr/1", subject="ci", status="failure", at=at(1)))
    events = when(engine, observe("run-9", "fail", scope="https://scm/pr/2", subject="ci", status="failure", at=at(2)))
    assert "ObservationRepeated" not in kinds(events)
    assert recorded(events).local_revision == 2  # the source's count
    for number in (1, 2):
        row = inbox_row(engine, f"ci:https://scm/pr/{number}:ci")
        assert (row["revision"], row["repeats"], row["latest"]["status"]) == (1, 0, "failure")
    # The same again for PR 2 is a repeat, of PR 2's cause only.
    when(engine, observe("run-9", "fail", scope="https://scm/pr/2", subject="ci", status="failure", at=at(3)))
    assert inbox_row(engine, "ci:https://scm/pr/2:ci")["repeats"] == 1
    assert inbox_row(engine, "ci:https://scm/pr/1:ci")["repeats"] == 0


# --------------------------------------------------------------- out of order


def test_a_late_older_version_is_out_of_order_counted_not_the_latest():
    engine = given(world())
    when(engine, observe("c-1", "v2", kind="comment", source_time=t(20), text="edited", at=at(1)))
    events = when(engine, observe("c-1", "v1", kind="comment", source_time=t(10), text="original", at=at(2)))
    late = recorded(events)
    assert (late.out_of_order, late.update_revision, late.local_revision) == (True, None, 2)
    assert not of_type(events, ev.UpdateTriaged)
    row = inbox_row(engine, f"comment:{PR}:c-1")
    assert (row["revision"], row["out_of_order"], row["latest"]["excerpt"]) == (1, 1, "edited")
    assert row["latest"]["source_time"] == t(20)
    assert engine.state.inbox.updates[f"comment:{PR}:c-1"].text == "edited"


def test_equal_source_times_are_in_order():
    engine = given(world())
    when(engine, observe("run-1", "queued", subject="ci", source_time=t(10), complete=False, at=at(1)))
    events = when(engine, observe("run-1", "done", subject="ci", source_time=t(10), status="success", at=at(2)))
    assert recorded(events).out_of_order is UNSET
    assert inbox_row(engine, f"{CI}:ci")["revision"] == 2


def test_a_late_edit_never_brings_a_deleted_comment_back():
    engine = given(world())
    when(engine, observe("c-1", "v1", kind="comment", source_time=t(10), text="hello", at=at(1)))
    when(engine, observe("c-1", "gone", kind="comment", source_time=t(30), text="edited", deleted=True, at=at(2)))
    # The edit GitHub delivered late: its time is the last edit's, not after the deletion.
    events = when(engine, observe("c-1", "v2", kind="comment", source_time=t(30), text="edited", at=at(3)))
    assert recorded(events).out_of_order is True
    row = inbox_row(engine, f"comment:{PR}:c-1")
    assert (row["revision"], row["out_of_order"], row["latest"]["deleted"]) == (2, 1, True)
    # Even an older one, later still.
    when(engine, observe("c-1", "v1b", kind="comment", source_time=t(20), text="mid", at=at(4)))
    assert inbox_row(engine, f"comment:{PR}:c-1")["latest"]["deleted"] is True


def test_without_source_times_nothing_is_out_of_order():
    engine = given(world())
    when(engine, observe("c-1", "v2", kind="comment", source_time=t(20), at=at(1)))
    when(engine, observe("c-1", "v1", kind="comment", at=at(2)))  # no time: in order, as in v1
    row = inbox_row(engine, f"comment:{PR}:c-1")
    assert (row["revision"], row["out_of_order"], row["latest"]["source_time"]) == (2, 0, None)


def test_order_is_judged_per_source_and_cause():
    engine = given(world())
    when(engine, observe("run-1", "a", subject="lint", source_time=t(50), at=at(1)))
    events = when(engine, observe("run-2", "b", subject="lint", source_time=t(10), at=at(2)))  # another source
    assert recorded(events).out_of_order is not True
    assert inbox_row(engine, f"{CI}:lint")["revision"] == 2


def test_a_resent_late_version_is_a_repeat_not_counted_twice():
    engine = given(world())
    when(engine, observe("c-1", "v2", kind="comment", source_version="2", source_time=t(20), at=at(1)))
    when(engine, observe("c-1", "v1", kind="comment", source_version="1", source_time=t(10), at=at(2)))
    events = when(engine, observe("c-1", "v1", kind="comment", source_version="1", source_time=t(10), at=at(3)))
    assert "ObservationRepeated" in kinds(events)
    row = inbox_row(engine, f"comment:{PR}:c-1")
    assert (row["revision"], row["out_of_order"], row["repeats"]) == (1, 1, 1)


# ------------------------------------------------------------ latest, truncated


def test_latest_holds_the_excerpt_of_at_most_280_characters_and_truncated():
    engine = given(world())
    when(engine, observe("c-1", "f", kind="comment", text="x" * 300 + "tail", truncated=True, evidence_ref="https://scm/c/1", at=at(1)))
    latest = inbox_row(engine, f"comment:{PR}:c-1")["latest"]
    assert latest == {"status": None, "deleted": False, "source_time": None, "evidence_ref": "https://scm/c/1", "excerpt": "x" * 280, "truncated": True}


def test_v1_observations_store_none_of_the_new_fields():
    """A v1 observation's event is the same bytes as before: no subject,
    source_time, truncated or out_of_order key."""
    engine = given(world())
    events = when(engine, observe("ci-1", "f", status="failure", at=at(1)))
    data = ev.encode_event(recorded(events))
    assert all(key not in data for key in (b'"subject"', b'"source_time"', b'"truncated"', b'"out_of_order"'))


@pytest.mark.parametrize("field, value", [("source_time", "yesterday"), ("truncated", "yes"), ("subject", "")])
def test_bad_new_fields_are_schema_errors(field: str, value: object):
    from tandem.adapters.trace import TraceInvalid, parse_trace

    line = {"type": "observe", "at": at(1), "actor": "source", "source_id": "s", "kind": "ci", "scope": PR, "fingerprint": "f", "complete": True, field: value}
    with pytest.raises(TraceInvalid) as raised:
        parse_trace((json.dumps(line) + "\n").encode(), "bad.jsonl")
    assert f"{field}" in str(raised.value.errors[0].message)


def test_a_rejected_input_changes_no_source_state():
    engine = given(world())
    events = when(engine, observe("c-1", "f", kind="comment", actor="human", at=at(1)))
    assert rejection(events) == "not_authorized"
    assert "c-1" not in engine.state.inbox.sources


# -------------------------------------------------------------------- explain


def test_explain_of_a_cause_shows_each_observations_status_time_evidence_and_order():
    from tandem.adapters.ingest import ingest
    from tandem.adapters.store import open_store
    from tandem.adapters.trace import parse_trace
    from tandem.replay.engine import Engine
    from tandem.replay.explain import document

    lines = [
        *world(),
        observe("c-1", "v2", kind="comment", source_time=t(20), status="edited", evidence_ref="https://scm/c/1", at=at(1)),
        observe("c-1", "v1", kind="comment", source_time=t(10), text="old", truncated=True, at=at(2)),
        observe("c-1", "gone", kind="comment", source_time=t(20), deleted=True, at=at(3)),
        observe("c-1", "v2b", kind="comment", source_time=t(20), at=at(4)),
    ]
    engine = Engine(open_store("memory:"))
    ingest(engine, parse_trace("".join(json.dumps(line) + "\n" for line in lines).encode(), "late.jsonl"))
    (cause,) = [m for m in document(engine.store, f"comment:{PR}:c-1").matches if m.kind == "cause"]
    observed = [step for step in cause.steps if step.event == "ObservationRecorded"]
    assert [step.summary for step in observed] == [
        "observed by c-1 via live: revision 1, status edited",
        f"observed by c-1 via live, out of order (source time {t(10)} is before the latest, {t(20)}): no revision, not the latest",
        "observed by c-1 via live: revision 2, deleted",
        f"observed by c-1 via live, out of order (source time {t(20)} is not after its deletion's, {t(20)}): no revision, not the latest",
    ]
    facts = [{fact.name: fact.value for fact in step.facts} for step in observed]
    assert facts[0] == {"source_time": t(20), "evidence": "https://scm/c/1"}
    assert facts[1] == {"source_time": t(10), "truncated": True}
    assert cause.state == "revision 2, untriaged"


def test_explain_says_why_an_equal_time_was_out_of_order_and_what_was_ignored():
    from tandem.adapters.ingest import ingest
    from tandem.adapters.store import open_store
    from tandem.adapters.trace import parse_trace
    from tandem.replay.engine import Engine
    from tandem.replay.explain import document

    lines = [
        *world(),
        observe("run-1", "done", subject="ci", source_time=t(10), status="success", at=at(1)),
        observe("run-1", "queued", subject="ci", source_time=t(10), status="queued", complete=False, at=at(2)),
        observe("run-1", "odd", subject="ci", ignored=True, at=at(3)),
    ]
    engine = Engine(open_store("memory:"))
    ingest(engine, parse_trace("".join(json.dumps(line) + "\n" for line in lines).encode(), "ties.jsonl"))
    (cause,) = [m for m in document(engine.store, f"{CI}:ci").matches if m.kind == "cause"]
    observed = [step.summary for step in cause.steps if step.event == "ObservationRecorded"]
    assert observed == [
        "observed by run-1 via live: revision 1, status success",
        f"observed by run-1 via live, out of order (source time {t(10)} is the latest's, and queued comes before its completed): no revision, not the latest, status queued",
        "observed by run-1 via live, ignored (recorded for audit, never acted on): no revision",
    ]


# ------------------------------------------------ equal times, by status precedence


def test_a_queued_check_at_its_completions_time_is_out_of_order():
    engine = given(world())
    when(engine, observe("run-1", "done", subject="ci", source_time=t(10), status="success", at=at(1)))
    events = when(engine, observe("run-1", "queued", subject="ci", source_time=t(10), status="queued", complete=False, at=at(2)))
    assert recorded(events).out_of_order is True
    row = inbox_row(engine, f"{CI}:ci")
    assert (row["revision"], row["out_of_order"], row["partial"], row["latest"]["status"]) == (1, 1, False, "success")


def test_equal_times_among_partial_statuses_follow_their_precedence():
    engine = given(world())
    when(engine, observe("run-1", "q", subject="ci", source_time=t(10), status="queued", complete=False, at=at(1)))
    forward = when(engine, observe("run-1", "p", subject="ci", source_time=t(10), status="in_progress", complete=False, at=at(2)))
    assert recorded(forward).out_of_order is UNSET  # in_progress after queued: in order
    back = when(engine, observe("run-1", "q2", subject="ci", source_time=t(10), status="queued", complete=False, at=at(3)))
    assert recorded(back).out_of_order is True
    later = when(engine, observe("run-1", "q3", subject="ci", source_time=t(11), status="queued", complete=False, at=at(4)))
    assert recorded(later).out_of_order is UNSET  # a later time: in order whatever its status
    assert inbox_row(engine, f"{CI}:ci")["revision"] == 3


# ------------------------------------------------------ ignored (extension)


def test_an_ignored_observation_is_recorded_and_counted_nothing_more():
    engine = given(world())
    events = when(engine, observe("hook-1", "f1", kind="github", subject="ping", ignored=True, at=at(1)))
    first = recorded(events)
    assert (first.ignored, first.update_revision, first.local_revision) == (True, None, 1)
    assert kinds(events)[1:] == ["ObservationRecorded"]  # nothing triaged, no batch
    cause = f"github:{PR}:ping"
    assert cause not in engine.state.inbox.updates
    row = inbox_row(engine, cause)
    assert (row["revision"], row["triage_state"], row["ignored"], row["latest"], row["retained"]) == (0, None, 1, None, False)
    again = when(engine, observe("hook-1", "f1", kind="github", subject="ping", ignored=True, at=at(2)))
    assert recorded(again).local_revision == 2  # never a repeat: every one is kept
    assert inbox_row(engine, cause)["ignored"] == 2


def test_an_ignored_observation_is_never_what_later_ones_are_compared_with():
    engine = given(world())
    when(engine, observe("hook-1", "f1", kind="github", subject="ping", source_time=t(30), ignored=True, at=at(1)))
    events = when(engine, observe("hook-1", "f1", kind="github", subject="ping", source_time=t(10), at=at(2)))
    real = recorded(events)
    assert (real.update_revision, real.out_of_order) == (1, UNSET)  # neither a repeat nor out of order
    row = inbox_row(engine, f"github:{PR}:ping")
    assert (row["revision"], row["triage_state"], row["ignored"], row["retained"]) == (1, "untriaged", 1, True)
