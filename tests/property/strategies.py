"""Hypothesis strategies: random, WELL-FORMED input traces for the engine.

`traces()` draws a list of input dicts (trace lines, as spec/TRACE.md section 1
writes them). Every dict decodes with `domain.inputs.decode_input` and `at`
never goes backwards, so nothing here is a schema error; what the domain does
with them (apply or reject) is the engine's business.

To keep the traces interesting the strategy drives a shadow `Engine` while it
draws: each next input is chosen from what exists now (`engine.state`), over a
small universe of ids (3 tasks, 8 operations, 4 cause keys, 3 resources), with
the current revisions, generations and attempt ids most of the time and a
stale or unknown one some of the time. So most inputs are accepted, and the
rejections that do happen are the interesting ones (stale_attempt,
generation_fenced, duplicate_cause, duplicate_input, ...).

Observations, triage and the change log (spec 3.4) come in too, now and
then: `observe` over a few sources (mostly naming one of the action cause
keys, so recurrences meet `duplicate_cause`), `triage.classify` of an existing
update, and `log.batch` / `log.pruned` / `log.reconcile` for one consumer.
`consumer_traces()` is the change-log-heavy variant: a model of the source's
log (epochs, sparse seqs, pruning) feeds batches, prunings and reconciliations.

The shadow engine only steers the choices; the tests apply the returned list
to fresh engines of their own.
"""

from __future__ import annotations

import datetime
from typing import Any, Callable

import msgspec
from hypothesis import strategies as st

from domain.inputs import decode_input
from replay.engine import Engine, Located

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


def rfc3339(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def decode(line: dict[str, Any]):
    """The decoded input of one trace line (raises if it is not well-formed)."""
    return decode_input(msgspec.json.encode(line))


def preamble() -> list[dict[str, Any]]:
    """Policy, a foreground and its background bound at generation 1, a heartbeat."""
    at = rfc3339(T0)
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
    """The trace drawn so far and the shadow engine that steers the next draw."""

    def __init__(self) -> None:
        self.engine = Engine()
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
        out: dict[str, Any] = {"type": kind, "at": rfc3339(self.now)}
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
    earlier["at"] = rfc3339(b.now)
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


# ===================================================== change-log-heavy traces


class SourceLog:
    """What a change-log source holds, per epoch: the entries it ever wrote
    (sparse seqs: "gaps" in numbering happen), those still retained, and
    the greatest seq it deleted (interior deletions included). The source
    announces every deletion as it makes it (`log.pruned`)."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.head: dict[int, int] = {}
        self.retained: dict[int, dict[int, dict[str, Any]]] = {}
        self.ever: dict[int, set[int]] = {}
        self.max_deleted: dict[int, int] = {}

    def append(self, draw: Draw, count: int) -> None:
        epoch = self.epoch
        for _ in range(count):
            seq = self.head.get(epoch, 0) + draw(st.sampled_from([1, 1, 1, 1, 2, 3]))
            self.head[epoch] = seq
            self.retained.setdefault(epoch, {})[seq] = observation_fields(draw)
            self.ever.setdefault(epoch, set()).add(seq)

    def retained_seqs(self, epoch: int | None = None) -> list[int]:
        return sorted(self.retained.get(self.epoch if epoch is None else epoch, {}))

    def delete(self, seqs: list[int]) -> int:
        entries = self.retained.get(self.epoch, {})
        for seq in seqs:
            entries.pop(seq, None)
        if seqs:
            self.max_deleted[self.epoch] = max(self.max_deleted.get(self.epoch, 0), *seqs)
        return self.max_deleted.get(self.epoch, 0)


class ConsumerBuilder(Builder):
    def __init__(self, rollback: bool) -> None:
        super().__init__()
        self.rollback = rollback
        self.logs = {consumer_id: SourceLog(1) for consumer_id in CONSUMERS}
        self.known: list[dict[str, dict[int, frozenset[int]]]] = []  # per line: seqs ever written

    def add(self, line: dict[str, Any]) -> None:
        self.known.append(
            {c: {e: frozenset(seqs) for e, seqs in log.ever.items()} for c, log in self.logs.items()}
        )
        super().add(line)


def _consumer_id(draw: Draw) -> str:
    return CONSUMERS[0] if _often(draw, 8) else CONSUMERS[1]


def _cursor(b: Builder, consumer_id: str, epoch: int) -> int:
    consumer = b.state.consumers.get(consumer_id)
    return consumer.seq if consumer is not None and consumer.epoch == epoch else 0


def cl_batch(draw: Draw, b: ConsumerBuilder, consumer_id: str) -> dict[str, Any]:
    log = b.logs[consumer_id]
    log.append(draw, draw(st.integers(0, 3)))
    mode = draw(st.integers(0, 9))
    epoch = log.epoch
    if mode == 0:  # a delivery from another epoch (a stale one, or a future one)
        epoch = draw(st.sampled_from([e for e in (1, 2, 3, 4) if e != log.epoch]))
    cursor = _cursor(b, consumer_id, epoch)
    below = draw(st.sampled_from([0, 0, 0, 1, 3]))  # sometimes re-deliver at/below the cursor
    seqs = [seq for seq in log.retained_seqs(epoch) if seq > cursor - below][: draw(st.integers(0, 4))]
    entries = [{"seq": seq, "observation": log.retained[epoch][seq]} for seq in seqs]
    if len(entries) > 1 and draw(st.integers(0, 14)) == 0:
        entries.reverse()  # out of order: the running cursor skips the lower ones
    return b.line("log.batch", "source", consumer_id=consumer_id, epoch=epoch, entries=entries)


def cl_pruned(draw: Draw, b: ConsumerBuilder, consumer_id: str) -> dict[str, Any]:
    log = b.logs[consumer_id]
    seqs = log.retained_seqs()
    mode = draw(st.integers(0, 9))
    if mode == 0 and log.max_deleted:  # an old notice again (a smaller or equal watermark)
        epoch = draw(st.sampled_from(sorted(log.max_deleted)))
        return b.line("log.pruned", "source", consumer_id=consumer_id, epoch=epoch,
                      max_deleted_seq=draw(st.integers(0, log.max_deleted[epoch])))  # fmt: skip
    if seqs and mode <= 6:  # a prefix
        cut = draw(st.integers(0, len(seqs) - 1))
        deleted = seqs[: cut + 1]
    elif len(seqs) > 2:  # an interior range
        first = draw(st.integers(1, len(seqs) - 2))
        deleted = seqs[first : first + draw(st.integers(1, len(seqs) - 1 - first))]
    else:
        deleted = []
    watermark = log.delete(deleted)
    return b.line("log.pruned", "source", consumer_id=consumer_id, epoch=log.epoch, max_deleted_seq=watermark)


def cl_reconcile(draw: Draw, b: ConsumerBuilder, consumer_id: str) -> dict[str, Any]:
    log = b.logs[consumer_id]
    consumer = b.state.consumers.get(consumer_id)
    issued = consumer.reconciliations if consumer is not None else 0
    open_id = consumer.reconciliation_id if consumer is not None else None
    if open_id is not None and _often(draw, 8):
        reconciliation_id = open_id
    else:  # a stale one: already committed, never issued, or another consumer's
        reconciliation_id = draw(st.sampled_from(
            [f"{consumer_id}/r{n}" for n in range(1, issued + 2)] + [f"{CONSUMERS[1 - CONSUMERS.index(consumer_id)]}/r1"]
        ))  # fmt: skip
    seqs = log.retained_seqs()
    head = seqs[-1] if seqs else 0
    if head and draw(st.integers(0, 9)) == 0:
        head = draw(st.integers(0, head))  # a lagging view of the log
    cursor = _cursor(b, consumer_id, log.epoch)
    chosen = [seq for seq in seqs if seq > cursor] if _often(draw, 7) else seqs
    facts = [log.retained[log.epoch][seq] for seq in chosen[:5]]
    if _often(draw, 2):
        facts.append(observation_fields(draw))  # an observation the log no longer orders
    return b.line("log.reconcile", "source", consumer_id=consumer_id, reconciliation_id=reconciliation_id,
                  epoch=log.epoch, retained_head=head, facts=facts)  # fmt: skip


def cl_epoch(draw: Draw, b: ConsumerBuilder, consumer_id: str) -> None:
    """The source's log moves to a new epoch (no input): forward, or — with
    `rollback` — sometimes back to an earlier one it still holds."""
    log = b.logs[consumer_id]
    earlier = [e for e in log.ever if e < log.epoch]
    if b.rollback and earlier and _often(draw, 4):
        log.epoch = draw(st.sampled_from(earlier))
        if _often(draw, 5):  # restored from a backup: the tail written since is gone
            seqs = log.retained_seqs()
            cut = draw(st.sampled_from([0, 0, *seqs[: len(seqs) // 2]]))
            log.retained[log.epoch] = {seq: o for seq, o in log.retained.get(log.epoch, {}).items() if seq <= cut}
            log.head[log.epoch] = cut
            log.ever[log.epoch] = {seq for seq in log.ever.get(log.epoch, ()) if seq <= cut}
    else:
        log.epoch = max([log.epoch, *log.ever]) + 1
        if _often(draw, 3):  # a new epoch may number on from an offset
            log.head[log.epoch] = draw(st.sampled_from([0, 5, 20]))


def cl_observe(draw: Draw, b: ConsumerBuilder, consumer_id: str) -> dict[str, Any]:
    line = b.line("observe", "source")
    line.update(observation_fields(draw))
    return line


def cl_triage(draw: Draw, b: ConsumerBuilder, consumer_id: str) -> dict[str, Any]:
    return triage_classify(draw, b)


CONSUMER_KINDS: dict[str, tuple[Callable[..., Any], int]] = {
    "log.batch": (cl_batch, 8),
    "log.pruned": (cl_pruned, 3),
    "log.reconcile": (cl_reconcile, 4),
    "epoch": (cl_epoch, 1),
    "observe": (cl_observe, 2),
    "triage.classify": (cl_triage, 2),
}
_CONSUMER_WEIGHTED = [name for name, (_, weight) in CONSUMER_KINDS.items() for _ in range(weight)]
_ROLLBACK_WEIGHTED = _CONSUMER_WEIGHTED + ["epoch"] * 3  # epochs change (and come back) more often


@st.composite
def consumer_traces(draw: Draw, max_steps: int = 40, rollback: bool = False) -> tuple[list[dict[str, Any]], list[Any]]:
    """(lines, known): the preamble then up to `max_steps` change-log inputs;
    `known[i]` is, for each consumer and epoch, every seq its source had
    written when line i was sent (deleted ones included)."""
    b = ConsumerBuilder(rollback)
    for line in preamble():
        b.add(line)
    for _ in range(draw(st.integers(0, max_steps))):
        if b.crashed:
            break
        b.now += datetime.timedelta(seconds=draw(st.sampled_from([0, 1, 1, 5, 30])))
        kind = draw(st.sampled_from(_ROLLBACK_WEIGHTED if rollback else _CONSUMER_WEIGHTED))
        consumer_id = _consumer_id(draw)
        consumer = b.state.consumers.get(consumer_id)
        reconciling = consumer is not None and consumer.reconciliation_id is not None
        if kind == "log.reconcile" and not reconciling and _often(draw, 7):
            kind = "log.batch"  # mostly reconcile what is open; a stale one now and then
        elif kind == "log.batch" and reconciling and _often(draw, 4):
            kind = "log.reconcile"
        line = CONSUMER_KINDS[kind][0](draw, b, consumer_id)
        if line is not None:
            b.add(line)
    return b.lines, b.known
