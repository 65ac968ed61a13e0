"""The console's helpers that make a page explain itself, on rows made by
hand: holds and blocks with what they wait for (adapters/console/holds.py),
their links' addresses, lists by page (lists.py), ages by the engine's
clock (templating.py's `ago`)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from tandem.adapters.console.holds import (
    BUSY,
    Link,
    action_blocks,
    Rows,
    href,
    task_holds,
)
from tandem.adapters.console.lists import choice_query, page_query, page_rows, window
from tandem.adapters.console.templating import ago
from tandem.adapters.service import ApiError

NOW = datetime.datetime(2026, 3, 4, 11, 10, tzinfo=datetime.UTC)


def rendered_rows(views: dict[str, Any]) -> Rows:
    """Holds read from views as `/v1/views` renders them (a fake of the
    console's picks): every task and action by id, the questions, and, when
    the views have the actions, those holding a resource."""
    tasks = {row["task_id"]: row for row in views.get("tasks", [])}
    actions = {row["operation_id"]: row for row in views.get("actions", [])}
    questions = [q for q in views.get("questions", []) if q["state"] == "open"]
    busy = [a for a in actions.values() if a["state"] in BUSY] if "actions" in views else None
    return Rows(tasks.get, actions.get, lambda: questions, busy)


def task(task_id: str, state: str = "active", depends_on: tuple[str, ...] = (), holds: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"task_id": task_id, "state": state, "depends_on": list(depends_on), "holds": list(holds), "grant_id": f"g-{task_id}"}


def action(operation_id: str, task_id: str | None = "t1", blocked_by: tuple[str, ...] = (), **fields: Any) -> dict[str, Any]:
    row = {"operation_id": operation_id, "task_id": task_id, "rule_id": None, "runtime_id": None, "resource": "r", "state": "pending",
           "prerequisites": [], "retry_at": None, "blocked_by": list(blocked_by)}  # fmt: skip
    return row | fields


def question(task_id: str, key: str, affected: Any, state: str = "open") -> dict[str, Any]:
    return {"task_id": task_id, "question_key": key, "affected": affected, "state": state}


def waits(holds: list[Any]) -> dict[str, list[tuple[str, str]]]:
    return {hold.code: [(link.label, href(link, None)) for link in hold.links] for hold in holds}


def test_a_task_hold_names_and_links_the_questions_and_tasks() -> None:
    views = {
        "tasks": [task("t0"), task("t1", depends_on=("t0",), holds=("question_hold", "wider_hold", "scope_paused", "task_held")), task("t9", "completed")],
        "questions": [question("t0", "why/not", "task"), question("t9", "old", "unknown"), question("t0", "wide", "unknown"), question("t1", "done", "task", "answered")],
    }  # fmt: skip
    shown = waits(task_holds(rendered_rows(views), views["tasks"][1]))
    assert shown == {
        "question_hold": [("t0/why/not", "/questions#q-t0-why%2Fnot")],  # held through the task it depends on
        "wider_hold": [("t0/wide", "/questions#q-t0-wide")],  # t9's question no longer holds: t9 is completed
        "scope_paused": [("the scope.pause inputs", "/timeline?type=scope.pause")],
        "task_held": [("t0", "/tasks/t0")],
    }


def test_an_action_block_names_what_the_views_name_else_its_explain_chain() -> None:
    views = {
        "tasks": [task("t1")],
        "actions": [
            action("a0", state="submitting", resource="wt"),
            action("a1", blocked_by=("prerequisite_pending", "question_hold", "resource_busy", "budget_exhausted", "retry_backoff", "approval_pending"),
                   prerequisites=["a0"], resource="wt", retry_at="2026-03-04T12:00:00Z"),
        ],
        "questions": [question("t1", "q", ["a0"])],
    }  # fmt: skip
    blocks = action_blocks(rendered_rows(views), views["actions"][1])
    waiting = ("what its explain chain says it waits for", "/actions/a1#waiting")
    assert waits(blocks) == {
        "prerequisite_pending": [("a0", "/actions/a0")],
        "question_hold": [("t1/q", "/questions#q-t1-q")],  # it lists a prerequisite
        "resource_busy": [("a0", "/actions/a0")],
        "budget_exhausted": [("budget_exhausted:g-t1", "/alerts#a-budget_exhausted%3Ag-t1")],
        "retry_backoff": [waiting],
        "approval_pending": [("the conversations", "/conversations"), waiting],
    }
    assert [hold.until for hold in blocks] == [None] * 4 + ["2026-03-04T12:00:00Z", None]
    assert {link.state for link in blocks[0].links} == {"submitting"}
    without_every_action = rendered_rows({k: v for k, v in views.items() if k != "actions"})
    alone = action_blocks(without_every_action, views["actions"][1])
    assert waits(alone)["resource_busy"] == [waiting]  # the page has not every action: its explain chain says who


def test_a_link_is_built_from_its_kinds_prefix_each_part_encoded() -> None:
    hostile = '"><script>x</script>/..//?#'
    assert href(Link("task", (hostile,), "x"), None) == "/tasks/%22%3E%3Cscript%3Ex%3C%2Fscript%3E%2F..%2F%2F%3F%23"
    assert href(Link("question", ("t/1", "k#2"), "x"), 12) == "/questions?at=12#q-t%2F1-k%232"
    assert href(Link("health", (), "x"), 5) == "/?at=5#health"


def test_ages_by_the_engines_clock_past_and_future() -> None:
    assert ago("2026-03-01T09:00:00Z", NOW) == "3 d 2 h ago"
    assert ago("2026-03-04T11:15:00Z", NOW) == "in 5 min"
    assert ago("2026-03-04T11:10:00Z", NOW) == "now"
    assert ago(None, NOW) == ago("not a time", NOW) == ago("2026-03-01T09:00:00Z", None) == "?"


def test_a_window_says_where_it_is_and_how_many_more() -> None:
    rows = list(range(250))
    first, last, beyond = window(rows, 1, 100), window(rows, 3, 100), window(rows, 4, 100)
    assert (first.first, first.last, first.more, first.next, first.previous) == (1, 100, 150, 2, None)
    assert (last.first, last.last, last.more, last.next, last.previous) == (201, 250, 0, None, 2)
    assert (list(beyond.rows), beyond.first, beyond.more) == ([], 0, 0)
    assert window([], 1).total == 0
    assert window(rows, 1).size == page_rows == 25  # a screenful (docs/api.md, "Lists")


@pytest.mark.parametrize("value", ["0", "-1", "x", "1.5", "１", "9" * 10])
def test_a_bad_page_is_refused(value: str) -> None:
    with pytest.raises(ApiError) as refused:
        page_query(value)
    assert refused.value.status == 400 and "a page is a whole number from 1" in refused.value.message


def test_a_filter_takes_the_values_it_names() -> None:
    assert choice_query("state", None, ("a", "b")) is None and choice_query("state", "b", ("a", "b")) == "b"
    with pytest.raises(ApiError) as refused:
        choice_query("state", "c", ("a", "b"))
    assert refused.value.message == "?state='c': one of a, b"
    assert page_query(None) == page_query("") == 1 and page_query("7") == 7
