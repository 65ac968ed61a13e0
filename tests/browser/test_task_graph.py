"""A task's graph in Chromium (adapters/console/graph.py), and the lifecycles
with the state a thing is in marked (adapters/diagrams.py).

Three stores, each served: question_holds_open (tasks whose actions are held
by questions and prerequisites, one claimed), the bundled example (an
attempt and a delivery to explain), and a task of 50 actions in five layers
made here, two of them with hostile ids and one waiting for another task's
action. The graph draws every action of a task with its state, what blocks
it and its attempts, as the `actions` view says; its edges are the
prerequisites; the current action is the one the graph's rule names; at 50
actions no two nodes overlap and the graph fits the page; hostile ids are
shown literally and their links lead to their page; each action, attempt
and delivery page marks its state on its lifecycle. The conftest fails a
test on any console error, page error or CSP violation."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest
from tandem.adapters.console import SECURITY_HEADERS
from tandem.adapters.console.graph import cells
from tandem.adapters.console.graph_layout import layers_of
from tandem.adapters.terminal import cut, printable
from tandem.domain.lifecycles import ACTION

from tests.browser.harness import (
    ingest_file,
    ingest_lines,
    mark,
    reloaded,
    running,
    serve,
    serve_example,
    sign_in,
    sqlite_url,
    wait_live,
)
from tests.browser.test_hostile_text import INSPECT, RAW
from tests.e2e.serving import Served

TRACES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"
HOSTILE = '<img src=x onerror="window.__pwned=1"> \x1b[31mred\x1b[0m \u202eevil \x08'
WIDTH, LAYERS = 10, 5  # the big task: five layers of ten
HIGHLIGHT = "rgb(255, 224, 138)"  # console.css's fill of a lifecycle's current state


def at(second: int) -> str:
    return f"2026-03-01T09:{second // 60:02d}:{second % 60:02d}Z"


def big_id(layer: int, index: int) -> str:
    return f"op {HOSTILE} {layer}-{index}" if (layer, index) in ((0, 3), (2, 5)) else f"b{layer}-{index}"


def propose(operation_id: str, task: str, grant: str, second: int, prerequisites: list[str]) -> dict[str, Any]:
    return {
        "type": "action.propose", "at": at(second), "actor": "background", "generation": 1, "operation_id": operation_id,
        "cause_key": f"{task}:{operation_id}", "operation": "worker.start", "target": "t", "resource": f"wt-{operation_id}",
        "task_id": task, "grant_id": grant, "input_revisions": {"task": 1, "grant": 1},
        "prerequisites": [{"operation_id": p, "outcome": "succeeded"} for p in prerequisites],
    }  # fmt: skip


def big_trace() -> list[dict[str, Any]]:
    """Task `big`: layer L's action i waits for layer L-1's i and i+3 (b1-0
    also for `ext-1`, of task `other`); two of layer 0 succeed, one is refused."""
    grant = {"allowed_operations": ["worker.start"], "write_roots": ["/repo"]}
    lines: list[dict[str, Any]] = [
        {"type": "policy.set", "at": at(0), "actor": "daemon", "allowed_operations": ["worker.start"], "write_roots": ["/repo"]},
        {"type": "conversation.open", "at": at(0), "actor": "daemon", "conversation_id": "fg", "role": "foreground", "context_limit": 200000, "reserve": 20000},
        {"type": "conversation.open", "at": at(0), "actor": "daemon", "conversation_id": "bg", "role": "background", "foreground_id": "fg", "context_limit": 100000, "reserve": 10000},
        {"type": "background.bind", "at": at(0), "actor": "daemon", "conversation_id": "bg", "foreground_id": "fg", "generation": 1},
        {"type": "watchdog.heartbeat", "at": at(0), "actor": "watchdog", "generation": 1},
        {"type": "task.delegate", "at": at(1), "task_id": "other", "conversation_id": "fg", "message_refs": [], "goal": "other", "done_when": ["done"], "grant": {"grant_id": "gO", **grant}},
        {"type": "task.delegate", "at": at(1), "task_id": "big", "conversation_id": "fg", "message_refs": [], "goal": "fifty actions", "done_when": ["done"], "grant": {"grant_id": "gB", **grant}},
        propose("ext-1", "other", "gO", 2, []),
    ]  # fmt: skip
    for layer, index in itertools.product(range(LAYERS), range(WIDTH)):
        before = [big_id(layer - 1, index), big_id(layer - 1, (index + 3) % WIDTH)] if layer else []
        lines.append(propose(big_id(layer, index), "big", "gB", 3, before + (["ext-1"] if (layer, index) == (1, 0) else [])))
    for second, (operation_id, result) in enumerate(((big_id(0, 0), "succeeded"), (big_id(0, 3), "succeeded"), (big_id(0, 1), "refused")), 10):
        receipt = "refused" if result == "refused" else "accepted"
        lines.append({"type": "executor.receipt", "at": at(second), "actor": "executor", "operation_id": operation_id, "attempt_id": f"{operation_id}/a1", "result": receipt})
        if result == "succeeded":
            lines.append({"type": "executor.outcome", "at": at(second), "actor": "executor", "operation_id": operation_id, "outcome": "succeeded", "artifact_revision": "r1"})
    return lines


def served_trace(directory: Path, name: str) -> Served:
    url = sqlite_url(directory, name)
    ingest_file(url, TRACES / f"{name}.jsonl")
    return serve(directory, url)


@pytest.fixture(scope="module")
def held(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with running(served_trace(tmp_path_factory.mktemp("held"), "question_holds_open")) as server:
        yield server


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    directory = tmp_path_factory.mktemp("big")
    url = sqlite_url(directory)
    ingest_lines(directory, url, "big", [json.dumps(line) for line in big_trace()])
    with running(serve(directory, url)) as server:
        yield server


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with running(serve_example(tmp_path_factory.mktemp("example"))) as server:
        yield server


def drawn(page: Any) -> dict[str, dict[str, Any]]:
    """Each node of the page's graph, by the id its link names: its state, class, lines and tooltip."""
    nodes = {}
    for node in page.locator("svg.task-graph a.gnode").all():
        href = node.get_attribute("href") or ""
        assert href.startswith("/actions/"), href
        identifier = unquote(href.removeprefix("/actions/").split("?")[0])
        nodes[identifier] = {
            "state": node.get_attribute("data-state"),
            "classes": (node.get_attribute("class") or "").split(),
            "lines": [text.text_content() for text in node.locator("text").all()],
            "title": node.locator("title").text_content(),
        }
    return nodes


def attempts_line(row: dict[str, Any]) -> str:
    attempts = row["attempts"]
    if not attempts:
        return "no attempt"
    return f"1 attempt: {attempts[-1]['state']}" if len(attempts) == 1 else f"{len(attempts)} attempts, last {attempts[-1]['state']}"


def expected_current(task: dict[str, Any], rows: dict[str, dict[str, Any]]) -> str | None:
    """The rule docs/api.md states: in flight, else claimable, else waiting; earliest layer, then the task's order."""
    keys = [key for key in task["actions"]] + sorted({p for key in task["actions"] for p in rows[key]["prerequisites"]} - set(task["actions"]))
    layer, _ = layers_of(keys, [(p, key) for key in task["actions"] for p in rows[key]["prerequisites"]])
    tiers = (
        lambda r: r["state"] in ACTION.in_flight,
        lambda r: r["state"] == "pending" and not r["blocked_by"],
        lambda r: r["state"] in ("pending", "fenced"),
    )
    for tier in tiers:
        found = [(layer[key], n, key) for n, key in enumerate(task["actions"]) if tier(rows[key])]
        if found:
            return min(found)[2]
    return None


def assert_graph_is_the_views(page: Any, server: Served, task: dict[str, Any]) -> dict[str, dict[str, Any]]:
    rows = {row["operation_id"]: row for row in server.client("human").view("actions")["rows"]}
    nodes = drawn(page)
    outside = {p for key in task["actions"] for p in rows[key]["prerequisites"]} - set(task["actions"])
    assert set(nodes) == set(task["actions"]) | outside, task["task_id"]
    for key, node in nodes.items():
        row = rows[key]
        assert node["state"] == row["state"], key
        assert node["lines"][0] == cut(printable(key), cells["id"]), key
        assert node["lines"][1] == row["state"] + (f" · {row['reason']}" if row["reason"] else ""), key
        assert node["lines"][-1] == attempts_line(row), key
        assert node["title"].startswith(printable(key) + ": " + node["lines"][1]), key
        if row["blocked_by"]:  # the first code, then as many as fit, then how many more; all in the tooltip
            line = node["lines"][2]
            assert line.startswith("blocked: " + row["blocked_by"][0]), key
            shown = [code for code in row["blocked_by"] if code in line]
            more = len(row["blocked_by"]) - len(shown)
            assert line == f"blocked: {', '.join(shown)}" + (f" +{more}" if more else ""), key
            assert all(f"{code}: " in node["title"] for code in row["blocked_by"]), key
        assert ("outside" in node["classes"]) == (key in outside), key
    edges = sum(len(rows[key]["prerequisites"]) for key in task["actions"])
    assert page.locator("svg.task-graph g.gedge").count() == edges
    current = [key for key, node in nodes.items() if "current" in node["classes"]]
    assert current == ([] if (want := expected_current(task, rows)) is None else [want]), task["task_id"]
    assert page.locator("svg.task-graph [aria-current=step]").count() == len(current)
    return nodes


def test_each_task_graph_draws_its_actions_as_the_views_say(page: Any, held: Served) -> None:
    sign_in(page, held.url, held.tokens["human"])
    tasks = held.client("human").view("tasks")["rows"]
    assert any(task["actions"] for task in tasks)
    for task in tasks:
        answer = page.goto(held.url + "/tasks/" + quote(task["task_id"], safe=""))
        assert answer is not None and answer.headers["content-security-policy"] == documented_policy()
        if not task["actions"]:
            assert page.locator("svg.task-graph").count() == 0
            continue
        nodes = assert_graph_is_the_views(page, held, task)
        assert len(nodes) >= len(task["actions"])


def documented_policy() -> str:
    """The Content-Security-Policy docs/api.md states (the pages keep it)."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    policy = docs.split("`Content-Security-Policy: ", 1)[1].split("`", 1)[0]
    assert policy == SECURITY_HEADERS["Content-Security-Policy"]
    return policy


def test_fifty_actions_never_overlap_fit_the_page_and_hostile_ids_are_text(page: Any, big: Served) -> None:
    sign_in(page, big.url, big.tokens["human"], "/tasks/big")
    (task,) = [t for t in big.client("human").view("tasks")["rows"] if t["task_id"] == "big"]
    assert len(task["actions"]) == WIDTH * LAYERS
    nodes = assert_graph_is_the_views(page, big, task)
    assert len(nodes) == WIDTH * LAYERS + 1  # and ext-1, of task other
    boxes = [node.bounding_box() for node in page.locator("svg.task-graph a.gnode rect").all()]
    frame = page.locator(".task-graph-frame").bounding_box()
    for a, b in itertools.combinations(boxes, 2):
        assert a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"] or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"], (a, b)
    assert all(frame["x"] <= box["x"] and box["x"] + box["width"] <= frame["x"] + frame["width"] for box in boxes)
    assert page.evaluate("() => { const f = document.querySelector('.task-graph-frame'); return f.scrollWidth <= f.clientWidth; }")
    assert page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    found = page.evaluate(INSPECT, RAW)
    assert found["pwned"] == "undefined" and found["images"] == 0 and found["handlers"] == [], found
    assert found["raw_text"] == [] and found["raw_attributes"] == [], found
    hostile = big_id(2, 5)
    assert nodes[hostile]["lines"][0].endswith("…") and "<img" in nodes[hostile]["title"]
    with page.expect_navigation():
        page.locator(f'svg.task-graph a.gnode[href="/actions/{quote(hostile, safe="")}"]').click()
    assert page.locator("main h1 code").inner_text() == printable(hostile)


def test_the_graph_follows_the_views_live(page: Any, big: Served) -> None:
    """The current action succeeds through the API: its node turns, the next one is current, no reload."""
    sign_in(page, big.url, big.tokens["human"], "/tasks/big")
    wait_live(page)
    mark(page)
    (task,) = [t for t in big.client("human").view("tasks")["rows"] if t["task_id"] == "big"]
    rows = {row["operation_id"]: row for row in big.client("human").view("actions")["rows"]}
    was = expected_current(task, rows)
    assert was is not None and rows[was]["state"] == "submitting"
    attempt = rows[was]["attempts"][-1]["attempt_id"]
    executor = big.client("executor")
    executor.submit({"type": "executor.receipt", "operation_id": was, "attempt_id": attempt, "result": "accepted"})
    executor.submit({"type": "executor.outcome", "operation_id": was, "outcome": "succeeded", "artifact_revision": "r1"})
    page.locator(f'svg.task-graph a.gnode[href="/actions/{quote(was, safe="")}"][data-state=succeeded]').wait_for()
    assert not reloaded(page)
    nodes = assert_graph_is_the_views(page, big, task)
    assert "current" not in nodes[was]["classes"]


def marked(page: Any, lifecycle: str) -> list[str]:
    """The states marked on the page's drawing of `lifecycle`, each checked to be filled as marked."""
    figure = page.locator(f"figure.lifecycle[data-lifecycle={lifecycle}]")
    assert figure.count() == 1, lifecycle
    nodes = figure.locator("svg.lifecycle-drawing g.node.current")
    for node in nodes.all():
        fill = node.locator("path, polygon, ellipse").first.evaluate("e => getComputedStyle(e).fill")
        assert fill == HIGHLIGHT, fill
    return [node.get_attribute("data-state") for node in nodes.all()]


def test_an_action_page_marks_its_state_and_its_latest_attempts(page: Any, held: Served) -> None:
    sign_in(page, held.url, held.tokens["human"])
    rows = held.client("human").view("actions")["rows"]
    assert {"pending", "submitting"} <= {row["state"] for row in rows}
    for row in rows:
        page.goto(held.url + "/actions/" + quote(row["operation_id"], safe=""))
        assert marked(page, "action") == [row["state"]], row["operation_id"]
        if row["attempts"]:
            assert marked(page, "attempt") == [row["attempts"][-1]["state"]], row["operation_id"]
        else:
            assert page.locator("figure.lifecycle[data-lifecycle=attempt]").count() == 0


@pytest.mark.parametrize(("identifier", "kind", "lifecycle"), [("op-api/a1", "attempt", "attempt"), ("fg/d1", "delivery", "delivery"), ("op-api", "operation", "action")])
def test_an_explained_attempt_or_delivery_marks_its_state(page: Any, example: Served, identifier: str, kind: str, lifecycle: str) -> None:
    sign_in(page, example.url, example.tokens["human"], "/explain/" + quote(identifier, safe=""))
    (match,) = [m for m in example.client("human").explain(identifier)["matches"] if m["kind"] == kind]
    assert marked(page, lifecycle) == [match["state"]]
    assert page.locator("figure.lifecycle").count() == len(page.locator("section.chain").all()) or kind == "operation"
