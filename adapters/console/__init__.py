"""The web console of `tandem serve` (docs/api.md, "The console"): server-
rendered pages (Jinja2) over the engine's views, sign-in by token into a
session cookie, forms that record inputs as the signed-in actor, "what
if…" forms that record nothing (a what-if of the store, shown as a page),
live updates from /v1/stream by a small script of our own, and headers that
forbid inline script, framing and sniffing."""

from __future__ import annotations

from pathlib import Path

from litestar.static_files import create_static_files_router

from tandem.adapters.console.pages import PAGES
from tandem.adapters.console.search import SEARCH
from tandem.adapters.console.signin import FORMS, NeedsSignIn, signed_in
from tandem.adapters.console.whatif import WHATIF
from tandem.adapters.sessions import Sessions, session_cookie

STATIC = Path(__file__).resolve().parent / "static"
# The pages' one policy: scripts and styles from this origin only (no inline
# script, no inline style), nothing from elsewhere, never framed.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def console_routes() -> list:
    static = create_static_files_router(path="/static", directories=[STATIC], include_in_schema=False, send_as_attachment=False)
    return [*PAGES, *FORMS, *WHATIF, *SEARCH, static]


__all__ = ["NeedsSignIn", "SECURITY_HEADERS", "Sessions", "console_routes", "session_cookie", "signed_in"]
