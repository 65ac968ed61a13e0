"""/questions in Chromium, on a small trace of our own with two open
questions (docs/contract/tasks.md, question holds): `db` on t2 lists the operations x1 (of t2)
and y1 (of t3), `docs` on t1 holds the whole task (its action w1). The
question raised first is `db`, on the later task: the page lists questions
oldest first, the view by task and key.

Answering (contract 3.2, `question.answer`) folds the answer into the task,
revises it (its pending actions become `fenced`), marks the question
`answered` and lifts its holds: an action of another task that only that
question held is claimed by the same pass (`submitting`).

The tests: answering from the page (the views and the page after it); the
page kept live by inputs from outside the browser without losing a half-typed
answer or its focus; a reconnect after a restart on the same port catching up
on an input ingested while the server was down, still signed in (sessions
outlive a restart); and a page whose session expired while the server was
down saying so.

The trace starts two hours before the wall clock, so what the server stamps
(the browser's answer, the API's inputs) comes right after it; the server
records nothing of its own, so before any of that the engine clock, and every
age on the page, are the trace's."""

from __future__ import annotations

import datetime
import json
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.browser.harness import Watch, ingest_lines, mark, reloaded, serve, sign_in, sqlite_url, wait_live
from tests.e2e.serving import Served, store_head

CLOCK_S = 5400  # the trace's last input, seconds after its first
DB, DOCS = "q-t2-db", "q-t1-docs"  # the questions' articles on the page


def stamp(start: datetime.datetime, seconds: int) -> str:
    return (start + datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def trace(start: datetime.datetime) -> list[str]:
    grant = {"allowed_operations": ["worker.start"], "write_roots": ["/repo"]}
    lines: list[dict[str, Any]] = [
        {"type": "policy.set", "at": stamp(start, 0), "actor": "daemon", **grant},
        {"type": "conversation.open", "at": stamp(start, 0), "actor": "daemon", "conversation_id": "fg", "role": "foreground", "context_limit": 200000, "reserve": 20000},
    ]  # fmt: skip
    for n, task in enumerate(["t1", "t2", "t3"], 1):
        lines.append({"type": "task.delegate", "at": stamp(start, n), "actor": "human", "task_id": task, "conversation_id": "fg",
                      "message_refs": [], "goal": f"goal of {task}", "done_when": ["done"], "grant": {"grant_id": f"g{n}", **grant}})  # fmt: skip
    lines += [
        question(stamp(start, 10), "t2", "db", "which db?", ["x1", "y1"]),
        question(stamp(start, 3600), "t1", "docs", "which docs?", "task"),
    ]
    for operation, task, n in [("x1", "t2", 2), ("y1", "t3", 3), ("w1", "t1", 1)]:
        lines.append({"type": "action.propose", "at": stamp(start, 3700), "actor": "human", "operation_id": operation, "cause_key": f"{task}:{operation}",
                      "operation": "worker.start", "target": operation, "resource": f"wt-{operation}", "task_id": task, "grant_id": f"g{n}",
                      "unattended": False, "input_revisions": {"task": 1, "grant": 1}})  # fmt: skip
    lines.append({"type": "tick", "at": stamp(start, CLOCK_S), "actor": "daemon"})
    return [json.dumps(line) for line in lines]


def question(at: str | None, task: str, key: str, reason: str, affected: Any) -> dict[str, Any]:
    raised = {"type": "question.raise", "actor": "background", "task_id": task, "question_key": key, "recipient": "human",
              "blocking_reason": reason, "affected": affected, "evidence_revision": 1}  # fmt: skip
    return raised if at is None else {"at": at, **raised}


@dataclass
class Questions:
    server: Served
    start: datetime.datetime  # the trace's first `at`
    directory: Path


@pytest.fixture
def questions(tmp_path: Path) -> Iterator[Questions]:
    start = datetime.datetime.now(datetime.UTC).replace(microsecond=0) - datetime.timedelta(hours=2)
    url = sqlite_url(tmp_path)
    ingest_lines(tmp_path, url, "questions", trace(start))
    server = serve(tmp_path, url)
    try:
        yield Questions(server, start, tmp_path)
    finally:
        assert server.stop() == 0, server.log()


def serve_again(server: Served) -> None:
    """The same `tandem serve` (store, tokens, options) again, on the port it had."""
    port = urlsplit(server.url).port
    server.options = (*server.options, "--listen", f"127.0.0.1:{port}")  # the last --listen counts
    assert server.start().url == f"http://127.0.0.1:{port}"


def wait_state(page: Any, text: str) -> None:
    """Until the live status says `text` (a function: the page's CSP refuses eval)."""
    page.wait_for_function("text => document.querySelector('.live-state').textContent === text", arg=text)


def open_ids(page: Any) -> list[str]:
    return page.locator("article.question").evaluate_all("articles => articles.map(a => a.id)")


def answered(page: Any) -> list[str]:
    return page.locator("h2:text-is('Answered') + ul li").all_inner_texts()


def focused_in(page: Any) -> str | None:
    """The id of the question whose form has the focus (None: none has)."""
    return page.evaluate("() => { const a = document.activeElement.closest('article.question'); return a ? a.id : null; }")


def footer(page: Any) -> str:
    return page.locator("[data-region=clock]").inner_text()


def row(views: dict[str, Any], name: str, key: str, value: str) -> dict[str, Any]:
    (found,) = [item for item in views[name] if item[key] == value]
    return found


def test_answer_the_oldest_question_from_the_page(page: Any, questions: Questions) -> None:
    server, start = questions.server, questions.start
    sign_in(page, server.url, server.tokens["human"], "/questions")
    head = store_head(server.store_url)
    assert [(q["task_id"], q["question_key"]) for q in server.client("human").view("questions")["rows"]] == [("t1", "docs"), ("t2", "db")]
    assert open_ids(page) == [DB, DOCS]  # oldest first
    assert page.locator("main p").first.inner_text() == "2 open, oldest first; ages by the engine's clock."
    # Ages by the engine's clock (the trace's last input), not the wall clock (about 2 h after the start).
    assert footer(page) == f"engine clock {stamp(start, CLOCK_S)} · position {head}"
    assert page.locator(f"#{DB} .age").inner_text() == "waiting 1 h 29 min"
    assert page.locator(f"#{DOCS} .age").inner_text() == "waiting 30 min"
    db = page.locator(f"#{DB}").inner_text()
    assert "which db?" in db and "For human; raised 1 time. Blocks: x1, y1 and what depends on them." in db
    assert "Blocks: every action of task t1 and of the tasks that depend on it" in page.locator(f"#{DOCS}").inner_text()
    before = server.client("human").views()
    assert [row(before, "actions", "operation_id", op)["blocked_by"] for op in ("x1", "y1", "w1")] == [["question_hold"]] * 3

    page.fill(f"#{DB} textarea", "postgres 16")
    with page.expect_navigation():
        page.click(f"#{DB} button[type=submit]")
    assert urlsplit(page.url).path == "/questions"
    assert page.locator(".flash").inner_text() == f"question.answer recorded at position {head + 1}, accepted"
    views = server.client("human").views()
    assert row(views, "questions", "question_key", "db")["state"] == "answered"
    assert row(views, "questions", "question_key", "docs")["state"] == "open"
    t2 = row(views, "tasks", "task_id", "t2")
    assert (t2["revision"], t2["open_questions"], t2["holds"]) == (2, 0, [])
    x1, y1, w1 = (row(views, "actions", "operation_id", op) for op in ("x1", "y1", "w1"))
    assert (x1["state"], x1["blocked_by"], x1["attempts"]) == ("fenced", [], [])  # its task was revised
    assert (y1["state"], y1["blocked_by"], y1["attempts"]) == ("submitting", [], [{"attempt_id": "y1/a1", "state": "submitting"}])  # hold lifted: claimed
    assert (w1["state"], w1["blocked_by"]) == ("pending", ["question_hold"])  # docs still holds t1
    assert row(views, "tasks", "task_id", "t1")["holds"] == ["question_hold"]
    # The page: db answered, docs still open.
    assert open_ids(page) == [DOCS]
    assert page.locator("main p").first.inner_text() == "1 open, oldest first; ages by the engine's clock."
    assert answered(page) == ["t2 / db: which db?"]


def test_live_changes_keep_a_half_typed_answer(page: Any, questions: Questions) -> None:
    """Two inputs from outside the browser change what the page shows: the
    background raises `db` again (its article is replaced, with the form being
    typed in), then the human answers `docs` through the API."""
    server = questions.server
    sign_in(page, server.url, server.tokens["human"], "/questions")
    wait_live(page)
    field = page.locator(f"#{DB} textarea")
    field.press_sequentially("postgres, but on")
    mark(page)

    server.client("background").submit(question(None, "t2", "db", "which database engine?", ["x1", "y1"]))
    page.locator(f"#{DB} .reason", has_text="which database engine?").wait_for()
    assert "raised 2 times" in page.locator(f"#{DB}").inner_text()
    assert not reloaded(page)
    assert field.input_value() == "postgres, but on"
    assert focused_in(page) == DB

    server.client("human").submit({"type": "question.answer", "task_id": "t1", "question_key": "docs", "answer": "the API reference"})
    page.locator(f"#{DOCS}").wait_for(state="detached")
    assert answered(page) == ["t1 / docs: which docs?"]
    assert open_ids(page) == [DB]
    assert footer(page).endswith(f"position {store_head(server.store_url)}")
    assert not reloaded(page)
    assert field.input_value() == "postgres, but on"
    assert focused_in(page) == DB
    field.press_sequentially("e replica")  # still the same field, typed on
    assert field.input_value() == "postgres, but one replica"
    assert row(server.client("human").views(), "questions", "question_key", "db")["state"] == "open"


def test_a_reconnect_after_a_restart_catches_up(page: Any, watch: Watch, questions: Questions) -> None:
    """The server stops; `docs` is answered into its store by `tandem ingest`;
    the server starts again on the same port. Its sessions are kept in the
    store's database (a restart signs nobody out), so the stream the
    console's pages share (static/console-stream.js) comes back by itself,
    as the same person, and the page catches up without a reload."""
    server, start = questions.server, questions.start
    sign_in(page, server.url, server.tokens["human"], "/questions")
    wait_live(page)
    mark(page)
    watch.expect(r"net::ERR_CONNECTION_REFUSED")
    assert server.stop() == 0, server.log()
    wait_state(page, "behind: reconnecting…")  # the page cannot know the head while the stream is down
    answer = {"type": "question.answer", "at": stamp(start, CLOCK_S + 100), "actor": "human", "task_id": "t1", "question_key": "docs", "answer": "the API reference"}
    ingest_lines(questions.directory, server.store_url, "answered-while-down", [json.dumps(answer)])
    serve_again(server)
    page.locator(f"#{DOCS}").wait_for(state="detached")
    wait_live(page)
    assert not reloaded(page)
    assert open_ids(page) == [DB]
    assert answered(page) == ["t1 / docs: which docs?"]
    assert footer(page) == f"engine clock {stamp(start, CLOCK_S + 100)} · position {store_head(server.store_url)}"
    assert page.locator(".who b").inner_text() == "human"
    views = server.client("human").views()
    assert row(views, "questions", "question_key", "docs")["state"] == "answered"
    t1, w1 = row(views, "tasks", "task_id", "t1"), row(views, "actions", "operation_id", "w1")
    assert (t1["revision"], t1["holds"], w1["state"], w1["blocked_by"]) == (2, [], "fenced", [])


def test_a_session_that_expired_while_the_server_was_down_says_so(page: Any, watch: Watch, questions: Questions) -> None:
    """The session's lifetime ends while the server is down: after the
    restart the stream comes back refused (401), the EventSource gives up for
    good, and the page must say so rather than `reconnecting…` for ever."""
    server = questions.server
    sign_in(page, server.url, server.tokens["human"], "/questions")
    wait_live(page)
    mark(page)
    watch.expect(r"net::ERR_CONNECTION_REFUSED")
    watch.expect(r"status of 401 \(Unauthorized\)")
    assert server.stop() == 0, server.log()
    wait_state(page, "behind: reconnecting…")  # the page cannot know the head while the stream is down
    with sqlite3.connect(questions.directory / "events.db") as database:
        assert database.execute("UPDATE tandem_events_sessions SET expires_at = ?", (int(time.time()) - 1,)).rowcount == 1
    serve_again(server)
    wait_state(page, "behind: signed out or failing: reload the page")
    assert not reloaded(page)
    page.reload()
    assert urlsplit(page.url).path == "/login"
