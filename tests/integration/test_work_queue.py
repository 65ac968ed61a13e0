"""The work queue (projections/work.py, `GET /v1/work`) says exactly what the
engine accepts: after every input of every fixture, each executor input a
queue item offers (every kind, every value) is accepted by the engine's own
deciders, every other is refused, and an action that is not in the queue
accepts none; the items are the attempts out with the executor, oldest claim
first, each with its action's frozen envelope."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tandem.adapters.runtime import LiveEngine
from tandem.adapters.store import open_store
from tandem.adapters.trace import read_trace
from tandem.domain import events as ev
from tandem.domain.inputs import decode_input, format_at
from tandem.domain.lifecycles import ACTION
from tandem.domain.reasons import Rejected
from tandem.domain.rules import decide
from tandem.projections.actions import envelope_row
from tandem.projections.work import work_items
from tests.integration.fixture_traces import VALID_TRACES

ROOT = Path(__file__).resolve().parents[2]

# Every executor input an item could offer, by kind: (the field it chooses, its values).
CHOICES = {
    "executor.receipt": ("result", ("queued", "accepted", "refused", "unknown")),
    "executor.reconcile": ("observed", ("accepted", "not_received")),
    "executor.outcome": ("outcome", ("succeeded", "failed", "cancelled")),
}


TRACES = [Path(path) for path in VALID_TRACES]


def _accepted(engine: LiveEngine, at: str, kind: str, operation_id: str, attempt_id: str | None, field: str, value: str) -> bool:
    body = {"type": kind, "at": at, "actor": "executor", "operation_id": operation_id, field: value}
    if kind != "executor.outcome":
        body["attempt_id"] = attempt_id
    try:
        decide(engine.state, decode_input(json.dumps(body)), engine.state.position + 1)
    except Rejected:
        return False
    return True


def _offered(item_replies: list, kind: str) -> set[str]:
    return {value for reply in item_replies if reply.type == kind for value in reply.values}


@pytest.mark.parametrize("path", TRACES, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_the_queue_offers_exactly_what_the_engine_accepts(path: Path) -> None:
    engine = LiveEngine(open_store("memory:"))
    assert engine.views is not None
    claims: list[str] = []  # every ActionClaimed's operation, in log order
    engine.listeners.append(lambda commit: claims.extend(e.operation_id for e in commit.events if type(e) is ev.ActionClaimed))
    view = engine.views.by_name["actions"]
    for line in read_trace(str(path)).lines:
        engine.submit(line.item)
        at = format_at(line.item.input.at)
        items = {item.operation_id: item for item in work_items(view)}
        out = [op for op, action in engine.state.actions.by_id.items() if action.state in ACTION.in_flight]
        assert set(items) == set(out), line.item.line
        last_claim = {op: index for index, op in enumerate(claims)}
        assert list(items) == sorted(items, key=last_claim.__getitem__), "oldest claim first"
        for operation_id, action in engine.state.actions.by_id.items():
            item = items.get(operation_id)
            latest = action.attempts[-1] if action.attempts else None
            if item is not None:
                assert latest is not None and item.attempt_id == latest.attempt_id
                assert (item.action_state, item.attempt_state) == (action.state, latest.state)
                assert envelope_row(latest.envelope) == json.loads(json.dumps(item.envelope, default=_builtins))
                assert item.awaits == item.replies[0].type and item.stop == (action.state == "cancel_requested")
            for kind, (field, values) in CHOICES.items():
                offered = _offered(item.replies, kind) if item is not None else set()
                attempt_id = latest.attempt_id if latest is not None else f"{operation_id}/a1"
                accepted = {value for value in values if _accepted(engine, at, kind, operation_id, attempt_id, field, value)}
                assert offered == accepted, (path.name, line.item.line, operation_id, kind, action.state)


def _builtins(value: object) -> object:
    import msgspec

    return msgspec.to_builtins(value)


def test_the_queue_of_a_runtime_holds_only_its_work() -> None:
    seen: set[str] = set()
    for name in ("traces/worker_tools_denied_before_execution_outside_its_action", "gates/46_call_limit_denies_before_execution"):
        engine = LiveEngine(open_store("memory:"))
        assert engine.views is not None
        view = engine.views.by_name["actions"]
        for line in read_trace(str(ROOT / "fixtures" / f"{name}.jsonl")).lines:
            engine.submit(line.item)
            everything = work_items(view)
            runtimes = {item.envelope.runtime_id for item in everything} - {None}
            for runtime_id in runtimes:
                assert work_items(view, runtime_id) == [item for item in everything if item.envelope.runtime_id == runtime_id]
            assert work_items(view, "no-such-runtime") == []
            seen |= runtimes
    assert seen == {"w-1"}, seen  # out with the executor on the way (w-2 names nothing out)
