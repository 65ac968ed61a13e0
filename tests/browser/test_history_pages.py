"""Where a page shows history beside the live work, it shows the last few
and links or pages the rest (docs/api.md, "Lists"): each conversation's
deliveries newest first, 10 a page; among every state's alerts the last 10
resolved ones, then "N more resolved alerts", linked to the resolved list.
On bench/console_workload.py's small store (its finished tasks' turns and
wakes: deliveries) and a trace of cards whose alerts are resolved."""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from bench.console_workload import console_inputs
from tests.browser.harness import ingest_lines, running, serve, sign_in, sqlite_url
from tests.e2e.serving import Served

CARDS = 14  # each card's alert raised, then resolved by the human
START = datetime.datetime(2026, 3, 9, 9, 0, tzinfo=datetime.UTC)  # after the workload's inputs


def stamp(seconds: int) -> str:
    return (START + datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def cards() -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = [
        {"type": "conversation.open", "at": stamp(0), "actor": "daemon", "conversation_id": "cards-fg", "role": "foreground", "context_limit": 200000, "reserve": 20000},
        {"type": "conversation.open", "at": stamp(0), "actor": "daemon", "conversation_id": "cards-bg", "role": "background", "foreground_id": "cards-fg", "context_limit": 100000, "reserve": 10000},
        {"type": "background.bind", "at": stamp(0), "actor": "daemon", "conversation_id": "cards-bg", "foreground_id": "cards-fg", "generation": 1},
        {"type": "observe", "at": stamp(1), "actor": "source", "source_id": "s1", "kind": "comment", "scope": "pr-1", "fingerprint": "F", "complete": True, "text": "hello"},
    ]  # fmt: skip
    for n in range(CARDS):
        lines.append({"type": "card.propose", "at": stamp(10 + n), "actor": "background", "card_id": f"c{n:02d}", "cause_key": "comment:pr-1:s1", "summary": f"card {n}", "generation": 1})
    for n in range(CARDS):
        lines.append({"type": "alert.resolve", "at": stamp(100 + n), "actor": "human", "alert_id": f"card:c{n:02d}"})
    return lines


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    directory = tmp_path_factory.mktemp("history")
    url = sqlite_url(directory)
    ingest_lines(directory, url, "workload", [json.dumps(line) for line in console_inputs(10)])
    ingest_lines(directory, url, "cards", [json.dumps(line) for line in cards()])
    with running(serve(directory, url)) as server:
        yield server


def test_a_conversations_deliveries_are_paged_newest_first(page: Any, served: Served) -> None:
    conversations = served.client("human").view("conversations")["rows"]
    busiest = max(conversations, key=lambda c: len(c["deliveries"]))
    every = [d["delivery_id"] for d in busiest["deliveries"]][::-1]  # newest first
    assert len(every) > 10, "the workload gives a conversation more than a page of deliveries"
    sign_in(page, served.url, served.tokens["human"], "/conversations")
    section = page.locator(f"section.conversation:has(h2 code:text-is('{busiest['conversation_id']}'))")
    shown = section.locator("tbody tr td:first-child").all_inner_texts()
    assert shown == every[:10]
    pager = section.locator("p.pager")
    assert pager.inner_text() == f"1–10 of {len(every)} · {len(every) - 10} more"
    with page.expect_navigation():
        pager.locator("a[rel=next]").click()
    section = page.locator(f"section.conversation:has(h2 code:text-is('{busiest['conversation_id']}'))")
    assert section.locator("tbody tr td:first-child").all_inner_texts() == every[10:20]


def test_every_states_alerts_show_the_last_resolved_and_link_the_rest(page: Any, served: Served) -> None:
    resolved = [a for a in served.client("human").view("alerts")["rows"] if a["state"] == "resolved"]
    assert len(resolved) >= CARDS
    sign_in(page, served.url, served.tokens["human"], "/alerts")
    group = page.locator("section.alerts-resolved")
    assert group.locator("tbody tr").count() == 10
    assert group.locator("tbody tr").first.get_attribute("id") == f"a-card%3Ac{CARDS - 1:02d}"  # the last resolved first
    more = group.locator("p.more a")
    assert more.inner_text() == f"{len(resolved) - 10} more resolved alerts"
    with page.expect_navigation():
        more.click()
    assert re.search(r"/alerts\?state=resolved$", page.url)
    assert page.locator("section.alerts-resolved tbody tr").count() == min(len(resolved), 25)
