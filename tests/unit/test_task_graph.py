"""A task's graph (adapters/console/graph_layout.py, graph.py) and the
lifecycles with a state marked (adapters/diagrams.py), without a browser.

The layout at 50 actions, in every shape a task's graph takes (a chain, all
independent, a fan out and in, layers of ten, random prerequisites): every
action has a box of the drawing's size (nothing is shrunk to fit), no two
things overlap (boxes and the slots long edges pass through), everything is
inside the drawing, every edge goes from a layer to a later one along a path
that only bends in the gaps between layers (so it never runs over a node),
and the drawing fits the console's page whenever one of its two directions
can. The SVG is well-formed XML whose text is the ids and states escaped
(hostile ones shown literally), with one link per action."""

from __future__ import annotations

import itertools
import random
import xml.etree.ElementTree as ET
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote

import pytest
from tandem.adapters.console.figures import lifecycle_of
from tandem.adapters.console.graph import cells, current, node_limit, task_graph
from tandem.adapters.console.graph_layout import (
    Box,
    Layout,
    Sizes,
    crossings,
    fit,
    layers_of,
    layout,
)
from tandem.adapters.diagrams import LIFECYCLE_NAMES, highlighted_svg, states_of
from tandem.adapters.terminal import cut, printable

SIZES = Sizes()
SVG = "{http://www.w3.org/2000/svg}"
Edges = list[tuple[str, str]]


def chain(n: int) -> tuple[list[str], Edges]:
    keys = [f"c{i}" for i in range(n)]
    return keys, list(itertools.pairwise(keys))


def independent(n: int) -> tuple[list[str], Edges]:
    return [f"w{i}" for i in range(n)], []


def fan(n: int) -> tuple[list[str], Edges]:
    """One root, n - 2 in the middle, one sink waiting for them all."""
    middle = [f"m{i}" for i in range(n - 2)]
    return ["root", *middle, "sink"], [("root", m) for m in middle] + [(m, "sink") for m in middle]


def layered(n: int, width: int = 10, seed: int = 3) -> tuple[list[str], Edges]:
    """n / width layers of `width`, each action waiting for two of the layer before."""
    pick = random.Random(seed)
    keys = [f"l{i // width}-{i % width}" for i in range(n)]
    edges = {(f"l{layer - 1}-{pick.randrange(width)}", f"l{layer}-{i}") for layer in range(1, n // width) for i in range(width) for _ in range(2)}
    return keys, sorted(edges)


def scattered(n: int, seed: int, chance: float = 0.06) -> tuple[list[str], Edges]:
    """Random prerequisites, each on an action proposed before."""
    pick = random.Random(seed)
    keys = [f"r{i}" for i in range(n)]
    return keys, [(keys[j], keys[i]) for i in range(n) for j in range(i) if pick.random() < chance]


SHAPES = {
    "chain": chain(50),
    "independent": independent(50),
    "fan": fan(50),
    "layers of ten": layered(50),
    **{f"scattered {seed}": scattered(50, seed) for seed in range(4)},
}


# The shapes that fit the page, and whether down (True) or right (False).
FITTING = {"chain": True, "independent": False, "fan": False, "layers of ten": False}


def overlapping(boxes: list[Box]) -> list[tuple[str, str]]:
    return [
        (a.key, b.key)
        for a, b in itertools.combinations(boxes, 2)
        if a.x < b.x + b.width and b.x < a.x + a.width and a.y < b.y + b.height and b.y < a.y + a.height
    ]


def layer_spans(made: Layout) -> list[tuple[float, float]]:
    """Each layer's extent along the direction of the edges."""
    spans: dict[int, tuple[float, float]] = {}
    for box in made.boxes.values():
        start, length = (box.y, box.height) if made.down else (box.x, box.width)
        spans[box.layer] = (start, start + length)
    return [spans[layer] for layer in sorted(spans)]


@pytest.mark.parametrize("shape", SHAPES)
def test_fifty_actions_never_overlap_and_fit(shape: str) -> None:
    keys, edges = SHAPES[shape]
    made = layout(keys, edges)
    assert list(made.boxes) == keys
    node_size = {(SIZES.node_width, SIZES.node_height)}
    assert {(box.width, box.height) for box in made.boxes.values()} == node_size  # readable: nothing shrunk
    every = [*made.boxes.values(), *made.slots]
    assert overlapping(every) == []
    for box in every:
        assert 0 <= box.x and box.x + box.width <= made.width, box
        assert 0 <= box.y and box.y + box.height <= made.height, box
    right, downwards = layout(keys, edges, down=False), layout(keys, edges, down=True)
    if right.width <= SIZES.fit_width:  # left to right while that fits the page
        assert not made.down and made.width == right.width
    else:  # else the narrower way: down, when that fits
        assert made.width == min(right.width, downwards.width)
    assert made.width <= SIZES.fit_width or min(right.width, downwards.width) > SIZES.fit_width
    if shape in FITTING:
        assert (made.down, made.width <= SIZES.fit_width) == (FITTING[shape], True), (made.down, made.width)


@pytest.mark.parametrize("shape", SHAPES)
def test_edges_go_forward_and_bend_only_between_layers(shape: str) -> None:
    keys, edges = SHAPES[shape]
    made = layout(keys, edges)
    spans = layer_spans(made)
    assert sorted((route.source, route.target) for route in made.routes) == sorted(set(edges))
    along = 1 if made.down else 0
    for route in made.routes:
        source, target = made.boxes[route.source], made.boxes[route.target]
        assert source.layer < target.layer
        assert route.points[0][along] == spans[source.layer][1]  # leaves its source's far side
        assert route.points[-1][along] == spans[target.layer][0]  # enters its target's near side
        for number, (start, end) in enumerate(itertools.pairwise(route.points)):
            if number % 2 == 0:  # across one gap between layers, which holds no node
                layer = source.layer + number // 2
                assert (start[along], end[along]) == (spans[layer][1], spans[layer + 1][0])
            else:  # straight through a slot of the layer it crosses
                assert start[1 - along] == end[1 - along]


def test_layers_are_the_longest_path_of_prerequisites() -> None:
    layer, back = layers_of(["a", "b", "c", "d"], [("a", "b"), ("b", "c"), ("a", "c"), ("a", "d")])
    assert layer == {"a": 0, "b": 1, "c": 2, "d": 1} and back == []


def test_a_cycle_is_broken_not_looped_on() -> None:
    made = layout(["a", "b", "c"], [("a", "b"), ("b", "c"), ("c", "a")])
    assert len(made.dropped) == 1 and len(made.routes) == 2
    assert overlapping(list(made.boxes.values())) == []


def test_the_order_within_layers_uncrosses_what_it_can() -> None:
    # Given crossed: a1 over b1, but b2 (b1's) over a2 (a1's); laid out, no crossing.
    made = layout(["a1", "b1", "b2", "a2"], [("a1", "a2"), ("b1", "b2")])
    boxes = made.boxes
    assert (boxes["a1"].y < boxes["b1"].y) == (boxes["a2"].y < boxes["b2"].y)
    columns = [["a1", "b1"], ["b2", "a2"]]
    assert crossings(columns, {"a1": ["a2"], "b1": ["b2"]}) == 1
    assert crossings([["a1", "b1"], ["a2", "b2"]], {"a1": ["a2"], "b1": ["b2"]}) == 0


def test_fit_keeps_order_and_gap_as_near_as_it_can() -> None:
    assert fit([100.0], [20.0], 10, 0) == [90.0]  # alone: centred where wanted
    tops = fit([50.0, 50.0, 50.0], [20.0, 20.0, 20.0], 10, 0)
    assert tops == [10.0, 40.0, 70.0]  # three wanting one place: centred on it (centres 20, 50, 80), in order
    assert fit([0.0, 0.0], [20.0, 20.0], 10, 5) == [5.0, 35.0]  # never above the top


def test_layout_refuses_an_edge_to_a_node_not_given() -> None:
    with pytest.raises(ValueError, match="edges name nodes not given"):
        layout(["a"], [("a", "b")])


# ---------------------------------------------------------------- the SVG

HOSTILE = '<img src=x onerror="window.__pwned=1"> \x1b[31mred\x1b[0m \u202eevil & "q" \x08'


def row(operation_id: str, state: str = "pending", *, task: str = "t1", prerequisites: tuple[str, ...] = (), **more: Any) -> dict[str, Any]:
    return {
        "operation_id": operation_id, "task_id": task, "rule_id": None, "operation": "worker.start", "resource": "wt",
        "state": state, "reason": None, "blocked_by": [], "attempts": [], "prerequisites": list(prerequisites), **more,
    }  # fmt: skip


def parsed(rows: list[dict[str, Any]], task_id: str = "t1", past: int | None = None) -> tuple[ET.Element, str]:
    task = {"task_id": task_id, "actions": [r["operation_id"] for r in rows if r["task_id"] == task_id]}
    seen = SimpleNamespace(past=past is not None, position=past)
    markup = str(task_graph(task, rows, seen))
    svg = markup[markup.index("<svg") : markup.rindex("</svg>") + len("</svg>")]
    return ET.fromstring(svg), markup


def nodes(svg: ET.Element) -> list[ET.Element]:
    return svg.findall(f"{SVG}a")


def test_hostile_ids_are_escaped_text_and_percent_encoded_links() -> None:
    rows = [row("plain"), row("op " + HOSTILE, prerequisites=("plain",), blocked_by=["prerequisite_pending"])]
    svg, markup = parsed(rows, past=7)
    assert "<img" not in markup and "\x1b" not in markup and "\u202e" not in markup
    shown = {a.get("href"): a for a in nodes(svg)}
    hostile = shown[f"/actions/{quote('op ' + HOSTILE, safe='')}?at=7"]
    texts = [t.text for t in hostile.iter(f"{SVG}text")]
    assert texts[0] == cut(printable("op " + HOSTILE), cells["id"]) and texts[0].endswith("…")
    assert texts[1:] == ["pending", "blocked: prerequisite_pending", "no attempt"]
    title = hostile.find(f"{SVG}title")
    assert title is not None and title.text is not None
    assert title.text.startswith(printable("op " + HOSTILE) + ": pending")
    assert "prerequisite_pending: waits for a prerequisite's outcome" in title.text
    assert len(svg.findall(f"{SVG}g")) == 1  # one edge


def test_each_action_is_a_node_with_its_state_and_attempts_and_others_dashed() -> None:
    attempts = [{"attempt_id": "b/a1", "state": "refused"}, {"attempt_id": "b/a2", "state": "accepted"}]
    rows = [row("a", "succeeded"), row("b", "accepted", prerequisites=("a", "x"), attempts=attempts), row("x", "failed", task="t2")]
    svg, _ = parsed(rows)
    by_href = {a.get("href"): a for a in nodes(svg)}
    assert sorted(by_href) == ["/actions/a", "/actions/b", "/actions/x"]
    assert [t.text for t in by_href["/actions/b"].iter(f"{SVG}text")] == ["b", "accepted", "worker.start on wt", "2 attempts, last accepted"]
    assert by_href["/actions/b"].get("aria-current") == "step" and "current" in (by_href["/actions/b"].get("class") or "")
    assert "outside" in (by_href["/actions/x"].get("class") or "") and by_href["/actions/x"].get("data-state") == "failed"
    assert [t.text for t in by_href["/actions/x"].iter(f"{SVG}text")][2] == "of task t2"
    edges = svg.findall(f"{SVG}g")
    assert sorted(e.get("class") or "" for e in edges) == ["gedge", "gedge met"]


def test_the_current_action_is_in_flight_else_next_else_waiting() -> None:
    def current_of(rows: list[dict[str, Any]]) -> str | None:
        keys = [r["operation_id"] for r in rows]
        return current(rows, layout(keys, [(p, r["operation_id"]) for r in rows for p in r["prerequisites"]]))

    waiting = row("w", "fenced")
    blocked = row("b", blocked_by=["question_hold"])
    ready = row("r", prerequisites=("w",))
    assert current_of([waiting, blocked, ready, row("f", "queued", prerequisites=("w",))]) == "f"
    assert current_of([waiting, blocked, ready]) == "r"
    assert current_of([blocked, waiting]) == "b" and current_of([waiting, blocked]) == "w"  # both wait in layer 0: the task's order
    later = row("l", blocked_by=["prerequisite_pending"], prerequisites=("w",))
    assert current_of([later, waiting]) == "w"  # the earlier layer first
    assert current_of([row("s", "succeeded"), row("c", "cancelled")]) is None


def test_at_most_node_limit_actions_are_drawn_and_the_rest_counted() -> None:
    rows = [row(f"op-{n:03d}") for n in range(node_limit + 7)]
    svg, markup = parsed(rows)
    assert len(nodes(svg)) == node_limit
    assert "7 more actions not drawn" in markup


# ---------------------------------------------------------- the lifecycles


@pytest.mark.parametrize("name", ["action", "attempt", "delivery"])
def test_a_lifecycle_marks_the_state_it_is_given_and_only_it(name: str) -> None:
    for state in states_of(name):
        svg = ET.fromstring(highlighted_svg(name, state))
        marked = [g for g in svg.iter(f"{SVG}g") if "current" in (g.get("class") or "").split()]
        assert [g.get("data-state") for g in marked] == [state]
        ids = [element.get("id") for element in svg.iter() if element.get("id")]
        assert ids and all(i.startswith(f"lifecycle-{name}-") for i in ids) and len(ids) == len(set(ids))
    assert 'class="node current"' not in highlighted_svg(name, "no such state")


def test_which_lifecycle_an_explained_thing_is_drawn_on() -> None:
    assert lifecycle_of("operation", "unknown") == "action"
    assert lifecycle_of("attempt", "not_received") == "attempt"
    assert lifecycle_of("delivery", "accepted") == "delivery"
    assert lifecycle_of("cause", "revision 1, triaged actionable") is None  # a sentence, no state
    assert lifecycle_of("operation", "no such state") is None
    assert set(LIFECYCLE_NAMES) >= {"action", "attempt", "delivery"}
    with pytest.raises(KeyError):
        highlighted_svg("../pyproject", "x")
