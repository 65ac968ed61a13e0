"""`alert.seen`, then `alert.resolve`, from /alerts in Chromium, on the
bundled example (which ends with two raised fallback_delivery alerts): each
is recorded as the human's input, and the page shows the two differently —
the alert moves from the Raised section to Seen (still resolvable), then to
Resolved (nothing left to do)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.browser.harness import Watch, running, serve_example, sign_in
from tests.e2e.serving import Served, store_head

ALERT = "fallback_delivery:op-api"
OTHER = "fallback_delivery:op-form"


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with running(serve_example(tmp_path_factory.mktemp("alerts"))) as server:
        yield server


def section_of(page: Any, alert_id: str) -> str:
    """The section (raised, seen, resolved) whose table holds the alert's row."""
    row = page.locator(f"tr[id='a-{alert_id.replace(':', '%3A')}']")
    assert row.count() == 1, alert_id
    return row.evaluate("tr => tr.closest('section').className.replace('alerts alerts-', '')")


def heading(page: Any, group: str) -> str:
    return page.locator(f"section.alerts-{group} h2").inner_text()


def buttons(page: Any, alert_id: str) -> list[str]:
    """The row's form buttons (not an id's copy button)."""
    return page.locator(f"tr[id='a-{alert_id.replace(':', '%3A')}'] form button").all_inner_texts()


def alert_state(server: Served, alert_id: str) -> str:
    (row,) = [a for a in server.client("human").view("alerts")["rows"] if a["alert_id"] == alert_id]
    return row["state"]


def test_seen_then_resolved_from_the_alerts_page(page: Any, example: Served) -> None:
    sign_in(page, example.url, example.tokens["human"], "/alerts")
    assert section_of(page, ALERT) == section_of(page, OTHER) == "raised"
    assert heading(page, "raised").startswith("Raised (2)")
    assert buttons(page, ALERT) == ["Mark seen", "Resolve"]
    head = store_head(example.store_url)

    with page.expect_navigation():
        page.locator(f"tr[id='a-{ALERT.replace(':', '%3A')}'] button", has_text="Mark seen").click()
    assert urlsplit(page.url).path == "/alerts"
    assert page.locator(".flash").inner_text() == f"alert.seen recorded at position {head + 1}, accepted"
    assert alert_state(example, ALERT) == "seen"
    assert section_of(page, ALERT) == "seen" and section_of(page, OTHER) == "raised"
    # Recording stamped the server's clock, months past the example's last
    # input: another action's fallback may have fallen due and raised its
    # alert meanwhile. The page counts what the views hold.
    raised = [a["alert_id"] for a in example.client("human").view("alerts")["rows"] if a["state"] == "raised"]
    assert ALERT not in raised and OTHER in raised
    assert heading(page, "raised").startswith(f"Raised ({len(raised)})")
    assert heading(page, "seen") == "Seen (1) a person looked; not resolved"
    assert buttons(page, ALERT) == ["Resolve"]  # seen is not resolved: it can still be
    # The overview no longer lists it as needing the human.
    page.goto(example.url + "/")
    needs = page.locator("section.needs").inner_text()
    assert OTHER in needs and ALERT not in needs

    page.goto(example.url + "/alerts")
    head = store_head(example.store_url)
    with page.expect_navigation():
        page.locator(f"tr[id='a-{ALERT.replace(':', '%3A')}'] button", has_text="Resolve").click()
    assert page.locator(".flash").inner_text() == f"alert.resolve recorded at position {head + 1}, accepted"
    assert alert_state(example, ALERT) == "resolved"
    assert section_of(page, ALERT) == "resolved"
    assert heading(page, "seen").startswith("Seen (0)")
    assert heading(page, "resolved") == "Resolved (1) ended, by the engine or a person"
    assert buttons(page, ALERT) == []
    # Each was the human's input, on the timeline.
    page.goto(example.url + "/timeline")
    newest = page.locator("table.timeline > tbody.entry > tr.input-row")  # one row an input
    rows = [row.split("\t") for row in newest.all_inner_texts()]
    assert [(cells[1].split()[0], cells[2]) for cells in rows[:2]] == [("alert.resolve", "human"), ("alert.seen", "human")]


def test_a_form_sent_after_the_session_ended_signs_in_then_returns_to_its_page(
    page: Any, watch: Watch, open_page: Any, example: Served
) -> None:
    """Signed out in another tab, then "Mark seen": nothing is recorded; after
    signing in again the browser is back on /alerts, not on the form's action."""
    sign_in(page, example.url, example.tokens["human"], "/alerts")
    other, _ = open_page()
    other.goto(example.url + "/tasks")
    with other.expect_navigation():
        other.click("form.signout button")
    head = store_head(example.store_url)
    with page.expect_navigation():
        page.locator(f"tr[id='a-{OTHER.replace(':', '%3A')}'] button", has_text="Mark seen").click()
    assert urlsplit(page.url).path == "/login"
    assert store_head(example.store_url) == head
    page.fill("#token", example.tokens["human"])
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert urlsplit(page.url).path == "/alerts"
    assert section_of(page, OTHER) == "raised"
    assert store_head(example.store_url) == head
