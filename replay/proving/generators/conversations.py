"""Generators of the conversations' inputs and the runtime's health (contract section 5
and 6): queue edits, provider receipts, turns, resets, approvals, holds,
incidents, daemon stops and starts, cards, alerts; and the machine's own
kinds (a lost acknowledgement, a question that holds work, a big message)."""

from __future__ import annotations

import datetime
import hashlib
from typing import Any

from hypothesis import strategies as st

from tandem.domain.inputs import format_at
from tandem.replay.proving.generators.universe import (
    CAUSES,
    FUZZ_BUDGETS,
    OPERATION_IDS,
    QUESTION_KEYS,
    Builder,
    Draw,
    often,
    subset,
)
from tandem.replay.proving.generators.work import executor_receipt, question_raise

REASONS = ("compaction", "rollover", "fork", "rollback", "handoff", "provider_loss")
INCIDENTS = ("i1", "i2")


def _foreground(b: Builder):
    return b.state.conversation.by_id.get("fg")


def queue_edit(draw: Draw, b: Builder) -> dict[str, Any]:
    """An edit or withdrawal, mostly of a queued message, sometimes of one
    already sent (already_dispatched)."""
    conversation = _foreground(b)
    queued = list(conversation.queue) if conversation is not None else []
    known = list(conversation.messages) if conversation is not None else []
    if queued and often(draw, 7):
        message_id = draw(st.sampled_from(queued))
    else:
        message_id = draw(st.sampled_from(known)) if known else "m1"
    fields: dict[str, Any] = {"conversation_id": "fg", "message_id": message_id, "op": draw(st.sampled_from(["edit", "withdraw"]))}
    if fields["op"] == "edit":
        fields["text"] = draw(st.sampled_from(["shorter", "much longer " * 200]))
    return b.line("human.queue_edit", **fields)


def _delivery_id(draw: Draw, b: Builder, states: tuple[str, ...]) -> str:
    """Mostly a delivery in `states`; sometimes any (late, duplicate) or the next, unknown one."""
    conversation = _foreground(b)
    deliveries = conversation.deliveries if conversation is not None else {}
    fitting = [d for d, delivery in deliveries.items() if delivery.attempt_state in states]
    if fitting and often(draw, 8):
        return draw(st.sampled_from(fitting))
    if deliveries and often(draw, 6):
        return draw(st.sampled_from(list(deliveries)))
    return f"fg/d{len(deliveries) + 1}"


def provider_receipt(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line(
        "provider.receipt",
        "daemon",
        delivery_id=_delivery_id(draw, b, ("submitting",)),
        result=draw(st.sampled_from(["accepted", "accepted", "unknown", "refused"])),
    )


def refused_receipt(draw: Draw, b: Builder) -> dict[str, Any]:
    """The provider refusing a submitting delivery (contract v1.2 section 3.6's
    back-off starts there): what the `refusals` rule draws."""
    return b.line("provider.receipt", "daemon", delivery_id=_delivery_id(draw, b, ("submitting",)), result="refused")


def delivery_composed(draw: Draw, b: Builder) -> dict[str, Any]:
    """The composer's payload of a delivery (contract v1.2 section 6), mostly
    of a submitting one: mostly its own digest (so the same again is a
    repeat), sometimes another (payload_mismatch)."""
    delivery_id = _delivery_id(draw, b, ("submitting",))
    payload = delivery_id if often(draw, 6) else f"{delivery_id} again"
    fields: dict[str, Any] = {
        "delivery_id": delivery_id,
        "payload_ref": f"payloads/{delivery_id}",
        "payload_digest": "sha256:" + hashlib.sha256(payload.encode()).hexdigest(),
        "adapter": draw(st.sampled_from(["codex", "claude"])),
    }
    if often(draw):
        fields["tokens"] = draw(st.integers(0, 500))
    return b.line("delivery.composed", "daemon", **fields)


def provider_reconcile(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line(
        "provider.reconcile",
        "daemon",
        delivery_id=_delivery_id(draw, b, ("unknown",)),
        observed=draw(st.sampled_from(["accepted", "not_received"])),
    )


def turn_ended(draw: Draw, b: Builder) -> dict[str, Any]:
    conversation = _foreground(b)
    running = conversation.running_turn if conversation is not None else None
    turns = conversation.turns if conversation is not None else 0
    if running is not None and often(draw, 8):
        turn_id = running.turn_id
    else:
        turn_id = f"fg/t{draw(st.integers(max(turns, 1), turns + 1))}"  # the last one again, or the next
    fields: dict[str, Any] = {"turn_id": turn_id, "outcome": draw(st.sampled_from(["completed", "completed", "failed", "interrupted"]))}
    if often(draw, 4):
        held = sorted({cause for d in (conversation.deliveries.values() if conversation else ()) for cause, _ in d.included})
        fields["delivered"] = subset(draw, held[-3:]) if held else []
    return b.line("turn.ended", "daemon", **fields)


def context_reset(draw: Draw, b: Builder) -> dict[str, Any]:
    conversation = "fg" if often(draw, 8) else "bg"
    return b.line("context.reset", "daemon", conversation_id=conversation, reason=draw(st.sampled_from(REASONS)))


def approval_required(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line(
        "approval.required",
        "daemon",
        conversation_id=draw(st.sampled_from(["fg", "bg"])),
        request_id=draw(st.sampled_from(["r1", "r2"])),
        detail="allow reading ~/.ssh?",
    )


def approval_resolved(draw: Draw, b: Builder) -> dict[str, Any]:
    conversations = b.state.conversation.by_id
    open_ = [(c, r) for c in ("fg", "bg") if c in conversations for r in conversations[c].approvals]
    if open_ and often(draw, 8):
        conversation, request = draw(st.sampled_from(open_))
    else:
        conversation, request = draw(st.sampled_from(["fg", "bg"])), draw(st.sampled_from(["r1", "r2"]))
    return b.line("approval.resolved", conversation_id=conversation, request_id=request)


def hold_failure(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line("hold.failure", "daemon", conversation_id="fg")


def hold_release(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line("hold.release", conversation_id="fg")


def health_incident(draw: Draw, b: Builder) -> dict[str, Any]:
    line = b.line("health.incident", draw(st.sampled_from(["watchdog", "daemon"])), incident_id=draw(st.sampled_from(INCIDENTS)))
    line.update(kind=draw(st.sampled_from(["daemon_dead", "auth_expired", "ingestion_stalled"])), detail="seen by the fuzzer")
    if often(draw, 2):  # contract v1.2 section 4.2: the prober's own times
        line.update(observed_at=format_at(b.now), last_success_at=format_at(b.now - datetime.timedelta(seconds=90)))
    return line


def provider_readiness(draw: Draw, b: Builder) -> dict[str, Any]:
    """Contract v1.2 section 4.3: p1 (fg's provider) or p2 ready or not, sometimes
    with a known expiry ahead or passed; now and then from a model (not_authorized)."""
    actor = draw(st.sampled_from(["watchdog", "daemon"])) if often(draw, 8) else "background"
    ready = draw(st.booleans())
    line = b.line("provider.readiness", actor, provider=draw(st.sampled_from(["p1", "p1", "p2"])), ready=ready)
    if not ready:
        line["reason"] = draw(st.sampled_from(["auth_expired", "not_logged_in", "unreachable"]))
    if often(draw, 3):
        line["auth_expires_at"] = format_at(b.now + datetime.timedelta(seconds=draw(st.sampled_from([-10, 30, 300]))))
    if often(draw, 3):
        line["observed_at"] = format_at(b.now - datetime.timedelta(seconds=draw(st.sampled_from([0, 20]))))
    return line


def host_suspend(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line("host.suspend", draw(st.sampled_from(["daemon", "watchdog"])))


def host_resume(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line("host.resume", draw(st.sampled_from(["daemon", "watchdog"])))


def health_recovered(draw: Draw, b: Builder) -> dict[str, Any]:
    open_ = sorted(i for i, is_open in b.state.alerts.incidents.items() if is_open)
    incident = draw(st.sampled_from(open_)) if open_ and often(draw, 8) else draw(st.sampled_from([*INCIDENTS, "daemon_crash/1"]))
    return b.line("health.recovered", draw(st.sampled_from(["watchdog", "daemon"])), incident_id=incident)


def daemon_stop(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line("daemon.stop", "daemon", expected=draw(st.booleans()))


def daemon_start(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line("daemon.start", "daemon")


def card_propose(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line(
        "card.propose",
        "background",
        card_id=draw(st.sampled_from(["card1", "card2"])),
        cause_key=draw(st.sampled_from(CAUSES)),
        summary="a follow-up the human may want",
        generation=b.generation() if often(draw) else max(b.generation() - 1, 0),
    )


def _alert_id(draw: Draw, b: Builder) -> str:
    alerts = sorted(b.state.alerts.by_id)
    return draw(st.sampled_from(alerts)) if alerts and often(draw, 9) else "urgent:nothing"


def alert_seen(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line("alert.seen", alert_id=_alert_id(draw, b))


def alert_resolve(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line("alert.resolve", alert_id=_alert_id(draw, b))


def conversation_open(draw: Draw, b: Builder) -> dict[str, Any]:
    """Mostly a used id again (already_exists); sometimes a second foreground."""
    if often(draw, 7):
        return b.line("conversation.open", "daemon", conversation_id="fg", role="foreground", context_limit=1000, reserve=100)
    line = b.line("conversation.open", "daemon", conversation_id="fg2", role="foreground", context_limit=4000, reserve=400)
    if often(draw):
        line["provider"] = "p2"  # contract v1.2 section 4.3
    return line


def engine_configure(draw: Draw, b: Builder) -> dict[str, Any]:
    """Too late once anything else was applied (too_late)."""
    budgets = {name: value for name, value in FUZZ_BUDGETS.items() if often(draw, 2)}  # contract v1.2 section 3.2
    line = b.line("engine.configure", "daemon", wake_batch_max=draw(st.integers(1, 3)), **budgets)
    if often(draw):
        line["suspend_gap_s"] = 120  # contract v1.2 section 4.5
    if often(draw):
        line["payload_required"] = True  # contract v1.2 section 6
    return line


def lost_ack(draw: Draw, b: Builder) -> dict[str, Any]:
    """A lost acknowledgement ("lost provider/executor ack -> unknown or
    reconciled"): the receipt of an in-flight executor attempt, or of a
    submitting delivery, says `unknown`."""
    attempts = [
        (op, action.attempts[-1].attempt_id)
        for op, action in b.state.actions.by_id.items()
        if action.attempts and action.attempts[-1].state in ("submitting", "queued")
    ]
    conversation = _foreground(b)
    deliveries = [d for d, x in conversation.deliveries.items() if x.attempt_state == "submitting"] if conversation else []
    if deliveries and (not attempts or often(draw, 3)):
        return b.line("provider.receipt", "daemon", delivery_id=draw(st.sampled_from(deliveries)), result="unknown")
    if attempts:
        operation_id, attempt_id = draw(st.sampled_from(attempts))
        return b.line("executor.receipt", "executor", operation_id=operation_id, attempt_id=attempt_id, result="unknown")
    return executor_receipt(draw, b)


def holding_question(draw: Draw, b: Builder) -> dict[str, Any]:
    """A question that holds work of an active task ("missing decision,
    scoped"): on the task, or on some of its operations (proposed or not)."""
    active = [t for t, task in b.state.tasks.by_id.items() if task.state == "active"]
    if not active:
        return question_raise(draw, b)
    task_id = draw(st.sampled_from(active))
    operations = list(b.state.tasks.by_id[task_id].actions) + [op for op in OPERATION_IDS if op not in b.state.actions.by_id][:2]
    affected: Any = "task" if often(draw, 4) else subset(draw, operations, 1)[:2]
    existing = b.state.tasks.questions.get((task_id, "q1"))
    return b.line(
        "question.raise",
        "background",
        task_id=task_id,
        question_key=draw(st.sampled_from(QUESTION_KEYS)),
        recipient="human",
        blocking_reason="which database?",
        affected=affected,
        evidence_revision=(existing.evidence_revision if existing else 0) + 1,
    )


def big_message(draw: Draw, b: Builder) -> dict[str, Any]:
    """A human message that may not fit the context (context_recovery_required)."""
    b.messages += 1
    return b.line(
        "human.message",
        conversation_id="fg",
        message_id=f"m{b.messages}",
        text="a long request",
        tokens=draw(st.sampled_from([10, 400, 1500, 5000])),
    )
