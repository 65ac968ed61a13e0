"""A store a team would have after long use, for bench/console.py: the same
live set at every size, and a finished history that grows with it.

`console_inputs(finished_tasks)` is deterministic (no randomness, no clock):

- setup: three foreground conversations, each with its background bound;
  `question_resurface_s` long enough that no open question resurfaces in
  either store (the live set's alerts must not depend on the store's span);
- the live set, first, so that it is live at every position after it: 20
  active tasks holding 30 live actions (10 `accepted` gates that never
  finish, 10 `pending` behind them, 5 `submitting`, 5 `pending` held by the
  5 open questions), 5 raised incident alerts, 10 untriaged observations
  (retained in the inbox);
- then `finished_tasks` tasks, one after the other, round the conversations:
  the human's message (a human turn, accepted and completed), the
  background's intent sync, the delegation, 2-4 actions proposed, claimed,
  accepted and succeeded (every 10th task's first one fails and is retried),
  the outcomes told in two wakes (each accepted and completed: every
  delivery obligation met, no fallback alert), then the task completed
  (every 40th cancelled); every 4th task a question raised and answered,
  every 5th a CI observation triaged routine, every 10th an incident raised
  and recovered, every 20th a card proposed and its alert resolved.

Watchdog heartbeats every `heartbeat_every_inputs` inputs, the clock one
second an input. The counts of what is live are the module's constants;
`expected_counts(finished_tasks)` is what the views should hold.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from bench.workload import _time

heartbeat_every_inputs = 40
CONVERSATIONS = 3
LIVE_TASKS = 20
GATES = 10  # live tasks 0-9: an accepted gate each, and an action pending behind it
SUBMITTING = 5  # live tasks 10-14: one action claimed, no receipt
OPEN_QUESTIONS = 5  # live tasks 15-19: an open question holding one pending action
RAISED_INCIDENTS = 5
UNTRIAGED = 10
LIVE_ACTIONS = 2 * GATES + SUBMITTING + OPEN_QUESTIONS
question_resurface_s = 10_000_000  # ~116 days: longer than any store's span here
OPERATION = "worker.start"


@dataclass
class _Writer:
    """The clock, the heartbeats, and each foreground's next delivery number."""

    clock: int = 0
    count: int = 0
    deliveries: dict[str, int] = field(default_factory=dict)
    intent: dict[str, int] = field(default_factory=dict)

    def stamp(self, value: dict[str, Any]) -> Iterator[dict[str, Any]]:
        value["at"] = _time(self.clock)
        self.clock += 1
        self.count += 1
        yield value
        if self.count % heartbeat_every_inputs == 0:
            yield from self.stamp({"type": "watchdog.heartbeat", "actor": "watchdog", "generation": 1})

    def turn(self, foreground: str) -> Iterator[dict[str, Any]]:
        """The delivery the engine dispatched last to `foreground`: accepted, its turn completed."""
        number = self.deliveries[foreground] = self.deliveries.get(foreground, 0) + 1
        yield from self.stamp({"type": "provider.receipt", "actor": "daemon", "delivery_id": f"{foreground}/d{number}", "result": "accepted"})
        yield from self.stamp({"type": "turn.ended", "actor": "daemon", "turn_id": f"{foreground}/t{number}", "outcome": "completed"})


def foreground(task: int) -> str:
    return f"fg-{task % CONVERSATIONS}"


def _setup(writer: _Writer) -> Iterator[dict[str, Any]]:
    stamp = writer.stamp
    yield from stamp({"type": "engine.configure", "actor": "daemon", "question_resurface_s": question_resurface_s})
    yield from stamp({"type": "policy.set", "actor": "daemon", "allowed_operations": [OPERATION], "write_roots": ["/repo"]})
    for number in range(CONVERSATIONS):
        fg, bg = f"fg-{number}", f"bg-{number}"
        yield from stamp({"type": "conversation.open", "actor": "daemon", "conversation_id": fg, "role": "foreground", "context_limit": 10**9, "reserve": 20000})
        yield from stamp({"type": "conversation.open", "actor": "daemon", "conversation_id": bg, "role": "background", "foreground_id": fg, "context_limit": 100000, "reserve": 10000})
        yield from stamp({"type": "background.bind", "actor": "daemon", "conversation_id": bg, "foreground_id": fg, "generation": 1})
    yield from stamp({"type": "watchdog.heartbeat", "actor": "watchdog", "generation": 1})


def _delegate(task_id: str, conversation: str, refs: list[str]) -> dict[str, Any]:
    return {
        "type": "task.delegate", "actor": "human", "task_id": task_id, "conversation_id": conversation, "message_refs": refs,
        "goal": f"the work of {task_id}", "done_when": ["every action succeeded"],
        "grant": {"grant_id": f"g-{task_id}", "allowed_operations": [OPERATION], "write_roots": ["/repo"]},
    }  # fmt: skip


def _propose(task_id: str, operation_id: str, revision: int, prerequisites: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "action.propose", "actor": "background", "generation": 1, "operation_id": operation_id,
        "cause_key": f"cause:{operation_id}", "operation": OPERATION, "target": operation_id, "resource": f"wt-{operation_id}",
        "write_paths": [f"/repo/{operation_id}"], "task_id": task_id, "grant_id": f"g-{task_id}",
        "prerequisites": [{"operation_id": p, "outcome": "succeeded"} for p in prerequisites],
        "input_revisions": {"task": revision, "grant": 1},
    }  # fmt: skip


def _receipt(operation_id: str) -> dict[str, Any]:
    return {"type": "executor.receipt", "actor": "executor", "operation_id": operation_id, "attempt_id": f"{operation_id}/a1", "result": "accepted"}


def _outcome(operation_id: str, outcome: str = "succeeded") -> dict[str, Any]:
    return {"type": "executor.outcome", "actor": "executor", "operation_id": operation_id, "outcome": outcome, "artifact_revision": f"{operation_id}@1"}


def _question(task_id: str, key: str, affected: Any) -> dict[str, Any]:
    return {
        "type": "question.raise", "actor": "background", "task_id": task_id, "question_key": key, "recipient": "human",
        "blocking_reason": f"which way for {task_id}?", "affected": affected, "evidence_revision": 1,
    }  # fmt: skip


def _observe(scope: str, fingerprint: str) -> dict[str, Any]:
    return {
        "type": "observe", "actor": "source", "source_id": f"ci{scope}", "kind": "ci", "scope": f"https://scm/pr/{scope}",
        "fingerprint": fingerprint, "status": "failed", "complete": True, "text": f"CI failed on PR {scope}",
    }  # fmt: skip


def _live(writer: _Writer) -> Iterator[dict[str, Any]]:
    stamp = writer.stamp
    for number in range(RAISED_INCIDENTS):
        yield from stamp({"type": "health.incident", "actor": "watchdog", "incident_id": f"live-{number}", "kind": "auth_expired", "detail": "token expired"})
    for number in range(UNTRIAGED):
        yield from stamp(_observe(f"live-{number}", "failed#0"))
    for number in range(LIVE_TASKS):
        task_id = f"live-{number}"
        yield from stamp(_delegate(task_id, foreground(number), []))
        if number < GATES:
            yield from stamp(_propose(task_id, f"{task_id}-gate", 1))
            yield from stamp(_receipt(f"{task_id}-gate"))
            yield from stamp(_propose(task_id, f"{task_id}-next", 1, (f"{task_id}-gate",)))
        elif number < GATES + SUBMITTING:
            yield from stamp(_propose(task_id, f"{task_id}-run", 1))
        else:
            yield from stamp(_question(task_id, "q", [f"{task_id}-held"]))
            yield from stamp(_propose(task_id, f"{task_id}-held", 1))


def operations_of(task: int) -> list[str]:
    """The finished task's operations, in order (a failed first one, then its retry, every 10th task)."""
    operations = [f"op-{task}{letter}" for letter in "abcd"[: 2 + task % 3]]  # one word after "op": a search finds it alone
    return [operations[0], f"op-{task}r", *operations[1:]] if task % 10 == 9 else operations


def plain_operation(finished_tasks: int) -> str:
    """A finished operation of a task with no extra (the same history at any
    size), from at most a quarter of the way in: the middle of the store (the
    deep past the console bench shows) comes after it at every size."""
    task = finished_tasks // 4
    while task % 4 == 1 or task % 5 == 2 or task % 10 in (3, 9) or task % 20 == 7 or task % 40 == 13:
        task -= 1
    return operations_of(task)[0]


def _finished(writer: _Writer, task: int) -> Iterator[dict[str, Any]]:
    stamp = writer.stamp
    task_id, fg = f"task-{task}", foreground(task)
    yield from stamp({"type": "human.message", "actor": "human", "conversation_id": fg, "message_id": f"m-{task}", "text": f"please do {task_id}"})
    yield from writer.turn(fg)  # the human turn
    writer.intent[fg] = writer.intent.get(fg, 0) + 1
    yield from stamp({"type": "intent.synced", "actor": "background", "conversation_id": fg, "intent_revision": writer.intent[fg], "generation": 1})
    yield from stamp(_delegate(task_id, fg, [f"m-{task}"]))
    for number, operation_id in enumerate(operations_of(task)):
        yield from stamp(_propose(task_id, operation_id, 1))
        yield from stamp(_receipt(operation_id))
        yield from stamp(_outcome(operation_id, "failed" if task % 10 == 9 and number == 0 else "succeeded"))
    yield from writer.turn(fg)  # the wake the first outcome went out in
    yield from writer.turn(fg)  # the wake of the others, once it ended
    yield from _extras(writer, task, task_id)
    if task % 40 == 13:
        yield from stamp({"type": "task.cancel", "actor": "human", "task_id": task_id})
    else:
        yield from stamp({"type": "task.complete", "actor": "background", "task_id": task_id, "evidence_refs": [f"ci://{task_id}"]})


def _extras(writer: _Writer, task: int, task_id: str) -> Iterator[dict[str, Any]]:
    stamp = writer.stamp
    if task % 4 == 1:
        yield from stamp(_question(task_id, "q", "task"))
        yield from stamp({"type": "question.answer", "actor": "human", "task_id": task_id, "question_key": "q", "answer": "the first way"})
    if task % 5 == 2:
        yield from stamp(_observe(str(task), f"failed#{task}"))
        yield from stamp({
            "type": "triage.classify", "actor": "background", "conversation_id": f"bg-{task % CONVERSATIONS}", "generation": 1,
            "cause_key": f"ci:https://scm/pr/{task}", "update_revision": 1, "disposition": "routine",
            "action_priority": 1, "notification_priority": 1,
        })  # fmt: skip
    if task % 10 == 3:
        yield from stamp({"type": "health.incident", "actor": "watchdog", "incident_id": f"inc-{task}", "kind": "daemon_dead", "detail": "no heartbeat"})
        yield from stamp({"type": "health.recovered", "actor": "watchdog", "incident_id": f"inc-{task}"})
    if task % 20 == 7:
        yield from stamp({"type": "card.propose", "actor": "background", "card_id": f"k-{task}", "cause_key": f"ci:https://scm/pr/{task}", "summary": f"PR {task} looks flaky", "generation": 1})
        yield from stamp({"type": "alert.resolve", "actor": "human", "alert_id": f"card:k-{task}"})


def console_inputs(finished_tasks: int) -> Iterator[dict[str, Any]]:
    writer = _Writer()
    yield from _setup(writer)
    yield from _live(writer)
    for task in range(finished_tasks):
        yield from _finished(writer, task)


def console_trace(finished_tasks: int) -> bytes:
    """The trace as JSON Lines bytes."""
    encode = msgspec.json.encode
    return b"".join(encode(value) + b"\n" for value in console_inputs(finished_tasks))


def expected_counts(finished_tasks: int) -> dict[str, dict[str, int]]:
    """What the views hold at the head, by view and state (the live set is the same at any size)."""
    tasks = range(finished_tasks)
    cancelled = sum(1 for t in tasks if t % 40 == 13)
    operations = sum(len(operations_of(t)) for t in tasks)
    failed = sum(1 for t in tasks if t % 10 == 9)
    incidents = sum(1 for t in tasks if t % 10 == 3)
    cards = sum(1 for t in tasks if t % 20 == 7)
    return {
        "tasks": {"active": LIVE_TASKS, "completed": finished_tasks - cancelled, "cancelled": cancelled},
        "actions": {
            "accepted": GATES, "pending": GATES + OPEN_QUESTIONS, "submitting": SUBMITTING,
            "succeeded": operations - failed, "failed": failed,
        },
        "questions": {"open": OPEN_QUESTIONS, "answered": sum(1 for t in tasks if t % 4 == 1)},
        "alerts": {"raised": RAISED_INCIDENTS, "resolved": incidents + cards},
    }  # fmt: skip
