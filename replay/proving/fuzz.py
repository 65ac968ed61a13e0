"""Fuzzing the engine: random interleavings of the whole input language.

Two ways in, both built on the same input generators:

- `traces()`, a Hypothesis strategy of whole well-formed traces (for
  `@given` tests: apply the trace, watch it with `replay.invariants.Monitor`);
- `TandemMachine`, a Hypothesis `RuleBasedStateMachine` that drives one
  engine over a real store, one input per rule — tasks, grants, questions,
  actions; duplicate, late, lost and reordered executor and provider
  receipts; stale triage; generation changes; observations and change-log
  batches; turns, resets, approvals and holds; incidents, heartbeats and
  time passing; alerts — and, at arbitrary points, **restarts** (the engine
  is dropped and a new one opened on the same store) and **crashes** (a
  store append made to fail: nothing of the batch may be written and the
  engine must reload exactly what was stored). After every input the
  invariants catalog is checked (`Monitor`). A failure is written out as a
  replayable trace (`tandem replay FILE --json`) into $TANDEM_FUZZ_OUT (or
  the temp dir's `tandem-fuzz/`), and the error names the file.

The generators draw each next input from what exists now (`Builder.state`),
over a small universe of ids (3 tasks, 8 operations, 4 cause keys, 3
resources, one foreground `fg` with its background `bg`), with the current
revisions, generations and attempt ids most of the time and a stale or
unknown one some of the time: most inputs are accepted, and the rejections
that happen are the interesting ones (stale_attempt, generation_fenced,
duplicate_cause, duplicate_input, ...).

This module needs Hypothesis (the `test` extra); `import replay` does not.
docs/fuzzing.md shows how to subclass the machine, add rules and invariants.
"""

from __future__ import annotations

import datetime
import inspect
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RULE_MARKER, RuleBasedStateMachine, initialize, invariant, precondition, rule

from tandem.domain.dispatch import step as default_step
from tandem.domain.events import Event
from tandem.domain.inputs import decode_input, format_at
from tandem.replay.proving.check import InjectedCrash, LogStore, check_trace, fingerprint, minimize_trace, write_trace
from tandem.replay.engine import Engine, Located
from tandem.replay.engine import Step as Rules
from tandem.replay.proving.invariants import Invariant, InvariantViolation, Monitor, Step, World, catalog, restart_is_replay
from tandem.replay.port import EventStore

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


def decode(line: dict[str, Any]):
    """The decoded input of one trace line (raises if it is not well-formed)."""
    return decode_input(msgspec.json.encode(line))


def preamble() -> list[dict[str, Any]]:
    """Policy, a foreground and its background bound at generation 1, a heartbeat."""
    at = format_at(T0)
    return [
        {"type": "policy.set", "at": at, "actor": "daemon",
         "allowed_operations": ["worker.start", "worker.test", "scm.push"], "write_roots": ["/repo", "/srv"]},
        {"type": "conversation.open", "at": at, "actor": "daemon", "conversation_id": "fg",
         "role": "foreground", "context_limit": 200000, "reserve": 20000},
        {"type": "conversation.open", "at": at, "actor": "daemon", "conversation_id": "bg",
         "role": "background", "foreground_id": "fg", "context_limit": 100000, "reserve": 10000},
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
        bound = self.state.conversations[conversation].generation
        return bound if bound is not None else 1

    def intent(self) -> int:
        return self.state.conversations["fg"].intent_revision


def _often(draw: Draw, p_true: int = 9) -> bool:
    """True about p_true times in ten."""
    return draw(st.integers(0, 9)) < p_true


def _pick(draw: Draw, existing: list[str], universe: tuple[str, ...]) -> str:
    """Mostly an existing id, sometimes any id of the universe (maybe unknown)."""
    if existing and _often(draw, 8):
        return draw(st.sampled_from(existing))
    return draw(st.sampled_from(universe))


def _subset(draw: Draw, items: tuple[str, ...] | list[str], min_size: int = 0) -> list[str]:
    return draw(st.lists(st.sampled_from(list(items)), min_size=min_size, max_size=len(items), unique=True))


def _revision(draw: Draw, current: int) -> int:
    """The current revision mostly; else a stale or a future one."""
    if draw(st.integers(0, 19)) > 0:
        return current
    return draw(st.sampled_from([max(current - 1, 0), current + 1]))


def _grant_request(draw: Draw, grant_id: str) -> dict[str, Any]:
    request: dict[str, Any] = {
        "grant_id": grant_id,
        "allowed_operations": _subset(draw, OPERATIONS, 1) if _often(draw) else ["deploy"],
        # Mostly at least one root the wide policy keeps.
        "write_roots": [draw(st.sampled_from(GRANT_ROOTS[:3]))] * _often(draw) + _subset(draw, GRANT_ROOTS),
    }
    if _often(draw, 5):
        request["max_attempts"] = draw(st.integers(1, 3))
    if _often(draw, 4):
        request["token_limit"] = draw(st.sampled_from([50, 200, 1000]))
    return request


# ------------------------------------------------------------- input kinds


def task_delegate(draw: Draw, b: Builder) -> dict[str, Any]:
    free = [t for t in TASKS if t not in b.state.tasks]
    task_id = draw(st.sampled_from(free)) if free and _often(draw) else draw(st.sampled_from(TASKS))
    fields: dict[str, Any] = {
        "task_id": task_id,
        "conversation_id": "fg" if draw(st.integers(0, 19)) else "nowhere",
        "message_refs": [],
        "goal": f"goal of {task_id}",
        "done_when": ["tests pass"],
        "grant": _grant_request(draw, f"g-{task_id}" if _often(draw) else draw(st.sampled_from(["g-t1", RULE_GRANT]))),
    }
    existing = [t for t in b.state.tasks if t != task_id]
    if existing and _often(draw, 5):
        fields["depends_on"] = _subset(draw, existing, 1)
    return b.line("task.delegate", **fields)


def task_revise(draw: Draw, b: Builder) -> dict[str, Any]:
    task_id = _pick(draw, list(b.state.tasks), TASKS)
    task = b.state.tasks.get(task_id)
    fields: dict[str, Any] = {"task_id": task_id, "expected_revision": _revision(draw, task.revision if task else 1)}
    which = draw(st.sampled_from(["goal", "done_when", "constraints", "fallback_decisions"]))
    fields[which] = {
        "goal": "a revised goal",
        "done_when": ["it works"],
        "constraints": {"push": False},
        "fallback_decisions": {"db": "sqlite"},
    }[which]
    return b.line("task.revise", **fields)


def grant_revise(draw: Draw, b: Builder) -> dict[str, Any]:
    grant_id = _pick(draw, list(b.state.grants), tuple(f"g-{t}" for t in TASKS))
    grant = b.state.grants.get(grant_id)
    fields: dict[str, Any] = {"grant_id": grant_id, "expected_revision": _revision(draw, grant.revision if grant else 1)}
    changes = _subset(draw, ("allowed_operations", "write_roots", "max_attempts", "token_limit"), 1)
    for change in changes:
        if change == "allowed_operations":
            fields[change] = _subset(draw, OPERATIONS, 1)
        elif change == "write_roots":
            fields[change] = _subset(draw, GRANT_ROOTS, 1)
        elif change == "max_attempts":
            fields[change] = draw(st.integers(1, 4))
        else:
            fields[change] = draw(st.sampled_from([50, 200, 1000, 100000]))
    return b.line("grant.revise", **fields)


def task_cancel(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line("task.cancel", task_id=_pick(draw, list(b.state.tasks), TASKS))


def task_complete(draw: Draw, b: Builder) -> dict[str, Any]:
    state = b.state
    done = [
        t for t, task in state.tasks.items()
        if task.state == "active" and task.actions and all(state.actions[op].terminal for op in task.actions)
    ]  # fmt: skip
    return b.line(
        "task.complete",
        draw(st.sampled_from(["background", "human"])),
        task_id=draw(st.sampled_from(done)) if done and _often(draw, 8) else _pick(draw, list(state.tasks), TASKS),
        evidence_refs=["ev/tests"],
    )


def question_raise(draw: Draw, b: Builder) -> dict[str, Any]:
    task_id = _pick(draw, list(b.state.tasks), TASKS)
    key = draw(st.sampled_from(QUESTION_KEYS))
    existing = b.state.questions.get((task_id, key))
    kind = draw(st.sampled_from(["ops", "ops", "task", "unknown"]))
    if kind == "ops":
        # Listed operations need not exist yet (spec 3.2): now and then one does not.
        future = [op for op in OPERATION_IDS if op not in b.state.actions][:1] if _often(draw, 2) else []
        affected: Any = _subset(draw, list(b.state.actions) + future, 1) if b.state.actions or future else "task"
    else:
        affected = kind
    evidence = existing.evidence_revision if existing else 0
    evidence += 1 if _often(draw, 8) else 0
    return b.line(
        "question.raise",
        draw(st.sampled_from(["background", "foreground"])),
        task_id=task_id,
        question_key=key,
        recipient="human",
        blocking_reason="which database?",
        affected=affected,
        evidence_revision=evidence,
    )


def question_answer(draw: Draw, b: Builder) -> dict[str, Any]:
    open_keys = [k for k, q in b.state.questions.items() if q.state == "open"]
    if open_keys and _often(draw, 8):
        task_id, key = draw(st.sampled_from(open_keys))
    else:
        task_id, key = _pick(draw, list(b.state.tasks), TASKS), draw(st.sampled_from(QUESTION_KEYS))
    return b.line("question.answer", task_id=task_id, question_key=key, answer="use sqlite")


def rule_set(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line("rule.set", rule_id=RULE_ID, grant=_grant_request(draw, RULE_GRANT))


def _inside(path: str, roots: list[str]) -> bool:
    return any(root == "/" or path == root or path.startswith(root + "/") for root in roots)


def _cause(draw: Draw, b: Builder) -> str:
    """Mostly a cause with no live action; sometimes any (shared) cause."""
    state = b.state
    free = [
        c for c in CAUSES
        if all(state.actions[op].terminal for op in state.actions_by_cause.get(c, ()))
    ]  # fmt: skip
    if free and _often(draw, 7):
        return draw(st.sampled_from(free))
    return draw(st.sampled_from(CAUSES))


def _prerequisites(draw: Draw, b: Builder) -> list[dict[str, Any]]:
    existing = list(b.state.actions)
    if not existing or not _often(draw, 4):
        return []
    chosen = _subset(draw, existing[-4:], 1)[:2]
    out = []
    for operation_id in chosen:
        prerequisite: dict[str, Any] = {"operation_id": operation_id, "outcome": "succeeded"}
        if _often(draw, 3):
            prerequisite["artifact_revision"] = draw(st.sampled_from(ARTIFACTS))
        out.append(prerequisite)
    return out


def action_propose(draw: Draw, b: Builder) -> dict[str, Any]:
    state = b.state
    free = [op for op in OPERATION_IDS if op not in state.actions]
    operation_id = draw(st.sampled_from(free)) if free and _often(draw) else draw(st.sampled_from(OPERATION_IDS))
    fields: dict[str, Any] = {
        "operation_id": operation_id,
        "cause_key": _cause(draw, b),
        "target": "somewhere",
        "resource": draw(st.sampled_from(RESOURCES)),
    }
    rule = RULE_ID in state.rules and _often(draw, 2)
    if rule:
        actor = "daemon"
        grant = state.grants[RULE_GRANT]
        fields["rule_id"] = RULE_ID
        fields["grant_id"] = RULE_GRANT if _often(draw) else "g-t1"
        revisions: dict[str, Any] = {"grant": _revision(draw, grant.revision)}
    else:
        actor = draw(st.sampled_from(["background", "background", "background", "human", "daemon"]))
        active = [t for t, task in state.tasks.items() if task.state == "active"]
        task_id = _pick(draw, active or list(state.tasks), TASKS)
        task = state.tasks.get(task_id)
        fields["task_id"] = task_id
        fields["grant_id"] = task.grant_id if task is not None and _often(draw) else draw(st.sampled_from(["g-t1", "g-t2", RULE_GRANT]))
        grant = state.grants.get(fields["grant_id"])
        revisions = {"grant": _revision(draw, grant.revision if grant else 1)}
        if task is not None and _often(draw, 6):
            revisions["task"] = _revision(draw, task.revision)
        if _often(draw, 5):
            revisions["intent"] = _revision(draw, b.intent())
    if actor == "background" or _often(draw, 1):
        fields["generation"] = b.generation() if _often(draw) else b.generation() - 1
    allowed = sorted(grant.operations) if grant is not None and grant.operations else list(OPERATIONS)
    fields["operation"] = draw(st.sampled_from(allowed)) if _often(draw) else draw(st.sampled_from(OPERATIONS))
    if _often(draw, 6):
        roots = list(grant.roots) if grant is not None else []
        policy_roots = list(state.policy.roots)
        inside = [p for p in WRITE_PATHS if _inside(p, roots) and _inside(p, policy_roots)]
        fields["write_paths"] = (
            _subset(draw, inside, 1)[:2] if inside and _often(draw, 8) else [draw(st.sampled_from(WRITE_PATHS))]
        )
    prerequisites = _prerequisites(draw, b)
    if prerequisites:
        fields["prerequisites"] = prerequisites
    fields["input_revisions"] = revisions
    if _often(draw, 2):
        fields["unattended"] = draw(st.booleans())
    return b.line("action.propose", actor, **fields)


def action_revalidate(draw: Draw, b: Builder) -> dict[str, Any]:
    state = b.state
    fenced = [op for op, a in state.actions.items() if a.state == "fenced"]
    operation_id = draw(st.sampled_from(fenced)) if fenced and _often(draw, 8) else _pick(draw, list(state.actions), OPERATION_IDS)
    action = state.actions.get(operation_id)
    grant = state.grants.get(action.grant_id) if action else None
    revisions: dict[str, Any] = {"grant": _revision(draw, grant.revision if grant else 1)}
    if action is not None and action.task_id is not None and _often(draw, 6):
        revisions["task"] = _revision(draw, state.tasks[action.task_id].revision)
    if _often(draw, 3):
        revisions["intent"] = _revision(draw, b.intent())
    actor = draw(st.sampled_from(["background", "human"]))
    fields: dict[str, Any] = {"operation_id": operation_id, "input_revisions": revisions}
    if actor == "background":
        fields["generation"] = b.generation() if _often(draw) else b.generation() - 1
    return b.line("action.revalidate", actor, **fields)


def action_cancel(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line("action.cancel", operation_id=_pick(draw, list(b.state.actions), OPERATION_IDS))


def _attempt_target(draw: Draw, b: Builder, states: tuple[str, ...]) -> tuple[str, str]:
    """(operation_id, attempt_id): mostly the latest attempt of an action whose
    latest attempt is in `states`; sometimes a stale or made-up attempt."""
    actions = b.state.actions
    fitting = [op for op, a in actions.items() if a.attempts and a.attempts[-1].state in states]
    with_attempts = [op for op, a in actions.items() if a.attempts]
    if fitting and _often(draw, 8):
        operation_id = draw(st.sampled_from(fitting))
    elif with_attempts:
        operation_id = draw(st.sampled_from(with_attempts))
    else:
        operation_id = _pick(draw, list(actions), OPERATION_IDS)
    action = actions.get(operation_id)
    n = len(action.attempts) if action else 0
    if n and _often(draw, 8):
        return operation_id, action.attempts[-1].attempt_id
    return operation_id, f"{operation_id}/a{draw(st.integers(1, max(n + 1, 1)))}"


def executor_receipt(draw: Draw, b: Builder) -> dict[str, Any]:
    operation_id, attempt_id = _attempt_target(draw, b, ("submitting", "queued"))
    result = draw(st.sampled_from(["queued", "accepted", "refused", "unknown"]))
    return b.line("executor.receipt", "executor", operation_id=operation_id, attempt_id=attempt_id, result=result)


def executor_reconcile(draw: Draw, b: Builder) -> dict[str, Any]:
    operation_id, attempt_id = _attempt_target(draw, b, ("unknown",))
    return b.line(
        "executor.reconcile",
        draw(st.sampled_from(["executor", "daemon"])),
        operation_id=operation_id,
        attempt_id=attempt_id,
        observed=draw(st.sampled_from(["accepted", "not_received"])),
    )


def executor_outcome(draw: Draw, b: Builder) -> dict[str, Any]:
    actions = b.state.actions
    live = [op for op, a in actions.items() if a.state in IN_FLIGHT]
    operation_id = draw(st.sampled_from(live)) if live and _often(draw, 8) else _pick(draw, list(actions), OPERATION_IDS)
    fields: dict[str, Any] = {
        "operation_id": operation_id,
        "outcome": draw(st.sampled_from(["succeeded", "succeeded", "failed", "cancelled"])),
    }
    if _often(draw, 6):
        fields["artifact_revision"] = draw(st.sampled_from(ARTIFACTS))
    if _often(draw, 5):
        fields["evidence_ref"] = "ev/run"
    return b.line("executor.outcome", "executor", **fields)


def usage_report(draw: Draw, b: Builder) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if b.state.actions and _often(draw, 7):
        fields["operation_id"] = _pick(draw, list(b.state.actions), OPERATION_IDS)
    else:
        fields["conversation_id"] = draw(st.sampled_from(["fg", "bg"]))
    for name in ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "context_tokens"):
        if _often(draw, 5):
            fields[name] = draw(st.sampled_from([0, 10, 60, 400]))
    return b.line("usage.report", draw(st.sampled_from(["daemon", "executor"])), **fields)


def heartbeat(draw: Draw, b: Builder) -> dict[str, Any]:
    current = b.state.heartbeat_generation or 1
    generation = draw(st.sampled_from([current, current, current, current + 1, max(current - 1, 0)]))
    return b.line("watchdog.heartbeat", "watchdog", generation=generation)


def scope_pause(draw: Draw, b: Builder) -> dict[str, Any]:
    scope = "*" if _often(draw, 3) else _pick(draw, list(b.state.tasks), TASKS)
    return b.line("scope.pause", scope=scope)


def scope_resume(draw: Draw, b: Builder) -> dict[str, Any]:
    paused = sorted(b.state.paused)
    scope = draw(st.sampled_from(paused)) if paused and _often(draw, 8) else draw(st.sampled_from(["*", *TASKS]))
    return b.line("scope.resume", scope=scope)


def human_message(draw: Draw, b: Builder) -> dict[str, Any]:
    b.messages += 1
    message_id = f"m{b.messages}" if _often(draw) else "m1"
    return b.line("human.message", conversation_id="fg", message_id=message_id, text="please also do X")


def intent_synced(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line(
        "intent.synced",
        "background",
        conversation_id="fg",
        intent_revision=_revision(draw, b.intent()),
        generation=b.generation() if _often(draw) else b.generation() - 1,
    )


def background_bind(draw: Draw, b: Builder) -> dict[str, Any]:
    generation = b.generation() + 1 if _often(draw, 7) else b.generation()
    return b.line("background.bind", "daemon", conversation_id="bg", foreground_id="fg", generation=generation)


def policy_set(draw: Draw, b: Builder) -> dict[str, Any]:
    if _often(draw, 5):  # back to the wide policy
        operations, roots = list(OPERATIONS), ["/repo", "/srv"]
    else:
        operations, roots = _subset(draw, OPERATIONS, 1), _subset(draw, POLICY_ROOTS, 1)
    return b.line("policy.set", draw(st.sampled_from(["daemon", "human"])), allowed_operations=operations, write_roots=roots)


def tick(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line("tick", "daemon")


def repeat(draw: Draw, b: Builder) -> dict[str, Any]:
    """An earlier input sent again (later `at`): duplicate_input or, if it
    had no id, the same command twice."""
    earlier = dict(draw(st.sampled_from(b.lines)))
    earlier["at"] = format_at(b.now)
    return earlier


# ------------------------------------------------- 3.4 observations, triage, log

SOURCES = ("ci-1", "ci-2", "c-1", "c-2")  # "c-*" are comment sources
SCOPES = ("https://scm/pr/1", "https://scm/pr/2")
FINGERPRINTS = ("f1", "f2", "f3")
SOURCE_VERSIONS = tuple(f"v{n}" for n in range(1, 7))
CONSUMERS = ("scm", "ci-log")
DISPOSITIONS = ("routine", "actionable", "urgent", "needs_input")


def observation_fields(draw: Draw, causes: tuple[str, ...] = (), p_cause: int = 6) -> dict[str, Any]:
    """The observe fields (spec 3.4) over a small universe, so that repeats
    (same version, same latest fingerprint) happen often."""
    source = draw(st.sampled_from(SOURCES))
    fields: dict[str, Any] = {
        "source_id": source,
        "kind": "comment" if source.startswith("c-") else "ci",
        "scope": draw(st.sampled_from(SCOPES)),
        "fingerprint": draw(st.sampled_from(FINGERPRINTS)),
        "complete": _often(draw, 8),
    }
    if causes and _often(draw, p_cause):
        fields["cause_key"] = draw(st.sampled_from(causes))
    if _often(draw, 5):
        fields["source_version"] = draw(st.sampled_from(SOURCE_VERSIONS))
    if draw(st.integers(0, 14)) == 0:
        fields["deleted"] = True
    origin = draw(st.integers(0, 14))
    if origin == 0:
        fields["origin_conversation"] = "bg"  # a background's own activity
    elif origin == 1:
        fields["origin_conversation"] = "fg"
    if _often(draw, 3):
        fields["text"] = draw(st.sampled_from(["build failed", "all green", "nit: rename"]))
    if _often(draw, 2):
        fields["tokens"] = draw(st.sampled_from([0, 12, 300]))
    return fields


def observe(draw: Draw, b: Builder) -> dict[str, Any]:
    line = b.line("observe", "source")  # (not **fields: an observation has a `kind` field)
    line.update(observation_fields(draw, CAUSES))
    return line


def triage_classify(draw: Draw, b: Builder, conversation: str = "bg") -> dict[str, Any]:
    updates = b.state.updates
    if updates and _often(draw):
        cause_key = draw(st.sampled_from(sorted(updates)))
        revision = _revision(draw, updates[cause_key].revision)
    else:
        cause_key, revision = draw(st.sampled_from(CAUSES)), 1
    return b.line(
        "triage.classify",
        "background",
        conversation_id=conversation,
        generation=b.generation() if _often(draw) else b.generation() - 1,
        cause_key=cause_key,
        update_revision=revision,
        disposition=draw(st.sampled_from(DISPOSITIONS)),
        action_priority=draw(st.integers(0, 3)),
        notification_priority=draw(st.integers(0, 3)),
    )


def _consumer(b: Builder, consumer_id: str):
    return b.state.consumers.get(consumer_id)


def log_batch(draw: Draw, b: Builder) -> dict[str, Any]:
    """A batch around the cursor (some entries at or below it), in its epoch
    mostly, in another one sometimes."""
    consumer = _consumer(b, "scm")
    cursor = consumer.seq if consumer is not None else 0
    epoch = consumer.epoch if consumer is not None and _often(draw, 8) else draw(st.integers(1, 2))
    start = max(cursor + 1 - draw(st.sampled_from([0, 0, 0, 1, 2])), 1)
    seqs = sorted(set(draw(st.lists(st.integers(start, start + 5), max_size=3))))
    entries = [{"seq": seq, "observation": observation_fields(draw, CAUSES)} for seq in seqs]
    return b.line("log.batch", "source", consumer_id="scm", epoch=epoch, entries=entries)


def log_pruned(draw: Draw, b: Builder) -> dict[str, Any]:
    consumer = _consumer(b, "scm")
    cursor = consumer.seq if consumer is not None else 0
    epoch = consumer.epoch if consumer is not None and _often(draw, 8) else draw(st.integers(1, 2))
    deleted = max(cursor + draw(st.sampled_from([-2, -1, 0, 0, 1, 3])), 0)
    return b.line("log.pruned", "source", consumer_id="scm", epoch=epoch, max_deleted_seq=deleted)


def log_reconcile(draw: Draw, b: Builder) -> dict[str, Any]:
    consumer = _consumer(b, "scm")
    open_id = consumer.reconciliation_id if consumer is not None else None
    if open_id is not None and _often(draw, 8):
        reconciliation_id = open_id
    else:
        issued = consumer.reconciliations if consumer is not None else 0
        reconciliation_id = f"scm/r{draw(st.integers(max(issued - 1, 1), issued + 1))}"
    cursor = consumer.seq if consumer is not None else 0
    epoch = consumer.epoch if consumer is not None else 1
    facts = [observation_fields(draw, CAUSES) for _ in range(draw(st.integers(0, 2)))]
    return b.line(
        "log.reconcile",
        "source",
        consumer_id="scm",
        reconciliation_id=reconciliation_id,
        epoch=epoch if _often(draw, 7) else draw(st.integers(1, 2)),
        retained_head=max(cursor + draw(st.sampled_from([-3, 0, 0, 2, 4])), 0),
        facts=facts,
    )




# ------------------------------------------- 5 and 6: conversations, health


REASONS = ("compaction", "rollover", "fork", "rollback", "handoff", "provider_loss")
INCIDENTS = ("i1", "i2")


def _foreground(b: Builder):
    return b.state.conversations.get("fg")


def queue_edit(draw: Draw, b: Builder) -> dict[str, Any]:
    """An edit or withdrawal, mostly of a queued message, sometimes of one
    already sent (already_dispatched)."""
    conversation = _foreground(b)
    queued = list(conversation.queue) if conversation is not None else []
    known = list(conversation.messages) if conversation is not None else []
    if queued and _often(draw, 7):
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
    if fitting and _often(draw, 8):
        return draw(st.sampled_from(fitting))
    if deliveries and _often(draw, 6):
        return draw(st.sampled_from(list(deliveries)))
    return f"fg/d{len(deliveries) + 1}"


def provider_receipt(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line(
        "provider.receipt",
        "daemon",
        delivery_id=_delivery_id(draw, b, ("submitting",)),
        result=draw(st.sampled_from(["accepted", "accepted", "unknown", "refused"])),
    )


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
    if running is not None and _often(draw, 8):
        turn_id = running.turn_id
    else:
        turn_id = f"fg/t{draw(st.integers(max(turns, 1), turns + 1))}"  # the last one again, or the next
    fields: dict[str, Any] = {"turn_id": turn_id, "outcome": draw(st.sampled_from(["completed", "completed", "failed", "interrupted"]))}
    if _often(draw, 4):
        held = sorted({cause for d in (conversation.deliveries.values() if conversation else ()) for cause, _ in d.included})
        fields["delivered"] = _subset(draw, held[-3:]) if held else []
    return b.line("turn.ended", "daemon", **fields)


def context_reset(draw: Draw, b: Builder) -> dict[str, Any]:
    conversation = "fg" if _often(draw, 8) else "bg"
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
    conversations = b.state.conversations
    open_ = [(c, r) for c in ("fg", "bg") if c in conversations for r in conversations[c].approvals]
    if open_ and _often(draw, 8):
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
    return line


def health_recovered(draw: Draw, b: Builder) -> dict[str, Any]:
    open_ = sorted(i for i, is_open in b.state.incidents.items() if is_open)
    incident = draw(st.sampled_from(open_)) if open_ and _often(draw, 8) else draw(st.sampled_from([*INCIDENTS, "daemon_crash/1"]))
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
        generation=b.generation() if _often(draw) else max(b.generation() - 1, 0),
    )


def _alert_id(draw: Draw, b: Builder) -> str:
    alerts = sorted(b.state.alerts)
    return draw(st.sampled_from(alerts)) if alerts and _often(draw, 9) else "urgent:nothing"


def alert_seen(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line("alert.seen", alert_id=_alert_id(draw, b))


def alert_resolve(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line("alert.resolve", alert_id=_alert_id(draw, b))


def conversation_open(draw: Draw, b: Builder) -> dict[str, Any]:
    """Mostly a used id again (already_exists); sometimes a second foreground."""
    if _often(draw, 7):
        return b.line("conversation.open", "daemon", conversation_id="fg", role="foreground", context_limit=1000, reserve=100)
    return b.line("conversation.open", "daemon", conversation_id="fg2", role="foreground", context_limit=4000, reserve=400)


def engine_configure(draw: Draw, b: Builder) -> dict[str, Any]:
    """Too late once anything else was applied (too_late)."""
    return b.line("engine.configure", "daemon", wake_batch_max=draw(st.integers(1, 3)))


def lost_ack(draw: Draw, b: Builder) -> dict[str, Any]:
    """A lost acknowledgement ("lost provider/executor ack -> unknown or
    reconciled"): the receipt of an in-flight executor attempt, or of a
    submitting delivery, says `unknown`."""
    attempts = [
        (op, action.attempts[-1].attempt_id)
        for op, action in b.state.actions.items()
        if action.attempts and action.attempts[-1].state in ("submitting", "queued")
    ]
    conversation = _foreground(b)
    deliveries = [d for d, x in conversation.deliveries.items() if x.attempt_state == "submitting"] if conversation else []
    if deliveries and (not attempts or _often(draw, 3)):
        return b.line("provider.receipt", "daemon", delivery_id=draw(st.sampled_from(deliveries)), result="unknown")
    if attempts:
        operation_id, attempt_id = draw(st.sampled_from(attempts))
        return b.line("executor.receipt", "executor", operation_id=operation_id, attempt_id=attempt_id, result="unknown")
    return executor_receipt(draw, b)


def holding_question(draw: Draw, b: Builder) -> dict[str, Any]:
    """A question that holds work of an active task ("missing decision,
    scoped"): on the task, or on some of its operations (proposed or not)."""
    active = [t for t, task in b.state.tasks.items() if task.state == "active"]
    if not active:
        return question_raise(draw, b)
    task_id = draw(st.sampled_from(active))
    operations = list(b.state.tasks[task_id].actions) + [op for op in OPERATION_IDS if op not in b.state.actions][:2]
    affected: Any = "task" if _often(draw, 4) else _subset(draw, operations, 1)[:2]
    existing = b.state.questions.get((task_id, "q1"))
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
    "lost_ack": (lost_ack, 0),  # (kinds of the machine's own rules: not drawn by traces())
    "holding_question": (holding_question, 0),
}
_WEIGHTED = [name for name, (_, weight) in KINDS.items() for _ in range(weight)]

# Seconds between inputs: mostly short (the watchdog stays fresh), sometimes
# past watchdog_max_age_s (120 s) so unattended dispatch is held.
_GAPS = st.sampled_from([0, 0, 0, 1, 1, 2, 2, 5, 5, 10, 30, 60, 121, 300])


def _applicable(kind: str, b: Builder) -> bool:
    """Is there something for this kind to act on? (Else it would be rejected
    as unknown or stale, which a few inputs may be, but not most.)"""
    actions = b.state.actions.values()
    if kind in ("action.cancel", "usage.report"):
        return bool(b.state.actions)
    if kind == "action.revalidate":
        return any(a.state == "fenced" for a in actions)
    if kind == "executor.receipt":
        return any(a.attempts and a.attempts[-1].state in ("submitting", "queued") for a in actions)
    if kind == "executor.reconcile":
        return any(a.attempts and a.attempts[-1].state == "unknown" for a in actions)
    if kind == "executor.outcome":
        return any(a.state in IN_FLIGHT for a in actions)
    if kind == "question.answer":
        return any(q.state == "open" for q in b.state.questions.values())
    if kind == "triage.classify":
        return bool(b.state.updates)
    if kind == "log.reconcile":
        return any(c.state == "reconciliation_required" for c in b.state.consumers.values())
    if kind == "provider.receipt":
        return any(d.attempt_state == "submitting" for c in b.state.conversations.values() for d in c.deliveries.values())
    if kind == "provider.reconcile":
        return any(d.attempt_state == "unknown" for c in b.state.conversations.values() for d in c.deliveries.values())
    if kind == "turn.ended":
        return any(c.running_turn is not None for c in b.state.conversations.values())
    if kind in ("action.propose", "task.complete", "task.revise", "task.cancel", "question.raise"):
        return any(t.state == "active" for t in b.state.tasks.values())
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
        kind = draw(st.sampled_from(_WEIGHTED))
        if not _applicable(kind, b) and _often(draw, 8):
            kind = "action.propose" if _applicable("action.propose", b) else "task.delegate"
        line = KINDS[kind][0](draw, b)
        if kind != "repeat" and draw(st.integers(0, 19)) == 0:
            line["id"] = draw(st.sampled_from(INPUT_IDS))
        b.add(line)
        if b.crashed:
            break
    return b.lines



def fuzz_preamble(steer: bool = True) -> list[dict[str, Any]]:
    """The machine's start: short timers (so fallbacks, stale questions and a
    stale watchdog happen within a run), a small foreground context (so
    budgets, recovery and compaction happen), a bound background, a heartbeat."""
    at = format_at(T0)
    return [
        {"type": "engine.configure", "at": at, "actor": "daemon", "watchdog_max_age_s": 120,
         "fallback_after_s": 300, "question_resurface_s": 900, "wake_batch_max": 2},
        {"type": "policy.set", "at": at, "actor": "daemon",
         "allowed_operations": ["worker.start", "worker.test", "scm.push"], "write_roots": ["/repo", "/srv"]},
        {"type": "conversation.open", "at": at, "actor": "daemon", "conversation_id": "fg",
         "role": "foreground", "context_limit": 2000, "reserve": 200, "steer": steer},
        {"type": "conversation.open", "at": at, "actor": "daemon", "conversation_id": "bg",
         "role": "background", "foreground_id": "fg", "context_limit": 2000, "reserve": 200},
        {"type": "background.bind", "at": at, "actor": "daemon", "conversation_id": "bg",
         "foreground_id": "fg", "generation": 1},
        {"type": "watchdog.heartbeat", "at": at, "actor": "watchdog", "generation": 1},
    ]  # fmt: skip


# ====================================================================== machine


class FuzzFailure(AssertionError):
    """The fuzzer found a bug: `invariant` (or "engine_error" when the engine
    raised, "crash_recovery" when a crash left the store or engine
    inconsistent) and `trace`, the replayable trace file written."""

    def __init__(self, invariant: str, message: str, trace: Path) -> None:
        self.invariant = invariant
        self.trace = trace
        super().__init__(f"{message}\n  trace: {trace} (reproduce: tandem replay {trace} --json)")


def fuzz_out_dir() -> Path:
    """Where failures are written: $TANDEM_FUZZ_OUT, else <tmp>/tandem-fuzz."""
    configured = os.environ.get("TANDEM_FUZZ_OUT")
    return Path(configured) if configured else Path(tempfile.gettempdir()) / "tandem-fuzz"


class CrashingStore:
    """A store (any `EventStore`) whose next append can be made to fail before
    it writes anything, as a crash before the commit (`arm()`). Everything
    else goes to the store it wraps."""

    def __init__(self, store: EventStore) -> None:
        self.inner = store
        self.armed = False

    def arm(self) -> None:
        self.armed = True

    def append(self, events: Sequence[Event], expected_head: int) -> int:
        if self.armed:
            self.armed = False
            raise InjectedCrash(f"injected crash: append of {len(events)} event(s) after position {expected_head} not written")
        return self.inner.append(events, expected_head)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class TandemMachine(RuleBasedStateMachine):
    """The engine under random interleavings of every input kind, with
    restarts and crashes, and the invariants catalog after every input.

    Override to change what it runs on:
    - `decision_step` (a staticmethod): the decision rules (`domain.dispatch.step`);
    - `checked_invariants`: the list checked (None: `replay.invariants.catalog()`);
    - `open_store()` / `reopen_store(store)`: the store (default: an in-process
      `LogStore`, which outlives the engines opened on it); a subclass opens
      SQLite in a temp dir, say;
    - `crash_mid_batch(store, expected_head, size)`: make the store fail in
      the middle of writing a batch, if it can (default: it cannot;
      `CrashingStore` then fails the append before it writes);
    - `minimize_failures`: reduce a failing trace before writing it.
    Add rules with `@rule()` calling `self.send(line)`; `self.builder` has the
    generators' view (`state`, `line(...)`, `now`)."""

    decision_step: Rules = staticmethod(default_step)
    checked_invariants: list[Invariant] | None = None
    # Reduce a failing trace to the inputs it needs (delta debugging) before
    # writing it: replayed with `decision_step`, it still fails. Seconds,
    # where Hypothesis's own shrinking of these runs takes minutes (so
    # machine_settings() leaves that phase out).
    minimize_failures = True

    @classmethod
    def rule_names(cls) -> list[str]:
        """The names of this machine's rules."""
        return sorted(name for name, member in inspect.getmembers(cls) if getattr(member, RULE_MARKER, None) is not None)

    def __init__(self) -> None:
        super().__init__()
        self.builder = Builder(Engine())
        self.record: list[dict[str, Any] | str] = []  # the trace so far, with comments
        self.restarts = 0
        self.crashes = 0

    # ------------------------------------------------------------- hooks

    def open_store(self) -> EventStore:
        return LogStore()

    def reopen_store(self, store: EventStore) -> EventStore:
        return store  # the in-process log outlives the engine dropped

    def crash_mid_batch(self, store: EventStore, expected_head: int, size: int) -> Callable[[], None] | None:
        """Arrange for the store to fail while writing a batch of `size` events
        after `expected_head` (some of them written inside the transaction
        first), and return how to undo that arrangement; None if this store
        cannot (then the append fails before writing)."""
        return None

    # ------------------------------------------------------------- driving

    @property
    def engine(self) -> Engine:
        return self.builder.engine

    def _open_engine(self) -> Engine:
        return Engine(self.store, step=type(self).decision_step)

    @initialize(steer=st.booleans(), tasks=st.integers(1, 3), data=st.data())
    def start(self, steer: bool, tasks: int, data: st.DataObject) -> None:
        self.store = CrashingStore(self.open_store())
        self.builder.engine = self._open_engine()
        self.monitor = Monitor(type(self).checked_invariants)
        for line in fuzz_preamble(steer):
            self.send(line)
        for _ in range(tasks):
            self.send(task_delegate(data.draw, self.builder))

    def teardown(self) -> None:
        store = getattr(self, "store", None)
        if store is not None:
            store.close()

    def send(self, line: dict[str, Any]) -> list[Event]:
        """Apply one input (a trace line) and check the invariants."""
        value = decode_input(msgspec.json.encode(line))  # well-formed, or a generator is wrong
        self.builder.lines.append(line)
        self.record.append(line)
        try:
            events = self.engine.submit(Located(value, line=len(self.builder.lines)))
            self.monitor.observe(value, events, self.engine.state, self.engine.views, line=len(self.builder.lines))
        except InvariantViolation as violation:
            self.fail(violation.invariant.name, str(violation))
        except Exception as error:
            self.fail("engine_error", f"the engine raised {type(error).__name__}: {error}")
        return events

    def draw_line(self, data: st.DataObject, kinds: Sequence[str], gaps: st.SearchStrategy[int] | None = None) -> dict[str, Any]:
        """Time passes (a drawn gap), then one input of one of `kinds`."""
        self.builder.now += datetime.timedelta(seconds=data.draw(gaps if gaps is not None else _MACHINE_GAPS))
        kind = data.draw(st.sampled_from(list(kinds)))
        line = KINDS[kind][0](data.draw, self.builder)
        if kind != "repeat" and data.draw(st.integers(0, 29)) == 0:
            line["id"] = data.draw(st.sampled_from(INPUT_IDS))  # now and then an idempotency key (maybe reused)
        return line

    def fail(self, invariant: str, message: str) -> None:
        out = fuzz_out_dir() / f"{type(self).__name__}-{invariant}.jsonl"
        header = [
            f"tandem fuzz: {type(self).__name__} found {invariant} violated after {len(self.builder.lines)} input(s)",
            " ".join(message.split()),
            "replay: tandem replay THIS_FILE --json (restarts and crashes are comments: restart is replay)",
        ]
        record: list[dict[str, Any] | str] = self.record
        if self.minimize_failures and invariant in {i.name for i in catalog()}:
            items = [Located(decode_input(msgspec.json.encode(line)), line=n) for n, line in enumerate(self.builder.lines, 1)]
            kept = minimize_trace(items, invariant, step=type(self).decision_step)
            if len(kept) < len(items):
                record = [self.builder.lines[item.line - 1] for item in kept if item.line is not None]
                again = check_trace([Located(item.input, line=n) for n, item in enumerate(kept, 1)], step=type(self).decision_step)
                header[1:2] = [
                    f"minimized: {len(record)} of the {len(items)} inputs sent still violate it (restarts and crashes dropped)",
                    " ".join(str(again).split()) if again is not None else header[1],
                ]
        path = write_trace(out, record, header=header)
        raise FuzzFailure(invariant, message, path)

    # --------------------------------------------------------------- rules
    # Hypothesis picks a rule uniformly (and, per run, switches some off):
    # `any_input` covers the whole language by the weights of KINDS, the
    # others make the action and conversation lifecycles and the heartbeats
    # frequent enough for their races to happen in a short run.

    @rule(data=st.data())
    def any_input(self, data: st.DataObject) -> None:
        """One input of any kind, weighted (KINDS), steered to something that
        applies most of the time."""
        kind = data.draw(st.sampled_from(_WEIGHTED))
        if not _applicable(kind, self.builder) and _often(data.draw, 7):
            kind = "action.propose" if _applicable("action.propose", self.builder) else "task.delegate"
        self.send(self.draw_line(data, [kind]))

    @rule(data=st.data())
    def propose(self, data: st.DataObject) -> None:
        """Proposals, revalidations, cancels, questions and answers, intent syncs."""
        self.send(self.draw_line(data, _PROPOSE))

    @rule(data=st.data())
    def executor(self, data: st.DataObject) -> None:
        """Executor receipts (queued, accepted, refused, unknown), reconciles,
        outcomes and usage reports, mostly for the latest attempt."""
        self.send(self.draw_line(data, _EXECUTOR))

    @rule(data=st.data())
    def conversation_lifecycle(self, data: st.DataObject) -> None:
        """Human messages and edits, triage, provider receipts and reconciles,
        turn ends, resets, approvals, holds."""
        self.send(self.draw_line(data, _CONVERSATION))

    @rule(data=st.data())
    def lost_ack(self, data: st.DataObject) -> None:
        """An executor or provider receipt lost in transit: `unknown`."""
        self.send(self.draw_line(data, ["lost_ack"]))

    @rule(data=st.data())
    def ask(self, data: st.DataObject) -> None:
        """A question that holds a task, or some of its operations."""
        self.send(self.draw_line(data, ["holding_question"]))

    @rule(data=st.data())
    def heartbeat(self, data: st.DataObject) -> None:
        self.send(self.draw_line(data, ["watchdog.heartbeat"]))

    @rule(data=st.data(), gap=st.sampled_from([1, 60, 121, 301, 901, 3600]))
    def time_passes(self, data: st.DataObject, gap: int) -> None:
        """A tick after a gap: the watchdog goes stale, obligations fall due, questions resurface."""
        self.builder.now += datetime.timedelta(seconds=gap)
        self.send(self.builder.line("tick", "daemon"))

    @precondition(lambda self: bool(self.builder.lines))
    @rule(data=st.data())
    def send_again(self, data: st.DataObject) -> None:
        """An earlier input again, later: duplicate and late receipts and
        outcomes (stale_attempt), duplicate inputs (duplicate_input)."""
        lines = self.builder.lines
        late = [line for line in lines if line["type"] in _LATE_KINDS]
        earlier = dict(data.draw(st.sampled_from(late if late and data.draw(st.booleans()) else lines)))
        self.builder.now += datetime.timedelta(seconds=data.draw(_MACHINE_GAPS))
        earlier["at"] = format_at(self.builder.now)
        self.send(earlier)

    @rule(graceful=st.booleans())
    def restart(self, graceful: bool) -> None:
        """Drop the engine and open a new one on the same store: it must fold
        exactly the live state and views. A graceful stop writes a snapshot
        first (as the daemon does), so the new engine starts from it."""
        live = self.engine
        checkpoint = getattr(live, "checkpoint", None)
        if graceful and checkpoint is not None:
            checkpoint()
        self.store = CrashingStore(self.reopen_store(self.store.inner))
        self.builder.engine = self._open_engine()
        self.restarts += 1
        how = "stopped (snapshot written)" if graceful else "dropped"
        self.record.append(f"// restart {self.restarts}: the engine is {how} and opened again on the store")
        self._same(live, self.engine, f"after a restart ({how})")

    @rule(data=st.data(), size=st.integers(1, 3), mid_batch=st.booleans())
    def crash(self, data: st.DataObject, size: int, mid_batch: bool) -> None:
        """A batch of inputs whose append fails (mid-transaction when the store
        allows it, else before writing): nothing of it may be stored, the
        engine must reload exactly what was; then the batch is sent again
        (the writer resumes) and checked input by input."""
        lines = [self.draw_line(data, _WEIGHTED) for _ in range(size)]
        items = [Located(decode_input(msgspec.json.encode(line)), line=len(self.builder.lines) + n) for n, line in enumerate(lines, 1)]
        engine = self.engine
        head = self.store.head()
        before = (fingerprint(engine.state), engine.views.document() if engine.views is not None else None)
        # Decide once on a throwaway engine to know how many events the batch writes.
        probe = Engine(LogStore(_read_all(self.store)), step=type(self).decision_step)
        expected = sum(len(probe.decide(item)) for item in items)
        undo = self.crash_mid_batch(self.store.inner, head, expected) if mid_batch and expected > 1 else None
        if undo is None:
            self.store.arm()
        try:
            engine.submit_batch(items)
        except Exception as error:
            if not _injected(error):
                self.fail("engine_error", f"a batch failed, but not by the injected crash: {type(error).__name__}: {error}")
        else:
            self.fail("crash_recovery", f"the append of a {size}-input batch was made to fail, but it succeeded")
        finally:
            if undo is not None:
                undo()
        self.crashes += 1
        if self.store.head() != head:
            self.fail("crash_recovery", f"a failed append of {expected} event(s) left the store at {self.store.head()}, not {head}")
        after = (fingerprint(engine.state), engine.views.document() if engine.views is not None else None)
        if after != before:
            self.fail("crash_recovery", "after a failed append the engine did not reload the state and views it had")
        self._same(engine, Engine(self.store, step=type(self).decision_step), "after a failed append")
        where = "in the middle of the transaction" if undo is not None else "before the transaction"
        self.record.append(f"// crash {self.crashes}: a batch of {size} input(s) failed {where}; nothing was stored; it is sent again")
        for line in lines:
            self.send(line)

    @invariant()
    def store_holds_what_the_engine_folded(self) -> None:
        store = getattr(self, "store", None)
        if store is not None and store.head() != self.engine.state.position:
            self.fail("restart_is_replay", f"the engine folded {self.engine.state.position} events, the store holds {store.head()}")

    def _same(self, live: Engine, other: Engine, when: str) -> None:
        step = Step(decode_input(msgspec.json.encode(self.builder.lines[-1])), self.monitor.inputs)
        world = World(other.state, other.views, live.state, live.views if live.views is not None else other.views, step)
        problem = restart_is_replay.check(world)
        if problem:
            self.fail("restart_is_replay", f"{when}: {problem}")


_PROPOSE = (
    "action.propose", "action.propose", "action.propose", "action.propose", "action.revalidate", "action.cancel",
    "question.raise", "question.answer", "intent.synced", "task.delegate",
)  # fmt: skip
_EXECUTOR = (
    "executor.receipt", "executor.receipt", "executor.receipt", "executor.reconcile", "executor.outcome",
    "executor.outcome", "usage.report",
)  # fmt: skip
_CONVERSATION = (
    "human.message", "human.message", "human.queue_edit", "observe", "triage.classify", "triage.classify",
    "provider.receipt", "provider.receipt", "provider.reconcile", "turn.ended", "turn.ended", "context.reset",
    "approval.required", "approval.resolved", "hold.failure", "hold.release",
)  # fmt: skip

# Seconds before each input the machine sends: mostly short (the watchdog, at
# 120 s, stays fresh between heartbeats); `time_passes` makes the long jumps.
_MACHINE_GAPS = st.sampled_from([0, 0, 1, 1, 1, 2, 3, 5, 10, 30])
_LATE_KINDS = frozenset({"executor.receipt", "executor.reconcile", "executor.outcome", "provider.receipt", "provider.reconcile", "turn.ended"})


def _injected(error: BaseException | None) -> bool:
    """Was this failure (or one it was raised from) the injected crash?"""
    while error is not None:
        if isinstance(error, InjectedCrash) or "injected crash" in str(error):
            return True
        error = error.__cause__ or error.__context__
    return False


def _read_all(store: EventStore) -> list[Event]:
    return [event for page in store.read_pages() for event in page]


def machine_settings(examples: int | None = None, steps: int | None = None, **overrides: Any) -> settings:
    """Settings for a run: examples and steps from $TANDEM_FUZZ_EXAMPLES /
    $TANDEM_FUZZ_STEPS unless given (defaults 25 and 30: a few seconds), no
    deadline, and no Hypothesis shrink phase (the machine minimizes the
    failing trace itself; pass `phases=` to shrink anyway)."""
    chosen: dict[str, Any] = {
        "max_examples": examples if examples is not None else int(os.environ.get("TANDEM_FUZZ_EXAMPLES", "25")),
        "stateful_step_count": steps if steps is not None else int(os.environ.get("TANDEM_FUZZ_STEPS", "30")),
        "deadline": None,
        "suppress_health_check": list(HealthCheck),
        "phases": [Phase.explicit, Phase.reuse, Phase.generate],
        "report_multiple_bugs": False,
    }
    chosen.update(overrides)
    return settings(**chosen)


def machine(
    name: str = "CustomMachine",
    *,
    step: Rules | None = None,
    invariants: Sequence[Invariant] | None = None,
    rules: Sequence[str] | None = None,
    minimize: bool | None = None,
    base: type[TandemMachine] = TandemMachine,
) -> type[TandemMachine]:
    """A machine class: `base` with other decision rules (`step`), another
    invariants list, only the named `rules` (a targeted rule set: the others
    are switched off), or failures minimized. Run it with
    `hypothesis.stateful.run_state_machine_as_test(cls, settings=...)` or
    expose `cls.TestCase` to pytest."""
    namespace: dict[str, Any] = {"__module__": base.__module__, "__doc__": f"{base.__name__}, customised by replay.fuzz.machine()."}
    if step is not None:
        namespace["decision_step"] = staticmethod(step)
    if invariants is not None:
        namespace["checked_invariants"] = list(invariants)
    if minimize is not None:
        namespace["minimize_failures"] = minimize
    if rules is not None:
        known = set(base.rule_names())
        unknown = sorted(set(rules) - known)
        if unknown:
            raise ValueError(f"no rule named {', '.join(unknown)}; rules: {', '.join(sorted(known))}")
        for dropped in known - set(rules):
            namespace[dropped] = None  # no longer a rule
    return type(name, (base,), namespace)
