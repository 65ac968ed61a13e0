"""The console on a store of more than 100,000 events, in Chromium: the
timeline shows a page of 50, newest first, and pages back from there; the
timeline of one operation shows that operation's events; an action's page
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
from tandem.replay.engine import Engine
from tests.browser.harness import serve, sign_in, sqlite_url
from tests.e2e.serving import Served

ACTIONS = 8_400  # synthetic_trace(8_400): just over 102,000 events
EVENTS_MIN = 100_000
OPERATION = f"op-{ACTIONS // 2}"  # a middle one
PAGE_ROWS = 50  # the timeline's page (replay/timeline.py limit_default)
RECORDS = (ev.InputAccepted, ev.InputRejected)


@dataclass
class Large:
    server: Served
    head: int
    newest: list[tuple[int, str]]  # the last 2 pages' (position, event type), newest first
    concerning: list[int]  # positions of OPERATION's events (an operation_id field), newest first
    build_s: float


def build(url: str) -> float:
    """bench/console.py's `build`: the synthetic trace ingested, no views folded."""
    started = time.perf_counter()
    engine = Engine(open_store(url), with_views=False, snapshot_every=0)
    ingest(engine, parse_trace(synthetic_trace(ACTIONS), "synthetic.jsonl"))
    assert engine.store is not None
    engine.store.close()
    return time.perf_counter() - started


def read_back(url: str) -> tuple[int, list[tuple[int, str]], list[int]]:
    """The head, the newest events and OPERATION's, read from the store."""
    store = open_store(url)
    try:
        head = store.head()
        newest = [(position, type(event).__name__) for position, event in store.read(after=head - 2 * PAGE_ROWS)]
        concerning = [
            position for position, event in store.read()
            if not isinstance(event, RECORDS) and getattr(event, "operation_id", None) == OPERATION
        ]  # fmt: skip
    finally:
        store.close()
    return head, newest[::-1], concerning[::-1]


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
  const shown = /Newest first, (\\d+) events? of \\d+ matching \\(looked at (\\d+)\\)/.exec(await answer.text());
  return shown !== null && shown[1] !== '0' && shown[1] === shown[2];
}"""


def signed_in(page: Any, large: Large, path: str) -> None:
    """At `path`, signed in, as served once the index is built: the page
    that signing in loaded may predate the index (on a loaded machine it
    did: a filtered timeline of no rows), so it is loaded again after."""
    sign_in(page, large.server.url, large.server.tokens["human"], path)
    page.wait_for_function(INDEX_READY, arg=OPERATION, polling=100)
    page.reload()


def rows(page: Any) -> list[tuple[int, str]]:
    """The timeline's rows: (position, event type), as shown."""
    cells = page.eval_on_selector_all("table.timeline tbody tr", "trs => trs.map(tr => [tr.id, ...[...tr.cells].slice(0, 2).map(c => c.textContent)])")
    assert all(row_id == f"p{position}" for row_id, position, _ in cells)
    return [(int(position), event) for _, position, event in cells]


def link(page: Any, label: str) -> str | None:
    links = page.locator("main p a", has_text=label)
    return links.get_attribute("href") if links.count() == 1 else None


def test_the_timeline_shows_the_newest_page_then_the_next(page: Any, large: Large) -> None:
    signed_in(page, large, "/timeline")
    first = rows(page)
    assert first[0][0] == large.head == large.server.client("human").view("health")["position"]
    assert first == large.newest[:PAGE_ROWS]  # 50 rows, newest first, one an event: never the whole log
    assert page.locator("main p", has_text="Newest first").inner_text().startswith(f"Newest first, {PAGE_ROWS} events of {large.head}.")
    assert link(page, "newer") is None
    assert link(page, "older") == f"/timeline?before={first[-1][0]}"
    with page.expect_navigation():
        page.click("main p a:text('older')")
    second = rows(page)
    assert second[0][0] == first[-1][0] - 1
    assert second == large.newest[PAGE_ROWS : 2 * PAGE_ROWS]
    assert link(page, "older") == f"/timeline?before={second[-1][0]}"
    assert link(page, "newer") == f"/timeline?before={large.head + 1}"


def test_the_timeline_of_one_operation_shows_its_events(page: Any, large: Large) -> None:
    signed_in(page, large, f"/timeline?id={OPERATION}")
    shown = rows(page)
    assert [position for position, _ in shown] == large.concerning
    assert 3 <= len(shown) < PAGE_ROWS and link(page, "older") is None
    assert page.locator("main p", has_text="Newest first").inner_text().startswith(
        f"Newest first, {len(shown)} events of {large.head} matching (looked at {len(shown)})."
    )
    # Each row links to the explain of what it concerns: the operation.
    for position, _ in shown:
        concerns = page.locator(f"tr#p{position} td").nth(5).locator("a")
        assert f"/explain/{OPERATION}" in concerns.evaluate_all("as => as.map(a => a.getAttribute('href'))"), position
    # The steps of its explain chain are among them.
    (match,) = large.server.client("human").explain(OPERATION, kind="operation")["matches"]
    assert {step["position"] for step in match["steps"]} <= {position for position, _ in shown}


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
