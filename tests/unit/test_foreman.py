"""Contract v1.2 section 8 (Foreman): maintenance preempted by owner input
(8.1), a hold closing the busy host entry (8.2), the execution budget with
deadline-and-stop across a restart (8.3), and the views (8.4)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from tandem.adapters.store import open_store
from tandem.adapters.trace import read_trace
from tandem.domain import events as ev
from tandem.domain.reasons import BLOCKING_CODES
from tandem.replay.engine import Engine, Located
from tests.unit.helpers import (
    action_row, action_state, at, blocked_by, conversation_row, decode, delegate, deliveries, given, grant_request,
    heartbeat, hold_failure, hold_release, kinds, message, of_type, outcome, policy, propose, provider_receipt,
    open_foreground, queue_edit, receipt, rule, tick, turn_ended, update_for, usage, when, world,
)

GATES = Path(__file__).resolve().parents[2] / "fixtures" / "gates"


def dream(operation_id: str = "dream-1", resource: str = "fg", **kw) -> dict:
    """A maintenance proposal of rule nightly (grant g-night), by default on
    fg's session (resource "fg": fg's owner affects it, via "session")."""
    return propose(
        operation_id, task_id=None, rule_id="nightly", grant_id="g-night", actor="daemon", operation="worker.start",
        resource=resource, revisions={"grant": 1}, priority="maintenance", unattended=False, **kw,
    )  # fmt: skip


def nightly() -> list[dict]:
    return [*world(), rule("nightly", grant=grant_request("g-night", operations=("worker.start",)))]


# ------------------------------------------------------ 8.1 and 8.4: priority


def test_priority_is_recorded_only_when_given_and_shown_normal_by_default():
    engine = given(world())
    (proposed,) = of_type(when(engine, propose("op-1")), ev.ActionProposed)
    assert b"priority" not in msgspec.json.encode(proposed)  # a v1 event, byte for byte
    assert engine.state.actions.by_id["op-1"].priority == "normal"
    row = action_row(engine, "op-1")
    assert row["priority"] == "normal"
    keys = list(row)
    assert keys.index("priority") == keys.index("evidence_refs") + 1 == keys.index("runtime_id") - 1  # section 11's order
    engine = given(nightly())
    (proposed,) = of_type(when(engine, dream()), ev.ActionProposed)
    assert proposed.priority == "maintenance"
    assert action_row(engine, "dream-1")["priority"] == "maintenance"


def test_an_unknown_priority_is_a_schema_error():
    with pytest.raises(Exception):
        decode(propose("op-1", priority="urgent"))


def test_owner_active_is_the_last_blocking_code():
    assert BLOCKING_CODES[-4:] == ("rule_opted_out", "runtime_not_admitted", "retry_backoff", "owner_active")


# ------------------------------------------------------ 8.1 preemption


def test_a_human_message_preempts_running_maintenance_in_the_same_transaction():
    # dream-1 serialises on fg's session; dream-2 is maintenance of fg's own task t1.
    engine = given(nightly(), dream("dream-1"), receipt("dream-1", result="accepted"),
                   propose("dream-2", resource="host-2", actor="human", priority="maintenance"),
                   receipt("dream-2", result="queued"), propose("op-1"))  # fmt: skip
    assert action_state(engine, "op-1") == "submitting"
    events = when(engine, message("m9"))
    assert kinds(events)[:4] == ["InputAccepted", "MessageQueued", "ActionCancelRequested", "ActionCancelRequested"]
    requests = of_type(events, ev.ActionCancelRequested)
    assert [(r.operation_id, r.reason) for r in requests] == [("dream-1", "preempted"), ("dream-2", "preempted")]
    assert requests[0].preempted_by == ev.PreemptFacts(conversation_id="fg", message_id="m9", via="session", resource="fg")
    assert requests[1].preempted_by == ev.PreemptFacts(conversation_id="fg", message_id="m9", via="task")
    assert action_row(engine, "dream-1")["state"] == "cancel_requested"
    assert action_row(engine, "dream-1")["reason"] == "preempted"
    assert action_state(engine, "op-1") == "submitting"  # normal work is not preempted
    # It ends only on the executor's word; meanwhile its resource stays busy.
    when(engine, propose("op-2", resource="fg", actor="human"))
    assert blocked_by(engine, "op-2") == ["resource_busy"]
    when(engine, outcome("dream-1", "cancelled"))
    assert action_row(engine, "dream-1")["state"] == "cancelled"
    assert action_row(engine, "dream-1")["reason"] == "preempted"
    assert action_state(engine, "op-2") == "submitting"


@pytest.mark.parametrize("result", ["submitting", "queued", "unknown"])
def test_every_maintenance_action_out_with_the_executor_is_preempted(result):
    engine = given(nightly(), dream())
    if result != "submitting":
        when(engine, receipt("dream-1", result=result))
    when(engine, message("m1"))
    assert action_state(engine, "dream-1") == "cancel_requested"


def test_a_cancel_requested_or_pending_maintenance_action_is_not_preempted_again():
    engine = given(nightly(), dream(), message("m1"))
    assert len(of_type(when(engine, message("m2")), ev.ActionCancelRequested)) == 0
    engine = given(nightly(), dream("dream-1"), dream("dream-2"))  # dream-2 pending: resource_busy
    requests = of_type(when(engine, message("m1")), ev.ActionCancelRequested)
    assert [r.operation_id for r in requests] == ["dream-1"]
    assert blocked_by(engine, "dream-2") == ["resource_busy", "owner_active"]


def test_a_rejected_message_preempts_nothing():
    engine = given(nightly(), message("m1"), provider_receipt("fg/d1"), turn_ended("fg/t1"), dream())
    events = when(engine, message("m1"))  # already_exists
    assert of_type(events, ev.InputRejected) and not of_type(events, ev.ActionCancelRequested)
    assert action_state(engine, "dream-1") == "submitting"


# ------------------------------------------------------ 8.1 the scope: what a foreground affects


def two_owners() -> list[dict]:
    """fg (task t1) and fg2, no work of fg2's, rule nightly."""
    return [*nightly(), open_foreground("fg2")]


def test_a_message_preempts_only_the_maintenance_its_foreground_affects():
    """Its session's, and the maintenance on a resource its work names; not
    another session's, nor maintenance of no session on a resource no work of it names."""
    engine = given(two_owners(), dream("on-wt", resource="wt"), propose("op-a", resource="wt", actor="human"),
                   dream("on-store", resource="store"), dream("on-fg2", resource="fg2"))  # fmt: skip
    assert blocked_by(engine, "op-a") == ["resource_busy"]  # fg's work waits for wt
    requests = of_type(when(engine, message("m1")), ev.ActionCancelRequested)
    assert [r.operation_id for r in requests] == ["on-wt"]
    assert requests[0].preempted_by == ev.PreemptFacts(
        conversation_id="fg", message_id="m1", via="resource", resource="wt", operations=["op-a"]
    )
    assert [action_state(engine, op) for op in ("on-store", "on-fg2")] == ["submitting", "submitting"]
    requests = of_type(when(engine, message("m2", conversation_id="fg2")), ev.ActionCancelRequested)
    assert [(r.operation_id, r.preempted_by.via) for r in requests] == [("on-fg2", "session")]
    assert action_state(engine, "on-store") == "submitting"  # no session's, named by no work: never preempted


def test_maintenance_no_active_owner_affects_is_claimed_while_owners_speak():
    engine = given(two_owners(), message("m2", conversation_id="fg2"))  # fg2's owner is active, fg's idle
    when(engine, dream("on-store", resource="store"))
    when(engine, dream("on-fg", resource="fg"))
    assert [action_state(engine, op) for op in ("on-store", "on-fg")] == ["submitting", "submitting"]
    (blocked,) = of_type(when(engine, dream("on-fg2", resource="fg2")), ev.ActionBlocked)
    assert blocked.facts == [
        ev.BlockFact(code="owner_active", conversation_id="fg2", turn_id="fg2/t1", via="session", resource="fg2")
    ]


def test_a_proposal_of_the_owners_work_preempts_the_maintenance_on_its_resource():
    engine = given(two_owners(), dream("on-store", resource="store"), message("m1"))
    assert action_state(engine, "on-store") == "submitting"  # fg's work names no store yet
    events = when(engine, propose("op-s", resource="store", actor="human"))
    assert kinds(events)[1:3] == ["ActionProposed", "ActionCancelRequested"]
    (request,) = of_type(events, ev.ActionCancelRequested)
    assert request.operation_id == "on-store" and request.reason == "preempted"
    assert request.preempted_by == ev.PreemptFacts(
        conversation_id="fg", operation_id="op-s", via="resource", resource="store", operations=["op-s"]
    )
    assert blocked_by(engine, "op-s") == ["resource_busy"]  # until the executor confirms the stop
    # While fg's owner is idle, its work waits for the resource as any other.
    engine = given(two_owners(), dream("on-store", resource="store"))
    assert not of_type(when(engine, propose("op-s", resource="store", actor="human")), ev.ActionCancelRequested)
    assert action_state(engine, "on-store") == "submitting"


def test_the_owner_active_block_follows_the_work_that_names_the_resource():
    engine = given(two_owners(), propose("op-w", resource="wt", actor="human"), message("m1"))
    assert action_state(engine, "op-w") == "submitting"  # fg's work holds wt
    (blocked,) = of_type(when(engine, dream("on-wt", resource="wt")), ev.ActionBlocked)
    assert blocked.blocked_by == ["resource_busy", "owner_active"]
    assert blocked.facts[1] == ev.BlockFact(
        code="owner_active", conversation_id="fg", turn_id="fg/t1", via="resource", resource="wt", operations=["op-w"]
    )
    # fg's work on wt ends: wt is free and no work of fg names it, though fg's owner is still active.
    events = when(engine, outcome("op-w", "succeeded"))
    assert "ActionClaimed" in kinds(events) and action_state(engine, "on-wt") == "submitting"


def test_maintenance_of_the_owners_own_task_waits_on_any_resource():
    engine = given(two_owners(), message("m1"))
    (blocked,) = of_type(when(engine, propose("tidy", resource="anywhere", actor="human", priority="maintenance")),
                         ev.ActionBlocked)  # fmt: skip
    assert blocked.facts == [ev.BlockFact(code="owner_active", conversation_id="fg", turn_id="fg/t1", via="task")]


# ------------------------------------------------------ 8.1 owner_active


def test_pending_maintenance_waits_while_the_owner_is_active():
    engine = given(nightly(), message("m1"))  # fg/t1, a human turn, runs
    when(engine, dream())
    assert blocked_by(engine, "dream-1") == ["owner_active"]
    assert engine.state.actions.by_id["dream-1"].blocked_by == ("owner_active",)
    when(engine, provider_receipt("fg/d1"))
    assert blocked_by(engine, "dream-1") == ["owner_active"]
    events = when(engine, turn_ended("fg/t1"))
    assert "ActionClaimed" in kinds(events)  # the owner is idle: claimed in the same pass


def test_the_owner_active_fact_names_the_queue_or_the_running_human_turn():
    engine = given(nightly(), hold_failure(), message("m1"))  # held: m1 stays queued
    (blocked,) = of_type(when(engine, dream()), ev.ActionBlocked)
    assert blocked.facts == [
        ev.BlockFact(code="owner_active", conversation_id="fg", messages=["m1"], via="session", resource="fg")
    ]
    engine = given(nightly(), message("m1"))
    (blocked,) = of_type(when(engine, dream()), ev.ActionBlocked)
    assert blocked.facts == [
        ev.BlockFact(code="owner_active", conversation_id="fg", turn_id="fg/t1", via="session", resource="fg")
    ]


def test_a_withdrawn_message_leaves_the_owner_idle():
    engine = given(nightly(), hold_failure(), message("m1"), dream())
    assert blocked_by(engine, "dream-1") == ["owner_active"]
    events = when(engine, queue_edit("m1", "withdraw"))
    assert "ActionClaimed" in kinds(events)


def test_a_requeued_message_keeps_the_owner_active():
    engine = given(nightly(), message("m1"), dream())
    when(engine, turn_ended("fg/t1", "interrupted"))
    assert conversation_row(engine)["queue"] == []  # sent again at once, as fg/t2
    assert blocked_by(engine, "dream-1") == ["owner_active"]
    engine = given(nightly(), message("m1"), hold_failure(), dream())
    when(engine, turn_ended("fg/t1", "failed"))
    assert conversation_row(engine)["queue"] == ["m1"]
    assert blocked_by(engine, "dream-1") == ["owner_active"]


def test_a_wake_is_not_the_owner():
    engine = given(nightly(), update_for("ci:pr/9", "actionable"))
    assert conversation_row(engine)["state"] == "running"  # a wake turn
    when(engine, dream())
    assert action_state(engine, "dream-1") == "submitting"


def test_normal_work_ignores_the_owner():
    engine = given(world(), message("m1"))
    when(engine, propose("op-1", actor="human"))
    assert action_state(engine, "op-1") == "submitting"


def test_worked_example_8_5_step_by_step():
    trace = read_trace(str(GATES / "57_maintenance_preempted_by_owner_input.jsonl"))
    engine = Engine()
    seen: dict[str, tuple] = {}
    for traced in trace.lines:
        engine.submit(traced.item)
        value = traced.item.input
        name = f"{value.input_type}:{getattr(value, 'message_id', '') or getattr(value, 'operation_id', '') or getattr(value, 'turn_id', '')}"
        actions = {row["operation_id"]: row for row in engine.views.view("actions")}
        if not actions:
            continue
        fg = conversation_row(engine)
        seen[name] = (
            {op: (row["state"], row["reason"], row["blocked_by"]) for op, row in actions.items()},
            fg["state"],
            fg["stop_requested"],
        )
    assert seen["human.message:m9"][0]["dream-1"] == ("cancel_requested", "preempted", [])
    assert seen["human.message:m9"][1] == "running"
    assert seen["action.propose:dream-2"][0]["dream-2"] == ("pending", None, ["resource_busy", "owner_active"])
    assert seen["hold.failure:"][1:] == ("failure_held", "fg/t1")
    assert seen["executor.outcome:dream-1"][0]["dream-1"] == ("cancelled", "preempted", [])
    assert seen["executor.outcome:dream-1"][0]["dream-2"] == ("pending", None, ["owner_active"])
    assert seen["turn.ended:fg/t1"][0]["dream-2"] == ("pending", None, ["owner_active"])
    assert seen["turn.ended:fg/t1"][1:] == ("failure_held", None)
    assert seen["hold.release:"][0]["dream-2"] == ("pending", None, ["owner_active"])
    assert seen["turn.ended:fg/t2"][0]["dream-2"] == ("submitting", None, [])


def test_fixture_62_step_by_step():
    """Two owners: each preempts its session's maintenance and the maintenance
    on a resource its work names, and nothing else."""
    trace = read_trace(str(GATES / "62_human_commands_supersede_affected_intents.jsonl"))
    engine = Engine()
    seen: dict[str, dict[str, tuple]] = {}
    for traced in trace.lines:
        engine.submit(traced.item)
        value = traced.item.input
        name = f"{value.input_type}:{getattr(value, 'message_id', '') or getattr(value, 'operation_id', '')}"
        seen[name] = {row["operation_id"]: (row["state"], row["reason"], row["blocked_by"]) for row in engine.views.view("actions")}
    running = ("accepted", None, [])
    preempted = ("cancel_requested", "preempted", [])
    assert seen["human.message:m1"]["dream-fg"] == preempted
    assert [seen["human.message:m1"][op] for op in ("dream-fg2", "index-1", "vacuum-1")] == [running] * 3
    assert seen["action.propose:dream-fg-2"]["dream-fg-2"] == ("pending", None, ["resource_busy", "owner_active"])
    assert [seen["human.message:m2"][op] for op in ("dream-fg2", "index-1", "vacuum-1")] == [preempted, preempted, running]
    assert seen["action.propose:op-notes"]["vacuum-1"] == preempted
    assert seen["action.propose:op-notes"]["op-notes"] == ("pending", None, ["resource_busy"])
    assert seen["action.propose:vacuum-2"]["vacuum-2"] == ("submitting", None, [])  # both owners speak
    assert seen["executor.outcome:index-1"]["op-docs"] == ("submitting", None, [])
    assert seen["executor.outcome:dream-fg"]["dream-fg-2"] == ("pending", None, ["owner_active"])
    assert seen["turn.ended:"]["dream-fg-2"] == ("submitting", None, [])


# ------------------------------------------------------ 8.2 a hold closes the busy host entry


def test_a_hold_on_a_running_turn_requests_its_stop_until_it_ends():
    engine = given(world(), message("m1"), provider_receipt("fg/d1"))
    assert conversation_row(engine)["stop_requested"] is None
    when(engine, hold_failure())
    assert conversation_row(engine)["stop_requested"] == "fg/t1"
    assert conversation_row(engine)["state"] == "failure_held"
    when(engine, turn_ended("fg/t1"))
    assert conversation_row(engine)["stop_requested"] is None
    assert conversation_row(engine)["state"] == "failure_held"


def test_nothing_is_steered_into_a_turn_asked_to_stop():
    lines = [line if line["type"] != "conversation.open" or line["conversation_id"] != "fg" else open_foreground(steer=True)
             for line in world()]  # fmt: skip
    engine = given(lines, message("m1"), provider_receipt("fg/d1"), hold_failure())
    events = [e for line in update_for("ci:pr/9", "urgent") for e in when(engine, line)]
    assert not of_type(events, ev.DeliveryCreated)
    assert [d["delivery_id"] for d in deliveries(engine)] == ["fg/d1"]
    assert conversation_row(engine)["stop_requested"] == "fg/t1"


def test_an_idle_held_conversation_has_nothing_to_close():
    engine = given(world(), hold_failure())
    assert conversation_row(engine)["stop_requested"] is None


def test_a_release_before_the_turn_ends_withdraws_the_stop_request():
    engine = given(world(), message("m1"), hold_failure())
    assert conversation_row(engine)["stop_requested"] == "fg/t1"
    when(engine, hold_release())
    assert conversation_row(engine)["stop_requested"] is None
    assert conversation_row(engine)["state"] == "running"


def test_a_hold_records_no_new_event():
    engine = given(world(), message("m1"))
    assert kinds(when(engine, hold_failure())) == ["InputAccepted", "FailureHoldChanged"]


# ------------------------------------------------------ 8.3 deadline-and-stop across a restart


def _deadline_lines() -> list[dict]:
    base = [line for line in world() if line["type"] != "task.delegate"]
    return [
        *base,
        delegate("t1", grant=grant_request("g-t1", execution_deadline_s=600)),
        propose("op-1", at=at(10)),
        receipt("op-1", result="refused", at=at(20)),  # back to pending, claimed again as a2
    ]


def test_the_deadline_counts_from_the_first_claim_in_the_log_across_a_restart(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(url)
    engine = Engine(store)
    for number, line in enumerate(_deadline_lines(), 1):
        engine.submit(Located(decode(line), line=number))
    deadline = engine.state.actions.by_id["op-1"].deadline_at
    assert deadline is not None and [a.attempt_id for a in engine.state.actions.by_id["op-1"].attempts] == ["op-1/a1", "op-1/a2"]
    store.close()

    store = open_store(url)  # a restart: the state is the fold of the log
    engine = Engine(store)
    action = engine.state.actions.by_id["op-1"]
    assert action.deadline_at == deadline  # neither reset ...
    assert engine.state.actions.deadline_timers.entries == [(deadline, "op-1")]
    events = engine.submit(Located(decode(heartbeat(1, at=at(300))), line=100))
    assert not of_type(events, ev.DeadlineExceeded)
    events = engine.submit(Located(decode(receipt("op-1", "op-1/a2", "refused", at=at(400))), line=101))
    claims = of_type(events, ev.ActionClaimed)
    assert claims and claims[0].envelope.deadline_at == deadline  # ... nor extended by a claim after the restart
    events = engine.submit(Located(decode(tick(at=at(610))), line=102))
    (stop,) = of_type(events, ev.DeadlineExceeded)
    assert stop.deadline_at == deadline and stop.action_state == "cancel_requested"
    assert stop.facts.attempt_id == "op-1/a1"
    store.close()


def test_a_token_limit_stops_the_reporting_action_and_a_call_limit_the_next_call():
    """8.3 with section 3.4 and contract section 3.3's budgets: reaching the token
    limit asks the reporting action to stop; the call limit is reached by an
    allowed call, and the next call is denied and stops its action."""
    base = [line for line in world() if line["type"] != "task.delegate"]
    engine = given(base, delegate("t1", grant=grant_request("g-t1", token_limit=10)), propose("op-1"),
                   receipt("op-1", result="accepted"))  # fmt: skip
    events = when(engine, usage("op-1", input_tokens=10))
    assert [(r.operation_id, r.reason) for r in of_type(events, ev.ActionCancelRequested)] == [("op-1", "budget_exhausted")]
    assert of_type(events, ev.AlertRaised)[0].alert_id == "budget_exhausted:g-t1"
