"""The browser tests' fixtures: one Chromium for the whole session, a fresh
browser context (its own cookies: signed out) per test, and pages that fail
their test on any console error, page error, CSP violation or dialog.

Without Chromium or Playwright the tests are skipped, unless
TANDEM_REQUIRE_BROWSER=1 (.ci/run sets it), where they fail: CI never skips
them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.browser.harness import VIEWPORT, Watch, browser_missing_reason, launch, watched_page

OpenPage = Callable[[], tuple[Any, Watch]]


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    reason = browser_missing_reason()
    if reason is not None:
        if os.environ.get("TANDEM_REQUIRE_BROWSER") == "1":
            pytest.fail(reason + " (TANDEM_REQUIRE_BROWSER=1)", pytrace=False)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch(playwright)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    """A browser context of its own: no cookie, so signed out."""
    made = browser.new_context(viewport=VIEWPORT)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def open_page(request: pytest.FixtureRequest, context: Any) -> OpenPage:
    """open_page(): another watched page in the test's context (same cookies)."""
    watches: list[Watch] = request.node.stash.setdefault(WATCHES, [])

    def open_one() -> tuple[Any, Watch]:
        page, watch = watched_page(context)
        watches.append(watch)
        return page, watch

    return open_one


@pytest.fixture
def watched(open_page: OpenPage) -> tuple[Any, Watch]:
    return open_page()


@pytest.fixture
def page(watched: tuple[Any, Watch]) -> Any:
    return watched[0]


@pytest.fixture
def watch(watched: tuple[Any, Watch]) -> Watch:
    return watched[1]


WATCHES = pytest.StashKey[list[Watch]]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A test whose pages logged an error, or opened a dialog, fails."""
    outcome = yield
    if outcome.excinfo is not None:
        return
    problems = [problem for watch in item.stash.get(WATCHES, []) for problem in watch.unexpected() + watch.dialogs]
    if problems:
        outcome.force_exception(AssertionError("the browser reported:\n" + "\n".join(problems)))
