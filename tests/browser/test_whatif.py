"""The console's "what if…" in Chromium (docs/api.md, "The console"): from
the timeline row of an input, and from an action's page, a person drops an
input, changes one of its fields or moves it in time, and gets the what-if's
page: the first divergence, each thing with its state on each side and the
steps only one side has (`-` original, `+` fork), per view the rows added,
removed and changed, the original's things linked to their explain page.
Nothing is recorded (the store's head stays), a form without the session's
CSRF token runs nothing, and text from an edit is shown as text, never
markup (nothing runs: the conftest fails a test on any console error, CSP
violation or dialog).

The bundled example, served: input 5 is the watchdog's first heartbeat,
input 8 the task's delegation, input 14 op-api's executor receipt."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.harness import fresh_directory, running, serve_example, sign_in
from tests.e2e.serving import Served, store_head

HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">'


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with running(serve_example(fresh_directory(tmp_path_factory.mktemp("whatif") / "example"))) as server:
        yield server


def whatif_box(page: Any, seq: int) -> Any:
    """The first "what if…" box of input `seq` on the page, opened."""
    box = page.locator(f"details.whatif:has(input[name=input][value='{seq}'])").first
    box.locator("summary").click()
    return box


def thing(page: Any, kind: str, identifier: str) -> Any:
    return page.locator(f"section.thing[data-kind='{kind}']", has=page.locator("h3 code", has_text=identifier)).first


def nothing_ran(page: Any) -> None:
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("script").count() == 1  # the console's own
    assert page.locator("main img, main iframe, main object").count() == 0


def test_dropping_an_input_from_the_timeline_shows_what_would_change(page: Any, example: Served) -> None:
    head = store_head(example.store_url)
    sign_in(page, example.url, example.tokens["human"], "/timeline?type=watchdog.heartbeat")
    with page.expect_navigation():
        whatif_box(page, 5).locator("button", has_text="Drop input 5").click()
    assert page.url == example.url + "/whatif"
    assert page.locator("h1").inner_text() == "What if: --drop 5"
    assert page.locator("p.divergence").inner_text() == "First divergence: input 5 — original: accepted; fork: absent."
    alert = thing(page, "alert", "watchdog_unavailable:engine")
    assert "absent → resolved" in alert.locator("h3").inner_text()
    fork_steps = alert.locator("li.only-fork").all_inner_texts()
    assert [text.split(":")[0] for text in fork_steps] == ["+ input 11 AlertRaised → raised", "+ input 15 AlertResolved → resolved"]
    assert alert.locator("a", has_text="explain").count() == 0  # no such alert in the store: nothing to explain
    op_api = thing(page, "operation", "op-api")
    assert "succeeded → succeeded" in " ".join(op_api.locator("h3").inner_text().split())
    assert "- input 14 AttemptUpdated → accepted" in op_api.locator("li.only-original").all_inner_texts()[1]
    assert "+ input 11 ActionBlocked → pending: blocked_by [watchdog_unavailable]" in op_api.locator("li.only-fork").all_inner_texts()
    assert op_api.locator("a", has_text="explain (original)").get_attribute("href") == "/explain/op-api"
    alerts = page.locator("section.view-diff[data-view='alerts']")
    assert alerts.locator("h3").inner_text() == "alerts: 1 added"
    assert alerts.locator("li.only-fork").first.inner_text().startswith("+ watchdog_unavailable:engine")
    with page.expect_navigation():
        op_api.locator("a", has_text="explain (original)").click()
    assert page.url == example.url + "/explain/op-api"
    assert store_head(example.store_url) == head  # nothing recorded


def test_moving_an_input_in_time_from_an_action_page(page: Any, example: Served) -> None:
    head = store_head(example.store_url)
    sign_in(page, example.url, example.tokens["human"], "/actions/op-api")
    box = whatif_box(page, 14)
    box.locator("input[name=seconds]").fill("1200")
    with page.expect_navigation():
        box.locator("button", has_text="Move it").click()
    assert page.locator("h1").inner_text() == "What if: --shift 14=1200"
    assert page.locator("p.divergence").inner_text() == "First divergence: input 14 — original: accepted; fork: rejected: stale_attempt."
    attempt = thing(page, "attempt", "op-api/a1")
    assert attempt.locator("li.only-original").all_inner_texts() == ["- input 14 AttemptUpdated → accepted: attempt op-api/a1 accepted; action accepted"]
    rejections = page.locator("section.view-diff[data-view='rejections']")
    assert rejections.locator("h3").inner_text() == "rejections: 1 added"
    assert "stale_attempt" in rejections.locator("li.only-fork").inner_text()
    assert store_head(example.store_url) == head


def test_hostile_text_in_a_changed_field_is_shown_as_text(page: Any, watch: Any, example: Served) -> None:
    watch.expect(r"status of 422 .*/whatif")  # the bad edit below, answered as a page
    sign_in(page, example.url, example.tokens["human"], "/timeline?type=task.delegate")
    box = whatif_box(page, 8)
    box.locator("input[name=field]").fill("goal")
    box.locator("input[name=value]").fill(HOSTILE)
    with page.expect_navigation():
        box.locator("button", has_text="Change it").click()
    nothing_ran(page)
    assert page.locator("h1 code").inner_text() == f'--set 8.goal="{HOSTILE.replace(chr(34), chr(92) + chr(34))}"'
    change = page.locator("section.view-diff[data-view='tasks'] table.changes tr", has=page.locator("code", has_text="goal"))
    assert change.locator("td.only-original").inner_text() == "Email signup"
    assert change.locator("td.only-fork").inner_text() == HOSTILE
    task = thing(page, "task", "signup")
    assert task.locator("li.only-fork").inner_text().endswith(HOSTILE)

    page.goto(example.url + "/timeline?type=task.delegate")  # a bad edit: its message, as text
    box = whatif_box(page, 8)
    box.locator("input[name=field]").fill(HOSTILE)
    box.locator("input[name=value]").fill("1")
    with page.expect_navigation():
        box.locator("button", has_text="Change it").click()
    nothing_ran(page)
    problem = page.locator("p.problem").inner_text()
    assert problem.startswith(f"--set 8.{HOSTILE}: ") and problem.endswith("is not a field path (names joined by '.', no '=')")


def test_a_whatif_form_without_the_sessions_csrf_token_runs_nothing(page: Any, watch: Any, example: Served) -> None:
    watch.expect(r"403")
    sign_in(page, example.url, example.tokens["human"], "/timeline")
    box = page.locator("details.whatif").first
    box.locator("summary").click()
    box.locator("form").first.evaluate("f => f.querySelector('input[name=csrf]').value = 'wrong'")
    with page.expect_navigation():
        box.locator("button", has_text="Drop input").click()
    assert "403 csrf" in page.locator("h1").inner_text()
