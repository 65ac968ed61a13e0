"""Ids as actors choose them, in Chromium: a task id and an operation id
holding `/`, a cause key holding `//` (a URL scope), a question key and an
incident id holding control characters and a bidi override. Every page about
them is found (the routes read the raw path, as `GET /v1/explain` does), and
every form about them records the id itself, never the escaped text the page
shows (forms send ids percent-encoded, as links do)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tandem.adapters.terminal import printable
from tests.browser.harness import ingest_lines, running, serve, sign_in, sqlite_url
from tests.e2e.serving import Served, store_head

TASK, OPERATION = "team/signup", "team/op-1"
SCOPE = "https://scm/pr/7"
CAUSE = f"ci:{SCOPE}"
QUESTION = "which\x1b[2J db\u202e"
INCIDENT = "stall\x07\x1b]0;title\x07"
ALERT = f"incident:{INCIDENT}"


def at(second: int) -> str:
    return f"2026-03-01T09:00:{second:02d}Z"


def lines() -> list[str]:
    grant = {"grant_id": "g1", "allowed_operations": ["worker.start"], "write_roots": ["/repo"]}
    rows: list[dict[str, Any]] = [
        {"type": "policy.set", "at": at(0), "actor": "daemon", "allowed_operations": ["worker.start"], "write_roots": ["/repo"]},
        {"type": "conversation.open", "at": at(0), "actor": "daemon", "conversation_id": "fg", "role": "foreground", "context_limit": 200000, "reserve": 20000},
        {"type": "conversation.open", "at": at(0), "actor": "daemon", "conversation_id": "bg", "role": "background", "foreground_id": "fg", "context_limit": 100000, "reserve": 10000},
        {"type": "background.bind", "at": at(0), "actor": "daemon", "conversation_id": "bg", "foreground_id": "fg", "generation": 1},
        {"type": "watchdog.heartbeat", "at": at(0), "actor": "watchdog", "generation": 1},
        {"type": "task.delegate", "at": at(1), "task_id": TASK, "conversation_id": "fg", "message_refs": [], "goal": "sign up", "done_when": ["done"], "grant": grant},
        {"type": "question.raise", "at": at(2), "actor": "background", "task_id": TASK, "question_key": QUESTION, "recipient": "human",
         "blocking_reason": "which database?", "affected": [OPERATION], "evidence_revision": 1},
        {"type": "action.propose", "at": at(3), "actor": "background", "generation": 1, "operation_id": OPERATION, "cause_key": CAUSE, "operation": "worker.start",
         "target": "t", "resource": "wt", "task_id": TASK, "grant_id": "g1", "input_revisions": {"task": 1, "grant": 1}},
        {"type": "observe", "at": at(4), "actor": "source", "source_id": "ci-1", "kind": "ci", "scope": SCOPE, "fingerprint": "F", "complete": True, "status": "failed"},
        {"type": "health.incident", "at": at(5), "actor": "watchdog", "incident_id": INCIDENT, "kind": "stalled", "detail": "no progress"},
    ]  # fmt: skip
    return [json.dumps(row) for row in rows]


@pytest.fixture(scope="module")
def odd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    directory: Path = tmp_path_factory.mktemp("odd")
    url = sqlite_url(directory, "odd")
    ingest_lines(directory, url, "odd", lines())
    with running(serve(directory, url)) as server:
        yield server


def test_pages_of_ids_holding_slashes_are_found(page: Any, odd: Served) -> None:
    sign_in(page, odd.url, odd.tokens["human"])
    page.goto(odd.url + "/tasks/" + quote(TASK, safe=""))
    assert page.locator("main h1").inner_text().startswith(f"Task {TASK}")
    page.goto(odd.url + "/actions/" + quote(OPERATION, safe=""))
    assert page.locator("main h1 code").inner_text() == OPERATION
    assert page.locator("section.chain h3").first.inner_text().startswith(f"operation {OPERATION}")
    page.goto(odd.url + "/explain/" + quote(CAUSE, safe=""))
    assert page.locator("section.chain h3").first.inner_text().startswith(f"cause {CAUSE}")
    # The inbox links there, and following the link finds it.
    page.goto(odd.url + "/inbox")
    with page.expect_navigation():
        page.locator("main a", has_text=CAUSE).first.click()
    assert page.locator("section.chain h3").first.inner_text().startswith(f"cause {CAUSE}")


def test_forms_about_ids_with_control_characters_record_the_ids_themselves(page: Any, odd: Served) -> None:
    sign_in(page, odd.url, odd.tokens["human"], "/alerts")
    client = odd.client("human")
    head = store_head(odd.store_url)
    row = page.locator("section.alerts-raised tr", has_text=printable(ALERT))
    with page.expect_navigation():
        row.locator("button", has_text="Mark seen").click()
    assert page.locator(".flash").inner_text() == f"alert.seen recorded at position {head + 1}, accepted"
    (alert,) = [a for a in client.view("alerts")["rows"] if a["alert_id"] == ALERT]
    assert alert["state"] == "seen"

    page.goto(odd.url + "/questions")
    page.locator("textarea[name=answer]").fill("postgres")
    head = store_head(odd.store_url)
    with page.expect_navigation():
        page.locator("form[action='/questions/answer'] button").click()
    assert page.locator(".flash").inner_text() == f"question.answer recorded at position {head + 1}, accepted"
    (question,) = client.view("questions")["rows"]
    assert (question["question_key"], question["state"]) == (QUESTION, "answered")
    assert "\x1b" not in page.content() and "\u202e" not in page.content()
