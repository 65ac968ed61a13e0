"""The generators' universe: the small set of ids every input is drawn over,
the preambles a run starts from, the `Builder` (the trace so far and the
engine that steers the next draw) and the draws the generators share."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import msgspec
from hypothesis import strategies as st

from tandem.domain.inputs import Input, decode_input, format_at
from tandem.replay.engine import Engine, Located

T0 = datetime.datetime(2026, 3, 1, 9, 0, 0, tzinfo=datetime.timezone.utc)

TASKS = ("t1", "t2", "t3")
OPERATION_IDS = tuple(f"op{n}" for n in range(1, 9))
CAUSES = ("c1", "c2", "c3", "c4")
RESOURCES = ("r1", "r2", "r3")
OPERATIONS = ("worker.start", "worker.test", "scm.push")
POLICY_ROOTS = ("/repo", "/repo/a", "/repo/b", "/srv")
GRANT_ROOTS = ("/repo", "/repo/a", "/repo/b", "/repo/a/../b", "/etc", "relative", "/srv/x")
WRITE_PATHS = ("/repo/a/f", "/repo/b/g", "/repo/a", "/srv/x/y", "/etc/passwd", "/repo/../etc/z")
ARTIFACTS = ("art1", "art2")
QUESTION_KEYS = ("q1", "q2")
INPUT_IDS = ("k1", "k2", "k3")
RULE_ID = "ci"
RULE_GRANT = "g-ci"
IN_FLIGHT = ("submitting", "queued", "accepted", "unknown", "cancel_requested")

Draw = Callable[[st.SearchStrategy[Any]], Any]


def decode(line: dict[str, Any]) -> Input:
    """The decoded input of one trace line (raises if it is not well-formed)."""
    return decode_input(msgspec.json.encode(line))


def preamble() -> list[dict[str, Any]]:
    """Policy, a foreground and its background bound at generation 1, a heartbeat."""
    at = format_at(T0)
    return [
        {"type": "policy.set", "at": at, "actor": "daemon",
         "allowed_operations": ["worker.start", "worker.test", "scm.push"], "write_roots": ["/repo", "/srv"]},
        {"type": "conversation.open", "at": at, "actor": "daemon", "conversation_id": "fg",
         "role": "foreground", "context_limit": 200000, "reserve": 20000, "provider": "p1"},
        {"type": "conversation.open", "at": at, "actor": "daemon", "conversation_id": "bg",
         "role": "background", "foreground_id": "fg", "context_limit": 100000, "reserve": 10000},
        {"type": "background.bind", "at": at, "actor": "daemon", "conversation_id": "bg",
         "foreground_id": "fg", "generation": 1},
        {"type": "watchdog.heartbeat", "at": at, "actor": "watchdog", "generation": 1},
    ]  # fmt: skip


# Contract v1.2 section 3.2, for a run with budgets: back-offs, a retry cap,
# wake deferrals, backlog degradation and exhausted alerts within a run.
FUZZ_BUDGETS: dict[str, Any] = {
    "delivery_backoff_s": 30, "delivery_retries_max": 2, "wake_min_interval_s": 60, "wake_batch_wait_s": 20,
    "backlog_degraded_at": 3, "exhausted_alerts": True,
}  # fmt: skip


def fuzz_preamble(steer: bool = True, budgets: bool = False, payload_required: bool = False) -> list[dict[str, Any]]:
    """The machine's start: short timers (so fallbacks, stale questions and a
    stale watchdog happen within a run), a small foreground context (so
    budgets, recovery and compaction happen), a bound background, a heartbeat;
    with `budgets`, the settings of FUZZ_BUDGETS too."""
    at = format_at(T0)
    return [
        {"type": "engine.configure", "at": at, "actor": "daemon", "watchdog_max_age_s": 120,
         "fallback_after_s": 300, "question_resurface_s": 900, "wake_batch_max": 2, "suspend_gap_s": 600,
         **(FUZZ_BUDGETS if budgets else {}), **({"payload_required": True} if payload_required else {})},
        {"type": "policy.set", "at": at, "actor": "daemon",
         "allowed_operations": ["worker.start", "worker.test", "scm.push"], "write_roots": ["/repo", "/srv"]},
        {"type": "conversation.open", "at": at, "actor": "daemon", "conversation_id": "fg",
         "role": "foreground", "context_limit": 2000, "reserve": 200, "steer": steer, "provider": "p1"},
        {"type": "conversation.open", "at": at, "actor": "daemon", "conversation_id": "bg",
         "role": "background", "foreground_id": "fg", "context_limit": 2000, "reserve": 200},
        {"type": "background.bind", "at": at, "actor": "daemon", "conversation_id": "bg",
         "foreground_id": "fg", "generation": 1},
        {"type": "watchdog.heartbeat", "at": at, "actor": "watchdog", "generation": 1},
    ]  # fmt: skip


class Builder:
    """The trace drawn so far and the engine that steers the next draw (the
    generators read `state`; only `traces()` applies inputs through `add`)."""

    def __init__(self, engine: Engine | None = None) -> None:
        self.engine = engine if engine is not None else Engine()
        self.lines: list[dict[str, Any]] = []
        self.now = T0
        self.messages = 0
        self.crashed = False

    @property
    def state(self):
        return self.engine.state

    def add(self, line: dict[str, Any]) -> None:
        value = decode(line)  # well-formed, or the strategy is wrong
        self.lines.append(line)
        try:
            self.engine.submit(Located(value, line=len(self.lines)))
        except Exception:
            # An engine crash is the tests' to report: end the trace here, with
            # the input that crashed it last (the engine's state is gone).
            self.crashed = True

    # ------------------------------------------------------------- helpers

    def line(self, kind: str, actor: str | None = None, **fields: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"type": kind, "at": format_at(self.now)}
        if actor is not None:
            out["actor"] = actor
        out.update(fields)
        return out

    def generation(self, conversation: str = "fg") -> int:
        bound = self.state.conversation.by_id[conversation].generation
        return bound if bound is not None else 1

    def intent(self) -> int:
        return self.state.conversation.by_id["fg"].intent_revision


def often(draw: Draw, p_true: int = 9) -> bool:
    """True about p_true times in ten."""
    return draw(st.integers(0, 9)) < p_true


def pick(draw: Draw, existing: list[str], universe: tuple[str, ...]) -> str:
    """Mostly an existing id, sometimes any id of the universe (maybe unknown)."""
    if existing and often(draw, 8):
        return draw(st.sampled_from(existing))
    return draw(st.sampled_from(universe))


def subset(draw: Draw, items: tuple[str, ...] | list[str], min_size: int = 0) -> list[str]:
    return draw(st.lists(st.sampled_from(list(items)), min_size=min_size, max_size=len(items), unique=True))


def revision_near(draw: Draw, current: int) -> int:
    """The current revision mostly; else a stale or a future one."""
    if draw(st.integers(0, 19)) > 0:
        return current
    return draw(st.sampled_from([max(current - 1, 0), current + 1]))


def grant_request(draw: Draw, grant_id: str) -> dict[str, Any]:
    request: dict[str, Any] = {
        "grant_id": grant_id,
        "allowed_operations": subset(draw, OPERATIONS, 1) if often(draw) else ["deploy"],
        # Mostly at least one root the wide policy keeps.
        "write_roots": [draw(st.sampled_from(GRANT_ROOTS[:3]))] * often(draw) + subset(draw, GRANT_ROOTS),
    }
    if often(draw, 5):
        request["max_attempts"] = draw(st.integers(1, 3))
    if often(draw, 4):
        request["token_limit"] = draw(st.sampled_from([50, 200, 1000]))
    if often(draw, 3):  # contract v1.2 section 3.1
        request["execution_deadline_s"] = draw(st.sampled_from([60, 300, 900]))
    if often(draw, 3):
        request["retry_backoff_s"] = draw(st.sampled_from([0, 10, 60]))
    if often(draw, 3):  # contract v1.2 section 3.4
        request["call_limit"] = draw(st.sampled_from([1, 2, 5]))
    return request
