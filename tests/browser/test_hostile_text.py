"""Hostile text from a trace, shown by the console in Chromium: markup,
`javascript:` links, terminal escapes (SGR colours, an OSC 8 hyperlink),
bidirectional overrides and other control characters, in every free-text
field docs/contract/ has (a task's goal, a card's summary, a comment's
text, a question's blocking reason and recipient, an incident's and an
approval's detail, an action's target and resource), in the ids actors
choose (task, operation, question key, card, incident, approval request,
source, cause, message, a composed delivery's payload ref and adapter) and in
the trace file's name. An alert's reason (the card's summary, the incident's
and the approval's detail, the cause it is about) is shown on /alerts and
the overview.

On every page where one of them appears, now and in the past (`?at=`), and
after a live refresh swapped one in: nothing ran (`window.__pwned` stays
undefined, no dialog, no console error or CSP violation: the conftest), no
element came from the text (the only <script> is the console's own, no <img>,
<iframe>, <object> or `on*` attribute, no link leaves the origin), and the
text is shown literally as adapters/console/templating.py promises: through
`printable` (adapters/terminal.py), markup as text, each control character
and bidi override as a visible escape (`\\x1b`, `\\u202e`), the raw
characters nowhere in the DOM.

A human message's `text` is carried by no view or explain link: it is shown
only inside its input, as recorded, in the timeline's box of that input
(tests/browser/test_timeline.py opens it). A comment's `text` is shown as
its inbox row's latest excerpt.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pytest

from tandem.adapters.terminal import printable
from tests.browser.harness import Watch, ingest_lines, serve, sign_in, sqlite_url
from tests.e2e.serving import Served, store_head

# Free text: everything, an OSC 8 hyperlink with its `//` included.
TEXT = (
    '<script>window.__pwned=1</script> <img src=x onerror="window.__pwned=1"> '
    "[x](javascript:window.__pwned=1) javascript:window.__pwned=1 "
    "\x1b[31mred\x1b[0m \x1b]8;;http://evil\x07link\x1b]8;;\x07 \u202eevil\u202c \x08 \x7f \x9b2J"
)
# Ids, linked as /explain/{id} (ids holding `/` and `//`: tests/browser/test_odd_ids.py).
ID = (
    '<script>window.__pwned=1</script> <img src=x onerror="window.__pwned=1"> [x](javascript:window.__pwned=1) '
    "javascript:window.__pwned=1 \x1b[31mred\x1b[0m \u202eevil\u202c \x08"
)
# A task's and an operation's id, also linked as /tasks/{id} and /actions/{id}.
NAME = '<img src=x onerror="window.__pwned=1"> [x](javascript:window.__pwned=1) \x1b[31mred\x1b[0m \u202eevil \x08'
FILE = '<img src=x onerror="window.__pwned=1"> \x1b[31m\u202e trace'
RAW = "\x1b\x07\x08\x7f\x9b\u202e\u202c"  # none of these may reach the DOM

TASK, OPERATION, QUESTION = "task " + NAME, "op " + NAME, "q " + ID
CARD, INCIDENT, REQUEST, SOURCE, MESSAGE = "card " + ID, "inc " + ID, "req " + ID, "src " + ID, "msg " + ID
CAUSE = "cause " + ID
COMMENT_CAUSE = f"comment:pr-1:{SOURCE}"
FIELDS = {  # what a page shows, by what the text is
    "goal": "goal " + TEXT,
    "summary": "summary " + TEXT,
    "reason": "reason " + TEXT,
    "recipient": "recipient " + TEXT,
    "detail": "detail " + TEXT,
    "approval": "approval " + TEXT,
    "target": "target " + TEXT,
    "resource": "resource " + TEXT,
    "comment": "comment " + TEXT,  # the inbox row's latest excerpt (contract v1.1)
    "task": TASK,
    "operation": OPERATION,
    "question": QUESTION,
    "card": CARD,
    "incident": INCIDENT,
    "request": REQUEST,
    "source": SOURCE,
    "cause": CAUSE,
    "message": MESSAGE,
    "payload": "payloads " + ID,  # a composed delivery's payload_ref (contract v1.2 section 6)
    "adapter": "adapter " + ID,
    "file": FILE + ".jsonl",
}


def at(second: int) -> str:
    return f"2026-03-01T09:00:{second:02d}Z"


def trace() -> list[dict[str, Any]]:
    grant = {"grant_id": "g1", "allowed_operations": ["worker.start"], "write_roots": ["/repo"]}
    return [
        {"type": "policy.set", "at": at(0), "actor": "daemon", "allowed_operations": ["worker.start"], "write_roots": ["/repo"]},
        {"type": "conversation.open", "at": at(0), "actor": "daemon", "conversation_id": "fg", "role": "foreground", "context_limit": 200000, "reserve": 20000},
        {"type": "conversation.open", "at": at(0), "actor": "daemon", "conversation_id": "bg", "role": "background", "foreground_id": "fg", "context_limit": 100000, "reserve": 10000},
        {"type": "background.bind", "at": at(0), "actor": "daemon", "conversation_id": "bg", "foreground_id": "fg", "generation": 1},
        {"type": "watchdog.heartbeat", "at": at(0), "actor": "watchdog", "generation": 1},
        {"type": "human.message", "at": at(1), "conversation_id": "fg", "message_id": MESSAGE, "text": "message " + TEXT},
        {"type": "delivery.composed", "at": at(1), "actor": "daemon", "delivery_id": "fg/d1", "payload_ref": FIELDS["payload"],
         "payload_digest": "sha256:" + "0" * 64, "adapter": FIELDS["adapter"]},
        {"type": "task.delegate", "at": at(2), "task_id": TASK, "conversation_id": "fg", "message_refs": [MESSAGE], "goal": FIELDS["goal"], "done_when": ["done " + TEXT], "grant": grant},
        {"type": "action.propose", "at": at(3), "actor": "background", "generation": 1, "operation_id": OPERATION, "cause_key": CAUSE, "operation": "worker.start",
         "target": FIELDS["target"], "resource": FIELDS["resource"], "task_id": TASK, "grant_id": "g1", "input_revisions": {"task": 1, "grant": 1}},
        {"type": "question.raise", "at": at(4), "actor": "background", "task_id": TASK, "question_key": QUESTION, "recipient": FIELDS["recipient"],
         "blocking_reason": FIELDS["reason"], "affected": [OPERATION], "evidence_revision": 1},
        {"type": "observe", "at": at(5), "actor": "source", "source_id": SOURCE, "kind": "comment", "scope": "pr-1", "fingerprint": "F", "complete": True, "text": FIELDS["comment"]},
        {"type": "card.propose", "at": at(6), "actor": "background", "card_id": CARD, "cause_key": COMMENT_CAUSE, "summary": FIELDS["summary"], "generation": 1},
        {"type": "health.incident", "at": at(7), "actor": "watchdog", "incident_id": INCIDENT, "kind": "stalled", "detail": FIELDS["detail"]},
        {"type": "approval.required", "at": at(8), "actor": "daemon", "conversation_id": "fg", "request_id": REQUEST, "detail": FIELDS["approval"]},
    ]  # fmt: skip


def path(prefix: str, identifier: str) -> str:
    return prefix + quote(identifier, safe="")


PAGES = {  # a page: the texts it shows
    "/": ["goal", "reason", "question", "card", "incident", "request", "task", "operation", "summary", "detail", "approval"],
    "/tasks": ["goal", "task"],
    path("/tasks/", TASK): ["goal", "reason", "question", "resource", "task", "operation"],
    path("/actions/", OPERATION): ["cause", "target", "resource", "question", "request", "task", "operation", "file"],
    "/questions": ["reason", "recipient", "question", "task", "operation"],
    "/inbox": ["source", "comment"],
    "/alerts": ["card", "incident", "request", "summary", "detail", "approval", "source"],
    "/conversations": ["message", "payload", "adapter"],
    "/timeline": ["file", "question", "card", "incident", "request", "source", "cause", "task", "operation"],
    path("/explain/", TASK): ["goal", "reason", "question", "target", "file"],
    path("/explain/", COMMENT_CAUSE): ["summary", "card", "source"],
    path("/explain/", "card:" + CARD): ["summary", "card"],
    path("/explain/", "incident:" + INCIDENT): ["detail", "incident"],
    path("/explain/", f"approval_required:fg/{REQUEST}"): ["approval", "request"],
    path("/explain/", f"{TASK}/{QUESTION}"): ["reason", "recipient", "question"],
    "/explain/fg%2Fd1": ["message", "payload", "adapter"],
}


@dataclass
class Hostile:
    server: Served
    head: int  # the store's head after the trace


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    directory = tmp_path_factory.mktemp("hostile")
    url = sqlite_url(directory)
    ingest_lines(directory, url, FILE, [json.dumps(value) for value in trace()])
    server = serve(directory, url)
    try:
        yield Hostile(server, store_head(url))
    finally:
        assert server.stop() == 0, server.log()


# What the page holds, read from the DOM: anything the text could have made.
INSPECT = """raw => {
  const all = [...document.querySelectorAll('*')];
  const attributes = all.flatMap(el => [...el.attributes].map(a => [el.tagName, a.name, a.value]));
  return {
    pwned: typeof window.__pwned,
    scripts: [...document.scripts].map(s => s.getAttribute('src')),
    main_scripts: document.querySelectorAll('main script').length,
    images: document.querySelectorAll('img, picture, svg image').length,
    frames: document.querySelectorAll('iframe, frame, object, embed, base, meta[http-equiv]').length,
    handlers: attributes.filter(([tag, name]) => name.startsWith('on')).map(a => a.join(' ')),
    javascript: attributes.filter(([tag, name, value]) => /^\\s*javascript:/i.test(value)).map(a => a.join(' ')),
    elsewhere: [...document.querySelectorAll('a[href], form[action]')].map(e => e.href || e.action)
      .filter(u => new URL(u, location.href).origin !== location.origin),
    raw_text: [...raw].filter(c => document.documentElement.textContent.includes(c) || document.title.includes(c)),
    raw_attributes: attributes.filter(([tag, name, value]) => [...raw].some(c => value.includes(c))).map(a => a.join(' ')),
  };
}"""


def assert_safe(page: Any, where: str, shows: list[str]) -> None:
    """Nothing of the hostile text ran or became an element; the page shows
    each of `shows` (raw texts) as `printable` writes it."""
    found = page.evaluate(INSPECT, RAW)
    assert found["pwned"] == "undefined", where
    assert found["scripts"] == ["/static/console.js"] and found["main_scripts"] == 0, (where, found["scripts"])
    assert found["images"] == 0 and found["frames"] == 0, where
    assert found["handlers"] == [] and found["javascript"] == [] and found["elsewhere"] == [], (where, found)
    assert found["raw_text"] == [] and found["raw_attributes"] == [], (where, found)
    text = page.locator("main").inner_text()
    assert not shows or "<script>window.__pwned=1</script>" in text, where  # markup shown as text
    for shown in shows:
        assert printable(shown) in text, (where, shown)


def test_every_page_shows_the_hostile_text_as_text(page: Any, hostile: Hostile) -> None:
    server = hostile.server
    sign_in(page, server.url, server.tokens["human"])
    for target, shows in PAGES.items():
        answer = page.goto(server.url + target)
        assert answer is not None and answer.status == 200, target
        assert page.locator(".past").count() == 0, target
        assert_safe(page, target, [FIELDS[name] for name in shows])
        answer = page.goto(server.url + target + f"?at={hostile.head}")
        assert answer is not None and answer.status == 200, target
        assert f"the views after position {hostile.head}" in page.locator(".past").inner_text(), target
        assert_safe(page, target + "?at", [FIELDS[name] for name in shows])


def test_the_hostile_text_is_what_the_views_hold(hostile: Hostile) -> None:
    """The trace was accepted as written: the pages had the text to show."""
    views = hostile.server.client("human").views()
    (task,) = views["tasks"]
    assert (task["task_id"], task["goal"]) == (TASK, FIELDS["goal"])
    (question,) = views["questions"]
    assert (question["question_key"], question["blocking_reason"], question["state"]) == (QUESTION, FIELDS["reason"], "open")
    assert {f"card:{CARD}", f"incident:{INCIDENT}", f"approval_required:fg/{REQUEST}"} <= {a["alert_id"] for a in views["alerts"]}
    assert [u["cause_key"] for u in views["inbox"]] == [COMMENT_CAUSE]
    assert views["health"]["open_incidents"] == [INCIDENT]
    assert views["rejections"] == []


def test_text_from_the_address_is_shown_as_text(page: Any, watch: Watch, hostile: Hostile) -> None:
    """Ids and filters that name nothing, put in the address by whoever sent
    the link: the pages say so (an id that names nothing: a 404 page), the
    text shown literally."""
    watch.expect(r"status of 404 \(Not Found\)")
    server = hostile.server
    sign_in(page, server.url, server.tokens["human"])
    missing = "missing " + NAME
    for target, status, says in [
        (path("/tasks/", missing), 404, f"No task {printable(missing)}"),
        (path("/actions/", missing), 404, f"No action {printable(missing)}"),
        (path("/explain/", "missing " + ID), 404, f"Nothing in the store is named {printable('missing ' + ID)}."),
        ("/timeline?" + "id=" + quote(ID, safe="") + "&type=" + quote(TEXT, safe=""), 200, "0 inputs shown, matching"),
    ]:
        answer = page.goto(server.url + target)
        assert answer is not None and answer.status == status, target
        assert says in page.locator("main").inner_text(), target
        assert_safe(page, target, [])
    # The filter's fields hold what was asked, escaped the same way.
    assert page.locator("#id").input_value() == printable(ID)
    assert page.locator("#type").input_value() == printable(TEXT)


def test_a_live_refresh_swaps_hostile_text_in_as_text(page: Any, hostile: Hostile) -> None:
    """/alerts open and live; the background proposes another hostile card:
    console.js refetches the page and swaps its regions in, still inert."""
    server = hostile.server
    sign_in(page, server.url, server.tokens["human"], "/alerts")
    page.wait_for_function("() => document.querySelector('.live-state').textContent === 'live'")  # follows /v1/stream
    page.evaluate("window.__not_reloaded = true")
    card = "live " + ID
    reply = server.client("background").submit({"type": "card.propose", "card_id": card, "cause_key": COMMENT_CAUSE, "summary": "live " + TEXT, "generation": 1})
    assert [result["accepted"] for result in reply["results"]] == [True], reply
    page.wait_for_function("text => document.querySelector('main').innerText.includes(text)", arg=printable("card:" + card))
    assert page.evaluate("window.__not_reloaded") is True  # swapped in place, not reloaded
    assert_safe(page, "/alerts live", [CARD, INCIDENT, REQUEST, "card:" + card])
