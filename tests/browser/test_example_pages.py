"""The console on the bundled example (`tandem demo`'s trace), in Chromium:
signing in through the real /login form, every page of docs/api.md's console
(and each `?at=`) with no console error, the redirects to /login without a
session, forms refused without their CSRF token, and time travel on a task's
page equal to `tandem show --at`.

One server for the module; no test here records anything (the CSRF test
checks that its refused forms did not)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.browser.harness import Watch, mark, reloaded, running, serve_example, sign_in, wait_live
from tests.e2e.serving import Served, store_head, tandem

PAGES = {  # path: a text its main part shows on the finished example
    "/": "Email signup",
    "/tasks": "Email signup",
    "/tasks/signup": "worker.test on wt-it",
    "/actions/op-form": "op-form/a1",
    "/inbox": "pending update",
    "/questions": "No open question.",
    "/alerts": "fallback_delivery:op-api",
    "/conversations": "fg/d1",
    "/timeline": "TaskCompleted",
    "/lifecycles": "attempt",
    "/explain/op-api": "op-api",
}


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with running(serve_example(tmp_path_factory.mktemp("example"))) as server:
        yield server


@dataclass
class Inputs:
    """Where each input's events are in the store, read from its events: an
    input starts with its record (InputAccepted/InputRejected) and ends before
    the next record, a batch's SourceProgressed marker, or the head."""

    records: list[int]
    ends: list[int]
    head: int

    def previous(self, position: int) -> int | None:
        """The views before the last input folded at `position`."""
        before = [record for record in self.records if record <= position]
        return before[-1] - 1 if before else None

    def next(self, position: int) -> int | None:
        """The views after the first input after `position`."""
        return next((end for record, end in zip(self.records, self.ends) if record > position), None)


def inputs_of(server: Served) -> Inputs:
    client = server.client("human")
    kinds: list[tuple[int, str]] = []
    after = 0
    while True:
        page = client.events(after=after, limit=1000)
        kinds += [(event["position"], event["type"]) for event in page["events"]]
        if page["next_after"] is None or not page["events"]:
            break
        after = page["next_after"]
    head = kinds[-1][0]
    records = [position for position, kind in kinds if kind in ("InputAccepted", "InputRejected")]
    starts = [position for position, kind in kinds if kind in ("InputAccepted", "InputRejected", "SourceProgressed")]
    ends = [next((start - 1 for start in starts if start > record), head) for record in records]
    return Inputs(records, ends, head)


# ----------------------------------------------------------------- signing in


def test_signing_in_shows_the_overview_with_the_example_task_and_its_actions(page: Any, context: Any, example: Served) -> None:
    sign_in(page, example.url, example.tokens["human"])
    assert urlsplit(page.url).path == "/"
    assert page.locator("header .who").inner_text() == "signed in as human"
    views = example.client("human").views()
    (task,) = views["tasks"]
    row = page.locator("section.tasks tbody tr", has_text=task["task_id"])
    assert row.locator("td").nth(0).inner_text() == "signup"
    assert row.locator(".state").inner_text() == task["state"] == "completed"
    assert row.locator("td").nth(2).inner_text() == task["goal"] == "Email signup"
    links = row.locator("td").nth(3).locator("a")
    assert links.all_inner_texts() == task["actions"] == ["op-api", "op-form", "op-it"]
    assert [links.nth(i).get_attribute("href") for i in range(3)] == [f"/actions/{op}" for op in task["actions"]]
    # What needs the human leads: the example's two raised alerts.
    needs = page.locator("section.needs")
    assert "2 raised alerts" in needs.inner_text()
    for alert in (a for a in views["alerts"] if a["state"] == "raised"):
        assert needs.locator("a", has_text=alert["alert_id"]).count() == 1
    # The session: an HttpOnly, SameSite=Strict cookie; the token is nowhere.
    (cookie,) = [c for c in context.cookies() if c["name"] == "tandem_session"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    source = page.content()
    assert all(token not in source and token not in page.url for token in example.tokens.values())


def test_a_wrong_token_is_refused_on_the_login_page(page: Any, watch: Watch, example: Served) -> None:
    watch.expect(r"status of 401")
    page.goto(example.url + "/login")
    page.fill("#token", "not-a-token")
    page.click("button[type=submit]")
    assert page.locator(".problem").inner_text() == "That token is not known."
    assert urlsplit(page.url).path == "/login"


# ------------------------------------------------------------------ every page


def test_every_page_and_its_past_renders_without_a_console_error(page: Any, example: Served) -> None:
    sign_in(page, example.url, example.tokens["human"])
    head = example.client("human").view("health")["position"]
    past = head // 2
    for path, shows in PAGES.items():
        answer = page.goto(example.url + path)
        assert answer is not None and answer.status == 200, path
        assert page.title().endswith(" · Tandem"), path
        assert page.locator("main h1").count() >= 1, path
        assert page.locator(".past").count() == 0, path
        assert shows in page.locator("main").inner_text(), path
        wait_live(page)
        _drawings_loaded(page, path)
        answer = page.goto(example.url + path + f"?at={past}")
        assert answer is not None and answer.status == 200, path
        banner = page.locator(".past")
        assert "You are looking at the past" in banner.inner_text(), path
        assert page.locator("body").get_attribute("data-live") == "off", path
        _drawings_loaded(page, path)
        # The past's links stay in the past.
        nav = page.locator("header nav a").first.get_attribute("href") or ""
        assert re.fullmatch(r"/\?at=\d+", nav), (path, nav)


def _drawings_loaded(page: Any, path: str) -> None:
    if path != "/lifecycles":
        return
    images = page.locator("figure.lifecycle img")
    assert images.count() >= 10
    page.wait_for_function("() => [...document.querySelectorAll('figure.lifecycle img')].every(i => i.complete)")  # a function: the CSP refuses eval
    broken = page.evaluate("[...document.querySelectorAll('figure.lifecycle img')].filter(i => !i.naturalWidth).map(i => i.src)")
    assert broken == []


# ------------------------------------------------------------ without a session


def test_without_a_session_every_page_redirects_to_login_and_back(page: Any, context: Any, example: Served) -> None:
    targets = [*PAGES, "/tasks/signup?at=30", "/timeline?type=executor.outcome"]
    for target in targets:
        answer = page.goto(example.url + target)
        assert answer is not None and answer.status == 200
        first = answer.request.redirected_from
        assert first is not None and first.response().status == 303, target
        where = urlsplit(page.url)
        assert where.path == "/login" and parse_qs(where.query)["next"] == [target], (target, page.url)
        assert page.locator("#token").count() == 1
    # A session id the server never gave is no session either.
    context.add_cookies([{"name": "tandem_session", "value": "forged", "url": example.url}])
    page.goto(example.url + "/alerts")
    assert urlsplit(page.url).path == "/login"
    # Signing in there goes back where the browser was going, query and all.
    page.goto(example.url + "/tasks/signup?at=30")
    page.fill("#token", example.tokens["human"])
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert page.url == example.url + "/tasks/signup?at=30"
    assert "after position 29" in page.locator(".past").inner_text()
    # Signing out ends the session: the pages redirect again.
    page.goto(example.url + "/tasks")
    with page.expect_navigation():
        page.click("form.signout button")
    assert urlsplit(page.url).path == "/login"
    page.goto(example.url + "/tasks")
    assert urlsplit(page.url).path == "/login"


# ------------------------------------------------------------------------ CSRF


def test_a_form_without_its_csrf_token_is_refused_and_records_nothing(page: Any, watch: Watch, context: Any, example: Served) -> None:
    watch.expect(r"status of 403")
    sign_in(page, example.url, example.tokens["human"], "/alerts")
    head = store_head(example.store_url)
    alerts = example.client("human").view("alerts")["rows"]
    seen_form = "section.alerts-raised form[action='/alerts/seen']"
    resolve_form = "section.alerts-raised form[action='/alerts/resolve']"
    for form, tamper in [
        (seen_form, "f => f.querySelector('input[name=csrf]').remove()"),
        (resolve_form, "f => f.querySelector('input[name=csrf]').value = 'wrong'"),
        (seen_form, "f => f.querySelector('input[name=csrf]').value = ''"),
    ]:
        page.goto(example.url + "/alerts")
        page.locator(form).first.evaluate(tamper)
        with page.expect_navigation() as navigation:
            page.locator(form).first.locator("button").click()
        assert navigation.value.status == 403, form
        assert "CSRF token is missing or wrong; nothing was recorded" in page.locator("main").inner_text()
    # Posted from outside the page: no token, or another session's.
    for path, fields in [
        ("/questions/answer", {"task_id": "signup", "question_key": "q", "answer": "yes"}),
        ("/alerts/resolve", {"alert_id": alerts[0]["alert_id"], "csrf": "x" * 43}),
        ("/logout", {}),
    ]:
        answer = context.request.post(example.url + path, form=fields, max_redirects=0)
        assert answer.status == 403, (path, answer.status)
    assert store_head(example.store_url) == head
    assert example.client("human").view("alerts")["rows"] == alerts
    page.goto(example.url + "/alerts")  # still signed in: the refused logout ended nothing
    assert urlsplit(page.url).path == "/alerts"


def test_the_login_form_needs_its_own_check(context: Any, example: Served) -> None:
    """Signing in from another site (no matching check cookie) is refused."""
    answer = context.request.post(example.url + "/login", form={"token": example.tokens["human"], "check": "guess", "next": "/"}, max_redirects=0)
    assert answer.status == 403
    assert not [c for c in context.cookies() if c["name"] == "tandem_session"]


# ----------------------------------------------------------------- time travel


def task_page(page: Any) -> dict[str, Any]:
    """What /tasks/{id} shows, read from the DOM."""
    return page.evaluate(
        """() => {
      const value = el => [...el.classList].find(c => c.startsWith('state-')).slice(6);
      const h1 = document.querySelector('main h1');
      const badge = h1.querySelector('.state');
      if (!badge) return {found: false, title: h1.textContent};
      const facts = {};
      document.querySelectorAll('dl.facts dt').forEach(dt => facts[dt.textContent.trim()] = dt.nextElementSibling);
      const actions = [...document.querySelectorAll('main table tbody tr')].map(tr => {
        const cells = tr.querySelectorAll('td');
        return {
          operation_id: cells[0].querySelector('a').textContent,
          state: value(cells[1].querySelector('.state')),
          blocked_by: [...cells[2].querySelectorAll('code')].map(c => c.textContent),
          attempts: [...cells[3].querySelectorAll('code')].map(c => [c.textContent, value(c.nextElementSibling)]),
          outcome: cells[4].textContent === '\u2014' ? null : cells[4].textContent,
        };
      });
      return {found: true, state: value(badge), revision: Number(facts['Revision'].textContent),
              goal: facts['Goal'].textContent, holds: [...facts['Holds'].querySelectorAll('code')].map(c => c.textContent),
              actions: actions};
    }"""
    )


def shown_then(store_url: str, at: int, task_id: str) -> tuple[dict[str, Any], int]:
    """`tandem show --json --at P`: what a task's page should show, and the
    position it snapped to."""
    done = tandem("show", "--store", store_url, "--json", "--at", str(at))
    assert done.returncode == 0, done.stderr
    views = json.loads(done.stdout)
    snapped = re.search(r"showing the views before that input \(position (\d+)\)", done.stderr)
    tasks = [task for task in views["tasks"] if task["task_id"] == task_id]
    if not tasks:
        return {"found": False}, int(snapped.group(1)) if snapped else at
    (task,) = tasks
    actions = [
        {
            "operation_id": a["operation_id"],
            "state": a["state"],
            "blocked_by": a["blocked_by"],
            "attempts": [[at["attempt_id"], at["state"]] for at in a["attempts"]],
            "outcome": a["outcome"],
        }
        for a in views["actions"]
        if a["task_id"] == task_id
    ]
    expected = {"found": True, "state": task["state"], "revision": task["revision"], "goal": task["goal"], "holds": task["holds"], "actions": actions}
    return expected, int(snapped.group(1)) if snapped else at


def test_a_task_in_the_past_is_what_tandem_show_at_says(page: Any, example: Served) -> None:
    sign_in(page, example.url, example.tokens["human"], "/tasks/signup")
    inputs = inputs_of(example)
    checked: set[str] = set()
    for asked in [12, 25, 30, 33, 36, 45, 52, 58, inputs.ends[-1], inputs.head]:
        expected, snapped = shown_then(example.store_url, asked, "signup")
        page.goto(example.url + f"/tasks/signup?at={asked}")
        shown = task_page(page)
        shown.pop("title", None)
        assert shown == expected, asked
        checked.add(json.dumps(expected, sort_keys=True))
        banner = page.locator(".past").inner_text()
        assert f"the views after position {snapped}" in banner and f"of {inputs.head}." in banner, banner
        assert (f"(asked {asked}," in banner) == (asked != snapped), banner
        _link(page, "prev", inputs.previous(snapped))
        _link(page, "next", inputs.next(snapped))
    assert len(checked) >= 5  # the task was seen in several different states


def test_the_past_links_walk_input_by_input_and_back_to_now(page: Any, example: Served) -> None:
    sign_in(page, example.url, example.tokens["human"], "/tasks/signup?at=29")
    inputs = inputs_of(example)
    position = 29
    for rel in ["next", "next", "next", "prev"]:
        with page.expect_navigation():
            page.click(f"a[rel={rel}]")
        position = inputs.next(position) if rel == "next" else inputs.previous(position)
        assert page.url.endswith(f"/tasks/signup?at={position}")
        assert f"the views after position {position}, of" in page.locator(".past").inner_text()
        shown = task_page(page)
        assert shown == shown_then(example.store_url, position, "signup")[0]
    # From the newest input back one: no step lands on the same views twice.
    page.goto(example.url + f"/tasks/signup?at={inputs.head}")
    with page.expect_navigation():
        page.click("a[rel=prev]")
    assert page.url.endswith(f"?at={inputs.records[-1] - 1}")
    with page.expect_navigation():
        page.click(".past a:text('Back to now')")
    assert page.url == example.url + "/tasks/signup"
    assert page.locator(".past").count() == 0
    assert page.locator("body").get_attribute("data-live") == "on"
    wait_live(page)
    mark(page)
    live = example.client("human").views()
    (task,) = live["tasks"]
    shown = task_page(page)
    assert (shown["state"], shown["revision"]) == (task["state"], task["revision"])
    assert [a["state"] for a in shown["actions"]] == [a["state"] for a in live["actions"]]
    assert not reloaded(page)


def _link(page: Any, rel: str, position: int | None) -> None:
    links = page.locator(f".past a[rel={rel}]")
    if position is None:
        assert links.count() == 0, rel
    else:
        assert links.get_attribute("href") == f"/tasks/signup?at={position}", rel
