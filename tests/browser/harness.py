"""What the browser tests and the screenshot command share: Debian's Chromium
driven by Playwright (nothing downloaded, ever), a page that records every
console error, page error and CSP violation, signing in through the real
/login form, and a `tandem serve` of a trace ingested beforehand.

Chromium is /usr/bin/chromium (Debian's `chromium` package; .ci/run installs
it). Playwright's own browsers are never used (`playwright install` is never
run): `launch` points Playwright at that binary. Each launch gets a fresh,
temporary user data dir from Playwright, and flags that keep Chromium off the
network (no background fetches, component updates, sync or QUIC).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.serving import Served, tandem

CHROMIUM = Path(os.environ.get("TANDEM_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",  # we run as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 800}
WAIT_MS = 15_000  # the longest a wait for the page polls; nothing asserts a speed
NO_RUNTIME = "--no-runtime-inputs"  # the store holds exactly what the test sends

# Run on every document before its own scripts (Playwright injects it, so the
# page's CSP does not apply to it): a CSP violation becomes a console error
# even where Chromium would only report it.
WATCH_SCRIPT = """
document.addEventListener("securitypolicyviolation", function (e) {
  console.error("CSP violation: " + e.violatedDirective + " blocked " + (e.blockedURI || "inline") + " at " + e.sourceFile + ":" + e.lineNumber);
});
"""


def browser_missing_reason() -> str | None:
    """None when the browser can run; else why not."""
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        return f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install -e '.[test]')"
    return None


def launch(playwright: Any) -> Any:
    """Debian's Chromium, headless, off the network."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)


@dataclass
class Watch:
    """What went wrong on a page: console errors, page errors (uncaught
    exceptions), CSP violations, dialogs. `expect(pattern)` lets through the
    errors a test causes on purpose (a 403 it provokes)."""

    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    expected: list[re.Pattern[str]] = field(default_factory=list)

    def expect(self, pattern: str) -> None:
        self.expected.append(re.compile(pattern))

    def unexpected(self) -> list[str]:
        return [error for error in self.errors if not any(p.search(error) for p in self.expected)]


def watched_page(context: Any) -> tuple[Any, Watch]:
    """A new page of `context` whose errors and dialogs are recorded (a
    dialog is dismissed: nothing of ours ever opens one)."""
    page = context.new_page()
    watch = Watch()
    page.add_init_script(WATCH_SCRIPT)

    def on_console(message: Any) -> None:
        if message.type == "error":
            watch.errors.append(f"console: {message.text} ({page.url})")

    def on_dialog(dialog: Any) -> None:
        watch.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("console", on_console)
    page.on("pageerror", lambda error: watch.errors.append(f"page error: {error} ({page.url})"))
    page.on("dialog", on_dialog)
    page.set_default_timeout(WAIT_MS)
    return page, watch


def sign_in(page: Any, url: str, token: str, path: str = "/") -> None:
    """Open `path`; it redirects to /login; paste the token, submit; back at `path`."""
    page.goto(url + path)
    assert "/login" in page.url, page.url
    page.fill("#token", token)
    with page.expect_navigation():
        page.click("form[action='/login'] button[type=submit]")


def ingest_lines(directory: Path, store_url: str, name: str, lines: Iterable[str]) -> None:
    """Write a trace file and `tandem ingest` it into the store."""
    trace = directory / f"{name}.jsonl"
    trace.write_text("".join(line + "\n" for line in lines))
    ingest_file(store_url, trace)


def ingest_file(store_url: str, trace: Path) -> None:
    done = tandem("ingest", "--store", store_url, str(trace))
    assert done.returncode == 0, done.stderr


def serve(directory: Path, store_url: str, *options: str) -> Served:
    """`tandem serve` of that store, recording nothing of its own."""
    return Served(directory, store_url, NO_RUNTIME, *options).start()


def sqlite_url(directory: Path, name: str = "events") -> str:
    return f"sqlite:///{directory}/{name}.db"


def fresh_directory(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def serve_example(directory: Path) -> Served:
    """The bundled example (`tandem demo`'s), ingested, then served."""
    from tandem.adapters.commands.demo import EXAMPLE

    url = sqlite_url(directory, "example")
    ingest_file(url, EXAMPLE)
    return serve(directory, url)


def wait_live(page: Any) -> None:
    """Until the page's script follows /v1/stream (its status says `live`).
    A function, not an expression: Playwright evaluates an expression again
    on each poll with eval, which the console's CSP refuses."""
    page.wait_for_function("() => document.querySelector('.live-state') && document.querySelector('.live-state').textContent === 'live'")


def mark(page: Any) -> None:
    """Set a flag on the page's window: a reload would clear it (`unmarked`)."""
    page.evaluate("window.__not_reloaded = true")


def reloaded(page: Any) -> bool:
    return page.evaluate("window.__not_reloaded !== true")


@contextmanager
def running(server: Served) -> Iterator[Served]:
    """A started server for a module's tests, stopped after them: one that
    does not stop cleanly fails (its log is the message)."""
    try:
        yield server
    finally:
        assert server.stop() == 0, server.log()
