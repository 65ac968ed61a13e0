"""Background continuity (contract v1.2 section 5): investigations and their
bounds (5.1), `background.checkpoint` (5.2), the background reseed after a
context reset (5.3), `context_not_reseeded` (5.4) and the views (5.5). Every
reason code and view key of the section."""

from __future__ import annotations

import msgspec
import pytest

from tandem.domain import events as ev
from tandem.domain.inputs import decode_input
from tandem.projections import VIEW_NAMES
from tests.unit.helpers import (
    PR,
    admit,
    approval_required,
    approval_resolved,
    at,
    bind,
    cancel_task,
    card,
    checkpoint,
    close_investigation,
    complete_task,
    configure,
    context_reset,
    conversation_row,
    deliveries,
    delegate,
    delivery_row,
    expecting,
    given,
    grant_request,
    heartbeat,
    hold_failure,
    hold_release,
    intent_synced,
    investigation_row,
    kinds,
    line,
    message,
    observe,
    of_type,
    open_background,
    open_foreground,
    open_investigation,
    policy,
    propose,
    provider_receipt,
    provider_reconcile,
    raise_question,
    receipt,
    rejection,
    tick,
    tool_policy,
    tool_request,
    triage,
    when,
    world,
)

CI = f"ci:{PR}"


def alert(engine, alert_id: str) -> dict | None:
    return next((row for row in engine.views.view("alerts") if row["alert_id"] == alert_id), None)


def reseeded_world(*extra) -> list:
    """world(), an investigation and a checkpoint of bg (summary 8 bytes: 2 tokens, one ref: + 10)."""
    return [
        *world(),
        open_investigation(at=at(1)),
        checkpoint(at=at(2), evidence_refs=["ev/1"], summary="12345678"),
        *extra,
    ]


def admitted(*extra) -> list:
    """world(), a background tool policy and bg-codex admitted, an investigation."""
    return [*world(), tool_policy(at=at(1)), admit(at=at(2)), open_investigation(at=at(3)), *extra]


# ------------------------------------------------------- 5.1 investigation.open


def test_an_investigation_opens_due_after_investigation_max_s() -> None:
    engine = given(configure(investigation_max_s=600), *world())
    events = when(engine, open_investigation(at=at(10), task_id="t1"))
    assert kinds(events)[:2] == ["InputAccepted", "InvestigationOpened"]
    row = investigation_row(engine)
    assert row == {
        "investigation_id": "inv-1",
        "conversation_id": "bg",
        "cause_key": CI,
        "task_id": "t1",
        "state": "open",
        "opened_at": at(10),
        "due_at": at(610),
        "calls": 0,
        "evidence_refs": [],
        "operation_id": None,
    }


def test_the_default_duration_is_an_hour_and_the_bounds_are_recorded_only_when_given() -> None:
    engine = given(*world())
    when(engine, open_investigation(at=at(10)))
    assert investigation_row(engine)["due_at"] == at(3610)
    configured = of_type(when(given(), configure()), ev.EngineConfigured)[0]
    assert b"investigation" not in msgspec.json.encode(configured)
    configured = of_type(when(given(), configure(investigation_calls_max=3)), ev.EngineConfigured)[0]
    assert configured.investigation_calls_max == 3


@pytest.mark.parametrize(
    "fields, reason",
    [
        ({"conversation_id": "fg"}, "unknown_conversation"),
        ({"generation": 2}, "generation_fenced"),
        ({"task_id": "nope"}, "unknown_task"),
    ],
)
def test_open_checks(fields: dict, reason: str) -> None:
    assert rejection(when(given(*world()), open_investigation(at=at(5), **fields))) == reason


def test_open_of_an_inactive_task_or_a_used_id_is_refused() -> None:
    engine = given(*world(), open_investigation(at=at(1)), cancel_task(at=at(2)))
    assert rejection(when(engine, open_investigation("inv-2", at=at(3), task_id="t1"))) == "task_not_active"
    assert rejection(when(engine, open_investigation("inv-1", at=at(4)))) == "already_exists"


def test_open_is_the_backgrounds_alone_and_needs_its_admitted_runtime() -> None:
    assert rejection(when(given(*world()), open_investigation(at=at(5), actor="human"))) == "not_authorized"
    engine = given(*world(), tool_policy(at=at(1)))
    assert rejection(when(engine, open_investigation(at=at(5)))) == "runtime_not_admitted"


# ------------------------------------------------------ 5.1 investigation.close


def test_close_records_its_outcome_and_evidence() -> None:
    engine = given(*world(), open_investigation(at=at(1)))
    when(engine, close_investigation(at=at(2), evidence_refs=["ev/a", "ev/a", "ev/b"]))
    row = investigation_row(engine)
    assert (row["state"], row["evidence_refs"], row["operation_id"]) == ("concluded", ["ev/a", "ev/b"], None)


def test_a_delegated_close_names_its_worker_action() -> None:
    engine = given(*world(), propose("op-1", at=at(1)), open_investigation(at=at(2)))
    assert rejection(when(engine, close_investigation(outcome="delegated", operation_id="nope", at=at(3)))) == "unknown_operation"
    when(engine, close_investigation(outcome="delegated", operation_id="op-1", at=at(4)))
    assert (investigation_row(engine)["state"], investigation_row(engine)["operation_id"]) == ("delegated", "op-1")


@pytest.mark.parametrize("line", [
    '{"type":"investigation.close","at":"2026-03-01T09:00:00Z","conversation_id":"bg","generation":1,"investigation_id":"i","outcome":"delegated"}',
    '{"type":"investigation.close","at":"2026-03-01T09:00:00Z","conversation_id":"bg","generation":1,"investigation_id":"i","outcome":"abandoned","operation_id":"op-1"}',
])  # fmt: skip
def test_operation_id_goes_with_delegated_only_schema(line: str) -> None:
    with pytest.raises(msgspec.ValidationError):
        decode_input(line)


def test_close_checks() -> None:
    engine = given(*world(), open_investigation(at=at(1)))
    assert rejection(when(engine, close_investigation("nope", at=at(2)))) == "unknown_investigation"
    assert rejection(when(engine, close_investigation(generation=2, at=at(2)))) == "generation_fenced"
    assert rejection(when(engine, close_investigation(conversation_id="fg", at=at(2)))) == "unknown_conversation"
    when(engine, close_investigation(outcome="abandoned", at=at(3)))
    assert rejection(when(engine, close_investigation(at=at(4)))) == "not_open"


def test_another_backgrounds_investigation_is_unknown() -> None:
    engine = given(
        *world(), open_foreground("fg2"), open_background("bg2", "fg2"), bind(1, "bg2", "fg2"),
        open_investigation(at=at(1)),
    )  # fmt: skip
    assert rejection(when(engine, close_investigation(conversation_id="bg2", at=at(2)))) == "unknown_investigation"


# ------------------------------------------------------ 5.1 bounds: time and calls


def test_exhausted_at_the_first_input_reaching_its_due_time_and_closing_resolves_it() -> None:
    engine = given(configure(investigation_max_s=60), *world(), open_investigation(at=at(10)))
    assert of_type(when(engine, tick(at=at(69))), ev.InvestigationExhausted) == []
    exhausted = of_type(when(engine, tick(at=at(70))), ev.InvestigationExhausted)
    assert [(e.by, e.calls, e.calls_max) for e in exhausted] == [("time", 0, 100)]
    assert investigation_row(engine)["state"] == "exhausted"
    assert alert(engine, "investigation_exhausted:inv-1")["state"] == "raised"
    assert of_type(when(engine, tick(at=at(200))), ev.AlertRaised) == []  # once
    when(engine, close_investigation(at=at(201)))  # an exhausted one may still be closed
    assert investigation_row(engine)["state"] == "concluded"
    assert alert(engine, "investigation_exhausted:inv-1")["state"] == "resolved"


def test_the_timer_ties_after_execution_deadlines_and_before_task_progress() -> None:
    engine = given(
        configure(investigation_max_s=100), *world(),
        delegate("t2", grant=grant_request("g-t2", execution_deadline_s=95)),
        delegate("t3", progress_deadline_s=100),  # no progress after its delegation at 0: due at 100
        open_investigation(at=at(0)), propose("op-1", task_id="t2", at=at(5)), receipt("op-1", at=at(6)),
    )  # fmt: skip
    events = when(engine, tick(at=at(100)))
    timed = (ev.DeadlineExceeded, ev.InvestigationExhausted, ev.TaskStalled)
    assert [type(e).__name__ for e in events if isinstance(e, timed)] == [
        "DeadlineExceeded", "InvestigationExhausted", "TaskStalled",
    ]  # fmt: skip


def test_calls_naming_it_are_counted_and_the_one_reaching_the_max_exhausts_it() -> None:
    engine = given(configure(investigation_calls_max=2), *admitted())
    first = when(engine, tool_request("c1", investigation_id="inv-1", at=at(4)))
    assert of_type(first, ev.ToolCallAllowed)[0].investigation_id == "inv-1"
    second = when(engine, tool_request("c2", investigation_id="inv-1", at=at(5)))
    assert kinds(second)[:3] == ["InputAccepted", "ToolCallAllowed", "InvestigationExhausted"]
    assert investigation_row(engine)["calls"] == 2
    assert alert(engine, "investigation_exhausted:inv-1")["state"] == "raised"
    third = when(engine, tool_request("c3", investigation_id="inv-1", at=at(6)))
    assert rejection(third) == "budget_exhausted"
    denied = of_type(third, ev.ToolCallDenied)[0]
    assert (denied.facts.entry, denied.facts.calls, denied.facts.investigation_calls_max) == ("inv-1", 2, 2)
    assert investigation_row(engine)["calls"] == 2


def test_a_call_naming_no_investigation_is_counted_on_none_and_records_no_field() -> None:
    engine = given(*admitted())
    allowed = of_type(when(engine, tool_request("c1", at=at(4))), ev.ToolCallAllowed)[0]
    assert b"investigation_id" not in msgspec.json.encode(allowed)
    assert investigation_row(engine)["calls"] == 0


def test_a_call_naming_an_unknown_or_closed_investigation_is_denied() -> None:
    engine = given(*admitted())
    assert rejection(when(engine, tool_request("c1", investigation_id="nope", at=at(4)))) == "unknown_investigation"
    when(engine, close_investigation(at=at(5)))
    denied = when(engine, tool_request("c2", investigation_id="inv-1", at=at(6)))
    assert rejection(denied) == "not_open"
    assert of_type(denied, ev.ToolCallDenied)[0].investigation_id == "inv-1"


def test_the_investigation_check_comes_before_the_tool_check() -> None:
    engine = given(*admitted(), close_investigation(at=at(4)))
    assert rejection(when(engine, tool_request("c1", tool="shell:exec", investigation_id="inv-1", at=at(5)))) == "not_open"


def test_a_call_for_an_exhausted_investigation_still_checks_its_tool_first() -> None:
    engine = given(configure(investigation_max_s=10), *admitted(), tick(at=at(20)))
    assert rejection(when(engine, tool_request("c1", tool="shell:exec", investigation_id="inv-1", at=at(21)))) == "tool_not_allowed"
    assert rejection(when(engine, tool_request("c2", investigation_id="inv-1", at=at(22)))) == "budget_exhausted"


# ------------------------------------------------------- 5.2 background.checkpoint


def test_a_checkpoint_adds_the_open_and_exhausted_investigations_and_counts_its_tokens() -> None:
    engine = given(
        configure(investigation_max_s=10), *world(), open_investigation("inv-a", at=at(1)), tick(at=at(20)),
        open_investigation("inv-b", at=at(21)), open_investigation("inv-c", at=at(22)), close_investigation("inv-c", at=at(23)),
    )  # fmt: skip
    when(engine, checkpoint(at=at(30), sync_cursor="scm:41", evidence_refs=["ev/1", "ev/2"], summary="é" * 5))
    assert conversation_row(engine, "bg")["checkpoint"] == {
        "checkpoint_id": "bg/c1",
        "at": at(30),
        "generation": 1,
        "epoch": 1,
        "intent_revision": 0,
        "sync_cursor": "scm:41",
        "investigations": ["inv-a", "inv-b"],
        "evidence_refs": ["ev/1", "ev/2"],
        "tokens": 3 + 20,  # ceil(10 bytes / 4) + 10 per ref
    }
    when(engine, checkpoint(at=at(31), tokens=3, summary="long"))
    latest = conversation_row(engine, "bg")["checkpoint"]
    assert (latest["checkpoint_id"], latest["tokens"], latest["evidence_refs"]) == ("bg/c2", 3, [])


@pytest.mark.parametrize(
    "fields, counted",
    [
        ({"tokens": 7, "summary": "long"}, 4),  # capped at the summary's 4 bytes
        ({"tokens": 5000, "summary": "é" * 5, "evidence_refs": ["ev/1"]}, 10 + 10),  # 10 UTF-8 bytes, + 10 per ref
        ({"tokens": 89_950}, 0),  # no summary: nothing to count
        ({"tokens": 2, "summary": "12345678"}, 2),  # below the bytes: the model's figure stands
        ({"summary": "12345678", "evidence_refs": ["ev/1", "ev/2"]}, 2 + 20),  # no tokens: ceil(bytes / 4), as before
    ],
)
def test_a_checkpoints_tokens_never_exceed_its_summarys_bytes(fields: dict, counted: int) -> None:
    """Section 5.2's Decision: the model's figure is a hint, capped by durable state."""
    engine = given(*world())
    events = when(engine, checkpoint(at=at(1), **fields))
    assert of_type(events, ev.BackgroundCheckpointed)[0].tokens == counted
    assert engine.state.conversation.by_id["bg"].checkpoint.summary_bytes == len(fields.get("summary", "").encode())


def test_a_checkpoint_of_another_epoch_or_an_unknown_intent_is_stale() -> None:
    engine = given(*world())
    assert rejection(when(engine, checkpoint(epoch=2, at=at(1)))) == "stale_revision"
    assert rejection(when(engine, checkpoint(intent_revision=1, at=at(2)))) == "stale_revision"
    assert rejection(when(engine, checkpoint(generation=2, at=at(3)))) == "generation_fenced"
    assert rejection(when(engine, checkpoint(conversation_id="fg", at=at(4)))) == "unknown_conversation"
    assert conversation_row(engine, "bg")["checkpoint"] is None


def test_a_summary_is_bounded_by_the_schema() -> None:
    line = '{"type":"background.checkpoint","at":"2026-03-01T09:00:00Z","conversation_id":"bg","generation":1,"epoch":1,"intent_revision":0,"sync_cursor":"s","summary":"%s"}'
    decode_input(line % ("x" * 16_384))
    with pytest.raises(msgspec.ValidationError):
        decode_input(line % ("x" * 16_385))


# --------------------------------------------------------- 5.3 the background reseed


def test_a_background_without_a_checkpoint_gets_no_reseed_and_is_not_gated() -> None:
    engine = given(*world(), observe(at=at(1)), context_reset("bg", at=at(2)))
    assert deliveries(engine, "bg") == []
    assert rejection(when(engine, triage(at=at(3)))) is None


def test_a_reset_with_a_checkpoint_makes_the_reseed_in_the_same_pass() -> None:
    engine = given(*reseeded_world(propose("op-1", at=at(3)), observe(at=at(4))))
    events = when(engine, context_reset("bg", at=at(5)))
    created = of_type(events, ev.DeliveryCreated)[0]
    # 40 (t1) + 20 (g-t1) + 30 (op-1) + 30 (inv-1) + 12 (bg/c1)
    assert (created.kind, created.turn_id, created.epoch, created.control_tokens, created.tokens) == ("reseed", None, 2, 132, 132)
    assert (created.checkpoint, created.rule) == ("bg/c1", "background_reseed")
    assert [c.optional for c in created.candidates] == [True]
    assert delivery_row(engine, "bg/d1")["checkpoint"] == "bg/c1"
    assert delivery_row(engine, "bg/d1")["included"] == [[CI, 1]]


def test_the_optional_part_is_the_untriaged_updates_oldest_first_that_fit() -> None:
    # required 40 (t1) + 20 (g-t1) + 30 (inv-1) + 12 (bg/c1) = 102; room 117: 15 tokens for updates
    small = [policy(), open_foreground(), open_background(context_limit=117, reserve=0), *world()[3:]]
    engine = given(
        *small, open_investigation(at=at(1)), checkpoint(at=at(2), evidence_refs=["ev/1"], summary="12345678"),
        observe("ci-0", "f0", at=at(3)),  # triaged below: no longer optional
        observe("ci-b", "fb", subject="b", at=at(3), text="x" * 40),  # 10 tokens
        observe("ci-a", "fa", subject="a", at=at(4), text="y" * 400),  # 100 tokens: does not fit
        observe("ci-d", "fd", subject="d", at=at(5)),
        observe("ci-c", "fc", subject="c", at=at(5)),
        triage(at=at(6)),
    )  # fmt: skip
    created = of_type(when(engine, context_reset("bg", at=at(7))), ev.DeliveryCreated)[0]
    causes = [c.cause_key for c in created.candidates]
    assert causes == [f"ci:{PR}:b", f"ci:{PR}:a", f"ci:{PR}:c", f"ci:{PR}:d"]
    assert [c.verdict for c in created.candidates] == ["included", "does_not_fit", "included", "included"]


def test_a_backgrounds_delivery_holds_nothing() -> None:
    engine = given(*reseeded_world(observe(at=at(3)), context_reset("bg", at=at(4)), provider_receipt("bg/d1", at=at(5))))
    when(engine, triage(at=at(6)))
    update = engine.state.inbox.updates[CI]
    assert update.held_by is not None and update.held_by.startswith("fg/")  # delivered to fg, not held by bg/d1


def small_world(room: int, *extra) -> list:
    """world() with bg's room `room` (context_limit, no reserve), inv-1 open:
    a reseed's required part is 40 (t1) + 20 (g-t1) + 30 (inv-1) + the checkpoint."""
    return [policy(), open_foreground(), open_background(context_limit=room, reserve=0), *world()[3:], open_investigation(at=at(1)), *extra]


def in_recovery(checkpoint_bytes: int = 400, room: int = 200):
    """bg in context recovery: its checkpoint (a summary of `checkpoint_bytes`,
    claiming 5000 tokens: counted at its bytes) does not fit `room`."""
    engine = given(*small_world(room, checkpoint(at=at(2), summary="x" * checkpoint_bytes, tokens=5000)))
    when(engine, context_reset("bg", at=at(4)))
    assert conversation_row(engine, "bg")["state"] == "context_recovery_required"
    return engine


def test_a_reseed_too_big_is_context_recovery_while_it_does_not_fit() -> None:
    engine = given(*small_world(200, checkpoint(at=at(2), summary="x" * 400, tokens=5000)))
    events = when(engine, context_reset("bg", at=at(4)))
    recovery = of_type(events, ev.RecoveryChanged)[0]
    # 40 (t1) + 20 (g-t1) + 30 (inv-1) + 400 (bg/c1: 5000 claimed, 400 bytes) = 490 > 200 - 0
    assert (recovery.recovery, recovery.needed, recovery.room) == ("reseed", 490, 200)
    assert conversation_row(engine, "bg")["state"] == "context_recovery_required"
    assert deliveries(engine, "bg") == []
    assert rejection(when(engine, triage(at=at(5)))) == "context_not_reseeded"
    assert of_type(when(engine, tick(at=at(6))), ev.RecoveryChanged) == []  # the same figure: nothing recorded
    again = when(engine, context_reset("bg", at=at(8)))  # nothing changed: still too big
    assert [e.recovery for e in of_type(again, ev.RecoveryChanged)] == [None, "reseed"]


def test_a_smaller_checkpoint_leaves_recovery_without_a_reset() -> None:
    """Section 5.3's Decision: the hold can be left by the background itself."""
    engine = in_recovery()
    events = when(engine, checkpoint(epoch=2, at=at(5), summary="short"))  # admitted in recovery (section 5.4)
    assert rejection(events) is None
    left = of_type(events, ev.RecoveryChanged)
    assert [(e.recovery, e.needed, e.room) for e in left] == [(None, 40 + 20 + 30 + 2, 200)]
    [created] = of_type(events, ev.DeliveryCreated)
    assert (created.delivery_id, created.kind, created.epoch, created.checkpoint, created.tokens) == ("bg/d1", "reseed", 2, "bg/c2", 92)
    assert conversation_row(engine, "bg")["state"] == "idle"
    assert engine.state.tasks.by_id["t1"].state == "active"  # no task cancelled
    # Out of recovery, the reseed is made but not accepted: every gated input waits for it again.
    assert rejection(when(engine, checkpoint(epoch=2, at=at(6)))) == "context_not_reseeded"
    when(engine, provider_receipt("bg/d1", at=at(7)))
    assert rejection(when(engine, checkpoint(epoch=2, at=at(8)))) is None


def test_closing_an_investigation_leaves_recovery_when_that_is_enough() -> None:
    engine = in_recovery(checkpoint_bytes=120)  # 40 + 20 + 30 + 120 = 210 > 200
    events = when(engine, close_investigation(at=at(5)))
    assert rejection(events) is None
    assert [(e.recovery, e.needed) for e in of_type(events, ev.RecoveryChanged)] == [(None, 180)]
    assert [d.delivery_id for d in of_type(events, ev.DeliveryCreated)] == ["bg/d1"]


def test_a_checkpoint_still_too_big_records_the_new_figure() -> None:
    engine = in_recovery()
    events = when(engine, checkpoint(epoch=2, at=at(5), summary="y" * 300, tokens=300))
    assert rejection(events) is None
    assert [(e.recovery, e.needed, e.room) for e in of_type(events, ev.RecoveryChanged)] == [("reseed", 390, 200)]
    assert conversation_row(engine, "bg")["state"] == "context_recovery_required"
    assert deliveries(engine, "bg") == []


def test_the_control_state_shrinking_lets_it_out_too() -> None:
    engine = in_recovery(checkpoint_bytes=120)
    when(engine, cancel_task(at=at(5)))  # t1 and g-t1: 60 tokens fewer
    created = of_type(when(engine, tick(at=at(6))), ev.DeliveryCreated)  # already in cancel_task's pass
    assert created == [] and [d["delivery_id"] for d in deliveries(engine, "bg")] == ["bg/d1"]
    assert conversation_row(engine, "bg")["state"] == "idle"


def test_a_background_in_recovery_that_is_not_dispatchable_waits_for_its_reseed() -> None:
    engine = in_recovery()
    when(engine, approval_required(conversation_id="bg", at=at(5)))
    events = when(engine, checkpoint(epoch=2, at=at(6)))
    assert [e.recovery for e in of_type(events, ev.RecoveryChanged)] == [None] and of_type(events, ev.DeliveryCreated) == []
    assert [d.delivery_id for d in of_type(when(engine, approval_resolved(conversation_id="bg", at=at(7))), ev.DeliveryCreated)] == ["bg/d1"]


def test_a_refused_reseed_is_replaced_after_the_back_off() -> None:
    engine = given(configure(delivery_backoff_s=30), *reseeded_world(context_reset("bg", at=at(5))))
    events = when(engine, provider_receipt("bg/d1", "refused", at=at(6)))
    assert of_type(events, ev.DeliveryCreated) == []
    assert conversation_row(engine, "bg")["deferred"] == {"until": at(36), "reason": "backoff"}
    assert rejection(when(engine, triage(at=at(7)))) == "context_not_reseeded"
    replaced = of_type(when(engine, tick(at=at(36))), ev.DeliveryCreated)
    assert [d.delivery_id for d in replaced] == ["bg/d2"]
    assert conversation_row(engine, "bg")["deferred"] is None


def test_a_refused_reseed_with_no_back_off_is_replaced_in_the_same_pass() -> None:
    engine = given(*reseeded_world(context_reset("bg", at=at(5))))
    replaced = of_type(when(engine, provider_receipt("bg/d1", "refused", at=at(6))), ev.DeliveryCreated)
    assert [d.delivery_id for d in replaced] == ["bg/d2"]


@pytest.mark.parametrize("holding, lifting", [
    (approval_required(conversation_id="bg", at=at(4)), approval_resolved(conversation_id="bg", at=at(6))),
    (hold_failure("bg", at=at(4)), hold_release("bg", at=at(6))),
])  # fmt: skip
def test_not_dispatchable_backgrounds_wait_for_their_reseed(holding, lifting) -> None:
    engine = given(*reseeded_world(holding, context_reset("bg", at=at(5))))
    assert deliveries(engine, "bg") == []
    assert [d.delivery_id for d in of_type(when(engine, lifting), ev.DeliveryCreated)] == ["bg/d1"]


def test_an_unready_provider_defers_the_reseed() -> None:
    readiness = line("provider.readiness", "watchdog", 3, provider="p1", ready=False, reason="auth_expired")
    engine = given(
        policy(), open_foreground(), open_background(provider="p1"), *world()[3:],
        checkpoint(at=at(2)), readiness, context_reset("bg", at=at(4)),
    )  # fmt: skip
    assert deliveries(engine, "bg") == []
    assert conversation_row(engine, "bg")["deferred"] == {"until": None, "reason": "provider_unready"}
    ready = line("provider.readiness", "watchdog", 5, provider="p1", ready=True)
    assert [d.delivery_id for d in of_type(when(engine, ready), ev.DeliveryCreated)] == ["bg/d1"]


def test_nothing_is_re_dispatched_to_executors() -> None:
    engine = given(*reseeded_world(propose("op-1", at=at(3)), receipt("op-1", at=at(4))))
    events = when(engine, context_reset("bg", at=at(5)))
    assert of_type(events, ev.ActionClaimed) == []
    assert len(engine.state.actions.by_id["op-1"].attempts) == 1


# ------------------------------------------------------------- 5.4 context_not_reseeded


GATED = {
    "triage.classify": lambda n: triage(at=at(n)),
    "intent.synced": lambda n: intent_synced(0, at=at(n)),
    "action.propose": lambda n: propose("op-9", at=at(n)),
    "question.raise": lambda n: raise_question(at=at(n)),
    "task.complete": lambda n: complete_task(at=at(n)),
    "card.propose": lambda n: card(at=at(n)),
    "investigation.open": lambda n: open_investigation("inv-9", at=at(n)),
    "investigation.close": lambda n: close_investigation(at=at(n)),
    "background.checkpoint": lambda n: checkpoint(epoch=2, at=at(n)),
}


@pytest.mark.parametrize("kind", sorted(GATED))
def test_every_gated_background_input_waits_for_the_reseed(kind: str) -> None:
    engine = given(*reseeded_world(observe(at=at(3)), context_reset("bg", at=at(4))))
    assert rejection(when(engine, GATED[kind](5))) == "context_not_reseeded"
    when(engine, provider_receipt("bg/d1", at=at(6)))
    assert rejection(when(engine, GATED[kind](7))) != "context_not_reseeded"


@pytest.mark.parametrize("kind", sorted(GATED))
def test_in_recovery_only_the_checkpoint_and_the_close_are_admitted(kind: str) -> None:
    """Section 5.4's Decision: the way out of context recovery needs no task cancelled."""
    engine = in_recovery(checkpoint_bytes=4000)  # too big even with inv-1 closed
    events = when(engine, GATED[kind](5))
    if kind in ("background.checkpoint", "investigation.close"):
        assert rejection(events) != "context_not_reseeded"
    else:
        assert rejection(events) == "context_not_reseeded"
        assert "admitted" in of_type(events, ev.InputRejected)[0].detail


def test_a_rejection_in_recovery_names_the_way_out_and_the_figures() -> None:
    engine = in_recovery()
    [rejected] = of_type(when(engine, triage(at=at(5))), ev.InputRejected)
    assert rejected.detail == (
        "'bg': its epoch 2 reseed is not accepted (context recovery required: the reseed's required part 490 tokens "
        "exceeds its room 200 (context_limit 200 - reserve 0); its checkpoint bg/c1 counts 400; only "
        "background.checkpoint and investigation.close are admitted, and the reseed is made once the required part fits)"
    )


def test_in_recovery_the_admitted_inputs_still_need_an_admitted_runtime() -> None:
    big = {"summary": "x" * 4000, "tokens": 5000}
    engine = given(*small_world(200, tool_policy(at=at(2)), admit(at=at(3)), checkpoint(at=at(4), **big)))
    when(engine, context_reset("bg", at=at(5)))
    assert rejection(when(engine, checkpoint(epoch=2, at=at(6), **big))) is None  # still too big: still in recovery
    when(engine, tool_policy(allowed_tools=[], at=at(7)))  # revokes bg-codex
    assert rejection(when(engine, checkpoint(epoch=2, at=at(8)))) == "runtime_not_admitted"


def test_it_comes_right_after_runtime_not_admitted() -> None:
    engine = given(*reseeded_world(tool_policy(at=at(3)), admit(at=at(4)), context_reset("bg", at=at(5))))
    assert rejection(when(engine, triage(generation=2, at=at(6)))) == "generation_fenced"
    assert rejection(when(engine, triage(at=at(7)))) == "context_not_reseeded"
    when(engine, tool_policy(allowed_tools=[], at=at(8)))  # revokes bg-codex
    assert rejection(when(engine, triage(at=at(9)))) == "runtime_not_admitted"


def test_other_actors_and_conversations_go_on() -> None:
    engine = given(*reseeded_world(context_reset("bg", at=at(4))))
    assert rejection(when(engine, propose("op-h", actor="human", generation=None, at=at(5)))) is None
    assert rejection(when(engine, observe("ci-2", "f2", at=at(6)))) is None
    assert rejection(when(engine, message(at=at(7)))) is None
    assert deliveries(engine, "fg")[-1]["messages"] == ["m1"]


def test_an_unknown_reseed_stays_gated_until_reconciled() -> None:
    engine = given(*reseeded_world(context_reset("bg", at=at(4)), provider_receipt("bg/d1", "unknown", at=at(5))))
    assert rejection(when(engine, triage(at=at(6)))) == "context_not_reseeded"
    when(engine, provider_reconcile("bg/d1", at=at(7)))
    assert rejection(when(engine, observe(at=at(8)))) is None
    assert rejection(when(engine, triage(at=at(9)))) is None


# ----------------------------------------------------------------------- 5.5 views


def test_the_views_gain_their_keys_in_order() -> None:
    engine = given(*world())
    document = engine.views.document()
    assert list(document)[-2:] == ["runtimes", "investigations"] and tuple(document) == VIEW_NAMES
    assert document["investigations"] == []
    row = conversation_row(engine, "bg")
    assert list(row)[-3:] == ["deferred", "stop_requested", "checkpoint"] and row["checkpoint"] is None  # section 11's order
    when(engine, context_reset("fg", at=at(1)))
    assert list(deliveries(engine)[-1])[-5:] == ["attempt_state", "payload", "display_digest", "untrusted", "checkpoint"]
    assert deliveries(engine)[-1]["checkpoint"] is None


def test_a_call_at_its_due_time_is_denied_and_the_investigation_exhausted_in_that_pass() -> None:
    engine = given(configure(investigation_max_s=10), *admitted())  # inv-1 opened at 3: due at 13
    events = when(engine, tool_request("c1", investigation_id="inv-1", at=at(13)))
    assert rejection(events) == "budget_exhausted"
    assert [e.by for e in of_type(events, ev.InvestigationExhausted)] == ["time"]
    assert investigation_row(engine)["calls"] == 0


def test_the_budget_invariant_covers_investigation_calls() -> None:
    from tandem.replay.proving.invariants import catalog
    from tandem.replay.proving.model import Applying

    [found] = [invariant for invariant in catalog() if invariant.name == "budgets_never_exceeded"]
    engine = given(configure(investigation_calls_max=1), *admitted(), tool_request("c1", investigation_id="inv-1", at=at(4)))
    value = decode_input('{"type":"tool.request","at":"2026-03-01T09:00:05Z","runtime_id":"bg-codex","call_id":"c2","tool":"tandem:read_evidence","investigation_id":"inv-1"}')
    allowed = ev.ToolCallAllowed(
        cause=99, runtime_id="bg-codex", call_id="c2", tool="tandem:read_evidence", operation_id=None,
        tool_policy_revision=1, investigation_id="inv-1",
    )  # fmt: skip
    problem = found.check(engine.state, allowed, Applying(input=value, number=99))
    assert problem is not None and "inv-1" in problem
