"""Screenshots of every console page, for docs/console/ and docs/api.md's console section:

    .venv/bin/python -m tests.browser.screenshots [--out docs/console]

The bundled example (`tandem demo`'s trace) is ingested and served by a real
`tandem serve` in a temporary directory, signed in as the human through
/login, and each page saved as a PNG by the browser code the tests use
(tests/browser/harness.py: Debian's Chromium, nothing downloaded). The
example never has an open question, so questions-open.png comes from a second
store: fixtures/traces/question_holds_open.jsonl, which ends with three open.

search.png searches the example for `signup` (once the server's search
index holds it); overview-dark.png and task-dark.png are in the system's
dark scheme. timeline.png has one input's box opened (op-it's outcome: the input as
recorded and its events). whatif.png is the page a "what if…" form answers: the example's timeline,
the watchdog's first heartbeat (input 5) dropped.

The pictures are reproducible: the server records nothing of its own
(`--no-runtime-inputs`), so the engine clock in the footer and every age on
the pages (read from that clock, not the wall clock) are the trace's; each
shot waits for a settled page (the live status `live`, images and fonts
loaded) and hides the caret. Running the command twice gives the same files.

Each page is 1280 px wide and as tall as it is, up to 2,400 px (a taller
page is cut there). A page that logs a console error, a page error or a CSP
violation fails the run (exit 1), as it would fail the browser tests.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.browser.harness import (
    VIEWPORT,
    Watch,
    browser_missing_reason,
    ingest_file,
    launch,
    serve,
    serve_example,
    sign_in,
    sqlite_url,
    watched_page,
)
from tests.e2e.serving import ROOT, Served

OUT = Path("docs/console")
HEIGHT_MAX = 2400  # px: a taller page is cut here
QUESTIONS_OPEN = ROOT / "fixtures" / "traces" / "question_holds_open.jsonl"
PAST = "past"  # stands for "?at= the middle of the example's log"

EXAMPLE_SHOTS = {  # file: the page of the example it shows
    "overview.png": "/",
    "tasks.png": "/tasks",
    "task.png": "/tasks/signup",
    "action.png": "/actions/op-form",
    "questions.png": "/questions",
    "inbox.png": "/inbox",
    "alerts.png": "/alerts",
    "conversations.png": "/conversations",
    "timeline.png": "/timeline",
    "explain.png": "/explain/op-api",
    "lifecycles.png": "/lifecycles",
    "past.png": PAST,
    "search.png": "/search?q=signup",
}
OPENED = {"timeline.png": "tbody#i63 tr.caused summary"}  # a box opened for the shot: op-it's outcome, its input and events
# Shot once the page shows this (the search index is built beside the server: reloaded until then).
READY = {"search.png": "ul.found"}
DARK_SHOTS = {"overview-dark.png": "/", "task-dark.png": "/tasks/signup"}  # the system's dark scheme
QUESTION_SHOTS = {"questions-open.png": "/questions"}
LOGIN_SHOT = "login.png"
WHATIF_SHOT = "whatif.png"  # the answer of the timeline's "what if…": drop input 5
FILES = [*EXAMPLE_SHOTS, *DARK_SHOTS, WHATIF_SHOT, *QUESTION_SHOTS, LOGIN_SHOT]  # every file a run writes


@dataclass
class Shots:
    """What a run wrote, and what the pages reported on the way."""

    written: list[Path] = field(default_factory=list)
    watches: list[Watch] = field(default_factory=list)

    def problems(self) -> list[str]:
        return [problem for watch in self.watches for problem in watch.unexpected() + watch.dialogs]


def main(argv: list[str] | None = None, browser: Any = None) -> int:
    """Write the screenshots; print each file. 0 done, 1 a page reported an error
    (or there is no browser), 2 bad usage. `browser`: a Chromium already
    launched by harness.launch (the tests'), else one is launched here."""
    arguments = parser().parse_args(argv)
    reason = None if browser is not None else browser_missing_reason()
    if reason is not None:
        print(f"screenshots: {reason}", file=sys.stderr)
        return 1
    shots = take(Path(arguments.out), browser)
    for path in shots.written:
        print(path)
    problems = shots.problems()
    for problem in problems:
        print(f"screenshots: the browser reported: {problem}", file=sys.stderr)
    return 1 if problems else 0


class _Unhyphenated(argparse.HelpFormatter):
    """Help wrapped at spaces only: a file name (questions-open.png) stays whole."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return textwrap.fill(" ".join(text.split()), width, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False)


def parser() -> argparse.ArgumentParser:
    made = argparse.ArgumentParser(
        prog="python -m tests.browser.screenshots",
        formatter_class=_Unhyphenated,
        description=(
            "Screenshot every console page of the bundled example (served by a real `tandem serve` in a temporary "
            "directory, signed in as the human), plus the questions page of a store with open questions "
            f"({QUESTIONS_OPEN.relative_to(ROOT)}) and the login page. Files: {', '.join(FILES)}. "
            f"1280 px wide, at most {HEIGHT_MAX} px high; the same pixels on every run. "
            "Uses Debian's Chromium (/usr/bin/chromium, or $TANDEM_CHROMIUM) through Playwright; downloads nothing."
        ),
    )
    made.add_argument("--out", default=str(OUT), metavar="DIR", help=f"where to write the PNGs (created if missing; default {OUT})")
    return made


def take(out: Path, browser: Any = None) -> Shots:
    """Serve both stores, take every shot into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    shots = Shots()
    with tempfile.TemporaryDirectory(prefix="tandem-screenshots-") as temporary:
        directory = Path(temporary)
        with served(serve_example(directory)) as example, served(serve_questions(directory)) as questions:
            with chromium(browser) as using:
                pages_of(using, example, example_paths(example), out, shots)
                pages_of(using, example, DARK_SHOTS, out, shots, scheme="dark")
                whatif_page(using, example, out, shots)
                pages_of(using, questions, QUESTION_SHOTS, out, shots)
                login_page(using, example, out, shots)
    return shots


@contextmanager
def chromium(browser: Any) -> Iterator[Any]:
    """That browser, or Debian's Chromium launched for the run (and closed)."""
    if browser is not None:
        yield browser
        return
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = launch(playwright)
        try:
            yield launched
        finally:
            launched.close()


@contextmanager
def served(server: Served) -> Iterator[Served]:
    """A started server, stopped (SIGTERM) at the end."""
    try:
        yield server
    finally:
        if server.stop() != 0:
            raise RuntimeError(f"tandem serve did not stop cleanly\n{server.log()}")


def serve_questions(directory: Path) -> Served:
    """A store whose trace ends with open questions, served (from a folder of
    its own: its tokens and log files beside the example's would collide)."""
    directory = directory / "questions"
    directory.mkdir()
    url = sqlite_url(directory, "questions")
    ingest_file(url, QUESTIONS_OPEN)
    return serve(directory, url)


def example_paths(example: Served) -> dict[str, str]:
    """EXAMPLE_SHOTS with the past page's position filled in: the task's page
    halfway through the log, at the input boundary the server snaps that to
    (so the banner need not explain the snap)."""
    client = example.client("human")
    middle = client.view("health")["position"] // 2
    past = client.view("health", at=middle)["position"]
    return {file: f"/tasks/signup?at={past}" if path == PAST else path for file, path in EXAMPLE_SHOTS.items()}


def ready(page: Any, selector: str, tries_max: int = 100) -> None:
    """Reload the page until it shows `selector` (at most `tries_max` times, a tenth of a second apart)."""
    for _ in range(tries_max):
        if page.locator(selector).count():
            return
        page.wait_for_timeout(100)
        page.reload()
    raise RuntimeError(f"{page.url}: never showed {selector}")


def pages_of(browser: Any, server: Served, paths: dict[str, str], out: Path, shots: Shots, scheme: str = "light") -> None:
    """Sign in as the human in a context of its own (cookies are per host, not
    per port), then shoot each page (in the system's light or dark scheme)."""
    context = browser.new_context(viewport=VIEWPORT, color_scheme=scheme)
    try:
        page, watch = watched_page(context)
        shots.watches.append(watch)
        sign_in(page, server.url, server.tokens["human"])
        for file, path in paths.items():
            answer = page.goto(server.url + path)
            if answer is None or answer.status != 200 or "/login" in page.url:
                raise RuntimeError(f"{path}: not the page ({answer.status if answer else 'no answer'}, at {page.url})")
            if file in READY:
                ready(page, READY[file])
            if file in OPENED:
                page.click(OPENED[file])
                page.evaluate("() => window.scrollTo(0, 0)")
            shots.written.append(shoot(page, out / file))
    finally:
        context.close()


def whatif_page(browser: Any, server: Served, out: Path, shots: Shots) -> None:
    """The timeline's "what if…" of input 5 (a POST: no URL to go to), dropped."""
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page, watch = watched_page(context)
        shots.watches.append(watch)
        sign_in(page, server.url, server.tokens["human"], "/timeline?type=watchdog.heartbeat")
        box = page.locator("details.whatif:has(input[name=input][value='5'])").first
        box.locator("summary").click()
        with page.expect_navigation():
            box.locator("button", has_text="Drop input 5").click()
        shots.written.append(shoot(page, out / WHATIF_SHOT))
    finally:
        context.close()


def login_page(browser: Any, server: Served, out: Path, shots: Shots) -> None:
    """/login, signed out."""
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page, watch = watched_page(context)
        shots.watches.append(watch)
        page.goto(server.url + "/login")
        shots.written.append(shoot(page, out / LOGIN_SHOT))
    finally:
        context.close()


def shoot(page: Any, path: Path) -> Path:
    """Once the page has settled: the whole page, or its top HEIGHT_MAX px.
    The viewport is made as tall as the shot, so the fixed footer (the
    engine clock) sits at its bottom rather than across the middle."""
    settle(page)
    height = min(HEIGHT_MAX, max(VIEWPORT["height"], page.evaluate("document.documentElement.scrollHeight")))
    page.set_viewport_size({"width": VIEWPORT["width"], "height": height})
    try:
        page.mouse.move(0, height - 1)  # off every link and button: no hover
        page.evaluate("document.fonts.ready")
        page.screenshot(path=str(path), full_page=False, animations="disabled", caret="hide")
    finally:
        page.set_viewport_size(VIEWPORT)
    return path


# Functions, not expressions: Playwright polls an expression with eval(),
# which the console's CSP (script-src 'self') refuses once the first check
# has failed; a function is called as it is.
LIVE = "() => document.body.dataset.live !== 'on' || document.querySelector('.live-state').textContent === 'live'"
IMAGES = "() => [...document.images].every(i => i.complete)"


def settle(page: Any) -> None:
    """A live page follows /v1/stream (its status says `live`); a past page
    and the login page do not. Images (the lifecycle drawings) loaded."""
    page.wait_for_function(LIVE)
    page.wait_for_function(IMAGES)
    page.evaluate("document.fonts.ready")


if __name__ == "__main__":
    sys.exit(main())
