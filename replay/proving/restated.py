"""The spec, restated for the invariants: sections 3.3 and 4 written out here
rather than imported, so that the checks do not share the code they check.

The terminal, busy and holding states, the order of section 4's blocking
codes, and `section_4_codes`: the codes that block a pending action,
recomputed from the facts in a state (not its indexes, and without
`domain.dispatch`).
"""

from __future__ import annotations

import datetime
import posixpath
from collections.abc import Callable, Iterable

from tandem.domain import events as ev
from tandem.domain.records import Action, Conversation
from tandem.domain.state import State

TERMINAL = frozenset({"succeeded", "failed", "cancelled", "exhausted", "superseded"})  # superseded: v1.2 section 2.2
BUSY = frozenset({"submitting", "queued", "accepted", "unknown", "cancel_requested"})
HOLDING = frozenset({"submitting", "accepted", "unknown"})  # a delivery in these holds its revisions (5.2)
CODE_ORDER = (
    "prerequisite_pending", "prerequisite_failed", "question_hold", "wider_hold", "scope_paused",
    "task_held", "intent_unsynced", "watchdog_unavailable", "resource_busy", "approval_pending",
    "budget_exhausted", "rule_opted_out", "runtime_not_admitted", "retry_backoff", "owner_active",
)  # fmt: skip
# Events that change an action (a terminal one must never see them again).
ACTION_EVENTS = (
    ev.ActionProposed, ev.ActionRevalidated, ev.ActionCancelled, ev.ActionCancelRequested, ev.ActionClaimed,
    ev.AttemptUpdated, ev.ActionOutcomeReported, ev.ActionBlocked, ev.DeadlineExceeded, ev.SourceRuleApplied,
    ev.BatchFixSuperseded,
)  # fmt: skip
# (EvidenceAttached is not one: evidence attaches to a succeeded action, contract v1.2 section 2.5.)
# State fields that are the pass's scratch, not facts (a fold does not rebuild them).
PASS_SCRATCH = frozenset({"dirty_actions", "dirty_tasks", "dirty_sources", "watchdog_fresh", "unstalled"})


def normalised(path: str) -> str | None:
    if not path.startswith("/"):
        return None
    out = posixpath.normpath(path)
    return "/" + out.lstrip("/")


def inside(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root.rstrip("/") + "/")


def section_4_codes(state: State, action: Action, at: datetime.datetime | None) -> list[str]:
    """The section 4 codes that block a pending action, recomputed from the
    facts in `state` (not its indexes, and without domain.dispatch)."""
    codes: set[str] = set()
    actions, tasks = state.actions.by_id, state.tasks.by_id

    for prerequisite in action.prerequisites:
        code = _prerequisite_code(actions[prerequisite.operation_id], prerequisite)
        if code is not None:
            codes.add(code)

    open_questions = [q for q in state.tasks.questions.values() if q.state == "open" and tasks[q.task_id].state == "active"]
    listed = {op for q in open_questions if isinstance(q.affected, list) for op in q.affected}
    task_held_by_question = {q.task_id for q in open_questions if q.affected == "task"}
    ancestors = _closure(action.operation_id, lambda op: [p.operation_id for p in actions[op].prerequisites])
    task = tasks[action.task_id] if action.task_id is not None else None
    upstream = _closure(task.task_id, lambda t: tasks[t].depends_on) if task is not None else set()
    if ancestors & listed or upstream & task_held_by_question:
        codes.add("question_hold")
    if any(q.affected == "unknown" for q in open_questions):
        codes.add("wider_hold")
    if "*" in state.actions.paused or (task is not None and task.task_id in state.actions.paused):
        codes.add("scope_paused")
    if task is not None:
        if any(tasks[d].state != "completed" for d in task.depends_on):
            codes.add("task_held")
        conversation = state.conversation.by_id[task.conversation_id]
        if action.proposed_by in ("background", "daemon") and conversation.intent_revision > conversation.synced_intent_revision:
            codes.add("intent_unsynced")
    fresh = (
        state.health.heartbeat_at is not None
        and at is not None
        and (at - state.health.heartbeat_at).total_seconds() <= state.authority.config.watchdog_max_age_s
        and state.health.host == "running"  # contract v1.2 section 4.5
    )
    if action.unattended and not fresh:
        codes.add("watchdog_unavailable")
    if any(
        other.operation_id != action.operation_id and other.resource == action.resource and other.state in BUSY
        for other in actions.values()
    ):
        codes.add("resource_busy")
    if task is not None:
        conversation = state.conversation.by_id[task.conversation_id]
        background = state.conversation.by_id.get(conversation.background_id or "")
        if conversation.approvals or (background is not None and background.approvals):
            codes.add("approval_pending")
    grant = state.authority.grants[action.grant_id]
    if grant.token_limit is not None and grant.usage >= grant.token_limit:
        codes.add("budget_exhausted")
    if grant.call_limit is not None and grant.calls >= grant.call_limit:  # contract v1.2 section 3.4
        codes.add("budget_exhausted")
    codes.update(_v12_codes(state, action, at))
    return [code for code in CODE_ORDER if code in codes]


def _v12_codes(state: State, action: Action, at: datetime.datetime | None) -> Iterable[str]:
    """The blocking codes contract v1.2 appends (sections 2.4, 1.4, 3.5, 8.1)."""
    if action.rule_id is not None and not _opted_in(state, action):
        yield "rule_opted_out"
    if action.retry_at is not None and at is not None and at < action.retry_at:
        yield "retry_backoff"
    runtime = state.tools.runtimes.get(action.runtime_id) if action.runtime_id is not None else None
    if action.runtime_id is not None and (runtime is None or runtime.state != "admitted"):
        yield "runtime_not_admitted"
    if action.priority == "maintenance" and owners_affecting(state, action):
        yield "owner_active"


def active_owners(state: State) -> list[str]:
    """Contract v1.2 section 8.1, restated: the foregrounds (in id order) with
    a queued human message or a running human turn."""
    return sorted(
        conversation.conversation_id
        for conversation in state.conversation.by_id.values()
        if conversation.role == "foreground"
        and (bool(conversation.queue) or (conversation.running_turn is not None and conversation.running_turn.kind == "human"))
    )


def affected_via(state: State, action: Action, foreground: str, live: frozenset[str] = frozenset()) -> str | None:
    """Contract v1.2 section 8.1, restated: how the foreground affects the
    action, the first that applies: "task" (its task, or its grant's task,
    was delegated from it), "session" (it serialises on the foreground
    itself), "resource" (a non-terminal action of one of the foreground's
    tasks, or one in `live`, names its resource: a scan, not the state's
    index); None: it does not."""
    tasks = state.tasks.by_id
    owning = {action.task_id, state.authority.grants[action.grant_id].task_id} - {None}
    if any(tasks[task_id].conversation_id == foreground for task_id in owning):  # type: ignore[index]
        return "task"
    if action.resource == foreground:
        return "session"
    if any(
        other.resource == action.resource
        and (other.state not in TERMINAL or other.operation_id in live)
        and other.task_id is not None
        and tasks[other.task_id].conversation_id == foreground
        for other in state.actions.by_id.values()
    ):
        return "resource"
    return None


def owners_affecting(state: State, action: Action) -> list[str]:
    """The foregrounds (in id order) whose owner is active and that affect the action."""
    return [foreground for foreground in active_owners(state) if affected_via(state, action, foreground) is not None]


def _prerequisite_code(other: Action, prerequisite: ev.PrerequisiteSpec) -> str | None:
    required = prerequisite.artifact_revision
    if other.state == "succeeded" and prerequisite.evidence_required is True:  # contract v1.2 section 2.5
        if required is not None and other.artifact_revision not in (None, required):
            return "prerequisite_failed"
        if (required is not None and other.artifact_revision is None) or not other.evidence_refs:
            return "prerequisite_pending"
        return None
    if other.state == "succeeded":
        return "prerequisite_failed" if required is not None and other.artifact_revision != required else None
    return "prerequisite_failed" if other.state in TERMINAL else "prerequisite_pending"


def _opted_in(state: State, action: Action) -> bool:
    """Contract v1.2 section 2.4: "*" or the scope of the cause's latest observation."""
    scopes = state.authority.rule_scopes.get(action.rule_id or "", ("*",))
    update = state.inbox.updates.get(action.cause_key)
    return "*" in scopes or (update is not None and update.latest is not None and update.latest.scope in scopes)


def backoff_until(state: State, conversation: Conversation) -> datetime.datetime | None:
    """Contract v1.2 section 3.6, restated: after `refusals` refused or not
    received deliveries (the latest at `refused_at`), none before
    `refused_at + delivery_backoff_s x 2^(refusals - 1)`."""
    if conversation.refusals < 1 or conversation.refused_at is None:
        return None
    seconds = state.authority.config.delivery_backoff_s * 2 ** (conversation.refusals - 1)
    return conversation.refused_at + datetime.timedelta(seconds=seconds)


def _closure(start: str, neighbours: Callable[[str], Iterable[str]]) -> set[str]:
    seen: set[str] = set()
    stack = [start]
    while stack:
        current = stack.pop()
        if current not in seen:
            seen.add(current)
            stack.extend(neighbours(current))
    return seen


