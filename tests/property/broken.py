"""Deliberately broken decision rules (test only), for the fuzzer and the
bounded checker to find: each is `domain.dispatch.handle_input` plus one wrong
decision, passed as `Engine(step=...)`.

- `retry_unknown`: after the real pass, claims again every action whose
  latest attempt is `unknown` (a blind retry; spec 3.3 says never).
- `ignore_question_hold`: after the real pass, claims every pending action
  that only a question holds (`blocked_by == ["question_hold"]`), as a pass
  whose blockers dropped question_hold would.
- `resend_during_backoff`: after the real pass, sends the queue of every idle
  foreground a refusal's back-off defers (contract v1.2 section 3.6).
- `skip_source_rule`: the pass without the source rule (contract v1.2
  section 2.2): claims an action for a source revision older than its cause's.
- `allow_unlisted_tool`: a tool host that skips the allowlist check (contract
  v1.2 section 1.5): a call denied `tool_not_allowed` is allowed anyway.
- `stamp_heartbeats_at_import`, `deliver_while_provider_unready`,
  `forget_unready_deferral`: contract v1.2 section 4's rules broken (an
  imported heartbeat counted at its import, a delivery to a provider that is
  not ready, a provider that is not ready deferring nothing it records).
- `claim_while_owner_active`, `forget_preemption`: contract v1.2 section
  8.1 broken (a maintenance action claimed while the owner is active; a
  human message that asks no running maintenance action to stop).
- `act_before_reseed`: contract v1.2 section 5.4's gate forgotten: a
  background input refused `context_not_reseeded` is decided as if the
  background's reseed were accepted.
- `skip_duplicate_batch`: proposals checked without `duplicate_batch`
  (contract v1.2 section 7.3): a second fix for another review of a batch.
- `ignore_execution_deadline`: the time rules without execution deadlines
  (contract v1.2 section 3.3): an action claimed again after its deadline.
- `ignore_retry_backoff`: a refused action's back-off never blocks it
  (contract v1.2 section 3.5): claimed again before its `retry_at`.
- `keep_fixes_on_join`: a cause joining a batch stops no fix (contract v1.2
  section 7.3, issue 23): two fixes live before their causes joined one
  batch both go on.
- `interval_defers_urgent_wakes`: the rule before issue 23 (contract v1.2
  section 3.7): the wake interval defers a wake that carries an urgent
  update too, so an idle foreground is left with it and nothing but the
  interval holding it.
- `engine_wide_preemption`: contract v1.2 section 8.1's first, engine-wide
  rule: every foreground affects every maintenance action, so one owner's
  message preempts maintenance of other sessions and of none, and one active
  owner blocks all pending maintenance (the scoped rule replaced it).
- `count_claimed_tokens`, `stay_in_recovery`: contract v1.2 sections 5.2
  and 5.3 broken (issue 23): a checkpoint counted at the model's figure,
  however far past its summary's bytes, so an inflated claim puts its
  background in context recovery; a background in recovery never costed
  again, so it stays there after what its reseed carries shrank.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any, Optional

from msgspec import UNSET

import math

from tandem.domain import background_pass, dispatch
from tandem.domain.actions import rules as actions
from tandem.domain.budgets import rules as budgets
from tandem.domain.conversation import delivery
from tandem.domain.actions import foreman
from tandem.domain.investigations import rules as investigations
from tandem.domain.reviews import rules as reviews
from tandem.domain import events as ev
from tandem.domain.dispatch import Emit, handle_input, run_pass
from tandem.domain.inputs import Heartbeat, Input, ProviderReceipt
from tandem.domain.lifecycles import DELIVERY
from tandem.domain.lookups import known_delivery
from tandem.domain.rules import reacting, record
from tandem.domain.state import State


Step = Callable[[State, Input, int, Optional[str], Optional[int], Emit], None]  # an engine step (handle_input)


def retry_unknown(state: State, value: Input, seq: int, file: str | None, line: int | None, emit: Emit) -> None:
    handle_input(state, value, seq, file, line, emit)
    for action in sorted(state.actions.by_id.values(), key=lambda a: a.order):
        if action.state == "unknown" and action.attempts and action.attempts[-1].state == "unknown":
            dispatch._claim(state, seq, action, emit)


def ignore_question_hold(state: State, value: Input, seq: int, file: str | None, line: int | None, emit: Emit) -> None:
    handle_input(state, value, seq, file, line, emit)
    for operation_id in sorted(state.actions.pending, key=lambda op: state.actions.by_id[op].order):
        action = state.actions.by_id[operation_id]
        if action.state == "pending" and dispatch.blockers(state, action) == ("question_hold",):
            dispatch._claim(state, seq, action, emit)


def resend_during_backoff(state: State, value: Input, seq: int, file: str | None, line: int | None, emit: Emit) -> None:
    """After the real pass, a human turn for every idle foreground whose
    queue waits out a refusal's back-off (contract v1.2 section 3.6: a pass
    that ignored `delivery_backoff_s`)."""
    handle_input(state, value, seq, file, line, emit)
    for conversation_id in state.conversation.foregrounds:
        conversation = state.conversation.by_id[conversation_id]
        if conversation.deferred is None or conversation.deferred[0] != "backoff":
            continue
        if conversation.queue and conversation.running_turn is None and not conversation.failure_held:
            if not conversation.approvals and conversation.recovery is None and not conversation.reseed_due:
                delivery._human_turn(state, conversation, seq, emit, delivery.context_room(conversation))


def skip_source_rule(state: State, value: Input, seq: int, file: str | None, line: int | None, emit: Emit) -> None:
    """The pass without the source rule (contract v1.2 section 2.2): an action
    for an older revision of its cause is claimed as if nothing had moved."""
    emit = reacting(state, emit)
    for event in record(state, value, seq, file, line):
        emit(event)
    state.dirty_sources.clear()
    run_pass(state, seq, value.at, emit)


def _allowing_denied(reason: str) -> Step:
    """A tool host that lets through the calls the engine denies for `reason`:
    each such ToolCallDenied is followed by a ToolCallAllowed of the same call."""

    def step(state: State, value: Input, seq: int, file: str | None, line: int | None, emit: Emit) -> None:
        denied: list[ev.ToolCallDenied] = []

        def noting(event: ev.Event) -> None:
            if isinstance(event, ev.ToolCallDenied) and event.reason == reason:
                denied.append(event)
            emit(event)

        handle_input(state, value, seq, file, line, noting)
        for event in denied:
            emit(
                ev.ToolCallAllowed(
                    cause=seq,
                    runtime_id=event.runtime_id,
                    call_id=event.call_id,
                    tool=event.tool,
                    operation_id=event.operation_id,
                    tool_policy_revision=state.tools.policy_revision,
                )
            )

    return step


# Contract v1.2 section 1.5 broken: the allowlist check skipped.
allow_unlisted_tool = _allowing_denied("tool_not_allowed")
allow_unlisted_tool.__name__ = "allow_unlisted_tool"
# Contract v1.2 section 3.4 broken: check 8 ignored, calls past the grant's `call_limit` allowed.
allow_past_call_limit = _allowing_denied("budget_exhausted")
allow_past_call_limit.__name__ = "allow_past_call_limit"


def stamp_heartbeats_at_import(state: State, value: Input, seq: int, file: str | None, line: int | None, emit: Emit) -> None:
    """Contract v1.2 section 4.1 broken: a heartbeat row imported with its own
    `beat_at` is recorded again at the import's `at` (v1's stamping), so an
    old row looks fresh."""
    handle_input(state, value, seq, file, line, emit)
    if isinstance(value, Heartbeat) and value.beat_at is not UNSET and state.health.heartbeat_generation == value.generation:
        emit(ev.HeartbeatRecorded(cause=seq, generation=value.generation, at=value.at))
        dispatch.run_pass(state, seq, value.at, emit)


def deliver_while_provider_unready(state: State, value: Input, seq: int, file: str | None, line: int | None, emit: Emit) -> None:
    """Contract v1.2 section 4.3 broken: the foreground pass forgets the
    provider's readiness (a human turn goes to a conversation whose provider
    incident is open)."""
    handle_input(state, value, seq, file, line, emit)
    for conversation_id in state.conversation.foregrounds:
        conversation = state.conversation.by_id[conversation_id]
        dispatchable = not (conversation.approvals or conversation.failure_held or conversation.recovery)
        if state.provider_unready(conversation) and conversation.queue and conversation.running_turn is None and dispatchable:
            delivery._human_turn(state, conversation, seq, emit, delivery.context_room(conversation))


def forget_unready_deferral(state: State, value: Input, seq: int, file: str | None, line: int | None, emit: Emit) -> None:
    """Contract v1.2 sections 3.10, 4.3 broken: a conversation whose provider
    is not ready waits with no recorded deferral (what the engine did before
    provider_unready was one): the deferral is dropped as soon as it is made."""
    handle_input(state, value, seq, file, line, emit)
    for conversation_id in state.conversation.foregrounds:
        conversation = state.conversation.by_id[conversation_id]
        if conversation.deferred is not None and conversation.deferred[0] == "provider_unready":
            emit(ev.DeliveryDeferred(cause=seq, conversation_id=conversation_id, reason=None, until=None))


def accept_without_payload(state: State, value: Input, seq: int, file: str | None, line: int | None, emit: Emit) -> None:
    """Contract v1.2 section 6 broken: a receipt or reconcile rejected
    `payload_unrecorded` is recorded as if `payload_required` were off."""
    refused: list[ev.InputRejected] = []

    def noting(event: ev.Event) -> None:
        if isinstance(event, ev.InputRejected) and event.reason == "payload_unrecorded":
            refused.append(event)
        emit(event)

    handle_input(state, value, seq, file, line, noting)
    if refused:
        conversation, held = known_delivery(state, value.delivery_id)  # type: ignore[attr-defined]
        name = f"receipt_{value.result}" if isinstance(value, ProviderReceipt) else f"reconcile_{value.observed}"  # type: ignore[attr-defined]
        attempt_state = DELIVERY.target(held.attempt_state, name)
        assert attempt_state is not None
        settled = reacting(state, emit)
        for event in delivery._settle_delivery(state, conversation, held, attempt_state, seq):
            settled(event)
        dispatch.run_pass(state, seq, value.at, settled)


def claim_while_owner_active(state: State, value: Input, seq: int, file: str | None, line: int | None, emit: Emit) -> None:
    """Contract v1.2 section 8.1 broken: after the real pass, claims every
    pending maintenance action that only owner_active holds (a pass whose
    blockers dropped owner_active)."""
    handle_input(state, value, seq, file, line, emit)
    for operation_id in sorted(state.actions.pending, key=lambda op: state.actions.by_id[op].order):
        action = state.actions.by_id[operation_id]
        if action.state == "pending" and dispatch.blockers(state, action) == ("owner_active",):
            dispatch._claim(state, seq, action, emit)


def forget_preemption(state: State, value: Input, seq: int, file: str | None, line: int | None, emit: Emit) -> None:
    """Contract v1.2 section 8.1 broken: a human message leaves running
    maintenance work running (its preempting cancel requests are dropped)."""

    def dropping(event: ev.Event) -> None:
        if not (isinstance(event, ev.ActionCancelRequested) and event.reason == "preempted"):
            emit(event)

    handle_input(state, value, seq, file, line, dropping)


def act_before_reseed(state: State, value: Input, seq: int, file: str | None, line: int | None, emit: Emit) -> None:
    """Contract v1.2 section 5.4 broken: an input refused `context_not_reseeded`
    is decided again with every background's reseed taken as accepted (the
    gate forgotten): "missing narrative" authorizes it."""
    emit = reacting(state, emit)
    events = record(state, value, seq, file, line)
    if isinstance(events[0], ev.InputRejected) and events[0].reason == "context_not_reseeded":
        backgrounds = [c for c in state.conversation.by_id.values() if c.role == "background"]
        saved = [(c.reseed_due, c.recovery, c.reseed_id) for c in backgrounds]
        for background in backgrounds:
            background.reseed_due, background.recovery, background.reseed_id = False, None, None
        try:
            events = record(state, value, seq, file, line)  # pure: nothing of the state is kept
        finally:
            for background, (due, recovery, reseed_id) in zip(backgrounds, saved):
                background.reseed_due, background.recovery, background.reseed_id = due, recovery, reseed_id
    for event in events:
        emit(event)
    run_pass(state, seq, value.at, emit)


def _with_replaced(step_name: str, module: Any, name: str, replacement: Callable[..., Any], doc: str) -> Step:
    """The real engine step with `module.name` swapped for `replacement`
    while it runs (put back after, also on an error): a rule switched off."""

    def step(state: State, value: Input, seq: int, file: str | None, line: int | None, emit: Emit) -> None:
        real = getattr(module, name)
        setattr(module, name, replacement)
        try:
            handle_input(state, value, seq, file, line, emit)
        finally:
            setattr(module, name, real)

    step.__name__ = step.__qualname__ = step_name  # the hunts and their traces are named by it
    step.__doc__ = doc
    return step


skip_duplicate_batch = _with_replaced(
    "skip_duplicate_batch", actions, "check_duplicate_batch", lambda state, cause_key: None,
    """Contract v1.2 section 7.3 broken: `action.propose` checked without
    `duplicate_batch` (as before batches), so another cause of a batch with a
    live fix starts a second one.""",
)  # fmt: skip

ignore_execution_deadline = _with_replaced(
    "ignore_execution_deadline", dispatch, "deadline_rule", lambda state, cause: None,
    """Contract v1.2 section 3.3 broken: the time rules without execution
    deadlines, so an action past its `deadline_at` is neither stopped nor
    exhausted, and may be claimed again.""",
)  # fmt: skip

ignore_retry_backoff = _with_replaced(
    "ignore_retry_backoff", dispatch, "retry_blocked", lambda state, action: False,
    """Contract v1.2 section 3.5 broken: a refused action's `retry_at` never
    blocks it, so it is claimed again before its back-off ends.""",
)  # fmt: skip

keep_fixes_on_join = _with_replaced(
    "keep_fixes_on_join", reviews, "stop_duplicate_fixes", lambda state, batch_id, joined, cause: [],
    """Contract v1.2 section 7.3 broken (issue 23): batch membership checked
    at `action.propose` only, as before issue 23, so a cause that joins a batch
    whose causes then have two live fixes supersedes and stops nothing.""",
)  # fmt: skip


def _interval_first(state: State, conversation: Any, at: datetime.datetime, urgent: bool) -> Any:
    """Contract v1.2 section 3.7 as it was: the interval first, whatever the wake carries."""
    last = conversation.last_wake_at
    if state.authority.config.wake_min_interval_s and last is not None:
        until = last + datetime.timedelta(seconds=state.authority.config.wake_min_interval_s)
        if at < until:
            facts = ev.DeferralFacts(last_wake_at=last, wake_min_interval_s=state.authority.config.wake_min_interval_s)
            return "wake_interval", until, facts
    return budgets.wake_deferral(state, conversation, at, urgent)


interval_defers_urgent_wakes = _with_replaced(
    "interval_defers_urgent_wakes", delivery, "wake_deferral", _interval_first,
    """Contract v1.2 section 3.7 broken (the rule before issue 23): the wake
    interval defers an urgent wake too ("urgent + idle -> notify now" met only
    by the `urgent:` alert).""",
)  # fmt: skip


_scoped_via = foreman.affected_via

engine_wide_preemption = _with_replaced(
    "engine_wide_preemption", foreman, "affected_via",
    lambda state, action, conversation_id: _scoped_via(state, action, conversation_id) or "engine",
    """Contract v1.2 section 8.1 broken: the first, engine-wide rule ("the
    host is one machine and a rule's maintenance belongs to no
    conversation"): every foreground affects every maintenance action (as
    the scoped rule says where it does, else "engine"), so a message on one
    foreground preempts the maintenance of every session and of none, and
    one active owner blocks every pending maintenance action.""",
)  # fmt: skip


def _claimed_tokens(value: Any, evidence_refs: list[str]) -> int:
    """A checkpoint's tokens before issue 23: the model's figure, uncapped."""
    tokens = value.tokens if value.tokens is not UNSET else math.ceil(len(value.summary.encode("utf-8")) / 4)
    return tokens + investigations.checkpoint_ref_tokens * len(evidence_refs)


count_claimed_tokens = _with_replaced(
    "count_claimed_tokens", investigations, "checkpoint_tokens", _claimed_tokens,
    """Contract v1.2 section 5.2 broken: a checkpoint counts the `tokens` the
    model reports, past its summary's bytes, so an inflated figure puts its
    background in context recovery that its durable state would not.""",
)  # fmt: skip

stay_in_recovery = _with_replaced(
    "stay_in_recovery", background_pass, "cost_again", lambda state, background, cause, emit: None,
    """Contract v1.2 section 5.3 broken: a background in context recovery is
    never costed again, so it stays there (until its next reset) after a
    smaller checkpoint, a closed investigation or a shrunk control state.""",
)  # fmt: skip
