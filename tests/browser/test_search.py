"""/search in Chromium (issue 28, point 1): the header's search box on every
page, an operation found by its id (then its id's prefix finds its
neighbour), a question found by a word of its text (its question and its
`question.raise` input, each linked: the question to /questions, the input
to the timeline at its position), an input recorded while the server runs
found once the index caught up, a hostile id found whole and linked
percent-encoded. Hostile text in the results (and in the query itself) is
shown literally (tests/browser/test_hostile_text.py's `assert_safe`: nothing
ran, no element came from it), every answer keeps the console's
Content-Security-Policy, and no page logs an error (the conftest)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from tandem.adapters.console import CONTENT_SECURITY_POLICY
from tandem.adapters.terminal import printable
from tests.browser.harness import WAIT_MS, ingest_lines, serve, sign_in, sqlite_url
from tests.browser.test_hostile_text import QUESTION, TASK, TEXT, assert_safe
from tests.e2e.serving import Served

# Markup, an SGR colour, a bidi override, a backspace: short enough that an excerpt shows it whole.
SHORT = '<script>window.__pwned=1</script> <img src=x onerror="window.__pwned=1"> \x1b[31mred\x1b[0m \u202eevil\u202c \x08'
REASON = "Which Zeppelin schema? " + SHORT  # the word searched: "zeppelin"
HOSTILE_REASON = "zeppelin, again: " + SHORT


def at(second: int) -> str:
    return f"2026-03-01T09:00:{second:02d}Z"


def trace() -> list[dict[str, Any]]:
    grant = {"allowed_operations": ["worker.start"], "write_roots": ["/repo"]}
    propose = {"type": "action.propose", "actor": "background", "generation": 1, "operation": "worker.start", "task_id": "t-search",
               "grant_id": "g1", "input_revisions": {"task": 1, "grant": 1}}  # fmt: skip
    return [
        {"type": "policy.set", "at": at(0), "actor": "daemon", **grant},
        {"type": "conversation.open", "at": at(0), "actor": "daemon", "conversation_id": "fg", "role": "foreground", "context_limit": 200000, "reserve": 20000},
        {"type": "conversation.open", "at": at(0), "actor": "daemon", "conversation_id": "bg", "role": "background", "foreground_id": "fg", "context_limit": 100000, "reserve": 10000},
        {"type": "background.bind", "at": at(0), "actor": "daemon", "conversation_id": "bg", "foreground_id": "fg", "generation": 1},
        {"type": "watchdog.heartbeat", "at": at(0), "actor": "watchdog", "generation": 1},
        {"type": "task.delegate", "at": at(1), "task_id": "t-search", "conversation_id": "fg", "message_refs": [], "goal": "goal " + TEXT,
         "done_when": ["done"], "grant": {"grant_id": "g1", **grant}},
        {**propose, "at": at(2), "operation_id": "op-needle-7", "cause_key": "c7", "target": "target " + TEXT, "resource": "wt-7"},
        {**propose, "at": at(3), "operation_id": "op-needle-70", "cause_key": "c70", "target": "seventy", "resource": "wt-70"},
        {"type": "question.raise", "at": at(4), "actor": "background", "task_id": "t-search", "question_key": "db", "recipient": "human",
         "blocking_reason": REASON, "affected": ["op-needle-7"], "evidence_revision": 1},
        {"type": "task.delegate", "at": at(5), "task_id": TASK, "conversation_id": "fg", "message_refs": [], "goal": "goal " + TEXT,
         "done_when": ["done"], "grant": {"grant_id": "g2", **grant}},
        {"type": "question.raise", "at": at(6), "actor": "background", "task_id": TASK, "question_key": QUESTION, "recipient": "human",
         "blocking_reason": HOSTILE_REASON, "affected": "task", "evidence_revision": 1},
    ]  # fmt: skip


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    directory = tmp_path_factory.mktemp("search")
    url = sqlite_url(directory)
    ingest_lines(directory, url, "search", [json.dumps(line) for line in trace()])
    server = serve(directory, url)
    try:
        yield server
    finally:
        assert server.stop() == 0, server.log()


def search(page: Any, server: Served, q: str) -> Any:
    """/search?q= through the header's box, reloaded until the index has
    caught up with the store (it is built in the background)."""
    page.fill("header form.search input[name=q]", q)
    with page.expect_navigation():
        page.click("header form.search button[type=submit]")
    assert urlsplit(page.url).path == "/search" and parse_qs(urlsplit(page.url).query)["q"] == [q], page.url
    for _ in range(WAIT_MS // 100):
        searched = page.locator("p.searched")
        if searched.count() and "catching up" not in searched.inner_text():
            break
        page.wait_for_timeout(100)
        answer = page.reload()
    answer = page.reload()
    assert answer is not None and answer.status == 200
    assert answer.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert page.locator("p.searched").count() == 1, page.locator("main").inner_text()
    return answer


def things(page: Any, kind: str) -> list[tuple[str, str]]:
    """(the id as shown, how it was found) of each thing of `kind` listed."""
    items = page.locator(f"li[data-kind='{kind}']")
    return [(items.nth(n).locator("a, code").first.inner_text(), items.nth(n).locator(".matched").inner_text()) for n in range(items.count())]


def test_an_operation_is_found_by_its_id_and_linked_to_its_page(page: Any, served: Served) -> None:
    sign_in(page, served.url, served.tokens["human"])
    search(page, served, "op-needle-7")
    assert things(page, "action") == [("op-needle-7", "id"), ("op-needle-70", "id prefix")]
    link = page.locator("li[data-kind='action'] a").first
    assert link.get_attribute("href") == "/actions/op-needle-7"
    assert_safe(page, "search op-needle-7", [])
    with page.expect_navigation():
        link.click()
    assert urlsplit(page.url).path == "/actions/op-needle-7"
    assert "op-needle-7" in page.locator("h1").inner_text()


def test_a_question_is_found_by_a_word_of_its_text_shown_literally(page: Any, served: Served) -> None:
    sign_in(page, served.url, served.tokens["human"])
    search(page, served, "Zeppelin")
    assert sorted(things(page, "question")) == sorted([("t-search/db", "words"), (printable(f"{TASK}/{QUESTION}"), "words")])
    assert page.locator("li[data-kind='question'] a[href='/questions']").count() == 2
    rows = page.locator("table.found-inputs tbody tr")
    assert rows.count() == 2
    assert "question.raise" in rows.nth(1).inner_text() and "words" in rows.nth(1).inner_text()
    assert_safe(page, "search zeppelin", [REASON, HOSTILE_REASON])  # the excerpts, as text
    position = rows.nth(1).get_attribute("data-position")
    with page.expect_navigation():
        rows.nth(1).locator("td").first.locator("a").click()
    assert urlsplit(page.url).path == "/timeline" and urlsplit(page.url).fragment == f"p{position}"
    assert page.locator(f"tr#p{position}").is_visible()


def test_a_hostile_id_is_found_whole_and_linked_percent_encoded(page: Any, served: Served) -> None:
    sign_in(page, served.url, served.tokens["human"])
    search(page, served, TASK)
    link = page.locator("li[data-kind='task'] a").first
    assert link.get_attribute("href") == "/tasks/" + quote(TASK, safe="")
    assert link.inner_text() == printable(TASK) and page.locator("li[data-kind='task'] .matched").first.inner_text() == "id"
    assert_safe(page, "search the hostile task", [TASK])
    search(page, served, "<script>window.__pwned=1</script>")  # the query itself, shown in the box and the title
    assert page.locator("#search-q").input_value() == "<script>window.__pwned=1</script>"
    assert_safe(page, "search markup", [])


def test_an_input_recorded_while_serving_is_found(page: Any, served: Served) -> None:
    served.client("background").submit({"type": "question.raise", "task_id": "t-search", "question_key": "late", "recipient": "human",
                                         "blocking_reason": "a quokka appeared", "affected": "task", "evidence_revision": 1})  # fmt: skip
    sign_in(page, served.url, served.tokens["human"])
    search(page, served, "quokka")
    assert things(page, "question") == [("t-search/late", "words")]
    assert page.locator("table.found-inputs tbody tr").count() == 1
