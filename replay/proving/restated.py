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
from tandem.domain.records import Action
from tandem.domain.state import State

TERMINAL = frozenset({"succeeded", "failed", "cancelled", "exhausted"})
BUSY = frozenset({"submitting", "queued", "accepted", "unknown", "cancel_requested"})
HOLDING = frozenset({"submitting", "accepted", "unknown"})  # a delivery in these holds its revisions (5.2)
CODE_ORDER = (
    "prerequisite_pending", "prerequisite_failed", "question_hold", "wider_hold", "scope_paused",
    "task_held", "intent_unsynced", "watchdog_unavailable", "resource_busy", "approval_pending",
    "budget_exhausted",
)  # fmt: skip
# Events that change an action (a terminal one must never see them again).
ACTION_EVENTS = (
    ev.ActionProposed, ev.ActionRevalidated, ev.ActionCancelled, ev.ActionCancelRequested, ev.ActionClaimed,
    ev.AttemptUpdated, ev.ActionOutcomeReported, ev.ActionBlocked,
)  # fmt: skip
# State fields that are the pass's scratch, not facts (a fold does not rebuild them).
PASS_SCRATCH = frozenset({"dirty_actions", "dirty_tasks", "watchdog_fresh", "unstalled"})


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
    actions, tasks = state.actions, state.tasks

    for prerequisite in action.prerequisites:
        other = actions[prerequisite.operation_id]
        if other.state == "succeeded":
            if prerequisite.artifact_revision is not None and other.artifact_revision != prerequisite.artifact_revision:
                codes.add("prerequisite_failed")
        elif other.state in ("failed", "cancelled", "exhausted"):
            codes.add("prerequisite_failed")
        else:
            codes.add("prerequisite_pending")

    open_questions = [q for q in state.questions.values() if q.state == "open" and tasks[q.task_id].state == "active"]
    listed = {op for q in open_questions if isinstance(q.affected, list) for op in q.affected}
    task_held_by_question = {q.task_id for q in open_questions if q.affected == "task"}
    ancestors = _closure(action.operation_id, lambda op: [p.operation_id for p in actions[op].prerequisites])
    task = tasks[action.task_id] if action.task_id is not None else None
    upstream = _closure(task.task_id, lambda t: tasks[t].depends_on) if task is not None else set()
    if ancestors & listed or upstream & task_held_by_question:
        codes.add("question_hold")
    if any(q.affected == "unknown" for q in open_questions):
        codes.add("wider_hold")
    if "*" in state.paused or (task is not None and task.task_id in state.paused):
        codes.add("scope_paused")
    if task is not None:
        if any(tasks[d].state != "completed" for d in task.depends_on):
            codes.add("task_held")
        conversation = state.conversations[task.conversation_id]
        if action.proposed_by in ("background", "daemon") and conversation.intent_revision > conversation.synced_intent_revision:
            codes.add("intent_unsynced")
    fresh = (
        state.heartbeat_at is not None
        and at is not None
        and (at - state.heartbeat_at).total_seconds() <= state.config.watchdog_max_age_s
        and state.host == "running"  # contract v1.2 section 4.5
    )
    if action.unattended and not fresh:
        codes.add("watchdog_unavailable")
    if any(
        other.operation_id != action.operation_id and other.resource == action.resource and other.state in BUSY
        for other in actions.values()
    ):
        codes.add("resource_busy")
    if task is not None:
        conversation = state.conversations[task.conversation_id]
        background = state.conversations.get(conversation.background_id or "")
        if conversation.approvals or (background is not None and background.approvals):
            codes.add("approval_pending")
    grant = state.grants[action.grant_id]
    if grant.token_limit is not None and grant.usage >= grant.token_limit:
        codes.add("budget_exhausted")
    return [code for code in CODE_ORDER if code in codes]


def _closure(start: str, neighbours: Callable[[str], Iterable[str]]) -> set[str]:
    seen: set[str] = set()
    stack = [start]
    while stack:
        current = stack.pop()
        if current not in seen:
            seen.add(current)
            stack.extend(neighbours(current))
    return seen


