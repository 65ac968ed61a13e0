"""Console sessions across restarts, in Chromium against a real `tandem
serve` (adapters/sessions.py): kept in the store's own database, a signed-in
browser stays signed in through a restart (its forms still pass the CSRF
check); sign-out revokes the session, so its cookie no longer works even
replayed, before or after a restart; an expired or long idle session is
refused, and so is one whose token was removed from the tokens file; the
table holds the id's hash, never the id.

On SQLite and on PostgreSQL (the bundled example, ingested, then served)."""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from tandem.adapters.sessions import session_cookie, session_idle_max_s
from tandem.adapters.store import parse_store_url
from tandem.adapters.tokens import new_token, write_tokens_file

from tests.browser.harness import (
    Watch,
    fresh_directory,
    ingest_file,
    serve,
    sign_in,
    sqlite_url,
)
from tests.e2e.serving import Served, postgres_store_url, store_head

ALERT = "fallback_delivery:op-form"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    from tandem.adapters.commands.demo import EXAMPLE

    directory = fresh_directory(tmp_path_factory.mktemp("sessions"))
    urls = iter([sqlite_url(directory)]) if request.param == "sqlite" else postgres_store_url()
    url = next(urls)
    try:
        ingest_file(url, EXAMPLE)
        server = serve(directory, url)
        try:
            yield server
        finally:
            server.kill()
    finally:
        next(urls, None)  # PostgreSQL: its tables dropped


def restart(server: Served) -> None:
    """Stop, then the same `tandem serve` again on the port it had."""
    assert server.stop() == 0, server.log()
    port = urlsplit(server.url).port
    server.options = (*server.options, "--listen", f"127.0.0.1:{port}")  # the last --listen counts
    assert server.start().url == f"http://127.0.0.1:{port}"


def session_of(context: Any) -> dict[str, Any]:
    (cookie,) = [c for c in context.cookies() if c["name"] == session_cookie]
    return cookie


def rows(server: Served, statement: str, *parameters: Any) -> list[tuple[Any, ...]]:
    """A statement on the sessions table (`{table}`), with the database's own client."""
    address = parse_store_url(server.store_url)
    statement = statement.format(table=f"{address.table}_sessions")
    if address.kind == "sqlite":
        with sqlite3.connect(address.path) as database:
            return database.execute(statement, parameters).fetchall()
    import psycopg

    with psycopg.connect(**address.connect, autocommit=True) as database:
        cursor = database.execute(statement.replace("?", "%s"), parameters)
        return cursor.fetchall() if cursor.description else []


def test_a_restart_keeps_the_browser_signed_in_and_its_forms_working(page: Any, watch: Watch, context: Any, served: Served) -> None:
    # The page stays open across the restart: its live stream is cut, then refused while the server is down.
    watch.expect(r"status of 503 \(Service Unavailable\)|net::ERR_CONNECTION_REFUSED")
    sign_in(page, served.url, served.tokens["human"], "/alerts")
    cookie = session_of(context)
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    (stored,) = rows(served, "SELECT id_hash, actor FROM {table}")
    assert stored == (hashlib.sha256(cookie["value"].encode()).hexdigest(), "human")
    assert not rows(served, "SELECT 1 FROM {table} WHERE id_hash = ? OR csrf = ?", cookie["value"], cookie["value"])
    restart(served)
    assert page.locator(".who b").inner_text() == "human"
    head = store_head(served.store_url)
    with page.expect_navigation():  # the form the page had before the restart: its CSRF token still holds
        page.locator(f"tr[id='a-{ALERT.replace(':', '%3A')}'] button", has_text="Mark seen").click()
    assert urlsplit(page.url).path == "/alerts"
    assert page.locator(".flash").inner_text() == f"alert.seen recorded at position {head + 1}, accepted"


def test_sign_out_revokes_the_cookie_even_replayed_and_after_a_restart(page: Any, context: Any, served: Served) -> None:
    sign_in(page, served.url, served.tokens["human"], "/alerts")
    cookie = session_of(context)
    csrf = page.locator("form.signout input[name=csrf]").input_value()
    with page.expect_navigation():
        page.click("form.signout button")
    assert urlsplit(page.url).path == "/login"
    assert rows(served, "SELECT id_hash FROM {table}") == []
    context.add_cookies([cookie])  # the old cookie, replayed
    page.goto(served.url + "/alerts")
    assert urlsplit(page.url).path == "/login"
    head = store_head(served.store_url)
    answer = page.request.post(served.url + "/alerts/seen", form={"csrf": csrf, "alert_id": ALERT}, max_redirects=0)
    assert answer.status == 303 and urlsplit(answer.headers["location"]).path == "/login"
    assert store_head(served.store_url) == head  # nothing recorded
    assert page.request.get(served.url + "/v1/views/alerts").status == 401
    page.goto("about:blank")  # no live page across the restart
    restart(served)
    context.add_cookies([cookie])
    page.goto(served.url + "/tasks")
    assert urlsplit(page.url).path == "/login"


@pytest.mark.parametrize(
    "ended", ["expires_at = {now} - 1", f"last_seen_at = {{now}} - {session_idle_max_s + 1}"], ids=["lifetime", "idle"]
)
def test_an_ended_session_is_refused_after_a_restart(page: Any, context: Any, served: Served, ended: str) -> None:
    sign_in(page, served.url, served.tokens["human"], "/tasks")
    page.goto("about:blank")  # no live page across the restart
    assert served.stop() == 0, served.log()
    assert rows(served, "SELECT count(*) FROM {table}") == [(1,)]
    rows(served, "UPDATE {table} SET " + ended.format(now=int(time.time())))
    restart(served)
    page.goto(served.url + "/tasks")
    assert urlsplit(page.url).path == "/login"
    assert rows(served, "SELECT count(*) FROM {table}") == [(0,)]  # and removed
    sign_in(page, served.url, served.tokens["human"], "/tasks")  # signing in again works
    assert urlsplit(page.url).path == "/tasks"


def test_a_token_removed_from_the_tokens_file_ends_its_sessions_at_the_restart(page: Any, served: Served) -> None:
    sign_in(page, served.url, served.tokens["human"], "/tasks")
    page.goto("about:blank")  # no live page across the restart
    assert served.stop() == 0, served.log()
    served.tokens["human"] = new_token()  # the old token removed, another given
    write_tokens_file(served.tokens_file, served.tokens)
    restart(served)
    page.goto(served.url + "/tasks")
    assert urlsplit(page.url).path == "/login"
    assert rows(served, "SELECT count(*) FROM {table}") == [(0,)]
    sign_in(page, served.url, served.tokens["human"], "/tasks")  # the new token signs in
    assert urlsplit(page.url).path == "/tasks"
