"""Deliberately broken decision rules (test only), for the fuzzer and the
bounded checker to find: each is `domain.dispatch.handle_input` plus one wrong
decision, passed as `Engine(step=...)`.

- `retry_unknown`: after the real pass, claims again every action whose
  latest attempt is `unknown` (a blind retry; spec 3.3 says never).
- `ignore_question_hold`: after the real pass, claims every pending action
  that only a question holds (`blocked_by == ["question_hold"]`), as a pass
  whose blockers dropped question_hold would.
- `allow_unlisted_tool`: a tool host that skips the allowlist check (contract
  v1.2 section 1.5): a call denied `tool_not_allowed` is allowed anyway.
"""

from __future__ import annotations

from tandem.domain import dispatch
from tandem.domain import events as ev
from tandem.domain.dispatch import Emit, handle_input
from tandem.domain.inputs import Input
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


def allow_unlisted_tool(state: State, value: Input, seq: int, file: str | None, line: int | None, emit: Emit) -> None:
    denied: list[ev.ToolCallDenied] = []

    def noting(event: ev.Event) -> None:
        if isinstance(event, ev.ToolCallDenied) and event.reason == "tool_not_allowed":
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
                tool_policy_revision=state.tool_policy_revision,
            )
        )
