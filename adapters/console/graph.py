"""A task's graph on its console page (docs/api.md, "The console"): its
actions as nodes, each prerequisite an edge from it to its dependant, drawn
server-side as inline SVG by adapters/console/graph_layout.py's layout.

Each node says its action's state (and the engine's reason for it), what
blocks it and its attempts, and links to `/actions/{id}` (the id
percent-encoded, as every console link). A prerequisite of another task (or
of a rule) is drawn too, dashed, with what the views say of it. Text is
data: every id, state and code goes through `printable` and is escaped, in
the node and in its tooltip (`<title>`); a line too long for its node is cut
with `…` (the tooltip and the table under the graph say it whole).

The current node is the action a person would look at first: the one in
flight (an attempt out with the executor: ACTION.in_flight), else the one
the engine would claim next (pending, nothing blocking it), else the one
waiting (pending but blocked, or fenced); the earliest layer first, then the
task's order. A task whose actions all ended has none.

At most `node_limit` actions are drawn (the task's first, in its order);
the graph then says how many more there are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from itertools import pairwise
from typing import Any
from urllib.parse import quote

from markupsafe import Markup, escape
from tandem.adapters.console.graph_layout import Box, Layout, Route, layout
from tandem.adapters.terminal import cut, printable
from tandem.domain.lifecycles import ACTION
from tandem.domain.reasons import BLOCK_WORDS

node_limit = 200
padding = 8  # px inside a node
line_height = 14
cells = {"id": 25, "text": 32}  # a line's width in characters (monospace 12 px; sans 11 px, 5.5 px or so each)
# Which actions may be current, best first (see the module's docstring).
CURRENT_TIERS: tuple[Any, ...] = (
    lambda row: row["state"] in ACTION.in_flight,
    lambda row: row["state"] == "pending" and not row["blocked_by"],
    lambda row: row["state"] in ("pending", "fenced"),
)
STATE_CLASS = re.compile(r"[a-z_]{1,40}")  # a state as a class name: the lifecycles' names are such


def task_graph(task: Mapping[str, Any], rows: Iterable[Mapping[str, Any]], seen: Any) -> Markup:
    """The graph of `task` (a `tasks` row): its actions from `rows` (the
    `actions` rows picked for its page), the prerequisites among them, and
    those outside it; links as of `seen` (its `?at=` in the past)."""
    by_id = {row["operation_id"]: row for row in rows}
    ids = [i for i in task["actions"] if i in by_id]
    drawn = ids[:node_limit]
    outside = [p for i in drawn for p in by_id[i]["prerequisites"] if p not in drawn]
    keys = drawn + list(dict.fromkeys(outside))
    edges = [(p, i) for i in drawn for p in by_id[i]["prerequisites"]]
    made = layout(keys, edges)
    at = f"?at={seen.position}" if seen.past else ""
    now = current([by_id[i] for i in drawn], made)
    parts = [
        (
            f'<svg class="task-graph" xmlns="http://www.w3.org/2000/svg" width="{_n(made.width)}" height="{_n(made.height)}"'
            f' viewBox="0 0 {_n(made.width)} {_n(made.height)}" data-direction="{"down" if made.down else "right"}">'
        ),
        f"<title>{escape(printable(_summary(task, drawn, edges)))}</title>",
        *(_edge(route, by_id, made.down) for route in made.routes),
        *(_node(made.boxes[key], by_id.get(key), task, at, key == now) for key in keys),
        "</svg>",
    ]
    more = len(ids) - len(drawn)
    note = f'<p class="note graph-more">{more} more actions not drawn: the graph draws a task\'s first {node_limit}; the table lists them all.</p>' if more else ""
    return Markup(f'<div class="task-graph-frame">{"".join(parts)}</div>{note}')


def current(rows: list[Mapping[str, Any]], made: Layout) -> str | None:
    """The current action's id (the module's docstring), or None."""
    for tier in CURRENT_TIERS:
        found = [(made.boxes[row["operation_id"]].layer, n, row["operation_id"]) for n, row in enumerate(rows) if tier(row)]
        if found:
            return min(found)[2]
    return None


def _summary(task: Mapping[str, Any], drawn: list[str], edges: list[tuple[str, str]]) -> str:
    return f"The actions of task {task['task_id']}: {len(drawn)} drawn, {len(edges)} prerequisites"


def _n(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def _state_class(state: Any) -> str:
    return state if isinstance(state, str) and STATE_CLASS.fullmatch(state) else "other"


def _lines(key: str, row: Mapping[str, Any] | None, task: Mapping[str, Any]) -> list[str]:
    """A node's text, line by line, before cutting: its id, its state (and
    why), what blocks it (or its operation), its attempts; of another task's
    action, whose it is."""
    if row is None:
        return [key, "not in the views", "", ""]
    state = row["state"] + (f" · {row['reason']}" if row.get("reason") else "")
    if row["task_id"] != task["task_id"]:
        whose = f"task {row['task_id']}" if row["task_id"] else f"rule {row['rule_id']}"
        return [key, state, f"of {whose}", _attempts(row)]
    blocked = _blocked(row["blocked_by"]) if row["blocked_by"] else f"{row['operation']} on {row['resource']}"
    return [key, state, blocked, _attempts(row)]


def _blocked(codes: list[str]) -> str:
    """`blocked: CODE, CODE +N`: as many codes as fit a line (the first always), then how many more."""
    shown = 1
    while shown < len(codes) and len(_blocked_line(codes, shown + 1)) <= cells["text"]:
        shown += 1
    return _blocked_line(codes, shown)


def _blocked_line(codes: list[str], shown: int) -> str:
    more = len(codes) - shown
    return f"blocked: {', '.join(codes[:shown])}" + (f" +{more}" if more else "")


def _attempts(row: Mapping[str, Any]) -> str:
    attempts = row["attempts"]
    if not attempts:
        return "no attempt"
    last = attempts[-1]["state"]
    return f"1 attempt: {last}" if len(attempts) == 1 else f"{len(attempts)} attempts, last {last}"


def _tooltip(key: str, row: Mapping[str, Any] | None, lines: list[str], current: bool) -> str:
    """Everything the node says, whole, with what blocks it in words."""
    if row is None:
        return f"{key}: not in the views"
    said = [f"{key}: {lines[1]}", *lines[2:]]
    said += [f"{code}: {BLOCK_WORDS.get(code, code)}" for code in row["blocked_by"]]
    said += [f"attempt {a['attempt_id']}: {a['state']}" for a in row["attempts"]]
    if current:
        said.append("the current action")
    return "\n".join(said)


def _node(box: Box, row: Mapping[str, Any] | None, task: Mapping[str, Any], at: str, is_current: bool) -> str:
    key = box.key
    lines = _lines(key, row, task)
    state = _state_class(row["state"]) if row else "other"
    classes = ["gnode", f"s-{state}"]
    if row is None or row["task_id"] != task["task_id"]:
        classes.append("outside")
    if is_current:
        classes.append("current")
    texts = [
        f'<text x="{padding}" y="{_n(padding + 11 + n * line_height)}" class="{"gid" if n == 0 else "gline"}">'
        f'{escape(cut(printable(line), cells["id" if n == 0 else "text"]))}</text>'
        for n, line in enumerate(lines)
        if line
    ]
    tip = escape("\n".join(printable(line) for line in _tooltip(key, row, lines, is_current).split("\n")))
    marked = ' aria-current="step"' if is_current else ""
    return (
        f'<a href="/actions/{quote(key, safe="")}{at}" class="{" ".join(classes)}" data-state="{state}"{marked}>'
        f"<title>{tip}</title>"
        f'<svg x="{_n(box.x)}" y="{_n(box.y)}" width="{_n(box.width)}" height="{_n(box.height)}">'
        f'<rect x="1" y="1" width="{_n(box.width - 2)}" height="{_n(box.height - 2)}" rx="6"/>{"".join(texts)}</svg></a>'
    )


def _edge(route: Route, by_id: Mapping[str, Mapping[str, Any]], down: bool) -> str:
    """A smooth path (a curve across each gap between layers, straight
    through each slot) and its arrowhead; `met` when the prerequisite succeeded."""
    points = route.points
    path = [f"M{_n(points[0][0])} {_n(points[0][1])}"]
    for n, ((x1, y1), (x2, y2)) in enumerate(pairwise(points)):
        if n % 2:  # through a slot
            path.append(f"L{_n(x2)} {_n(y2)}")
        elif down:
            middle = (y1 + y2) / 2
            path.append(f"C{_n(x1)} {_n(middle)} {_n(x2)} {_n(middle)} {_n(x2)} {_n(y2)}")
        else:
            middle = (x1 + x2) / 2
            path.append(f"C{_n(middle)} {_n(y1)} {_n(middle)} {_n(y2)} {_n(x2)} {_n(y2)}")
    x, y = points[-1]
    head = (x - 4, y - 7, x + 4, y - 7) if down else (x - 7, y - 4, x - 7, y + 4)
    source = by_id.get(route.source)
    kind = "gedge met" if source is not None and source["state"] == "succeeded" else "gedge"
    return (
        f'<g class="{kind}"><path d="{" ".join(path)}"/>'
        f'<polygon points="{_n(head[0])},{_n(head[1])} {_n(x)},{_n(y)} {_n(head[2])},{_n(head[3])}"/></g>'
    )
