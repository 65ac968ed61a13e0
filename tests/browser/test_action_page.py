"""An action's page in Chromium: what blocks it, in words and in the
contract's order, each code with what it waits for named and linked (the
questions, the prerequisite, the task; the same for a task's holds, on its
page and the tasks list, and on the list of held actions); its attempts with their states, `unknown` shown as
uncertain and never as sent; and its explain chain, every step linked to its
event on the timeline (the link lands on that row, inside its input).

Two fixture traces, each ingested and served: question_holds_open (actions
held by questions, prerequisites and a task) and unknown_receipt_reconcile
(an executor receipt `unknown`, later reconciled)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tandem.adapters.console.templating import BLOCK_WORDS
from tests.browser.harness import ingest_file, running, serve, sign_in, sqlite_url
from tests.e2e.serving import Served

TRACES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"


def served(directory: Path, name: str) -> Served:
    url = sqlite_url(directory, name)
    ingest_file(url, TRACES / f"{name}.jsonl")
    return serve(directory, url)


@pytest.fixture(scope="module")
def held(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with running(served(tmp_path_factory.mktemp("held"), "question_holds_open")) as server:
        yield server


@pytest.fixture(scope="module")
def uncertain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with running(served(tmp_path_factory.mktemp("uncertain"), "unknown_receipt_reconcile")) as server:
        yield server


def blocked_shown(page: Any, where: str = "dl.facts ul.blocked") -> list[tuple[str, str, list[str]]]:
    """(code, words, what it waits for: each link's text) per item of a "Blocked by" or "Holds"."""
    items = page.locator(f"{where} > li")
    return [
        (item.locator("code").first.inner_text(), item.inner_text().partition(" \u2014 ")[0], item.locator(".waits-for a").all_inner_texts())
        for item in items.all()
    ]


# What each held action of question_holds_open waits for, by code: q1 lists
# a3; q2 holds the whole task tA (and tB, which depends on it); q3's scope is
# unknown (it holds everything); a3's prerequisite a2 is out with the executor.
WAITS_FOR = {
    "a3": {"prerequisite_pending": ["a2"], "question_hold": ["tA/q1", "tA/q2"], "wider_hold": ["tC/q3"]},
    "a6": {"question_hold": ["tA/q2"], "wider_hold": ["tC/q3"]},
    "b1": {"question_hold": ["tA/q2"], "wider_hold": ["tC/q3"], "task_held": ["tA"]},
    "c2": {"wider_hold": ["tC/q3"]},
}
HOLDS = {
    "tA": {"question_hold": ["tA/q2"], "wider_hold": ["tC/q3"]},
    "tB": {"question_hold": ["tA/q2"], "wider_hold": ["tC/q3"], "task_held": ["tA"]},
    "tC": {"wider_hold": ["tC/q3"]},
}


def test_what_blocks_an_action_is_said_in_words_in_order_with_what_it_waits_for(page: Any, held: Served) -> None:
    sign_in(page, held.url, held.tokens["human"])
    actions = held.client("human").view("actions")["rows"]
    blocked = [a for a in actions if a["blocked_by"]]
    assert {a["operation_id"] for a in blocked} == set(WAITS_FOR)
    for action in blocked:
        answer = page.goto(held.url + f"/actions/{action['operation_id']}")
        assert answer is not None and answer.status == 200
        shown = blocked_shown(page)
        assert [code for code, _, _ in shown] == action["blocked_by"], action["operation_id"]
        for code, text, links in shown:
            assert text == f"{code}: {BLOCK_WORDS[code]}"
            assert links == WAITS_FOR[action["operation_id"]][code], (action["operation_id"], code)
    free = next(a for a in actions if not a["blocked_by"])
    page.goto(held.url + f"/actions/{free['operation_id']}")
    assert page.locator("dl.facts ul.blocked").count() == 0
    blocked_by = page.locator("dl.facts dt", has_text="Blocked by")
    assert blocked_by.locator("xpath=following-sibling::dd[1]").inner_text() == "\u2014"


def test_the_links_lead_to_what_a_hold_waits_for(page: Any, held: Served) -> None:
    """A question's link lands on its article (its answer form); a task's on its page; the same on a task's page and the held list."""
    sign_in(page, held.url, held.tokens["human"], "/actions/b1")
    with page.expect_navigation():
        page.locator("dl.facts ul.blocked li", has_text="question_hold").locator("a", has_text="tA/q2").click()
    assert page.url.endswith("/questions#q-tA-q2")
    assert page.locator("article.question:target textarea").count() == 1
    page.goto(held.url + "/actions/b1")
    with page.expect_navigation():
        page.locator("dl.facts ul.blocked li", has_text="task_held").locator("a", has_text="tA").click()
    assert page.url.endswith("/tasks/tA") and page.locator("main h1 code").inner_text() == "tA"
    for task, holds in HOLDS.items():
        page.goto(held.url + f"/tasks/{task}")
        shown = blocked_shown(page, "dl.facts ul.holds")
        assert [(code, links) for code, _, links in shown] == list(holds.items()), task
    page.goto(held.url + "/tasks")
    rows = page.locator("table tbody tr")
    assert rows.count() == 3
    for index, task in enumerate(["tC", "tB", "tA"]):  # newest first (docs/api.md, "Lists")
        shown = blocked_shown(page, f"table tbody tr:nth-child({index + 1}) ul.holds")
        assert [(code, links) for code, _, links in shown] == list(HOLDS[task].items()), task
    page.goto(held.url + "/actions?state=pending&held=1")
    listed = page.locator("table tbody tr td:first-child a").all_inner_texts()
    assert listed == sorted(WAITS_FOR)
    for index, operation in enumerate(listed):
        shown = blocked_shown(page, f"table tbody tr:nth-child({index + 1}) ul.blocked")
        assert {code: links for code, _, links in shown} == WAITS_FOR[operation], operation


def position_of(server: Served, kind: str, **fields: Any) -> int:
    """The first event of `kind` whose body has `fields`."""
    client = server.client("human")
    after = 0
    while True:
        page = client.events(after=after, limit=1000)
        for event in page["events"]:
            if event["type"] == kind and all(event["body"].get(k) == v for k, v in fields.items()):
                return int(event["position"])
        if page["next_after"] is None:
            raise AssertionError(f"no {kind} with {fields}")
        after = page["next_after"]


def attempts_shown(page: Any) -> dict[str, tuple[str, str]]:
    """attempt id: (its state's class, the state's words)."""
    shown = {}
    for item in page.locator("ul.attempts li").all():
        badge = item.locator(".state").first
        state = next(c for c in (badge.get_attribute("class") or "").split() if c.startswith("state-"))
        shown[item.locator("code").first.inner_text()] = (state.removeprefix("state-"), badge.inner_text())
    return shown


def test_an_unknown_receipt_is_shown_uncertain_never_as_sent(page: Any, uncertain: Served) -> None:
    sign_in(page, uncertain.url, uncertain.tokens["human"])
    unknown_at = position_of(uncertain, "AttemptUpdated", attempt_state="unknown")
    page.goto(uncertain.url + f"/actions/a1?at={unknown_at}")
    assert page.locator("main h1 .state").inner_text() == "unknown"
    (badge,) = page.locator("ul.attempts li .state").all()
    assert attempts_shown(page) == {"a1/a1": ("unknown", "unknown \u2014 not known to be received")}
    assert "never retried blindly" in (badge.get_attribute("title") or "")
    words = page.locator("ul.attempts").inner_text().lower().replace("not known to be received", "")
    assert all(word not in words for word in ("sent", "accepted", "delivered", "received")), words
    # Reconciled: not received, claimed again; the second attempt accepted.
    page.goto(uncertain.url + "/actions/a1")
    (action,) = [a for a in uncertain.client("human").view("actions")["rows"] if a["operation_id"] == "a1"]
    expected = {at["attempt_id"]: at["state"] for at in action["attempts"]}
    assert expected == {"a1/a1": "not_received", "a1/a2": "accepted"}
    assert {attempt: state for attempt, (state, _) in attempts_shown(page).items()} == expected


def test_each_explain_step_links_to_its_event_on_the_timeline(page: Any, uncertain: Served) -> None:
    sign_in(page, uncertain.url, uncertain.tokens["human"], "/actions/a1")
    explained = uncertain.client("human").explain("a1")
    (operation,) = [m for m in explained["matches"] if m["kind"] == "operation"]
    steps = page.locator("section.chain").first.locator("ol.links > li")
    assert steps.count() == len(operation["steps"]) >= 4
    for number, step in enumerate(operation["steps"]):
        link = steps.nth(number).locator("a.pos")
        assert link.inner_text() == f"#{step['position']}"
        assert link.get_attribute("href") == f"/timeline?before={step['position'] + 1}#p{step['position']}"
    for number in (0, len(operation["steps"]) - 1):
        step = operation["steps"][number]
        page.goto(uncertain.url + "/actions/a1")
        with page.expect_navigation():
            page.locator("section.chain").first.locator("ol.links > li").nth(number).locator("a.pos").click()
        # The first input on the page is the one that holds the event; the
        # link's fragment opened its box of events, the event's row shown.
        entry = page.locator("table.timeline > tbody.entry").first
        row = entry.locator(f"tr.caused tr#p{step['position']}")
        assert row.is_visible() and entry.locator("tr.caused details").get_attribute("open") is not None
        assert row.locator("td").nth(0).inner_text() == str(step["position"])
        assert row.locator("td").nth(1).inner_text() == step["event"]
        record = int((entry.get_attribute("id") or "")[1:])
        assert record <= step["position"] and entry.locator("tr.caused tbody tr").first.get_attribute("id") == f"p{record}"
