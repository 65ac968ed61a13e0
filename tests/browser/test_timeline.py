"""The timeline of inputs (docs/api.md, "The console"), in Chromium, on the
bundled example and inputs posted over the API after it (a human message of
hostile text, a background's refused `task.cancel`, a batch of sixty
messages): one row per input, its events collapsed in a box that opens on
the input as recorded (its JSON, the text literal) and its result; the
filters by type, actor, id and time range, alone and combined, against the
store read here; the pager's labels; the scrubber, with the page's script
and without it (a plain form GET of `?at=`).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tandem.adapters.store import open_store
from tandem.adapters.terminal import printable, printable_lines
from tandem.replay.engine import input_boundary
from tandem.replay.input_timeline import Chosen, Entry
from tests.browser.harness import VIEWPORT, Watch, running, serve_example, sign_in, watched_page
from tests.browser.test_hostile_text import TEXT, assert_safe
from tests.e2e.serving import Served
from tests.integration.test_input_timeline import every_entry, matching

BATCH = 60  # messages in one request: the example and these make more than a page of 50


@dataclass
class Example:
    server: Served
    hostile: int  # the record of the hostile human message
    refused: int  # the record of the refused task.cancel


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Example]:
    with running(serve_example(tmp_path_factory.mktemp("timeline"))) as server:
        hostile = server.client("human").submit({"type": "human.message", "conversation_id": "fg", "message_id": "m-hostile", "text": TEXT})
        refused = server.client("background").submit({"type": "task.cancel", "task_id": "signup"})
        assert refused["results"][0]["reason"] == "not_authorized"
        lines = [{"type": "human.message", "conversation_id": "fg", "message_id": f"m{n}", "text": f"message {n}"} for n in range(BATCH)]
        assert len(server.client("human").submit_batch(lines)["results"]) == BATCH
        first = [result["events"][0]["position"] for result in (hostile["results"][0], refused["results"][0])]
        yield Example(server, *first)


def entries(example: Example) -> list[Entry]:
    """Every input in the store, oldest first, as the timeline should show it."""
    store = open_store(example.server.store_url)
    try:
        return [found for found, _ in every_entry(store)]
    finally:
        store.close()


def chosen_entries(example: Example, chosen: Chosen) -> list[Entry]:
    store = open_store(example.server.store_url)
    try:
        return matching(every_entry(store), chosen)
    finally:
        store.close()


def shown(page: Any) -> list[tuple[int, str, str, str, str]]:
    """The rows: record, input type, actor, at, result."""
    return [
        (int(record), kind, actor, at, result)
        for record, kind, actor, at, result in page.eval_on_selector_all(
            "table.timeline > tbody.entry > tr.input-row",
            "rows => rows.map(tr => [tr.cells[0].textContent, tr.cells[1].querySelector('code').textContent, "
            "tr.cells[2].textContent, tr.cells[3].textContent, tr.cells[4].textContent])",
        )
    ]


def expected(found: list[Entry]) -> list[tuple[int, str, str, str, str]]:
    rows = [(e.record, e.input.type, printable(e.input.actor), e.input.at, f"rejected: {e.input.rejected}" if e.input.rejected else "accepted") for e in found]
    return rows[::-1][:50]


def test_each_row_is_an_input_with_its_events_collapsed(page: Any, example: Example) -> None:
    sign_in(page, example.server.url, example.server.tokens["human"], "/timeline")
    every = entries(example)
    assert shown(page) == expected(every)
    assert page.locator("main p.summary").inner_text().startswith("Inputs newest first, each with the events it caused: 50 inputs shown;")
    by_record = {e.record: e for e in every}
    for record in (example.refused, 63, 9):  # refused, an executor's outcome, a heartbeat
        entry, box = by_record[record], page.locator(f"tbody#i{record} tr.caused details")
        page.goto(example.server.url + f"/timeline?before={record + 1}")
        assert box.get_attribute("open") is None and not box.locator("pre.input-json").is_visible()  # collapsed
        box.locator("summary").click()
        assert box.locator("pre.input-json").inner_text() == printable_lines(json.dumps(entry.value, indent=2, ensure_ascii=False))
        events = box.locator("table.events tbody tr")
        assert events.evaluate_all("trs => trs.map(tr => [tr.id, tr.cells[1].textContent])") == [[f"p{r.position}", r.event] for r in entry.events]
        result = box.locator("p.result").inner_text()
        if record == example.refused:
            assert result.startswith("Result: rejected, not_authorized") and events.count() == 1
        else:
            assert result == f"Result: accepted; {len(entry.events)} events, its record first."
        assert box.locator("summary").inner_text().startswith(f"{len(entry.events)} event")


def test_the_input_as_recorded_shows_hostile_text_literally(page: Any, example: Example) -> None:
    sign_in(page, example.server.url, example.server.tokens["human"], f"/timeline?before={example.hostile + 1}")
    box = page.locator(f"tbody#i{example.hostile} tr.caused details")
    box.locator("summary").click()
    (entry,) = [e for e in entries(example) if e.record == example.hostile]
    assert entry.value["text"] == TEXT  # recorded as sent
    text = box.locator("pre.input-json").inner_text()
    assert text == printable_lines(json.dumps(entry.value, indent=2, ensure_ascii=False))
    assert "<script>window.__pwned=1</script>" in text and "\\u001b[31mred" in text and "\\u202eevil" in text
    assert_safe(page, "timeline input JSON", [])


def test_filters_by_kind_actor_id_and_time_combine(page: Any, watch: Watch, example: Example) -> None:
    sign_in(page, example.server.url, example.server.tokens["human"], "/timeline")
    at = lambda text: datetime.datetime.fromisoformat(text)  # noqa: E731
    cases = [
        ({"type": "executor.outcome"}, Chosen(kind="executor.outcome")),
        ({"actor": "watchdog"}, Chosen(actor="watchdog")),
        ({"id": "op-form"}, Chosen(identifier="op-form")),
        ({"from": "2026-03-01T09:20:00Z", "to": "2026-03-01T09:41:00Z"}, Chosen(since=at("2026-03-01T09:20:00Z"), until=at("2026-03-01T09:41:00Z"))),
        ({"type": "executor.receipt", "actor": "executor", "to": "2026-03-01T09:30:00Z"},
         Chosen(kind="executor.receipt", actor="executor", until=at("2026-03-01T09:30:00Z"))),
        ({"id": "op-it", "actor": "executor", "from": "2026-03-01T09:40:00Z"}, Chosen(identifier="op-it", actor="executor", since=at("2026-03-01T09:40:00Z"))),
        ({"id": "fg", "type": "human.message", "actor": "human", "from": "2026-03-01T09:00:00", "to": "2026-03-01T09:10:00Z"},
         Chosen(identifier="fg", kind="human.message", actor="human", since=at("2026-03-01T09:00:00Z"), until=at("2026-03-01T09:10:00Z"))),
        ({"type": "watchdog.heartbeat", "actor": "human"}, Chosen(kind="watchdog.heartbeat", actor="human")),
    ]  # fmt: skip
    for fields, chosen in cases:
        page.goto(example.server.url + "/timeline")
        for name, value in fields.items():
            page.fill(f"form.filter #{name}", value)
        with page.expect_navigation():
            page.click("form.filter button[type=submit]")
        asked = parse_qs(urlsplit(page.url).query)
        assert {name: values for name, values in asked.items() if values != [""]} == {name: [value] for name, value in fields.items()}
        want = expected(chosen_entries(example, chosen))
        assert shown(page) == want, fields
        assert len(want) >= (0 if fields.get("actor") == "human" and "type" in fields and len(fields) == 2 else 1), fields
        for name, value in fields.items():  # the form holds what was asked
            assert page.locator(f"form.filter #{name}").input_value() == value
        summary = page.locator("main p.summary").inner_text()
        assert f"{len(want)} input{'s' if len(want) != 1 else ''} shown, matching" in summary
        if not want:
            assert page.locator("table.timeline").inner_text().endswith("No input matches.")
    # A time that is none: refused, naming it.
    watch.expect(r"status of 400")
    answer = page.goto(example.server.url + "/timeline?from=yesterday")
    assert answer is not None and answer.status == 400
    assert "?from='yesterday': a time, like 2026-03-01T09:00:00Z" in page.locator("main").inner_text()


def test_the_pager_labels_are_apart_and_page_by_input(page: Any, example: Example) -> None:
    every = entries(example)[::-1]
    middle = every[20].record
    sign_in(page, example.server.url, example.server.tokens["human"], f"/timeline?before={middle + 1}")
    assert [row[0] for row in shown(page)] == [e.record for e in every[20:70]]
    pager = page.locator("main div.pager").first
    assert pager.inner_text() == "← newer · older →"
    assert pager.locator("a.older").get_attribute("href") == f"/timeline?before={every[69].record}"
    head = example.server.client("human").view("health")["position"]
    assert pager.locator("a.newer").get_attribute("href") == f"/timeline?before={head + 1}"  # fewer than a page: the newest
    with page.expect_navigation():
        pager.locator("a.older").click()
    assert [row[0] for row in shown(page)] == [e.record for e in every[70:120]]
    assert page.locator("main div.pager").first.inner_text() == "← newer"
    page.goto(example.server.url + "/timeline")
    assert page.locator("main div.pager").first.inner_text() == "older →"


def past_of(example: Example, asked: int) -> int:
    store = open_store(example.server.store_url)
    try:
        return input_boundary(store, asked)
    finally:
        store.close()


def travelled(page: Any, example: Example, asked: int) -> None:
    """The page is the timeline in the past, after the boundary `asked` snaps to."""
    snapped = past_of(example, asked)
    assert f"the views after position {snapped}" in page.locator(".past").inner_text()
    head = example.server.client("human").view("health")["position"]
    assert page.locator(".live-state").inner_text() == f"behind: head {head}"
    records = [row[0] for row in shown(page)]
    assert records and max(records) <= snapped
    assert page.locator("#at").input_value() == str(snapped) == page.locator("#at-slider").input_value()


def test_the_scrubber_travels_in_time_with_the_script(page: Any, example: Example) -> None:
    sign_in(page, example.server.url, example.server.tokens["human"], "/timeline?type=executor.outcome")
    page.fill("#at", "60")
    assert page.locator("#at-slider").input_value() == "60"  # kept together
    with page.expect_navigation():
        page.click("form.scrubber button[type=submit]")
    assert urlsplit(page.url).path == "/timeline" and parse_qs(urlsplit(page.url).query) == {"type": ["executor.outcome"], "at": ["60"]}
    travelled(page, example, 60)
    assert {row[1] for row in shown(page)} == {"executor.outcome"}  # the filter kept
    page.fill("#at-slider", "45")
    assert page.locator("#at").input_value() == "45"
    with page.expect_navigation():
        page.click("form.scrubber button[type=submit]")
    assert parse_qs(urlsplit(page.url).query)["at"] == ["45"]
    travelled(page, example, 45)


def test_the_scrubber_is_a_form_without_the_script(browser: Any, example: Example) -> None:
    context = browser.new_context(viewport=VIEWPORT, java_script_enabled=False)
    try:
        page, watch = watched_page(context)
        sign_in(page, example.server.url, example.server.tokens["human"], "/timeline")
        head = example.server.client("human").view("health")["position"]
        page.fill("#at", "33")  # the box moved, the slider not
        with page.expect_navigation():
            page.click("form.scrubber button[type=submit]")
        assert parse_qs(urlsplit(page.url).query) == {"was": [str(head)], "at": [str(head), "33"]}
        travelled(page, example, 33)
        snapped = past_of(example, 33)
        page.fill("#at-slider", "12")  # the slider moved, the box not
        with page.expect_navigation():
            page.click("form.scrubber button[type=submit]")
        assert parse_qs(urlsplit(page.url).query) == {"was": [str(snapped)], "at": ["12", str(snapped)]}
        travelled(page, example, 12)
        assert watch.unexpected() == []
    finally:
        context.close()
