"""Deliberately broken decision rules (test only), for the fuzzer and the
bounded checker to find: each is `domain.dispatch.handle_input` plus one wrong
decision, passed as `Engine(step=...)`.

- `retry_unknown`: after the real pass, claims again every action whose
  latest attempt is `unknown` (a blind retry; spec 3.3 says never).
- `ignore_question_hold`: after the real pass, claims every pending action
  that only a question holds (`blocked_by == ["question_hold"]`), as a pass
  whose blockers dropped question_hold would.
- `stamp_heartbeats_at_import`, `deliver_while_provider_unready`: contract
  v1.2 section 4's rules broken (an imported heartbeat counted at its import,
  a delivery to a provider that is not ready).
"""

from __future__ import annotations

from msgspec import UNSET

from tandem.domain import delivery, dispatch
from tandem.domain import events as ev
from tandem.domain.dispatch import Emit, handle_input
from tandem.domain.inputs import Heartbeat, Input
from tandem.domain.state import State


def retry_unknown(state: State, value: Input, seq: int, file: str | None, line: int | None, emit: Emit) -> None:
    handle_input(state, value, seq, file, line, emit)
    for action in sorted(state.actions.values(), key=lambda a: a.order):
        if action.state == "unknown" and action.attempts and action.attempts[-1].state == "unknown":
            dispatch._claim(state, seq, action, emit)


def ignore_question_hold(state: State, value: Input, seq: int, file: str | None, line: int | None, emit: Emit) -> None:
    handle_input(state, value, seq, file, line, emit)
    for operation_id in sorted(state.pending, key=lambda op: state.actions[op].order):
        action = state.actions[operation_id]
        if action.state == "pending" and dispatch.blockers(state, action) == ("question_hold",):
            dispatch._claim(state, seq, action, emit)


def stamp_heartbeats_at_import(state: State, value: Input, seq: int, file: str | None, line: int | None, emit: Emit) -> None:
    """Contract v1.2 section 4.1 broken: a heartbeat row imported with its own
    `beat_at` is recorded again at the import's `at` (v1's stamping), so an
    old row looks fresh."""
    handle_input(state, value, seq, file, line, emit)
    if isinstance(value, Heartbeat) and value.beat_at is not UNSET and state.heartbeat_generation == value.generation:
        emit(ev.HeartbeatRecorded(cause=seq, generation=value.generation, at=value.at))
        dispatch.run_pass(state, seq, value.at, emit)


def deliver_while_provider_unready(state: State, value: Input, seq: int, file: str | None, line: int | None, emit: Emit) -> None:
    """Contract v1.2 section 4.3 broken: the foreground pass forgets the
    provider's readiness (a human turn goes to a conversation whose provider
    incident is open)."""
    handle_input(state, value, seq, file, line, emit)
    for conversation_id in state.foregrounds:
        conversation = state.conversations[conversation_id]
        dispatchable = not (conversation.approvals or conversation.failure_held or conversation.recovery)
        if state.provider_unready(conversation) and conversation.queue and conversation.running_turn is None and dispatchable:
            delivery._human_turn(state, conversation, seq, emit, delivery._room(conversation))
