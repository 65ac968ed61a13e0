"""Generators of the work's inputs: tasks, grants, questions, automation
rules, actions, executor receipts and outcomes, usage, heartbeats, scopes,
policy; and `repeat` (an earlier input again)."""

from __future__ import annotations

import datetime
from typing import Any

from hypothesis import strategies as st

from tandem.domain.inputs import format_at
from tandem.replay.proving.generators.sources import COMMITS, SCOPES, STATUSES
from tandem.replay.proving.generators.tools import worker_runtime
from tandem.replay.proving.generators.universe import (
    ARTIFACTS,
    CAUSES,
    GRANT_ROOTS,
    IN_FLIGHT,
    OPERATION_IDS,
    OPERATIONS,
    POLICY_ROOTS,
    QUESTION_KEYS,
    RESOURCES,
    RULE_GRANT,
    RULE_ID,
    TASKS,
    WRITE_PATHS,
    Builder,
    Draw,
    grant_request,
    often,
    pick,
    revision_near,
    subset,
)


def task_delegate(draw: Draw, b: Builder) -> dict[str, Any]:
    free = [t for t in TASKS if t not in b.state.tasks.by_id]
    task_id = draw(st.sampled_from(free)) if free and often(draw) else draw(st.sampled_from(TASKS))
    fields: dict[str, Any] = {
        "task_id": task_id,
        "conversation_id": "fg" if draw(st.integers(0, 19)) else "nowhere",
        "message_refs": [],
        "goal": f"goal of {task_id}",
        "done_when": ["tests pass"],
        "grant": grant_request(draw, f"g-{task_id}" if often(draw) else draw(st.sampled_from(["g-t1", RULE_GRANT]))),
    }
    existing = [t for t in b.state.tasks.by_id if t != task_id]
    if existing and often(draw, 5):
        fields["depends_on"] = subset(draw, existing, 1)
    if often(draw, 3):
        fields["progress_deadline_s"] = draw(st.sampled_from([1, 30, 120, 600]))  # contract v1.2 section 4.4
    return b.line("task.delegate", **fields)


def task_revise(draw: Draw, b: Builder) -> dict[str, Any]:
    task_id = pick(draw, list(b.state.tasks.by_id), TASKS)
    task = b.state.tasks.by_id.get(task_id)
    fields: dict[str, Any] = {"task_id": task_id, "expected_revision": revision_near(draw, task.revision if task else 1)}
    which = draw(st.sampled_from(["goal", "done_when", "constraints", "fallback_decisions", "progress_deadline_s"]))
    fields[which] = {
        "goal": "a revised goal",
        "done_when": ["it works"],
        "constraints": {"push": False},
        "fallback_decisions": {"db": "sqlite"},
        "progress_deadline_s": 60,
    }[which]
    return b.line("task.revise", **fields)


def grant_revise(draw: Draw, b: Builder) -> dict[str, Any]:
    grant_id = pick(draw, list(b.state.authority.grants), tuple(f"g-{t}" for t in TASKS))
    grant = b.state.authority.grants.get(grant_id)
    fields: dict[str, Any] = {"grant_id": grant_id, "expected_revision": revision_near(draw, grant.revision if grant else 1)}
    changes = subset(
        draw,
        ("allowed_operations", "write_roots", "max_attempts", "token_limit", "execution_deadline_s", "retry_backoff_s", "call_limit"),
        1,
    )
    for change in changes:
        if change == "allowed_operations":
            fields[change] = subset(draw, OPERATIONS, 1)
        elif change == "write_roots":
            fields[change] = subset(draw, GRANT_ROOTS, 1)
        elif change == "max_attempts":
            fields[change] = draw(st.integers(1, 4))
        elif change == "execution_deadline_s":
            fields[change] = draw(st.sampled_from([60, 300, 900]))
        elif change == "retry_backoff_s":
            fields[change] = draw(st.sampled_from([0, 10, 60]))
        elif change == "call_limit":
            fields[change] = draw(st.sampled_from([1, 2, 5, 50]))
        else:
            fields[change] = draw(st.sampled_from([50, 200, 1000, 100000]))
    return b.line("grant.revise", **fields)


def call_limit_revise(draw: Draw, b: Builder) -> dict[str, Any]:
    """A grant.revise of the grant a worker's live action charges its calls
    to (contract v1.2 section 3.4), setting `call_limit` at or just above the
    calls it made: reached now or in a call or two. Any grant.revise while
    no action names a runtime."""
    state = b.state
    charged = sorted({a.grant_id for a in state.actions.by_id.values() if a.runtime_id is not None and not a.terminal} & set(state.authority.grants))
    if not charged:
        return grant_revise(draw, b)
    grant = state.authority.grants[draw(st.sampled_from(charged))]
    limit = max(grant.calls + draw(st.sampled_from([0, 1, 1, 2])), 1)
    return b.line("grant.revise", grant_id=grant.grant_id, expected_revision=grant.revision, call_limit=limit)


def timing_revise(draw: Draw, b: Builder) -> dict[str, Any]:
    """A grant.revise giving a grant of a live action a short
    `execution_deadline_s` (contract v1.2 section 3.3) or `retry_backoff_s`
    (section 3.5), so the deadline passes, or a refusal is waited out, within
    a run; any grant.revise when no action is live."""
    state = b.state
    live = sorted({a.grant_id for a in state.actions.by_id.values() if not a.terminal} & set(state.authority.grants))
    if not live:
        return grant_revise(draw, b)
    grant = state.authority.grants[draw(st.sampled_from(live))]
    setting = draw(st.sampled_from(["execution_deadline_s", "retry_backoff_s"]))
    seconds = draw(st.sampled_from([5, 10, 20, 40]))
    return b.line("grant.revise", grant_id=grant.grant_id, expected_revision=grant.revision, **{setting: seconds})


def refused_attempt(draw: Draw, b: Builder) -> dict[str, Any]:
    """The executor refusing an attempt in flight: the action is pending
    again and may be claimed again (with its first claim's deadline)."""
    operation_id, attempt_id = _attempt_target(draw, b, ("submitting", "queued"))
    return b.line("executor.receipt", "executor", operation_id=operation_id, attempt_id=attempt_id, result="refused")


def task_cancel(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line("task.cancel", task_id=pick(draw, list(b.state.tasks.by_id), TASKS))


def task_complete(draw: Draw, b: Builder) -> dict[str, Any]:
    state = b.state
    done = [
        t for t, task in state.tasks.by_id.items()
        if task.state == "active" and task.actions and all(state.actions.by_id[op].terminal for op in task.actions)
    ]  # fmt: skip
    return b.line(
        "task.complete",
        draw(st.sampled_from(["background", "human"])),
        task_id=draw(st.sampled_from(done)) if done and often(draw, 8) else pick(draw, list(state.tasks.by_id), TASKS),
        evidence_refs=["ev/tests"],
    )


def question_raise(draw: Draw, b: Builder) -> dict[str, Any]:
    task_id = pick(draw, list(b.state.tasks.by_id), TASKS)
    key = draw(st.sampled_from(QUESTION_KEYS))
    existing = b.state.tasks.questions.get((task_id, key))
    kind = draw(st.sampled_from(["ops", "ops", "task", "unknown"]))
    if kind == "ops":
        # Listed operations need not exist yet (contract section 3.2): now and then one does not.
        future = [op for op in OPERATION_IDS if op not in b.state.actions.by_id][:1] if often(draw, 2) else []
        affected: Any = subset(draw, list(b.state.actions.by_id) + future, 1) if b.state.actions.by_id or future else "task"
    else:
        affected = kind
    evidence = existing.evidence_revision if existing else 0
    evidence += 1 if often(draw, 8) else 0
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
    open_keys = [k for k, q in b.state.tasks.questions.items() if q.state == "open"]
    if open_keys and often(draw, 8):
        task_id, key = draw(st.sampled_from(open_keys))
    else:
        task_id, key = pick(draw, list(b.state.tasks.by_id), TASKS), draw(st.sampled_from(QUESTION_KEYS))
    return b.line("question.answer", task_id=task_id, question_key=key, answer="use sqlite")


def rule_set(draw: Draw, b: Builder) -> dict[str, Any]:
    fields: dict[str, Any] = {"rule_id": RULE_ID, "grant": grant_request(draw, RULE_GRANT)}
    if often(draw, 3):  # opted in for some scopes only (contract v1.2 section 2.4)
        fields["scopes"] = subset(draw, (*SCOPES, "*"), 0)[:2]
    return b.line("rule.set", **fields)


def _inside(path: str, roots: list[str]) -> bool:
    return any(root == "/" or path == root or path.startswith(root + "/") for root in roots)


def _cause(draw: Draw, b: Builder) -> str:
    """Mostly a cause with no live action; sometimes any (shared) cause."""
    state = b.state
    free = [
        c for c in CAUSES
        if all(state.actions.by_id[op].terminal for op in state.actions.by_cause.get(c, ()))
    ]  # fmt: skip
    if free and often(draw, 7):
        return draw(st.sampled_from(free))
    return draw(st.sampled_from(CAUSES))


def _prerequisites(draw: Draw, b: Builder) -> list[dict[str, Any]]:
    existing = list(b.state.actions.by_id)
    if not existing or not often(draw, 4):
        return []
    chosen = subset(draw, existing[-4:], 1)[:2]
    out = []
    for operation_id in chosen:
        prerequisite: dict[str, Any] = {"operation_id": operation_id, "outcome": "succeeded"}
        if often(draw, 3):
            prerequisite["artifact_revision"] = draw(st.sampled_from(ARTIFACTS))
        if often(draw, 3):
            prerequisite["evidence_required"] = True  # contract v1.2 section 2.5
        out.append(prerequisite)
    return out


def action_propose(draw: Draw, b: Builder) -> dict[str, Any]:
    state = b.state
    free = [op for op in OPERATION_IDS if op not in state.actions.by_id]
    operation_id = draw(st.sampled_from(free)) if free and often(draw) else draw(st.sampled_from(OPERATION_IDS))
    fields: dict[str, Any] = {
        "operation_id": operation_id,
        "cause_key": _cause(draw, b),
        "target": "somewhere",
        "resource": draw(st.sampled_from(RESOURCES)),
    }
    rule = RULE_ID in state.authority.rules and often(draw, 2)
    if rule:
        actor = "daemon"
        grant = state.authority.grants[RULE_GRANT]
        fields["rule_id"] = RULE_ID
        fields["grant_id"] = RULE_GRANT if often(draw) else "g-t1"
        revisions: dict[str, Any] = {"grant": revision_near(draw, grant.revision)}
    else:
        actor = draw(st.sampled_from(["background", "background", "background", "human", "daemon"]))
        active = [t for t, task in state.tasks.by_id.items() if task.state == "active"]
        task_id = pick(draw, active or list(state.tasks.by_id), TASKS)
        task = state.tasks.by_id.get(task_id)
        fields["task_id"] = task_id
        fields["grant_id"] = task.grant_id if task is not None and often(draw) else draw(st.sampled_from(["g-t1", "g-t2", RULE_GRANT]))
        grant = state.authority.grants.get(fields["grant_id"])
        revisions = {"grant": revision_near(draw, grant.revision if grant else 1)}
        if task is not None and often(draw, 6):
            revisions["task"] = revision_near(draw, task.revision)
        if often(draw, 5):
            revisions["intent"] = revision_near(draw, b.intent())
    if actor == "background" or often(draw, 1):
        fields["generation"] = b.generation() if often(draw) else b.generation() - 1
    allowed = sorted(grant.operations) if grant is not None and grant.operations else list(OPERATIONS)
    fields["operation"] = draw(st.sampled_from(allowed)) if often(draw) else draw(st.sampled_from(OPERATIONS))
    if often(draw, 6):
        roots = list(grant.roots) if grant is not None else []
        policy_roots = list(state.authority.policy.roots)
        inside = [p for p in WRITE_PATHS if _inside(p, roots) and _inside(p, policy_roots)]
        fields["write_paths"] = (
            subset(draw, inside, 1)[:2] if inside and often(draw, 8) else [draw(st.sampled_from(WRITE_PATHS))]
        )
    prerequisites = _prerequisites(draw, b)
    if prerequisites:
        fields["prerequisites"] = prerequisites
    fields["input_revisions"] = revisions
    if often(draw, 2):
        fields["unattended"] = draw(st.booleans())
    fields.update(_source_fields(draw, b, fields["cause_key"]))
    runtime_id = worker_runtime(draw, b)  # contract v1.2 section 1.4 (no draw while no worker runtime exists)
    if runtime_id is not None:
        fields["runtime_id"] = runtime_id
    if often(draw, 4):  # contract v1.2 section 8.1: often maintenance work
        fields["priority"] = draw(st.sampled_from(["maintenance", "maintenance", "normal"]))
    return b.line("action.propose", actor, **fields)


def _source_fields(draw: Draw, b: Builder, cause_key: str) -> dict[str, Any]:
    """Contract v1.2 section 2.1: often the cause's revision it answers (mostly
    the current one), a commit and the statuses that make it moot."""
    if not often(draw, 2):
        return {}
    update = b.state.inbox.updates.get(cause_key)
    fields: dict[str, Any] = {"source_revision": revision_near(draw, update.revision if update is not None else 0)}
    if often(draw, 2):
        fields["target_sha"] = draw(st.sampled_from(COMMITS))
    if often(draw, 2):
        fields["moot_statuses"] = subset(draw, STATUSES, 0)
    return fields


def source_proposal(draw: Draw, b: Builder) -> dict[str, Any]:
    """A proposal that answers its cause's current revision (contract v1.2
    section 2.1), on the cause's latest commit when it has one: what the
    source rule looks at again when the cause moves before the claim."""
    line = action_propose(draw, b)
    update = b.state.inbox.updates.get(line["cause_key"])
    line["source_revision"] = update.revision if update is not None else 0
    latest = update.latest if update is not None else None
    if latest is not None and latest.commit_sha is not None and often(draw, 8):
        line["target_sha"] = latest.commit_sha
    else:
        line.pop("target_sha", None)
    return line


def evidence_attach(draw: Draw, b: Builder) -> dict[str, Any]:
    """Contract v1.2 section 2.5: mostly for a succeeded action, sometimes another artifact."""
    actions = b.state.actions.by_id
    succeeded = [op for op, a in actions.items() if a.state == "succeeded"]
    operation_id = draw(st.sampled_from(succeeded)) if succeeded and often(draw, 8) else pick(draw, list(actions), OPERATION_IDS)
    fields: dict[str, Any] = {"operation_id": operation_id, "evidence_ref": draw(st.sampled_from(["ev/a", "ev/b"]))}
    if often(draw, 3):
        fields["artifact_revision"] = draw(st.sampled_from(ARTIFACTS))
    return b.line("evidence.attach", draw(st.sampled_from(["executor", "source"])), **fields)


def action_revalidate(draw: Draw, b: Builder) -> dict[str, Any]:
    state = b.state
    fenced = [op for op, a in state.actions.by_id.items() if a.state == "fenced"]
    operation_id = draw(st.sampled_from(fenced)) if fenced and often(draw, 8) else pick(draw, list(state.actions.by_id), OPERATION_IDS)
    action = state.actions.by_id.get(operation_id)
    grant = state.authority.grants.get(action.grant_id) if action else None
    revisions: dict[str, Any] = {"grant": revision_near(draw, grant.revision if grant else 1)}
    if action is not None and action.task_id is not None and often(draw, 6):
        revisions["task"] = revision_near(draw, state.tasks.by_id[action.task_id].revision)
    if often(draw, 3):
        revisions["intent"] = revision_near(draw, b.intent())
    actor = draw(st.sampled_from(["background", "human"]))
    fields: dict[str, Any] = {"operation_id": operation_id, "input_revisions": revisions}
    if action is not None and action.source_revision is not None and often(draw, 8):
        update = state.inbox.updates.get(action.cause_key)
        fields["source_revision"] = revision_near(draw, update.revision if update is not None else 0)
    if actor == "background":
        fields["generation"] = b.generation() if often(draw) else b.generation() - 1
    return b.line("action.revalidate", actor, **fields)


def action_cancel(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line("action.cancel", operation_id=pick(draw, list(b.state.actions.by_id), OPERATION_IDS))


def _attempt_target(draw: Draw, b: Builder, states: tuple[str, ...]) -> tuple[str, str]:
    """(operation_id, attempt_id): mostly the latest attempt of an action whose
    latest attempt is in `states`; sometimes a stale or made-up attempt."""
    actions = b.state.actions.by_id
    fitting = [op for op, a in actions.items() if a.attempts and a.attempts[-1].state in states]
    with_attempts = [op for op, a in actions.items() if a.attempts]
    if fitting and often(draw, 8):
        operation_id = draw(st.sampled_from(fitting))
    elif with_attempts:
        operation_id = draw(st.sampled_from(with_attempts))
    else:
        operation_id = pick(draw, list(actions), OPERATION_IDS)
    action = actions.get(operation_id)
    n = len(action.attempts) if action else 0
    if n and often(draw, 8):
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
    actions = b.state.actions.by_id
    live = [op for op, a in actions.items() if a.state in IN_FLIGHT]
    operation_id = draw(st.sampled_from(live)) if live and often(draw, 8) else pick(draw, list(actions), OPERATION_IDS)
    fields: dict[str, Any] = {
        "operation_id": operation_id,
        "outcome": draw(st.sampled_from(["succeeded", "succeeded", "failed", "cancelled"])),
    }
    if often(draw, 6):
        fields["artifact_revision"] = draw(st.sampled_from(ARTIFACTS))
    if often(draw, 5):
        fields["evidence_ref"] = "ev/run"
    return b.line("executor.outcome", "executor", **fields)


def usage_report(draw: Draw, b: Builder) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if b.state.actions.by_id and often(draw, 7):
        fields["operation_id"] = pick(draw, list(b.state.actions.by_id), OPERATION_IDS)
    else:
        fields["conversation_id"] = draw(st.sampled_from(["fg", "bg"]))
    for name in ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "context_tokens"):
        if often(draw, 5):
            fields[name] = draw(st.sampled_from([0, 10, 60, 400]))
    return b.line("usage.report", draw(st.sampled_from(["daemon", "executor"])), **fields)


def heartbeat(draw: Draw, b: Builder) -> dict[str, Any]:
    current = b.state.health.heartbeat_generation or 1
    generation = draw(st.sampled_from([current, current, current, current + 1, max(current - 1, 0)]))
    line = b.line("watchdog.heartbeat", "watchdog", generation=generation)
    if often(draw, 3):
        # Contract v1.2 section 4.1: a row written earlier (imported after downtime), or a clock ahead.
        line["beat_at"] = format_at(b.now + datetime.timedelta(seconds=draw(st.sampled_from([-3600, -200, -30, 0, 5]))))
    return line


def scope_pause(draw: Draw, b: Builder) -> dict[str, Any]:
    scope = "*" if often(draw, 3) else pick(draw, list(b.state.tasks.by_id), TASKS)
    return b.line("scope.pause", scope=scope)


def scope_resume(draw: Draw, b: Builder) -> dict[str, Any]:
    paused = sorted(b.state.actions.paused)
    scope = draw(st.sampled_from(paused)) if paused and often(draw, 8) else draw(st.sampled_from(["*", *TASKS]))
    return b.line("scope.resume", scope=scope)


def human_message(draw: Draw, b: Builder) -> dict[str, Any]:
    b.messages += 1
    message_id = f"m{b.messages}" if often(draw) else "m1"
    return b.line("human.message", conversation_id="fg", message_id=message_id, text="please also do X")


def intent_synced(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line(
        "intent.synced",
        "background",
        conversation_id="fg",
        intent_revision=revision_near(draw, b.intent()),
        generation=b.generation() if often(draw) else b.generation() - 1,
    )


def background_bind(draw: Draw, b: Builder) -> dict[str, Any]:
    generation = b.generation() + 1 if often(draw, 7) else b.generation()
    return b.line("background.bind", "daemon", conversation_id="bg", foreground_id="fg", generation=generation)


def policy_set(draw: Draw, b: Builder) -> dict[str, Any]:
    if often(draw, 5):  # back to the wide policy
        operations, roots = list(OPERATIONS), ["/repo", "/srv"]
    else:
        operations, roots = subset(draw, OPERATIONS, 1), subset(draw, POLICY_ROOTS, 1)
    return b.line("policy.set", draw(st.sampled_from(["daemon", "human"])), allowed_operations=operations, write_roots=roots)


def tick(draw: Draw, b: Builder) -> dict[str, Any]:
    return b.line("tick", "daemon")


def repeat(draw: Draw, b: Builder) -> dict[str, Any]:
    """An earlier input sent again (later `at`): duplicate_input or, if it
    had no id, the same command twice."""
    earlier = dict(draw(st.sampled_from(b.lines)))
    earlier["at"] = format_at(b.now)
    return earlier
