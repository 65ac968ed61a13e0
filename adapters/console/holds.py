"""What holds a task or blocks an action, named and linked (docs/api.md,
"The console"): each code of a task's `holds` or an action's `blocked_by` in
words, with what it waits for — the questions, prerequisites, tasks, alert,
runtime — as links, read from the same views as the page (as of its
position), by the rules of domain/dispatch.py (`task_holds`, `blockers`).
Where the views do not name what a code waits for (an approval, an owner
turn), or they name nothing, the link goes to the action's explain chain, whose "Waiting for"
names it from the facts the engine recorded.

A link is a kind and the parts of an id; `href` builds its address from the
kind's fixed prefix, each part percent-encoded (templating.py's rule: no
value in an address but as an encoded part after a fixed prefix).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from tandem.domain.reasons import BLOCK_WORDS, HOLD_WORDS
from tandem.projections import Views

Row = dict[str, Any]

# An action that holds its resource (domain/actions/state.py, `busy_by_resource`).
BUSY = frozenset({"submitting", "queued", "accepted", "unknown", "cancel_requested"})
ENDED_BADLY = frozenset({"failed", "cancelled", "exhausted", "superseded"})

HREFS: dict[str, str] = {  # a link's kind: its address, the id's parts put in as {0}, {1}
    "task": "/tasks/{0}{at}",
    "action": "/actions/{0}{at}",
    "question": "/questions{at}#q-{0}-{1}",
    "alert": "/alerts{at}#a-{0}",
    "explain": "/explain/{0}{at}",
    "waiting": "/actions/{0}{at}#waiting",
    "inputs": "/timeline?type={0}",
    "health": "/{at}#health",
    "conversations": "/conversations{at}",
}


@dataclass(frozen=True)
class Link:
    kind: str  # a key of HREFS
    parts: tuple[str, ...]
    label: str
    state: str | None = None  # the linked thing's state, shown beside it


@dataclass(frozen=True)
class Hold:
    code: str
    words: str
    links: tuple[Link, ...]
    until: str | None = None  # retry_backoff: not claimed before then


def href(link: Link, position: int | None) -> str:
    """The link's address; `position`: the page's `?at=` (None: now)."""
    at = "" if position is None else f"?at={position}"
    return HREFS[link.kind].format(*(quote(part, safe="") for part in link.parts), at=at)


@dataclass
class Rows:
    """What holds are read from: tasks and actions by id, the questions, and
    every action when the page has them (to name a resource's holders)."""

    task: Callable[[str], Row | None]
    action: Callable[[str], Row | None]
    questions: Callable[[], list[Row]]  # the open ones, read only for the codes that need them
    actions: list[Row] | None = None  # the actions holding a resource


def picked_rows(views: Views) -> Rows:
    """From the views (live or folded for the past), picking each task and
    action as asked, the open questions and the actions holding a resource
    (the few a hold can name): never a view rendered whole."""

    def one(name: str) -> Callable[[str], Row | None]:
        held: dict[str, Row | None] = {}

        def get(key: str) -> Row | None:
            if key not in held:
                rows = views.pick(name, [key])
                held[key] = rows[0] if rows else None
            return held[key]

        return get

    rendered: list[list[Row]] = []

    def questions() -> list[Row]:
        if not rendered:
            view: Any = views.by_name["questions"]
            rendered.append(view.listed(sorted(view.by_state.of("open"))))
        return rendered[0]

    actions: Any = views.by_name["actions"]
    busy = actions.listed(sorted(key for state in BUSY for key in actions.by_state.of(state)))
    return Rows(one("tasks"), one("actions"), questions, busy)


def _reachable(start: Iterable[str], following: Callable[[str], Iterable[str]]) -> set[str]:
    seen: set[str] = set()
    stack = list(start)
    while stack:
        current = stack.pop()
        if current not in seen:
            seen.add(current)
            stack.extend(following(current))
    return seen


def _depends_on(rows: Rows) -> Callable[[str], list[str]]:
    return lambda task_id: (rows.task(task_id) or {}).get("depends_on", [])


def _prerequisites(rows: Rows) -> Callable[[str], list[str]]:
    return lambda operation_id: (rows.action(operation_id) or {}).get("prerequisites", [])


def _holding(rows: Rows, question: Row) -> bool:
    """An open question of an active task (domain/state.py, `question_active`)."""
    task = rows.task(question["task_id"])
    return question["state"] == "open" and task is not None and task["state"] == "active"


def _questions(rows: Rows, wanted: Callable[[Row], bool]) -> tuple[Link, ...]:
    return tuple(
        Link("question", (q["task_id"], q["question_key"]), f"{q['task_id']}/{q['question_key']}", q["state"])
        for q in rows.questions()
        if wanted(q) and _holding(rows, q)
    )


def _task_questions(rows: Rows, task_id: str | None) -> tuple[Link, ...]:
    """The open `"task"` questions of the task or of a task it depends on, transitively."""
    if task_id is None:
        return ()
    tasks = _reachable([task_id], _depends_on(rows))
    return _questions(rows, lambda q: q["affected"] == "task" and q["task_id"] in tasks)


def _wider(rows: Rows) -> tuple[Link, ...]:
    return _questions(rows, lambda q: q["affected"] == "unknown")


def _tasks_held(rows: Rows, task_id: str | None) -> tuple[Link, ...]:
    task = rows.task(task_id) if task_id is not None else None
    if task is None:
        return ()
    found = [(dependency, rows.task(dependency)) for dependency in task["depends_on"]]
    return tuple(Link("task", (d,), d, row["state"]) for d, row in found if row is not None and row["state"] != "completed")


PAUSES = (Link("inputs", ("scope.pause",), "the scope.pause inputs"),)

TASK_HOLDS: dict[str, Callable[[Rows, Row], tuple[Link, ...]]] = {
    "question_hold": lambda rows, task: _task_questions(rows, task["task_id"]),
    "wider_hold": lambda rows, task: _wider(rows),
    "scope_paused": lambda rows, task: PAUSES,
    "task_held": lambda rows, task: _tasks_held(rows, task["task_id"]),
}


def task_holds(rows: Rows, task: Row) -> list[Hold]:
    """A task's holds, each with what it waits for (its explain chain when the views name nothing)."""
    held = []
    for code in task["holds"]:
        links = TASK_HOLDS[code](rows, task) if code in TASK_HOLDS else ()
        held.append(Hold(code, HOLD_WORDS.get(code, code), links or (Link("explain", (task["task_id"],), "its explain chain"),)))
    return held


# --------------------------------------------------------------- an action


def _prerequisite_links(rows: Rows, action: Row, wanted: Callable[[Row], bool]) -> tuple[Link, ...]:
    found = [(p, rows.action(p)) for p in action["prerequisites"]]
    links = tuple(Link("action", (p, ), p, row["state"]) for p, row in found if row is not None and wanted(row))
    return links or tuple(Link("action", (p,), p, row["state"]) for p, row in found if row is not None)


def _question_hold(rows: Rows, action: Row) -> tuple[Link, ...]:
    """Open questions listing the operation or, transitively, a prerequisite; and the task's."""
    operations = _reachable([action["operation_id"]], _prerequisites(rows))
    listed = _questions(rows, lambda q: isinstance(q["affected"], list) and not operations.isdisjoint(q["affected"]))
    return listed + tuple(link for link in _task_questions(rows, action["task_id"]) if link not in listed)


def _resource_holders(rows: Rows, action: Row) -> tuple[Link, ...]:
    if rows.actions is None:
        return ()
    return tuple(
        Link("action", (a["operation_id"],), a["operation_id"], a["state"])
        for a in rows.actions
        if a["resource"] == action["resource"] and a["state"] in BUSY and a["operation_id"] != action["operation_id"]
    )


def _budget(rows: Rows, action: Row) -> tuple[Link, ...]:
    task = rows.task(action["task_id"]) if action["task_id"] is not None else None
    if task is None:
        return ()
    return (Link("alert", (f"budget_exhausted:{task['grant_id']}",), f"budget_exhausted:{task['grant_id']}"),)


def _named(kind: str, field: str, what: str) -> Callable[[Rows, Row], tuple[Link, ...]]:
    return lambda rows, action: (Link(kind, (action[field],), f"{what} {action[field]}"),) if action[field] else ()


CONVERSATIONS = (Link("conversations", (), "the conversations"),)

ACTION_BLOCKS: dict[str, Callable[[Rows, Row], tuple[Link, ...]]] = {
    "prerequisite_pending": lambda rows, action: _prerequisite_links(rows, action, lambda p: p["state"] != "succeeded"),
    "prerequisite_failed": lambda rows, action: _prerequisite_links(rows, action, lambda p: p["state"] in ENDED_BADLY),
    "question_hold": _question_hold,
    "wider_hold": lambda rows, action: _wider(rows),
    "scope_paused": lambda rows, action: PAUSES,
    "task_held": lambda rows, action: _tasks_held(rows, action["task_id"]),
    "intent_unsynced": lambda rows, action: CONVERSATIONS,
    "watchdog_unavailable": lambda rows, action: (Link("health", (), "the watchdog's health"),),
    "resource_busy": _resource_holders,
    "approval_pending": lambda rows, action: CONVERSATIONS,
    "budget_exhausted": _budget,
    "rule_opted_out": _named("explain", "rule_id", "rule"),
    "runtime_not_admitted": _named("explain", "runtime_id", "runtime"),
}
# Codes whose facts only the explain chain names: it is linked beside what the views name.
EXPLAINED_TOO = frozenset({"intent_unsynced", "approval_pending", "retry_backoff", "owner_active", "rule_opted_out"})


def action_blocks(rows: Rows, action: Row) -> list[Hold]:
    """An action's `blocked_by`, each with what it waits for."""
    blocks = []
    for code in action["blocked_by"]:
        links = ACTION_BLOCKS[code](rows, action) if code in ACTION_BLOCKS else ()
        if not links or code in EXPLAINED_TOO:
            links += (Link("waiting", (action["operation_id"],), "what its explain chain says it waits for"),)
        until = action["retry_at"] if code == "retry_backoff" else None
        blocks.append(Hold(code, BLOCK_WORDS.get(code, code), links, until))
    return blocks
