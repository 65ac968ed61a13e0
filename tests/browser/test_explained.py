"""Everything a console page shows is explained there (docs/api.md, "The
console"), in Chromium, on a trace of our own that has more of everything
than a page lists at once: 105 tasks, 7 open questions, 14 cards (each
raising an alert, with more raised by the questions going stale), two
actions held by their task's question, and an engine clock three days past
them.

- the overview's counts each link to the list they count, which holds
  exactly that many rows; its short lists say how many more, linked;
- an alert shows why it was raised (its card's summary, the update it is
  about) and since when, as a date with its age beside by the engine's clock;
- a list longer than a page is paginated, every row reachable;
- an unknown task, action or explain id answers a 404 page (with the nav:
  a console page), the policy unchanged; in the past, a task that came
  later says so.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from tandem.adapters.console.lists import page_rows
from tandem.adapters.console import CONTENT_SECURITY_POLICY

from tests.browser.harness import (
    Watch,
    ingest_lines,
    running,
    serve,
    sign_in,
    sqlite_url,
)
from tests.e2e.serving import Served

START = datetime.datetime(2026, 3, 1, 9, 0, tzinfo=datetime.UTC)
CLOCK_S = 3 * 86400 + 7800  # the last input: the engine's clock
TASKS, QUESTIONS, CARDS = 105, 7, 14
GRANT = {"allowed_operations": ["worker.start"], "write_roots": ["/repo"]}


def stamp(seconds: int) -> str:
    return (START + datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def trace() -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = [
        {"type": "policy.set", "at": stamp(0), "actor": "daemon", **GRANT},
        {"type": "conversation.open", "at": stamp(0), "actor": "daemon", "conversation_id": "fg", "role": "foreground", "context_limit": 200000, "reserve": 20000},
        {"type": "conversation.open", "at": stamp(0), "actor": "daemon", "conversation_id": "bg", "role": "background", "foreground_id": "fg", "context_limit": 100000, "reserve": 10000},
        {"type": "background.bind", "at": stamp(0), "actor": "daemon", "conversation_id": "bg", "foreground_id": "fg", "generation": 1},
    ]  # fmt: skip
    for n in range(TASKS):
        lines.append({"type": "task.delegate", "at": stamp(10 + n), "actor": "human", "task_id": f"t{n:03d}", "conversation_id": "fg", "message_refs": [],
                      "goal": f"goal {n}", "done_when": ["done"], "grant": {"grant_id": f"g{n:03d}", **GRANT}})  # fmt: skip
    for n in range(QUESTIONS):
        lines.append({"type": "question.raise", "at": stamp(200 + n), "actor": "background", "task_id": f"t{n:03d}", "question_key": f"q{n}",
                      "recipient": "human", "blocking_reason": f"reason {n}", "affected": "task", "evidence_revision": 1})  # fmt: skip
    for n in range(2):  # after the questions: held by them
        lines.append({"type": "action.propose", "at": stamp(250 + n), "actor": "human", "operation_id": f"op{n}", "cause_key": f"t{n:03d}:op{n}",
                      "operation": "worker.start", "target": f"op{n}", "resource": f"wt-{n}", "task_id": f"t{n:03d}", "grant_id": f"g{n:03d}",
                      "unattended": False, "input_revisions": {"task": 1, "grant": 1}})  # fmt: skip
    lines.append({"type": "observe", "at": stamp(300), "actor": "source", "source_id": "s1", "kind": "comment", "scope": "pr-1", "fingerprint": "F", "complete": True, "text": "hello"})
    for n in range(CARDS):
        lines.append({"type": "card.propose", "at": stamp(400 + n), "actor": "background", "card_id": f"c{n:02d}", "cause_key": "comment:pr-1:s1", "summary": f"card summary {n}", "generation": 1})
    lines.append({"type": "tick", "at": stamp(CLOCK_S), "actor": "daemon"})
    return lines


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    directory = tmp_path_factory.mktemp("explained")
    url = sqlite_url(directory)
    ingest_lines(directory, url, "explained", [json.dumps(line) for line in trace()])
    with running(serve(directory, url)) as server:
        yield server


@pytest.fixture(scope="module")
def views(served: Served) -> dict[str, Any]:
    return served.client("human").views()


def count_link(page: Any, label: str) -> tuple[int, str]:
    link = page.locator("section.counts dt", has_text=label).locator("xpath=following-sibling::dd[1]/a")
    return int(link.inner_text()), link.get_attribute("href")


ROWS = {  # a list page: the selector of its rows
    "/tasks": "main table tbody tr",
    "/actions": "main table tbody tr",
    "/questions": "article.question",
    "/alerts": "section.alerts tbody tr",
    "/inbox": "main table tbody tr",
}


def test_every_overview_count_links_to_the_list_it_counts(page: Any, served: Served, views: dict[str, Any]) -> None:
    sign_in(page, served.url, served.tokens["human"])
    raised = [a for a in views["alerts"] if a["state"] == "raised"]
    expected = {
        "Active tasks": (TASKS, "/tasks?state=active"),
        "Held actions": (2, "/actions?state=pending&held=1"),
        "Open questions": (QUESTIONS, "/questions"),
        "Raised alerts": (len(raised), "/alerts?state=raised"),
        "Untriaged updates": (1, "/inbox?triage=untriaged"),
    }
    assert len(raised) > CARDS
    for label, (count, href) in expected.items():
        assert count_link(page, label) == (count, href), label
    for label, (count, href) in expected.items():
        page.goto(served.url + href)
        rows = page.locator(ROWS[urlsplit(href).path])
        pager = page.locator("p.pager")
        shown = rows.count()
        assert shown == min(count, page_rows), label
        if count > page_rows:
            assert pager.inner_text() == f"1–{page_rows} of {count} · {count - page_rows} more", label
            with page.expect_navigation():
                pager.locator("a[rel=next]").click()
            second = min(count - page_rows, page_rows)
            assert rows.count() == second and f"previous {page_rows}" in page.locator("p.pager").inner_text(), label
            assert page.locator("p.pager").inner_text().startswith(f"{page_rows + 1}–{page_rows + second} of {count}"), label
        else:
            assert pager.count() == 0, label


def test_the_overview_lists_say_how_many_more_and_link_them(page: Any, served: Served, views: dict[str, Any]) -> None:
    sign_in(page, served.url, served.tokens["human"])
    needs = page.locator("section.needs")
    raised = [a for a in views["alerts"] if a["state"] == "raised"]
    heading = needs.locator("h3", has_text="raised alert")
    assert heading.inner_text() == f"{len(raised)} raised alerts"
    listed = needs.locator("ul.needs-alerts > li")
    more = needs.locator("p.more a", has_text="raised alerts")
    assert listed.count() == 5 and more.inner_text() == f"{len(raised) - 5} more raised alerts"
    assert listed.count() + int(more.inner_text().split()[0]) == len(raised)
    questions = needs.locator("ul.needs-questions > li")
    assert questions.count() == 5
    assert needs.locator("p.more a", has_text="open questions").inner_text() == f"{QUESTIONS - 5} more open questions"
    tasks_more = page.locator("section.tasks p.more a")
    assert page.locator("section.tasks tbody tr").count() == page_rows and tasks_more.inner_text() == f"{TASKS - page_rows} more tasks"
    with page.expect_navigation():
        more.click()
    assert urlsplit(page.url).path == "/alerts" and page.locator("section.alerts-raised tbody tr").count() == len(raised)
    assert page.locator("section.alerts").count() == 1  # that state alone


def test_an_alert_says_why_and_since_when_by_the_engines_clock(page: Any, served: Served) -> None:
    sign_in(page, served.url, served.tokens["human"], "/alerts")
    row = page.locator("tr[id='a-card%3Ac03']")
    assert row.locator("td.why .reason").inner_text() == "card summary 3"
    assert row.locator("td.why small").first.inner_text() == "about comment:pr-1:s1"
    first, last = row.locator("td").nth(4), row.locator("td").nth(5)
    assert first.locator("time").get_attribute("datetime") == stamp(403) == first.locator("time").inner_text()
    assert first.locator(".ago").inner_text() == "(3 d 2 h ago)"  # 3 d 2 h 3 min before the engine's clock
    assert last.inner_text() == f"{stamp(403)} (3 d 2 h ago)"
    page.goto(served.url + "/")
    item = page.locator("ul.needs-alerts > li", has_text="card:c00")
    assert item.inner_text() == f"card:c00: card summary 0 — raised since {stamp(400)} (3 d 2 h ago)"
    question = page.locator("ul.needs-questions > li").first
    assert question.inner_text() == f"t000/q0: reason 0 — waiting since {stamp(200)} (3 d 2 h ago)"
    page.goto(served.url + "/questions")
    assert page.locator("article.question h2").first.inner_text().endswith(f"waiting 3 d 2 h since {stamp(200)}")


@pytest.mark.parametrize("path, says", [
    ("/tasks/nope", "No task nope"),
    ("/actions/nope", "No action nope"),
    ("/explain/nope", "Nothing in the store is named nope."),
    ("/tasks/nope?at=1", "No task nope"),
])  # fmt: skip
def test_an_unknown_id_is_a_404_page(page: Any, watch: Watch, served: Served, path: str, says: str) -> None:
    watch.expect(r"status of 404 \(Not Found\)")
    sign_in(page, served.url, served.tokens["human"])
    answer = page.goto(served.url + path)
    assert answer is not None and answer.status == 404, path
    assert answer.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert page.locator("header.top nav a").count() >= 8  # a console page, signed in
    text = page.locator("main").inner_text()
    assert says in text and ("then or now" in text) == ("?at=" in path), text
    # Live (now, not in the past): it shows the thing once an input names it.
    assert page.locator("body").get_attribute("data-live") == ("off" if "?at=" in path else "on")


def test_a_task_that_came_later_says_so_in_the_past(page: Any, served: Served) -> None:
    sign_in(page, served.url, served.tokens["human"])
    answer = page.goto(served.url + "/tasks/t050?at=20")
    assert answer is not None and answer.status == 200
    assert re.search(r"No task t050\s+Not yet at this position: the task now\.", page.locator("main").inner_text())
    with page.expect_navigation():
        page.locator("main a", has_text="the task now").click()
    assert urlsplit(page.url).path == "/tasks/t050" and page.locator("main h1 code").inner_text() == "t050"


def test_a_bad_filter_or_page_is_a_400_naming_the_values(page: Any, watch: Watch, served: Served) -> None:
    watch.expect(r"status of 400 \(Bad Request\)")
    sign_in(page, served.url, served.tokens["human"])
    for path, says in [
        ("/tasks?state=paused", "?state='paused': one of active, completed, cancelled"),
        ("/alerts?state=x", "?state='x': one of raised, seen, resolved"),
        ("/tasks?page=0", "?page='0': a page is a whole number from 1"),
    ]:
        answer = page.goto(served.url + path)
        assert answer is not None and answer.status == 400 and says in page.locator("main").inner_text(), path
