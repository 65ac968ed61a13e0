"""Given / when / then helpers for unit tests of the domain (DESIGN: Cosmic Python).

Tests read like trace lines: inputs are plain dicts (the JSON of spec/TRACE.md
section 3), decoded by the same `decode_input` the trace reader uses, and
applied to a fresh in-memory `Engine()`:

    engine = given(*world(), propose("op-1"))
    events = when(engine, receipt("op-1", "op-1/a1", "refused"))
    assert kinds(events) == ["InputAccepted", "AttemptUpdated", "ActionClaimed"]

Every builder returns a dict; keyword arguments override or add fields, and
`at=at(n)` sets the time (default `at(0)`; times must not go backwards).
"""

from __future__ import annotations

import copy
import datetime
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tandem.domain import events as ev
from tandem.domain.inputs import decode_input
from tandem.replay.engine import Engine, Located

BASE_TIME = datetime.datetime(2026, 3, 1, 9, 0, 0, tzinfo=datetime.timezone.utc)


def at(n: float) -> str:
    """RFC 3339 UTC time `n` seconds after the tests' epoch (monotonic in n)."""
    moment = BASE_TIME + datetime.timedelta(seconds=n)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + (f".{moment.microsecond:06d}" if moment.microsecond else "") + "Z"


# ------------------------------------------------------------ given / when / then

Line = dict[str, Any]


def _flatten(items: Iterable[Any]) -> list[Line]:
    flat: list[Line] = []
    for item in items:
        if isinstance(item, dict):
            flat.append(item)
        else:
            flat.extend(_flatten(item))
    return flat


def decode(line: Line):
    return decode_input(json.dumps(line))


EXPECT = "__expect_rejection__"


def expecting(reason: str, line: Line) -> Line:
    """A `given` line that must be rejected with `reason` (for setups that need
    a rejection with consequences, like a change-log batch in another epoch)."""
    return {**line, EXPECT: reason}


def given(*lines: Line | Iterable[Line]) -> Engine:
    """A fresh in-memory engine with these inputs applied (each must be
    accepted, or rejected with the reason `expecting(...)` gave it)."""
    engine = Engine()
    for number, line in enumerate(_flatten(lines), start=1):
        line = dict(line)
        expected = line.pop(EXPECT, None)
        events = engine.submit(Located(decode(line), line=number))
        reason = rejection(events)
        detail = events[0].detail if reason is not None else ""
        assert reason == expected, f"given line {number} ({line['type']}): {reason or 'accepted'}, expected {expected or 'accepted'} {detail}"
    return engine


def given_allowing_rejections(*lines: Line | Iterable[Line]) -> Engine:
    """Like `given`, but rejected setup inputs are fine (for idempotency tests)."""
    engine = Engine()
    for number, line in enumerate(_flatten(lines), start=1):
        engine.submit(Located(decode(line), line=number))
    return engine


def when(engine: Engine, line: Line) -> list[ev.Event]:
    """Apply one more input; the events it caused (its record first)."""
    return engine.submit(Located(decode(line), line=engine.state.seq + 1))


def rejection(events: list[ev.Event]) -> str | None:
    """The reason code if the input was rejected, else None."""
    first = events[0]
    if isinstance(first, ev.InputRejected):
        return first.reason
    assert isinstance(first, ev.InputAccepted), first
    return None


def kinds(events: list[ev.Event]) -> list[str]:
    return [type(event).__name__ for event in events]


def of_type(events: list[ev.Event], kind: type) -> list[Any]:
    return [event for event in events if isinstance(event, kind)]


def snapshot(engine: Engine) -> dict[str, Any]:
    """The views (minus `rejections`, which a rejection is meant to change)."""
    document = copy.deepcopy(engine.views.document())
    document.pop("rejections")
    return document


def action_row(engine: Engine, operation_id: str) -> dict[str, Any]:
    return next(row for row in engine.views.view("actions") if row["operation_id"] == operation_id)


def task_row(engine: Engine, task_id: str) -> dict[str, Any]:
    return next(row for row in engine.views.view("tasks") if row["task_id"] == task_id)


def blocked_by(engine: Engine, operation_id: str) -> list[str]:
    return action_row(engine, operation_id)["blocked_by"]


def action_state(engine: Engine, operation_id: str) -> str:
    return action_row(engine, operation_id)["state"]


# --------------------------------------------------------------------- builders


def line(input_type: str, actor: str | None = None, n: float = 0, /, **fields: Any) -> Line:
    result: Line = {"type": input_type, "at": at(n)}
    if actor is not None:
        result["actor"] = actor
    result.update(fields)
    return result


def _with(base: Line, overrides: dict[str, Any]) -> Line:
    result = dict(base)
    result.update(overrides)
    return result


def configure(**kw: Any) -> Line:
    return _with(line("engine.configure", "daemon"), kw)


def policy(operations=("worker.start", "worker.test"), roots=("/repo",), **kw: Any) -> Line:
    return _with(
        line("policy.set", "daemon", allowed_operations=list(operations), write_roots=list(roots)), kw
    )


def open_foreground(conversation_id: str = "fg", **kw: Any) -> Line:
    return _with(
        line("conversation.open", "daemon", conversation_id=conversation_id, role="foreground",
             context_limit=200_000, reserve=20_000),
        kw,
    )


def open_background(conversation_id: str = "bg", foreground_id: str = "fg", **kw: Any) -> Line:
    return _with(
        line("conversation.open", "daemon", conversation_id=conversation_id, role="background",
             foreground_id=foreground_id, context_limit=100_000, reserve=10_000),
        kw,
    )


def bind(generation: int = 1, conversation_id: str = "bg", foreground_id: str = "fg", **kw: Any) -> Line:
    return _with(
        line("background.bind", "daemon", conversation_id=conversation_id, foreground_id=foreground_id,
             generation=generation),
        kw,
    )


def heartbeat(generation: int = 1, **kw: Any) -> Line:
    return _with(line("watchdog.heartbeat", "watchdog", generation=generation), kw)


def tick(**kw: Any) -> Line:
    return _with(line("tick", "daemon"), kw)


def grant_request(grant_id: str = "g1", operations=("worker.start", "worker.test"), roots=("/repo",), **kw: Any) -> dict:
    return _with({"grant_id": grant_id, "allowed_operations": list(operations), "write_roots": list(roots)}, kw)


def delegate(task_id: str = "t1", grant: dict | None = None, conversation_id: str = "fg", **kw: Any) -> Line:
    return _with(
        line("task.delegate", "human", task_id=task_id, conversation_id=conversation_id, message_refs=[],
             goal=f"goal of {task_id}", done_when=["it works"],
             grant=grant if grant is not None else grant_request(f"g-{task_id}")),
        kw,
    )


def revise_task(task_id: str = "t1", expected_revision: int = 1, **kw: Any) -> Line:
    fields = {"goal": "a revised goal"} if not kw.keys() & {"goal", "done_when", "constraints", "fallback_decisions"} else {}
    return _with(line("task.revise", "human", task_id=task_id, expected_revision=expected_revision, **fields), kw)


def revise_grant(grant_id: str = "g-t1", expected_revision: int = 1, **kw: Any) -> Line:
    return _with(line("grant.revise", "human", grant_id=grant_id, expected_revision=expected_revision), kw)


def cancel_task(task_id: str = "t1", **kw: Any) -> Line:
    return _with(line("task.cancel", "human", task_id=task_id), kw)


def complete_task(task_id: str = "t1", **kw: Any) -> Line:
    return _with(line("task.complete", "background", task_id=task_id, evidence_refs=["ev/1"]), kw)


def raise_question(task_id: str = "t1", question_key: str = "q1", affected: Any = "task",
                   evidence_revision: int = 1, **kw: Any) -> Line:
    return _with(
        line("question.raise", "background", task_id=task_id, question_key=question_key, recipient="human",
             blocking_reason="which database?", affected=affected, evidence_revision=evidence_revision),
        kw,
    )


def answer(task_id: str = "t1", question_key: str = "q1", text: str = "postgres", **kw: Any) -> Line:
    return _with(line("question.answer", "human", task_id=task_id, question_key=question_key, answer=text), kw)


def rule(rule_id: str = "ci-repair", grant: dict | None = None, **kw: Any) -> Line:
    return _with(
        line("rule.set", "human", rule_id=rule_id,
             grant=grant if grant is not None else grant_request("g-rule", operations=("worker.start",))),
        kw,
    )


def propose(operation_id: str = "op-1", task_id: str | None = "t1", grant_id: str | None = None,
            actor: str = "background", operation: str = "worker.start", resource: str | None = None,
            write_paths=("/repo/src",), prerequisites=(), revisions: dict | None = None,
            generation: int | None = 1, cause_key: str | None = None, **kw: Any) -> Line:
    """A proposal for task `task_id` (or, with `rule_id=...` and task_id=None, for a rule)."""
    result = line(
        "action.propose", actor,
        operation_id=operation_id,
        cause_key=cause_key if cause_key is not None else f"cause:{operation_id}",
        operation=operation,
        target=operation_id,
        resource=resource if resource is not None else f"res:{operation_id}",
        write_paths=list(write_paths),
        grant_id=grant_id if grant_id is not None else (f"g-{task_id}" if task_id else "g-rule"),
        prerequisites=[p if isinstance(p, dict) else {"operation_id": p, "outcome": "succeeded"} for p in prerequisites],
        input_revisions=revisions if revisions is not None else {"task": 1, "grant": 1},
    )
    if task_id is not None:
        result["task_id"] = task_id
    if generation is not None and actor == "background":
        result["generation"] = generation
    return _with(result, kw)


def revalidate(operation_id: str = "op-1", revisions: dict | None = None, actor: str = "background",
               generation: int | None = 1, **kw: Any) -> Line:
    result = line("action.revalidate", actor, operation_id=operation_id,
                  input_revisions=revisions if revisions is not None else {"task": 1, "grant": 1})
    if generation is not None and actor == "background":
        result["generation"] = generation
    return _with(result, kw)


def cancel_action(operation_id: str = "op-1", **kw: Any) -> Line:
    return _with(line("action.cancel", "human", operation_id=operation_id), kw)


def receipt(operation_id: str = "op-1", attempt_id: str | None = None, result: str = "accepted", **kw: Any) -> Line:
    return _with(
        line("executor.receipt", "executor", operation_id=operation_id,
             attempt_id=attempt_id if attempt_id is not None else f"{operation_id}/a1", result=result),
        kw,
    )


def reconcile(operation_id: str = "op-1", attempt_id: str | None = None, observed: str = "accepted", **kw: Any) -> Line:
    return _with(
        line("executor.reconcile", "executor", operation_id=operation_id,
             attempt_id=attempt_id if attempt_id is not None else f"{operation_id}/a1", observed=observed),
        kw,
    )


def outcome(operation_id: str = "op-1", result: str = "succeeded", **kw: Any) -> Line:
    return _with(line("executor.outcome", "executor", operation_id=operation_id, outcome=result), kw)


def usage(operation_id: str = "op-1", **kw: Any) -> Line:
    return _with(line("usage.report", "executor", operation_id=operation_id), kw)


def pause(scope: str = "t1", **kw: Any) -> Line:
    return _with(line("scope.pause", "human", scope=scope), kw)


def resume(scope: str = "t1", **kw: Any) -> Line:
    return _with(line("scope.resume", "human", scope=scope), kw)


def message(message_id: str = "m1", conversation_id: str = "fg", text: str = "hello", **kw: Any) -> Line:
    return _with(line("human.message", "human", conversation_id=conversation_id, message_id=message_id, text=text), kw)


def queue_edit(message_id: str = "m1", op: str = "withdraw", conversation_id: str = "fg", **kw: Any) -> Line:
    return _with(line("human.queue_edit", "human", conversation_id=conversation_id, message_id=message_id, op=op), kw)


def intent_synced(intent_revision: int = 1, generation: int = 1, conversation_id: str = "fg", **kw: Any) -> Line:
    return _with(
        line("intent.synced", "background", conversation_id=conversation_id, intent_revision=intent_revision,
             generation=generation),
        kw,
    )


PR = "https://scm/pr/7"


def observation(source_id: str = "ci-1", fingerprint: str = "f1", kind: str = "ci", scope: str = PR,
                complete: bool = True, **kw: Any) -> dict[str, Any]:
    """The observe fields (spec 3.4) without type/at/actor: a change-log
    entry's `observation` or a reconciliation fact."""
    return _with({"source_id": source_id, "kind": kind, "scope": scope, "fingerprint": fingerprint,
                  "complete": complete}, kw)


def observe(source_id: str = "ci-1", fingerprint: str = "f1", kind: str = "ci", scope: str = PR,
            complete: bool = True, actor: str = "source", **kw: Any) -> Line:
    """A live `observe` (defaults: CI source ci-1 on PR 7, cause `ci:{PR}`)."""
    return _with(
        line("observe", actor, source_id=source_id, kind=kind, scope=scope, fingerprint=fingerprint,
             complete=complete),
        kw,
    )


def entry(seq: int, **kw: Any) -> dict[str, Any]:
    """A change-log entry; its observation defaults to fingerprint `seq-{seq}`
    (so consecutive entries are never repeats of each other)."""
    kw.setdefault("fingerprint", f"seq-{seq}")
    return {"seq": seq, "observation": observation(**kw)}


def _entries(entries: Iterable[Any]) -> list[dict[str, Any]]:
    return [item if isinstance(item, dict) else entry(item) for item in entries]


def log_batch(entries: Iterable[Any] = (), consumer_id: str = "scm", epoch: int = 1, **kw: Any) -> Line:
    """`log.batch`; an int in `entries` stands for `entry(n)`."""
    return _with(line("log.batch", "source", consumer_id=consumer_id, epoch=epoch, entries=_entries(entries)), kw)


def log_pruned(max_deleted_seq: int, consumer_id: str = "scm", epoch: int = 1, **kw: Any) -> Line:
    return _with(
        line("log.pruned", "source", consumer_id=consumer_id, epoch=epoch, max_deleted_seq=max_deleted_seq), kw
    )


def log_reconcile(reconciliation_id: str = "scm/r1", retained_head: int = 0, facts: Iterable[dict] = (),
                  consumer_id: str = "scm", epoch: int = 1, **kw: Any) -> Line:
    return _with(
        line("log.reconcile", "source", consumer_id=consumer_id, reconciliation_id=reconciliation_id, epoch=epoch,
             retained_head=retained_head, facts=list(facts)),
        kw,
    )


def triage(cause_key: str = f"ci:{PR}", update_revision: int = 1, disposition: str = "actionable",
           generation: int = 1, conversation_id: str = "bg", action_priority: int = 2,
           notification_priority: int = 3, **kw: Any) -> Line:
    return _with(
        line("triage.classify", "background", conversation_id=conversation_id, generation=generation,
             cause_key=cause_key, update_revision=update_revision, disposition=disposition,
             action_priority=action_priority, notification_priority=notification_priority),
        kw,
    )


def card(card_id: str = "card-1", cause_key: str = f"ci:{PR}", generation: int = 1, **kw: Any) -> Line:
    return _with(
        line("card.propose", "background", card_id=card_id, cause_key=cause_key, summary="worth a look",
             generation=generation),
        kw,
    )


def inbox_row(engine: Engine, cause_key: str = f"ci:{PR}") -> dict[str, Any] | None:
    """The inbox row of a cause, or None when the inbox has none."""
    return next((row for row in engine.views.view("inbox") if row["cause_key"] == cause_key), None)


def consumer_row(engine: Engine, consumer_id: str = "scm") -> dict[str, Any] | None:
    return next((row for row in engine.views.view("consumers") if row["consumer_id"] == consumer_id), None)


def backlog(engine: Engine) -> dict[str, Any]:
    return engine.views.view("health")["backlog"]


# ------------------------------------------------------------------------ worlds


def world(heartbeat_at: float = 0) -> list[Line]:
    """Policy, a bound foreground/background pair, a fresh watchdog and task t1
    (grant g-t1: worker.start and worker.test under /repo, max_attempts 3)."""
    return [
        policy(),
        open_foreground(),
        open_background(),
        bind(1),
        heartbeat(1, at=at(heartbeat_at)),
        delegate("t1"),
    ]


# ------------------------------------------------------------ conversations (5)


def tick_trace(path: Path, ticks: int, first_s: int = 60) -> Path:
    """A trace file at `path`: the world, then `ticks` ticks a second apart from `first_s`."""
    lines = [json.dumps(line) for line in world()] + [json.dumps(tick(at=at(first_s + n))) for n in range(ticks)]
    path.write_text("\n".join(lines) + "\n")
    return path


def provider_receipt(delivery_id: str = "fg/d1", result: str = "accepted", **kw: Any) -> Line:
    return _with(line("provider.receipt", "daemon", delivery_id=delivery_id, result=result), kw)


def provider_reconcile(delivery_id: str = "fg/d1", observed: str = "accepted", **kw: Any) -> Line:
    return _with(line("provider.reconcile", "daemon", delivery_id=delivery_id, observed=observed), kw)


def turn_ended(turn_id: str = "fg/t1", outcome: str = "completed", **kw: Any) -> Line:
    return _with(line("turn.ended", "daemon", turn_id=turn_id, outcome=outcome), kw)


def context_reset(conversation_id: str = "fg", reason: str = "compaction", **kw: Any) -> Line:
    return _with(line("context.reset", "daemon", conversation_id=conversation_id, reason=reason), kw)


def conversation_usage(conversation_id: str = "fg", actor: str = "daemon", **kw: Any) -> Line:
    return _with(line("usage.report", actor, conversation_id=conversation_id), kw)


def approval_required(request_id: str = "r1", conversation_id: str = "fg", detail: str = "may I?", **kw: Any) -> Line:
    return _with(
        line("approval.required", "daemon", conversation_id=conversation_id, request_id=request_id, detail=detail), kw
    )


def approval_resolved(request_id: str = "r1", conversation_id: str = "fg", **kw: Any) -> Line:
    return _with(line("approval.resolved", "human", conversation_id=conversation_id, request_id=request_id), kw)


def hold_failure(conversation_id: str = "fg", **kw: Any) -> Line:
    return _with(line("hold.failure", "daemon", conversation_id=conversation_id), kw)


def hold_release(conversation_id: str = "fg", **kw: Any) -> Line:
    return _with(line("hold.release", "human", conversation_id=conversation_id), kw)


def conversation_row(engine: Engine, conversation_id: str = "fg") -> dict[str, Any]:
    return next(row for row in engine.views.view("conversations") if row["conversation_id"] == conversation_id)


def deliveries(engine: Engine, conversation_id: str = "fg") -> list[dict[str, Any]]:
    return conversation_row(engine, conversation_id)["deliveries"]


def delivery_row(engine: Engine, delivery_id: str) -> dict[str, Any]:
    conversation_id = delivery_id.rpartition("/d")[0]
    return next(row for row in deliveries(engine, conversation_id) if row["delivery_id"] == delivery_id)


def update_for(cause_key: str, disposition: str = "actionable", n: float = 0, fingerprint: str | None = None,
               notification_priority: int | None = 3, update_revision: int = 1, **observe_kw: Any) -> list[Line]:
    """An observation whose cause is `cause_key` (`ci:{scope}`), triaged on bg."""
    scope = cause_key.partition(":")[2]
    return [
        observe(source_id=f"src-{cause_key}", scope=scope, fingerprint=fingerprint or f"fp-{cause_key}-{update_revision}",
                at=at(n), **observe_kw),
        triage(cause_key, update_revision, disposition, notification_priority=notification_priority, at=at(n)),
    ]


# ------------------------------------------------------ source revisions (contract v1.2 section 2)


def attach_evidence(operation_id: str = "op-1", evidence_ref: str = "ev/1", **kw: Any) -> Line:
    return _with(line("evidence.attach", "executor", operation_id=operation_id, evidence_ref=evidence_ref), kw)


# ------------------------------------------- tool policy and runtimes (contract v1.2 section 1)

BG_TOOLS = ("tandem:read_evidence", "mcp:github/get_pull_request")


def tool_policy(role: str = "background", tools=BG_TOOLS, roots=("/repo",), **kw: Any) -> Line:
    return _with(line("tool_policy.set", "human", role=role, allowed_tools=list(tools), read_roots=list(roots)), kw)


def admit(runtime_id: str = "bg-codex", role: str = "background", tools=BG_TOOLS, roots=("/repo",),
          revision: int = 1, conversation_id: str | None = "bg", generation: int | None = 1,
          isolation_test_ref: str | None = "ev/iso-codex-7", **kw: Any) -> Line:
    result = line("runtime.admit", "daemon", runtime_id=runtime_id, role=role, adapter="codex",
                  tool_policy_revision=revision, tools=list(tools), read_roots=list(roots))
    if role == "background":
        result["conversation_id"] = conversation_id
        result["generation"] = generation
    if isolation_test_ref is not None:
        result["isolation_test_ref"] = isolation_test_ref
    return _with(result, kw)


def tool_request(call_id: str = "c1", tool: str = "mcp:github/get_pull_request", runtime_id: str = "bg-codex",
                 **kw: Any) -> Line:
    return _with(line("tool.request", "daemon", runtime_id=runtime_id, call_id=call_id, tool=tool), kw)


def runtime_row(engine: Engine, runtime_id: str = "bg-codex") -> dict[str, Any]:
    return next(row for row in engine.views.view("runtimes") if row["runtime_id"] == runtime_id)


# ------------------------------------------------ background continuity (contract v1.2 section 5)


def open_investigation(investigation_id: str = "inv-1", cause_key: str = f"ci:{PR}", conversation_id: str = "bg",
                       generation: int = 1, **kw: Any) -> Line:
    return _with(
        line("investigation.open", "background", conversation_id=conversation_id, generation=generation,
             investigation_id=investigation_id, cause_key=cause_key),
        kw,
    )


def close_investigation(investigation_id: str = "inv-1", outcome: str = "concluded", conversation_id: str = "bg",
                        generation: int = 1, **kw: Any) -> Line:
    return _with(
        line("investigation.close", "background", conversation_id=conversation_id, generation=generation,
             investigation_id=investigation_id, outcome=outcome),
        kw,
    )


def checkpoint(epoch: int = 1, intent_revision: int = 0, sync_cursor: str = "scm:1", conversation_id: str = "bg",
               generation: int = 1, **kw: Any) -> Line:
    return _with(
        line("background.checkpoint", "background", conversation_id=conversation_id, generation=generation,
             epoch=epoch, intent_revision=intent_revision, sync_cursor=sync_cursor),
        kw,
    )


def investigation_row(engine: Engine, investigation_id: str = "inv-1") -> dict[str, Any]:
    return next(row for row in engine.views.view("investigations") if row["investigation_id"] == investigation_id)
