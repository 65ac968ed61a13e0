"""Observations, pending updates and triage (spec/TRACE.md 3.4; outcome updates
of 3.3; the `inbox`, `health.backlog` and `cards` views of section 7).

Given inputs, when one more input, then its events and the views.

Engine decisions where the spec is silent, taken as given here (docs/contract/decisions.md,
"Extensions and decisions"): a background-origin observation gets its
source's next local revision but revises no update and does not become the
fingerprint or version later observations are compared with (commit 7618748;
the earlier decision advanced both), and its repeats are not counted; `triage.classify` of an unknown cause is `stale_revision`; a new
update revision resets disposition and priorities to null; `card.propose` is
`generation_fenced` unless some foreground is bound at that generation.
"""

from __future__ import annotations

from tandem.domain import events as ev
from tests.unit.helpers import (
    PR,
    at,
    backlog,
    bind,
    cancel_action,
    card,
    entry,
    given,
    inbox_row,
    kinds,
    log_batch,
    log_pruned,
    log_reconcile,
    observation,
    observe,
    of_type,
    open_background,
    outcome,
    propose,
    receipt,
    rejection,
    rule,
    snapshot,
    triage,
    when,
    world,
)

CI = f"ci:{PR}"


def recorded(events) -> list[ev.ObservationRecorded]:
    return of_type(events, ev.ObservationRecorded)


def repeated(events) -> list[ev.ObservationRepeated]:
    return of_type(events, ev.ObservationRepeated)


def without(document: dict, *paths: tuple[str, str, str]) -> dict:
    """The document minus the given (view, key, field) cells: what a repeat may change."""
    for view, cause_key, name in paths:
        for row in document[view]:
            if row["cause_key"] == cause_key:
                row.pop(name)
    return document


# ------------------------------------------------------------ cause_key


def test_cause_key_defaults_to_kind_and_scope():
    engine = given(world())
    events = when(engine, observe(kind="ci", scope="https://scm/pr/9"))
    assert [e.cause_key for e in recorded(events)] == ["ci:https://scm/pr/9"]
    row = inbox_row(engine, "ci:https://scm/pr/9")
    assert row is not None and row["kind"] == "ci" and row["revision"] == 1


def test_any_word_is_a_kind():
    engine = given(world())
    when(engine, observe(source_id="lint-1", kind="lint"))
    assert inbox_row(engine, f"lint:{PR}")["kind"] == "lint"


def test_comment_cause_key_is_per_source_so_two_comments_on_one_pr_are_two_causes():
    engine = given(world())
    when(engine, observe(source_id="c-1", kind="comment", fingerprint="hello"))
    when(engine, observe(source_id="c-2", kind="comment", fingerprint="hello"))
    causes = [row["cause_key"] for row in engine.views.view("inbox")]
    assert causes == [f"comment:{PR}:c-1", f"comment:{PR}:c-2"]
    assert all(row["revision"] == 1 for row in engine.views.view("inbox"))


def test_an_explicit_cause_key_wins_over_the_default():
    engine = given(world())
    when(engine, observe(kind="comment", source_id="c-1", cause_key="review-thread-4"))
    assert [row["cause_key"] for row in engine.views.view("inbox")] == ["review-thread-4"]


# ------------------------------------------------------------ repeats


def test_same_source_version_live_is_a_repeat_counted_and_nothing_else_changes():
    engine = given(world(), observe(source_version="v1", fingerprint="f1", text="red"))
    before = snapshot(engine)
    events = when(engine, observe(source_version="v1", fingerprint="f2", text="green", complete=False, at=at(5)))
    assert kinds(events)[:2] == ["InputAccepted", "ObservationRepeated"]
    assert not recorded(events)
    row = inbox_row(engine, CI)
    assert row["repeats"] == 1
    assert row["last_seen_at"] == "2026-03-01T09:00:05Z"
    assert row["first_seen_at"] == "2026-03-01T09:00:00Z"
    assert row["revision"] == 1 and row["partial"] is False
    assert without(snapshot(engine), ("inbox", CI, "repeats"), ("inbox", CI, "last_seen_at")) == without(
        before, ("inbox", CI, "repeats"), ("inbox", CI, "last_seen_at")
    )
    source = engine.state.inbox.sources["ci-1"]
    assert (source.count, source.causes[CI].latest_fingerprint) == (1, "f1")  # the repeat's fingerprint is not "latest"
    assert engine.state.inbox.updates[CI].text == "red"


def test_a_source_version_first_seen_on_the_change_log_makes_a_live_one_a_repeat():
    engine = given(world(), log_batch([entry(1, source_version="v1")]))
    events = when(engine, observe(source_version="v1", fingerprint="other"))
    assert len(repeated(events)) == 1 and not recorded(events)
    assert inbox_row(engine, CI)["repeats"] == 1


def test_a_source_version_first_seen_live_makes_a_change_log_entry_a_repeat_and_the_cursor_still_moves():
    engine = given(world(), observe(source_version="v1"))
    events = when(engine, log_batch([entry(1, source_version="v1"), entry(2, source_version="v2")]))
    assert kinds(events)[1:5] == ["ConsumerCreated", "ObservationRepeated", "ObservationRecorded", "CursorMoved"]
    assert [e.via for e in repeated(events) + recorded(events)] == ["log", "log"]
    assert inbox_row(engine, CI)["revision"] == 2
    assert inbox_row(engine, CI)["repeats"] == 1
    assert engine.state.consumer.by_id["scm"].seq == 2


def test_a_source_version_first_seen_in_a_reconciliation_makes_later_ones_repeats():
    engine = given(world(), log_pruned(5), log_reconcile(facts=[observation(source_version="v7")], retained_head=7))
    live = when(engine, observe(source_version="v7", fingerprint="x"))
    logged = when(engine, log_batch([entry(8, source_version="v7")]))
    assert len(repeated(live)) == 1 and len(repeated(logged)) == 1
    assert inbox_row(engine, CI)["revision"] == 1
    assert inbox_row(engine, CI)["repeats"] == 2


def test_a_source_version_seen_once_is_a_repeat_within_the_same_batch():
    engine = given(world())
    events = when(engine, log_batch([entry(1, source_version="v1"), entry(2, source_version="v1")]))
    assert kinds(events)[1:5] == ["ConsumerCreated", "ObservationRecorded", "ObservationRepeated", "CursorMoved"]
    assert inbox_row(engine, CI)["revision"] == 1


def test_without_a_source_version_the_fingerprint_equal_to_the_sources_latest_is_a_repeat():
    engine = given(world(), observe(fingerprint="f1"))
    events = when(engine, observe(fingerprint="f1", at=at(3)))
    assert len(repeated(events)) == 1
    assert inbox_row(engine, CI)["repeats"] == 1 and inbox_row(engine, CI)["revision"] == 1


def test_a_fingerprint_equal_to_an_older_one_but_not_the_latest_is_new():
    """fail -> pass -> fail is three revisions."""
    engine = given(world())
    revisions = []
    for n, (fingerprint, status) in enumerate([("run-fail", "failure"), ("run-pass", "success"), ("run-fail", "failure")]):
        events = when(engine, observe(fingerprint=fingerprint, status=status, at=at(n)))
        revisions += [e.update_revision for e in recorded(events)]
    assert revisions == [1, 2, 3]
    row = inbox_row(engine, CI)
    assert (row["revision"], row["repeats"]) == (3, 0)


def test_fail_pass_fail_with_source_versions_is_three_revisions():
    engine = given(world())
    for n, version in enumerate(["v1", "v2", "v3"]):
        when(engine, observe(source_version=version, fingerprint="fail" if n != 1 else "pass"))
    assert inbox_row(engine, CI)["revision"] == 3


def test_a_new_source_version_with_the_latest_fingerprint_is_not_a_repeat():
    """With a source_version, only the version decides."""
    engine = given(world(), observe(source_version="v1", fingerprint="same"))
    events = when(engine, observe(source_version="v2", fingerprint="same"))
    assert len(recorded(events)) == 1
    assert inbox_row(engine, CI)["revision"] == 2


def test_fingerprints_are_per_source():
    engine = given(world(), observe(source_id="ci-1", fingerprint="f1"))
    events = when(engine, observe(source_id="ci-2", fingerprint="f1"))
    assert len(recorded(events)) == 1
    assert inbox_row(engine, CI)["revision"] == 2


def test_source_versions_are_per_source():
    engine = given(world(), observe(source_id="ci-1", source_version="v1"))
    events = when(engine, observe(source_id="ci-2", source_version="v1", fingerprint="g"))
    assert len(recorded(events)) == 1


def test_a_deletion_is_news_even_of_a_version_or_fingerprint_already_seen():
    engine = given(world(), observe(source_version="v1", fingerprint="f1"))
    by_version = when(engine, observe(source_version="v1", fingerprint="f1", deleted=True))
    assert len(recorded(by_version)) == 1
    assert recorded(by_version)[0].deleted is True
    row = inbox_row(engine, CI)
    assert (row["revision"], row["repeats"]) == (2, 0)


def test_the_same_deletion_resent_is_a_repeat():
    engine = given(world(), observe(fingerprint="f1"), observe(fingerprint="f1", deleted=True))
    again = when(engine, observe(fingerprint="f1", deleted=True))
    assert recorded(again) == [] and [type(e).__name__ for e in again[1:]] == ["ObservationRepeated"]
    row = inbox_row(engine, CI)
    assert (row["revision"], row["repeats"], row["latest"]["deleted"]) == (2, 1, True)
    other = when(engine, observe(fingerprint="f2", deleted=True))  # another deletion: news
    assert len(recorded(other)) == 1 and inbox_row(engine, CI)["revision"] == 3


def test_a_repeat_does_not_change_partial():
    engine = given(world(), observe(fingerprint="f1", complete=False))
    when(engine, observe(fingerprint="f1", complete=True))
    assert inbox_row(engine, CI)["partial"] is True


# ------------------------------------------------------------ revisions


def test_local_revision_is_one_plus_the_sources_count_and_repeats_do_not_count():
    engine = given(world())
    local = []
    for fingerprint in ["a", "b", "b", "c"]:
        local += [e.local_revision for e in recorded(when(engine, observe(fingerprint=fingerprint)))]
    assert local == [1, 2, 3]
    assert engine.state.inbox.sources["ci-1"].count == 3


def test_local_revision_counts_per_source_across_causes():
    engine = given(world())
    first = recorded(when(engine, observe(scope="https://scm/pr/1", fingerprint="a")))
    second = recorded(when(engine, observe(scope="https://scm/pr/2", fingerprint="b")))
    other = recorded(when(engine, observe(source_id="ci-2", scope="https://scm/pr/1", fingerprint="c")))
    assert [e.local_revision for e in first + second + other] == [1, 2, 1]
    assert [e.update_revision for e in first + second + other] == [1, 1, 2]


def test_local_revision_counts_every_path():
    engine = given(world(), observe(fingerprint="a"), log_batch([entry(1, fingerprint="b")]))
    events = when(engine, observe(fingerprint="c"))
    assert recorded(events)[0].local_revision == 3


def test_each_new_observation_is_a_new_untriaged_revision():
    engine = given(world(), observe(fingerprint="a"), triage(update_revision=1))
    assert inbox_row(engine, CI)["triage_state"] == "triaged"
    when(engine, observe(fingerprint="b", at=at(4)))
    row = inbox_row(engine, CI)
    assert row["revision"] == 2
    assert row["triage_state"] == "untriaged"
    assert (row["disposition"], row["action_priority"], row["notification_priority"]) == (None, None, None)


# ------------------------------------------------------------ partial


def test_a_partial_observation_is_a_revision_too_and_marks_the_update_partial():
    engine = given(world())
    when(engine, observe(fingerprint="running", complete=False))
    row = inbox_row(engine, CI)
    assert (row["revision"], row["partial"], row["triage_state"]) == (1, True, "untriaged")
    when(engine, observe(fingerprint="running-2", complete=False))
    assert (inbox_row(engine, CI)["revision"], inbox_row(engine, CI)["partial"]) == (2, True)
    when(engine, observe(fingerprint="done", complete=True))
    assert (inbox_row(engine, CI)["revision"], inbox_row(engine, CI)["partial"]) == (3, False)
    when(engine, observe(fingerprint="rerun", complete=False))
    assert (inbox_row(engine, CI)["revision"], inbox_row(engine, CI)["partial"]) == (4, True)


def test_partial_is_per_cause():
    engine = given(world(), observe(fingerprint="a", complete=False))
    when(engine, observe(source_id="rv-1", kind="review", fingerprint="b", complete=True))
    assert inbox_row(engine, CI)["partial"] is True
    assert inbox_row(engine, f"review:{PR}")["partial"] is False


# ------------------------------------------------------------ origin


def test_a_background_origin_observation_is_recorded_but_revises_no_update():
    engine = given(world())
    before = snapshot(engine)
    events = when(engine, observe(origin_conversation="bg"))
    assert len(recorded(events)) == 1
    assert recorded(events)[0].update_revision is None
    assert snapshot(engine) == before  # no inbox row, no backlog
    assert engine.state.inbox.updates == {}
    # ...but it took the source's next local revision
    assert engine.state.inbox.sources["ci-1"].count == 1


def test_a_background_origin_observation_leaves_an_existing_update_alone():
    engine = given(world(), observe(fingerprint="a"), triage(update_revision=1))
    before = snapshot(engine)
    when(engine, observe(fingerprint="b", origin_conversation="bg", complete=False, at=at(9)))
    assert snapshot(engine) == before
    row = inbox_row(engine, CI)
    assert (row["revision"], row["triage_state"], row["partial"]) == (1, "triaged", False)


def test_a_background_origin_observation_takes_a_local_revision_but_is_not_what_later_ones_are_compared_with():
    engine = given(world(), observe(fingerprint="a"), observe(fingerprint="b", source_version="v9", origin_conversation="bg"))
    assert engine.state.inbox.sources["ci-1"].count == 2
    # the source itself reporting the same state later is news, not a repeat...
    by_fingerprint = recorded(when(engine, observe(fingerprint="b")))
    assert [(e.local_revision, e.update_revision) for e in by_fingerprint] == [(3, 2)]
    by_version = recorded(when(engine, observe(fingerprint="c", source_version="v9")))
    assert [(e.local_revision, e.update_revision) for e in by_version] == [(4, 3)]
    # ...and once the source reported it, it is a repeat
    assert len(repeated(when(engine, observe(fingerprint="d", source_version="v9")))) == 1
    assert inbox_row(engine, CI)["repeats"] == 1


def test_repeats_of_a_background_origin_observation_are_not_counted():
    engine = given(world(), observe(fingerprint="a"))
    events = when(engine, observe(fingerprint="a", origin_conversation="bg"))
    assert len(repeated(events)) == 1
    assert inbox_row(engine, CI)["repeats"] == 0


def test_a_foreground_or_unknown_origin_revises_the_update():
    engine = given(world())
    when(engine, observe(fingerprint="a", origin_conversation="fg"))
    when(engine, observe(fingerprint="b", origin_conversation="nobody"))
    assert inbox_row(engine, CI)["revision"] == 2


def test_a_background_origin_change_log_entry_revises_no_update_and_the_cursor_moves():
    engine = given(world())
    when(engine, log_batch([entry(1, origin_conversation="bg")]))
    assert inbox_row(engine, CI) is None
    assert engine.state.consumer.by_id["scm"].seq == 1


# ------------------------------------------------------------ backlog


def test_backlog_counts_untriaged_updates_since_their_current_revision():
    engine = given(world())
    assert backlog(engine) == {"untriaged": 0, "oldest_untriaged_at": None, "deliverable": 0}
    when(engine, observe(fingerprint="a", at=at(10)))
    when(engine, observe(source_id="rv-1", kind="review", fingerprint="r", at=at(20)))
    assert backlog(engine) == {"untriaged": 2, "oldest_untriaged_at": "2026-03-01T09:00:10Z", "deliverable": 0}
    when(engine, observe(fingerprint="b", at=at(30)))  # the CI update's current revision is now at 30
    assert backlog(engine) == {"untriaged": 2, "oldest_untriaged_at": "2026-03-01T09:00:20Z", "deliverable": 0}
    when(engine, observe(fingerprint="b", at=at(40)))  # a repeat: not a new revision
    assert backlog(engine) == {"untriaged": 2, "oldest_untriaged_at": "2026-03-01T09:00:20Z", "deliverable": 0}
    when(engine, triage(cause_key=f"review:{PR}", update_revision=1, at=at(41)))
    assert backlog(engine) == {"untriaged": 1, "oldest_untriaged_at": "2026-03-01T09:00:30Z", "deliverable": 0}  # woken at once
    when(engine, triage(update_revision=2, at=at(42)))
    assert backlog(engine) == {"untriaged": 0, "oldest_untriaged_at": None, "deliverable": 1}  # the wake runs: it waits


# ------------------------------------------------------------ triage


def test_triage_sets_triaged_disposition_and_priorities():
    engine = given(world(), observe())
    events = when(engine, triage(update_revision=1, disposition="urgent", action_priority=7, notification_priority=9))
    assert rejection(events) is None
    [triaged] = of_type(events, ev.UpdateTriaged)
    assert (triaged.revision, triaged.foreground_id, triaged.by) == (1, "fg", "bg")
    row = inbox_row(engine, CI)
    assert row["triage_state"] == "triaged"
    assert (row["disposition"], row["action_priority"], row["notification_priority"]) == ("urgent", 7, 9)
    assert row["revision"] == 1
    assert row["retained"] is True  # deliverable
    update = engine.state.inbox.updates[CI]
    assert (update.triage_state, update.disposition, update.foreground_id) == ("triaged", "urgent", "fg")


def test_a_routine_update_is_not_retained_once_triaged():
    engine = given(world(), observe())
    assert inbox_row(engine, CI)["retained"] is True  # untriaged
    when(engine, triage(update_revision=1, disposition="routine"))
    assert inbox_row(engine, CI)["retained"] is False


def test_triage_after_a_rebind_with_the_old_generation_is_generation_fenced():
    engine = given(world(), observe(), bind(2))
    before = snapshot(engine)
    assert rejection(when(engine, triage(update_revision=1, generation=1))) == "generation_fenced"
    assert snapshot(engine) == before
    assert rejection(when(engine, triage(update_revision=1, generation=2))) is None


def test_triage_from_a_background_that_is_not_the_bound_one_is_generation_fenced():
    engine = given(world(), open_background("bg2"), observe())
    assert rejection(when(engine, triage(update_revision=1, generation=1, conversation_id="bg2"))) == "generation_fenced"
    assert inbox_row(engine, CI)["triage_state"] == "untriaged"


def test_triage_of_a_background_replaced_by_another_is_generation_fenced():
    engine = given(world(), open_background("bg2"), bind(2, conversation_id="bg2"), observe())
    assert rejection(when(engine, triage(update_revision=1, generation=2, conversation_id="bg"))) == "generation_fenced"
    assert rejection(when(engine, triage(update_revision=1, generation=2, conversation_id="bg2"))) is None


def test_triage_checks_generation_before_the_revision():
    engine = given(world(), observe(fingerprint="a"), observe(fingerprint="b"), bind(2))
    assert rejection(when(engine, triage(update_revision=1, generation=1))) == "generation_fenced"


def test_triage_of_a_revision_the_update_moved_past_is_stale_and_the_newer_stays_untriaged():
    engine = given(world(), observe(fingerprint="a"), observe(fingerprint="b"))
    before = snapshot(engine)
    assert rejection(when(engine, triage(update_revision=1))) == "stale_revision"
    assert snapshot(engine) == before
    row = inbox_row(engine, CI)
    assert (row["revision"], row["triage_state"], row["disposition"]) == (2, "untriaged", None)
    assert rejection(when(engine, triage(update_revision=2))) is None
    assert inbox_row(engine, CI)["triage_state"] == "triaged"


def test_a_revision_arriving_after_triage_stays_untriaged_and_late_triage_of_the_old_one_is_stale():
    engine = given(world(), observe(fingerprint="a"), triage(update_revision=1), observe(fingerprint="b"))
    assert rejection(when(engine, triage(update_revision=1))) == "stale_revision"
    row = inbox_row(engine, CI)
    assert (row["revision"], row["triage_state"]) == (2, "untriaged")
    assert backlog(engine)["untriaged"] == 1


def test_triage_naming_an_unknown_conversation_is_unknown_conversation():
    engine = given(world(), observe())
    assert rejection(when(engine, triage(update_revision=1, conversation_id="nobody"))) == "unknown_conversation"


def test_triage_of_an_unknown_cause_is_stale_revision():
    engine = given(world())
    assert rejection(when(engine, triage(cause_key="nothing:here", update_revision=1))) == "stale_revision"


def test_triage_needs_the_background_actor():
    engine = given(world(), observe())
    assert rejection(when(engine, triage(update_revision=1, actor="human"))) == "not_authorized"
    assert rejection(when(engine, triage(update_revision=1, actor="foreground"))) == "not_authorized"


def test_observe_needs_the_source_actor():
    engine = given(world())
    assert rejection(when(engine, observe(actor="human"))) == "not_authorized"
    assert rejection(when(engine, observe(actor="background"))) == "not_authorized"
    assert inbox_row(engine, CI) is None


def test_a_repeat_of_a_triaged_revision_keeps_it_triaged():
    engine = given(world(), observe(fingerprint="a"), triage(update_revision=1))
    when(engine, observe(fingerprint="a"))
    row = inbox_row(engine, CI)
    assert (row["triage_state"], row["repeats"], row["revision"]) == ("triaged", 1, 1)


# ------------------------------------------------------------ outcome updates


def succeeded_action(operation_id: str = "op-1", **propose_kw) -> list:
    return [propose(operation_id, **propose_kw), receipt(operation_id)]


def test_a_task_actions_outcome_is_an_actionable_update_belonging_to_the_tasks_conversation():
    engine = given(world(), succeeded_action("op-1"))
    events = when(engine, outcome("op-1", "succeeded"))
    revised = of_type(events, ev.UpdateRevised)
    [triaged] = of_type(events, ev.UpdateTriaged)
    assert [(e.cause_key, e.kind, e.revision) for e in revised] == [("outcome:op-1", "outcome", 1)]
    assert (triaged.disposition, triaged.foreground_id, triaged.by) == ("actionable", "fg", "engine")
    row = inbox_row(engine, "outcome:op-1")
    assert row["kind"] == "outcome" and row["revision"] == 1
    assert row["triage_state"] == "triaged" and row["disposition"] == "actionable"
    assert row["partial"] is False and row["repeats"] == 0
    assert row["retained"] is True
    assert backlog(engine)["untriaged"] == 0


def test_a_failed_outcome_is_an_update_too():
    engine = given(world(), succeeded_action("op-1"))
    when(engine, outcome("op-1", "failed"))
    assert inbox_row(engine, "outcome:op-1")["disposition"] == "actionable"


def test_a_rule_actions_outcome_is_routine():
    engine = given(
        world(),
        rule(),
        propose("op-r", task_id=None, rule_id="ci-repair", actor="daemon", revisions={"grant": 1}),
        receipt("op-r"),
    )
    when(engine, outcome("op-r", "succeeded"))
    row = inbox_row(engine, "outcome:op-r")
    assert (row["kind"], row["triage_state"], row["disposition"]) == ("outcome", "triaged", "routine")
    assert row["retained"] is False
    assert engine.state.inbox.updates["outcome:op-r"].foreground_id is None


def test_each_outcome_revises_its_update_by_one():
    engine = given(world(), observe(cause_key="outcome:op-1", fingerprint="early"), succeeded_action("op-1"))
    assert inbox_row(engine, "outcome:op-1")["revision"] == 1
    when(engine, outcome("op-1", "succeeded"))
    row = inbox_row(engine, "outcome:op-1")
    assert (row["revision"], row["triage_state"], row["disposition"]) == (2, "triaged", "actionable")
    # A later observation of the cause is the next revision, untriaged.
    when(engine, observe(cause_key="outcome:op-1", fingerprint="late"))
    row = inbox_row(engine, "outcome:op-1")
    assert (row["revision"], row["triage_state"], row["disposition"]) == (3, "untriaged", None)


def test_outcome_of_a_cancel_requested_action_is_an_update():
    engine = given(world(), succeeded_action("op-1"), cancel_action("op-1"))
    when(engine, outcome("op-1", "cancelled"))
    assert inbox_row(engine, "outcome:op-1")["revision"] == 1


# ------------------------------------------------------------ duplicate_cause and recurrences


def repaired(cause_key: str = CI) -> list:
    """Cause observed (revision 1), repaired by op-1, which succeeded."""
    return [observe(fingerprint="red"), succeeded_action("op-1", cause_key=cause_key), outcome("op-1", "succeeded")]


def test_a_succeeded_repair_blocks_another_for_the_same_revision():
    engine = given(world(), repaired())
    assert engine.state.actions.by_id["op-1"].cause_revision == 1
    assert rejection(when(engine, propose("op-2", cause_key=CI))) == "duplicate_cause"


def test_a_recurrence_releases_duplicate_cause():
    engine = given(world(), repaired())
    when(engine, observe(fingerprint="red-again"))
    assert inbox_row(engine, CI)["revision"] == 2
    assert rejection(when(engine, propose("op-2", cause_key=CI))) is None
    assert engine.state.actions.by_id["op-2"].cause_revision == 2


def test_a_recurrence_through_the_change_log_releases_duplicate_cause():
    engine = given(world(), repaired(), log_batch([entry(1, fingerprint="red-again")]))
    assert rejection(when(engine, propose("op-2", cause_key=CI))) is None


def test_a_repeat_does_not_release_duplicate_cause():
    engine = given(world(), repaired(), observe(fingerprint="red"))
    assert inbox_row(engine, CI)["repeats"] == 1
    assert rejection(when(engine, propose("op-2", cause_key=CI))) == "duplicate_cause"


def test_a_background_origin_observation_does_not_release_duplicate_cause():
    engine = given(world(), repaired(), observe(fingerprint="red-again", origin_conversation="bg"))
    assert rejection(when(engine, propose("op-2", cause_key=CI))) == "duplicate_cause"


def test_a_repair_proposed_before_any_observation_is_released_by_the_first_one():
    engine = given(world(), succeeded_action("op-1", cause_key=CI), outcome("op-1", "succeeded"))
    assert rejection(when(engine, propose("op-2", cause_key=CI))) == "duplicate_cause"
    when(engine, observe(fingerprint="red"))
    assert rejection(when(engine, propose("op-2", cause_key=CI))) is None


def test_an_observation_does_not_release_a_live_action():
    engine = given(world(), observe(fingerprint="red"), succeeded_action("op-1", cause_key=CI), observe(fingerprint="x"))
    assert rejection(when(engine, propose("op-2", cause_key=CI))) == "duplicate_cause"


def test_the_recurrence_rule_is_per_cause():
    engine = given(world(), repaired(), observe(source_id="rv-1", kind="review", fingerprint="other"))
    assert rejection(when(engine, propose("op-2", cause_key=CI))) == "duplicate_cause"


# ------------------------------------------------------------ cards


def test_a_card_is_a_suggestion_never_a_task_or_a_grant():
    engine = given(world())
    tasks_before = engine.views.view("tasks")
    grants_before = dict(engine.state.authority.grants)
    events = when(engine, card("card-1", cause_key=CI))
    assert rejection(events) is None
    assert engine.views.view("cards") == [{"card_id": "card-1", "cause_key": CI, "summary": "worth a look"}]
    assert engine.views.view("tasks") == tasks_before
    assert engine.state.authority.grants.keys() == grants_before.keys()


def test_a_card_with_an_old_generation_is_generation_fenced():
    engine = given(world(), bind(2))
    assert rejection(when(engine, card(generation=1))) == "generation_fenced"
    assert engine.views.view("cards") == []


def test_a_card_id_is_used_once():  # engine decision: already_exists
    engine = given(world(), card("card-1"))
    assert rejection(when(engine, card("card-1", summary="again"))) == "already_exists"
    assert [row["summary"] for row in engine.views.view("cards")] == ["worth a look"]


def test_cards_need_the_background_actor():
    engine = given(world())
    assert rejection(when(engine, card(actor="human"))) == "not_authorized"

