"""The console on a store of more than 100,000 events, in Chromium: the
timeline shows a page of 50 inputs, newest first, each with its events, and
pages back from there; the timeline of one operation shows the inputs whose
events concern it; an action's page
shows its state and explain chain as the API does. Nothing here times
anything (bench/console.py measures the pages on such a store).

The store is bench/workload.py's synthetic steady state (~12 events an
action), ingested once for the module into SQLite as bench/console.py's
`build` does (batches of 1,000 inputs a transaction); then served by
`tandem serve`. What the pages should show is read from the store itself
(the events, decoded in this process) and from the server's JSON API.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from bench.workload import synthetic_trace
from tandem.adapters.ingest import ingest
from tandem.adapters.store import open_store
from tandem.adapters.trace import parse_trace
from tandem.domain import events as ev
from tandem.domain.keys import event_keys
from tandem.replay.engine import Engine
from tests.browser.harness import serve, sign_in, sqlite_url
from tests.e2e.serving import Served

ACTIONS = 8_400  # synthetic_trace(8_400): just over 102,000 events
EVENTS_MIN = 100_000
OPERATION = f"op-{ACTIONS // 2}"  # a middle one
PAGE_ROWS = 50  # the timeline's page of inputs (replay/input_timeline.py limit_default)
NEWEST_READ = 5_000  # events read back for the last two pages' inputs (~12 an action)
RECORDS = (ev.InputAccepted, ev.InputRejected)


@dataclass
class Large:
    server: Served
    head: int
    newest: list[Shown]  # the last 2 pages' inputs, newest first
    concerning: list[int]  # the records of the inputs whose events concern OPERATION, newest first
    build_s: float


def build(url: str) -> float:
    """bench/console.py's `build`: the synthetic trace ingested, no views folded."""
    started = time.perf_counter()
    engine = Engine(open_store(url), with_views=False, snapshot_every=0)
    ingest(engine, parse_trace(synthetic_trace(ACTIONS), "synthetic.jsonl"))
    assert engine.store is not None
    engine.store.close()
    return time.perf_counter() - started


Shown = tuple[int, str, list[str]]  # an input: its record's position, its type, its events' types


def read_back(url: str) -> tuple[int, list[Shown], list[int]]:
    """The head, the newest inputs and those concerning OPERATION, read from the store."""
    store = open_store(url)
    inputs: list[Shown] = []
    concerning: list[int] = []
    try:
        head = store.head()
        for position, event in store.read():
            if isinstance(event, RECORDS):
                inputs.append((position, event.input.input_type, []))
            if inputs and position > head - NEWEST_READ:
                inputs[-1][2].append(type(event).__name__)
            if inputs and inputs[-1][0] not in concerning[-1:] and any(key[1:] == (OPERATION,) for key in event_keys(event)):
                concerning.append(inputs[-1][0])
    finally:
        store.close()
    return head, inputs[-2 * PAGE_ROWS :][::-1], concerning[::-1]


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Large]:
    directory = tmp_path_factory.mktemp("large")
    url = sqlite_url(directory)
    build_s = build(url)
    head, newest, concerning = read_back(url)
    assert head >= EVENTS_MIN
    print(f"\n{head:,} events built in {build_s:.1f} s")
    server = serve(directory, url)
    try:
        yield Large(server, head, newest, concerning, build_s)
    finally:
        assert server.stop() == 0, server.log()


# Until the server's index of the log is built (in the background, after it
# starts listening) a filtered timeline looks back at most 5,000 events: the
# middle operation's events are further. With the index it looks at exactly
# the rows it shows.
INDEX_READY = """async operation => {
  const answer = await fetch('/timeline?id=' + encodeURIComponent(operation), {headers: {Accept: 'text/html'}});
  const shown = /(\\d+) inputs? shown, matching \\(looked at (\\d+)\\)/.exec(await answer.text());
  return shown !== null && shown[1] !== '0' && shown[1] === shown[2];
}"""


def signed_in(page: Any, large: Large, path: str) -> None:
    """At `path`, signed in, as served once the index is built: the page
    that signing in loaded may predate the index (on a loaded machine it
    did: a filtered timeline of no rows), so it is loaded again after."""
    sign_in(page, large.server.url, large.server.tokens["human"], path)
    page.wait_for_function(INDEX_READY, arg=OPERATION, polling=100)
    page.reload()


def rows(page: Any) -> list[Shown]:
    """The timeline's inputs as shown: its record's position, its type, and
    the types of the events in its box (read whether it is open or not)."""
    entries = page.eval_on_selector_all(
        "table.timeline > tbody.entry",
        """bodies => bodies.map(body => [body.id, body.querySelector('tr.input-row td').textContent,
            body.querySelector('tr.input-row td:nth-child(2) code').textContent,
            [...body.querySelectorAll('table.events tbody tr')].map(tr => [tr.id, tr.cells[1].textContent])])""",
    )
    assert all(body_id == f"i{record}" for body_id, record, _, _ in entries)
    assert all(events[0][0] == f"p{record}" for _, record, _, events in entries)  # its record first
    return [(int(record), kind, [event for _, event in events]) for _, record, kind, events in entries]


def link(page: Any, label: str) -> str | None:
    links = page.locator("main div.pager").first.locator("a", has_text=label)
    return links.get_attribute("href") if links.count() == 1 else None


def test_the_timeline_shows_the_newest_page_then_the_next(page: Any, large: Large) -> None:
    signed_in(page, large, "/timeline")
    first = rows(page)
    assert large.server.client("human").view("health")["position"] == large.head
    assert first == large.newest[:PAGE_ROWS]  # 50 inputs, newest first, each with its events: never the whole log
    summary = page.locator("main p.summary").inner_text()
    assert summary == f"Inputs newest first, each with the events it caused: {PAGE_ROWS} inputs shown; {large.head} events in all."
    assert link(page, "newer") is None
    assert link(page, "older") == f"/timeline?before={first[-1][0]}"
    assert page.locator("main div.pager").first.inner_text() == "older →"
    with page.expect_navigation():
        page.locator("main div.pager").first.locator("a", has_text="older").click()
    second = rows(page)
    assert second == large.newest[PAGE_ROWS : 2 * PAGE_ROWS]
    assert link(page, "older") == f"/timeline?before={second[-1][0]}"
    assert link(page, "newer") == f"/timeline?before={first[0][0] + 1}"  # the first page again
    assert page.locator("main div.pager").first.inner_text() == "← newer · older →"  # the labels apart


def test_the_timeline_of_one_operation_shows_its_inputs(page: Any, large: Large) -> None:
    signed_in(page, large, f"/timeline?id={OPERATION}")
    shown = rows(page)
    assert [record for record, _, _ in shown] == large.concerning
    assert 3 <= len(shown) < PAGE_ROWS and link(page, "older") is None
    assert page.locator("main p.summary").inner_text() == (
        f"Inputs newest first, each with the events it caused: {len(shown)} inputs shown, matching (looked at {len(shown)}); {large.head} events in all."
    )
    # Each input links to the explain of what its events concern: the operation.
    for record, _, _ in shown:
        concerns = page.locator(f"tbody#i{record} tr.input-row td").nth(5).locator("a")
        assert f"/explain/{OPERATION}" in concerns.evaluate_all("as => as.map(a => a.getAttribute('href'))"), record
    # The steps of its explain chain are among their events.
    (match,) = large.server.client("human").explain(OPERATION, kind="operation")["matches"]
    events = set(page.eval_on_selector_all("table.events tbody tr", "trs => trs.map(tr => tr.id)"))
    assert {f"p{step['position']}" for step in match["steps"]} <= events


def test_an_action_page_shows_its_state_and_explain_chain(page: Any, large: Large) -> None:
    signed_in(page, large, f"/actions/{OPERATION}")
    client = large.server.client("human")
    (action,) = [a for a in client.view("actions")["rows"] if a["operation_id"] == OPERATION]
    assert action["state"] == "succeeded"
    heading = page.locator("main h1")
    assert heading.locator("code").inner_text() == OPERATION
    assert heading.locator(".state").inner_text() == action["state"]
    facts = page.evaluate("() => Object.fromEntries([...document.querySelectorAll('dl.facts dt')].map(dt => [dt.textContent, dt.nextElementSibling.textContent]))")
    assert facts["Operation"] == f"{action['operation']} on resource {action['resource']}"
    assert facts["For"] == f"task {action['task_id']}, cause {action['cause_key']}"
    assert facts["Outcome"] == f"{action['outcome']} (artifact {action['artifact_revision']})"
    attempts = page.locator("ul.attempts li")
    assert attempts.locator("code").all_inner_texts() == [a["attempt_id"] for a in action["attempts"]]
    assert attempts.locator(".state").all_inner_texts() == [a["state"] for a in action["attempts"]]
    explained = client.explain(OPERATION, kind="operation")  # the page's: the operation named
    chains = page.locator("section.chain")
    assert chains.count() == len(explained["matches"]) >= 1
    for number, match in enumerate(explained["matches"]):
        chain = chains.nth(number)
        assert chain.locator("h3").inner_text() == f"{match['kind']} {match['id']}: {match['state']}"
        assert chain.locator("p").first.inner_text() == match["summary"]
        steps = chain.locator("ol.links > li")
        shown = steps.evaluate_all("lis => lis.map(li => [li.id, li.querySelector('b').textContent])")
        assert shown == [[f"p{step['position']}", step["event"]] for step in match["steps"]]
        for index, step in enumerate(match["steps"]):
            assert step["summary"] in steps.nth(index).inner_text(), step["position"]
        assert len(match["steps"]) >= 4  # proposed, claimed, accepted, succeeded at least
