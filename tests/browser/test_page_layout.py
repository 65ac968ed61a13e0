"""The console's layout holds (issue 28, point 6): on a store of every
fixture trace (`tandem ingest --restamp` of fixtures/gates and
fixtures/traces, ~3,700 events), no page scrolls horizontally in a 1,280 px
window — every page of the navigation, every task's and action's page, the
explain of every question and alert, the same pages in the past — and long
ids are cut with their whole value in a `title` and a copy button; with the
system's dark scheme the pages are dark, and stay readable."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.harness import VIEWPORT, serve, sign_in, sqlite_url
from tests.e2e.serving import Served

ROOT = Path(__file__).resolve().parents[2]
TRACES = sorted((ROOT / "fixtures" / "gates").glob("*.jsonl")) + sorted((ROOT / "fixtures" / "traces").glob("*.jsonl"))
PAGES = ["/", "/questions", "/tasks", "/actions", "/inbox", "/alerts", "/conversations", "/timeline", "/lifecycles", "/search?q=op"]
WIDTH = 1_280
OVERFLOW = "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"


@pytest.fixture(scope="module")
def fixtures_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    directory = tmp_path_factory.mktemp("layout")
    url = sqlite_url(directory)
    done = subprocess.run(
        [sys.executable, "-m", "tandem.adapters.cli", "ingest", "--restamp", "--quiet", *map(str, TRACES), "--store", url],
        capture_output=True, text=True, check=False, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    server = serve(directory, url)
    try:
        yield server
    finally:
        assert server.stop() == 0, server.log()


def api(server: Served, path: str) -> Any:
    request = urllib.request.Request(server.url + path, headers={"Authorization": f"Bearer {server.tokens['human']}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)


def every_path(server: Served) -> list[str]:
    """The navigation's pages, each task's and action's, the explain of each
    question and alert and of the inbox's longest causes."""
    tasks = api(server, "/v1/views/tasks")["rows"]
    actions = api(server, "/v1/views/actions")["rows"]
    questions = api(server, "/v1/views/questions")["rows"]
    alerts = api(server, "/v1/views/alerts")["rows"]
    part = lambda value: urllib.parse.quote(value, safe="")  # noqa: E731
    paths = [*PAGES]
    paths += [f"/tasks/{part(row['task_id'])}" for row in tasks]
    paths += [f"/actions/{part(row['operation_id'])}" for row in actions]
    causes = sorted((row["cause_key"] for row in api(server, "/v1/views/inbox")["rows"]), key=len)[-10:]  # the longest
    paths += [f"/explain/{part(row['task_id'] + '/' + row['question_key'])}" for row in questions]
    paths += [f"/explain/{part(row['alert_id'])}" for row in alerts]
    paths += [f"/explain/{part(cause)}" for cause in causes]
    assert len(tasks) > 10 and len(actions) > 10 and questions and alerts, (len(tasks), len(actions))
    return paths


def test_no_page_scrolls_sideways_at_1280_px(page: Any, fixtures_served: Served) -> None:
    assert VIEWPORT["width"] == WIDTH
    sign_in(page, fixtures_served.url, fixtures_served.tokens["human"])
    head = api(fixtures_served, "/v1/health")["position"]
    paths = every_path(fixtures_served)
    past = [f"{path}{'&' if '?' in path else '?'}at={head // 2}" for path in PAGES]
    wide = []
    for path in [*paths, *past]:
        page.goto(fixtures_served.url + path)
        scroll, client = page.evaluate(OVERFLOW)
        if scroll > client:
            wide.append(f"{path}: {scroll} px wide in {client}")
    assert not wide, "\n".join(wide)


def test_long_ids_are_cut_with_the_whole_value_on_hover_and_to_copy(page: Any, fixtures_served: Served) -> None:
    sign_in(page, fixtures_served.url, fixtures_served.tokens["human"], "/inbox")
    cut = page.eval_on_selector_all(
        "[data-copy]", "nodes => nodes.map(node => [node.getAttribute('data-copy'), node.closest('.id').getAttribute('title')])"
    )
    assert cut and all(value == title for value, title in cut), cut[:5]
    longest = max((value for value, _ in cut), key=len)
    assert len(longest) > 60  # a cause URL
    shown = page.locator(".id", has=page.locator(f'[data-copy="{longest}"]')).first
    assert shown.evaluate("node => node.firstElementChild.scrollWidth > node.firstElementChild.clientWidth")  # cut
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    shown.hover()
    page.locator(f'[data-copy="{longest}"]').first.click()
    assert page.evaluate("() => navigator.clipboard.readText()") == longest


def test_the_dark_scheme_is_followed(page: Any, fixtures_served: Served) -> None:
    sign_in(page, fixtures_served.url, fixtures_served.tokens["human"], "/tasks")
    background = "() => getComputedStyle(document.body).backgroundColor"
    ink = "() => getComputedStyle(document.body).color"
    light = page.evaluate(background), page.evaluate(ink)
    page.emulate_media(color_scheme="dark")
    dark = page.evaluate(background), page.evaluate(ink)
    assert light != dark
    assert luminance(dark[0]) < 0.2 < luminance(dark[1]), dark  # dark ground, light ink
    assert luminance(light[0]) > 0.8 > luminance(light[1]), light
    panel = page.evaluate("() => getComputedStyle(document.querySelector('table')).backgroundColor")
    assert luminance(panel) < 0.2, panel  # no white panel left on the dark ground


def luminance(css: str) -> float:
    """0 (black) .. 1 (white), of an `rgb(r, g, b)` / `rgba(...)` colour."""
    parts = [float(part) for part in css[css.index("(") + 1 : css.index(")")].split(",")[:3]]
    red, green, blue = (part / 255 for part in parts)
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue

