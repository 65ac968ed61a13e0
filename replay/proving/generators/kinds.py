"""The whole input language, weighted: `KINDS` maps every input kind (and the
machine's own kinds) to its generator and weight; `applicable` says whether a
kind has something to act on now; `traces()` draws whole well-formed traces."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from tandem.replay.proving.generators.conversations import (
    refused_receipt,
    alert_resolve,
    alert_seen,
    approval_required,
    approval_resolved,
    card_propose,
    context_reset,
    conversation_open,
    delivery_composed,
    daemon_start,
    daemon_stop,
    engine_configure,
    health_incident,
    health_recovered,
    hold_failure,
    host_resume,
    host_suspend,
    hold_release,
    holding_question,
    lost_ack,
    provider_readiness,
    provider_receipt,
    provider_reconcile,
    queue_edit,
    turn_ended,
)
from tandem.replay.proving.generators.continuity import (
    background_checkpoint,
    background_reset,
    investigation_close,
    investigation_open,
    reseed_receipt,
)
from tandem.replay.proving.generators.owners import (
    maintenance_proposal, owner_message, owner_receipt, owner_turn_ended, second_foreground,
)  # fmt: skip
from tandem.replay.proving.generators.sources import (
    cause_revised, late_join, log_batch, log_pruned, log_reconcile, observe, review_observation, source_alias,
    triage_classify, urgent_triage,
)  # fmt: skip
from tandem.replay.proving.generators.tools import runtime_admit, tool_policy_set, tool_request, worker_admit, worker_call
from tandem.replay.proving.generators.universe import IN_FLIGHT, INPUT_IDS, Builder, Draw, often, preamble
from tandem.replay.proving.generators.work import (
    action_cancel,
    action_propose,
    action_revalidate,
    background_bind,
    call_limit_revise,
    evidence_attach,
    executor_outcome,
    executor_receipt,
    executor_reconcile,
    grant_revise,
    heartbeat,
    human_message,
    intent_synced,
    policy_set,
    question_answer,
    question_raise,
    refused_attempt,
    repeat,
    rule_set,
    scope_pause,
    scope_resume,
    source_proposal,
    task_cancel,
    task_complete,
    task_delegate,
    task_revise,
    tick,
    timing_revise,
    usage_report,
)

# name -> (generator, weight)
KINDS: dict[str, tuple[Callable[[Draw, Builder], dict[str, Any]], int]] = {
    "task.delegate": (task_delegate, 3),
    "task.revise": (task_revise, 1),
    "grant.revise": (grant_revise, 1),
    "task.cancel": (task_cancel, 1),
    "task.complete": (task_complete, 2),
    "question.raise": (question_raise, 2),
    "question.answer": (question_answer, 2),
    "rule.set": (rule_set, 1),
    "action.propose": (action_propose, 8),
    "action.revalidate": (action_revalidate, 2),
    "action.cancel": (action_cancel, 1),
    "executor.receipt": (executor_receipt, 6),
    "executor.reconcile": (executor_reconcile, 3),
    "executor.outcome": (executor_outcome, 5),
    "evidence.attach": (evidence_attach, 2),
    "usage.report": (usage_report, 2),
    "watchdog.heartbeat": (heartbeat, 5),
    "scope.pause": (scope_pause, 1),
    "scope.resume": (scope_resume, 1),
    "human.message": (human_message, 1),
    "intent.synced": (intent_synced, 2),
    "background.bind": (background_bind, 1),
    "policy.set": (policy_set, 1),
    "tick": (tick, 1),
    "repeat": (repeat, 1),
    "observe": (observe, 3),
    "triage.classify": (triage_classify, 2),
    "log.batch": (log_batch, 2),
    "log.pruned": (log_pruned, 1),
    "log.reconcile": (log_reconcile, 2),
    "human.queue_edit": (queue_edit, 1),
    "provider.receipt": (provider_receipt, 2),
    "provider.reconcile": (provider_reconcile, 1),
    "turn.ended": (turn_ended, 2),
    "context.reset": (context_reset, 1),
    "approval.required": (approval_required, 1),
    "approval.resolved": (approval_resolved, 1),
    "hold.failure": (hold_failure, 1),
    "hold.release": (hold_release, 1),
    "health.incident": (health_incident, 1),
    "health.recovered": (health_recovered, 1),
    "daemon.stop": (daemon_stop, 1),
    "daemon.start": (daemon_start, 1),
    "card.propose": (card_propose, 1),
    "alert.seen": (alert_seen, 1),
    "alert.resolve": (alert_resolve, 1),
    "conversation.open": (conversation_open, 1),
    "engine.configure": (engine_configure, 1),
    "tool_policy.set": (tool_policy_set, 1),  # contract v1.2 section 1
    "runtime.admit": (runtime_admit, 1),
    "tool.request": (tool_request, 1),
    "provider.readiness": (provider_readiness, 1),  # contract v1.2 section 4
    "host.suspend": (host_suspend, 1),
    "host.resume": (host_resume, 1),
    "delivery.composed": (delivery_composed, 2),  # contract v1.2 section 6
    "investigation.open": (investigation_open, 1),  # contract v1.2 section 5
    "investigation.close": (investigation_close, 1),
    "background.checkpoint": (background_checkpoint, 1),
    "source.alias": (source_alias, 1),  # contract v1.2 section 7
    "lost_ack": (lost_ack, 0),  # (kinds of the machine's own rules: not drawn by traces())
    "background_reset": (background_reset, 0),
    "reseed_receipt": (reseed_receipt, 0),
    "holding_question": (holding_question, 0),
    "review_observation": (review_observation, 0),
    "cause_revised": (cause_revised, 0),
    "call_limit_revise": (call_limit_revise, 0),
    "source_proposal": (source_proposal, 0),
    "worker_admit": (worker_admit, 0),
    "worker_call": (worker_call, 0),
    "refused_receipt": (refused_receipt, 0),
    "timing_revise": (timing_revise, 0),
    "refused_attempt": (refused_attempt, 0),
    "late_join": (late_join, 0),
    "urgent_triage": (urgent_triage, 0),
    "second_foreground": (second_foreground, 0),  # contract v1.2 section 8.1's scope: two owners
    "owner_message": (owner_message, 0),
    "maintenance_proposal": (maintenance_proposal, 0),
    "owner_receipt": (owner_receipt, 0),
    "owner_turn_ended": (owner_turn_ended, 0),
}
WEIGHTED = [name for name, (_, weight) in KINDS.items() for _ in range(weight)]

# Seconds between inputs: mostly short (the watchdog stays fresh), sometimes
# past watchdog_max_age_s (120 s) so unattended dispatch is held.
_GAPS = st.sampled_from([0, 0, 0, 1, 1, 2, 2, 5, 5, 10, 30, 60, 121, 300])


def applicable(kind: str, b: Builder) -> bool:
    """Is there something for this kind to act on? (Else it would be rejected
    as unknown or stale, which a few inputs may be, but not most.)"""
    actions = b.state.actions.by_id.values()
    if kind in ("action.cancel", "usage.report"):
        return bool(b.state.actions.by_id)
    if kind == "action.revalidate":
        return any(a.state == "fenced" for a in actions)
    if kind == "executor.receipt":
        return any(a.attempts and a.attempts[-1].state in ("submitting", "queued") for a in actions)
    if kind == "executor.reconcile":
        return any(a.attempts and a.attempts[-1].state == "unknown" for a in actions)
    if kind == "executor.outcome":
        return any(a.state in IN_FLIGHT for a in actions)
    if kind == "evidence.attach":
        return any(a.state == "succeeded" for a in actions)
    if kind == "question.answer":
        return any(q.state == "open" for q in b.state.tasks.questions.values())
    if kind == "triage.classify":
        return bool(b.state.inbox.updates)
    if kind == "log.reconcile":
        return any(c.state == "reconciliation_required" for c in b.state.consumer.by_id.values())
    if kind in ("provider.receipt", "delivery.composed"):
        return any(d.attempt_state == "submitting" for c in b.state.conversation.by_id.values() for d in c.deliveries.values())
    if kind == "provider.reconcile":
        return any(d.attempt_state == "unknown" for c in b.state.conversation.by_id.values() for d in c.deliveries.values())
    if kind == "turn.ended":
        return any(c.running_turn is not None for c in b.state.conversation.by_id.values())
    if kind == "tool.request":
        return bool(b.state.tools.runtimes)
    if kind in ("action.propose", "task.complete", "task.revise", "task.cancel", "question.raise"):
        return any(t.state == "active" for t in b.state.tasks.by_id.values())
    return True


@st.composite
def traces(draw: Draw, max_steps: int = 40) -> list[dict[str, Any]]:
    """A well-formed trace: the preamble, then up to `max_steps` random inputs."""
    b = Builder()
    for line in preamble():
        b.add(line)
    if b.crashed:
        return b.lines
    # Some tasks up front so that actions have somewhere to live.
    for _ in range(draw(st.integers(1, 3))):
        b.add(task_delegate(draw, b))
        if b.crashed:
            return b.lines
    steps = draw(st.integers(0, max_steps))
    for _ in range(steps):
        b.now += datetime.timedelta(seconds=draw(_GAPS))
        kind = draw(st.sampled_from(WEIGHTED))
        if not applicable(kind, b) and often(draw, 8):
            kind = "action.propose" if applicable("action.propose", b) else "task.delegate"
        line = KINDS[kind][0](draw, b)
        if kind != "repeat" and draw(st.integers(0, 19)) == 0:
            line["id"] = draw(st.sampled_from(INPUT_IDS))
        b.add(line)
        if b.crashed:
            break
    return b.lines
