"""Signing in and out, and the forms that record inputs (docs/api.md, "The
console"): every state-changing form carries its session's CSRF token and is
refused, recording nothing, without it; what a form records is an input of
the signed-in actor, through the same edge as `POST /v1/inputs` (so a
background token's session cannot answer a question: that is recorded as
rejected `not_authorized`, as in a trace)."""

from __future__ import annotations

import json
import secrets
from urllib.parse import unquote
from typing import Any

from litestar import Request, get, post
from litestar.response import Redirect, Response

from tandem.adapters.console.templating import render
from tandem.adapters.http_inputs import service_of
from tandem.adapters.service import ApiError
from tandem.adapters.sessions import Session, login_cookie, login_form_max_s, same, session_cookie, session_lifetime_max_s
from tandem.replay.edge import EdgeRefused, TokenActor
from tandem.replay.traces import TraceInvalid

HTML = "text/html"
form_bytes_max = 65_536
answer_chars_max = 16_384


class NeedsSignIn(Exception):
    """No live session: the page redirects to /login, then back."""

    def __init__(self, back: str) -> None:
        super().__init__(back)
        self.back = back


async def signed_in(request: Request) -> Session:
    session = await service_of(request).sessions.find(request.cookies.get(session_cookie))
    if session is None:
        back = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise NeedsSignIn(back)
    return session


def local(target: str | None) -> str:
    """A place to go back to, only if it is a path of this site."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def _cookie(name: str, value: str, max_age: int) -> dict[str, Any]:
    return {"key": name, "value": value, "max_age": max_age, "httponly": True, "samesite": "strict", "path": "/"}


@get("/login", include_in_schema=False)
async def login_form(request: Request) -> Response[str]:
    check = secrets.token_urlsafe(32)
    body = render("login.html", check=check, back=local(request.query_params.get("next")), problem=None)
    response = Response(body, media_type=HTML, headers={"Cache-Control": "no-store"})
    response.set_cookie(**_cookie(login_cookie, check, login_form_max_s))
    return response


async def read_form(request: Request) -> dict[str, str]:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > form_bytes_max:
        raise ApiError(413, "too_large", f"a form is at most {form_bytes_max} bytes")
    form = await request.form()
    return {name: str(value) for name, value in form.items()}


@post("/login", include_in_schema=False, request_max_body_size=form_bytes_max)
async def login(request: Request) -> Response[str] | Redirect:
    form = await read_form(request)
    back = local(form.get("next"))
    if not same(form.get("check"), request.cookies.get(login_cookie)):
        raise ApiError(403, "csrf", "the sign-in form expired or came from elsewhere; load /login again")
    service = service_of(request)
    actor = service.tokens.actor_of(form.get("token", "").strip())
    if actor is None:
        body = render("login.html", check=request.cookies.get(login_cookie), back=back, problem="That token is not known.")
        return Response(body, media_type=HTML, status_code=401, headers={"Cache-Control": "no-store"})
    identifier, _ = await service.sessions.open(actor, form.get("token", "").strip())
    response = Redirect(back, status_code=303)
    response.set_cookie(**_cookie(session_cookie, identifier, session_lifetime_max_s))
    response.delete_cookie(login_cookie, path="/")
    return response


async def checked_form(request: Request, form: dict[str, str], page: str = "/") -> Session:
    """The session that sent the form, its CSRF token checked. Signed out,
    the browser signs in and goes back to the form's page (`back`, else
    `page`), not to the form's action: nothing was recorded."""
    try:
        session = await signed_in(request)
    except NeedsSignIn:
        raise NeedsSignIn(local(form.get("back") or page)) from None
    if not same(form.get("csrf"), session.csrf):
        raise ApiError(403, "csrf", "the form's CSRF token is missing or wrong; nothing was recorded — reload the page")
    return session


@post("/logout", include_in_schema=False, request_max_body_size=form_bytes_max)
async def logout(request: Request) -> Redirect:
    await checked_form(request, await read_form(request))
    await service_of(request).sessions.close(request.cookies.get(session_cookie))
    response = Redirect("/login", status_code=303)
    response.delete_cookie(session_cookie, path="/")
    return response


def _named(form: dict[str, str], field: str) -> str:
    """An id a form names: percent-encoded in the page (as in its links), so
    that an id holding control characters is sent as it is, never as the
    escaped text the page shows."""
    return unquote(form.get(field, ""))


async def _record(request: Request, session: Session, value: dict[str, Any]) -> str:
    """Record one input as the session's actor; what happened, in words."""
    data = json.dumps(value).encode()
    try:
        commit = await service_of(request).submit(data, False, TokenActor(session.actor))
    except TraceInvalid as invalid:
        return f"{value['type']} not recorded: {invalid.errors[0].message}"
    except EdgeRefused as refused:
        return f"{value['type']} not recorded: {refused.message}"
    record = commit.events[0]  # the input's own record: where the timeline lists it
    reason = getattr(record, "reason", None)
    return f"{value['type']} recorded at position {commit.head_before + 1}" + (f", rejected: {reason}" if reason else ", accepted")


@post("/questions/answer", include_in_schema=False, request_max_body_size=form_bytes_max)
async def answer(request: Request) -> Redirect:
    form = await read_form(request)
    session = await checked_form(request, form, "/questions")
    text = form.get("answer", "").strip()
    if not text or len(text) > answer_chars_max:
        session.flash = f"An answer is 1 to {answer_chars_max} characters; nothing was recorded."
    else:
        task_id, question_key = _named(form, "task_id"), _named(form, "question_key")
        value = {"type": "question.answer", "task_id": task_id, "question_key": question_key, "answer": text}
        session.flash = await _record(request, session, value)
    return Redirect(local(form.get("back") or "/questions"), status_code=303)


async def _alert(request: Request, kind: str) -> Redirect:
    form = await read_form(request)
    session = await checked_form(request, form, "/alerts")
    session.flash = await _record(request, session, {"type": kind, "alert_id": _named(form, "alert_id")})
    return Redirect(local(form.get("back") or "/alerts"), status_code=303)


@post("/alerts/seen", include_in_schema=False, request_max_body_size=form_bytes_max)
async def alert_seen(request: Request) -> Redirect:
    return await _alert(request, "alert.seen")


@post("/alerts/resolve", include_in_schema=False, request_max_body_size=form_bytes_max)
async def alert_resolve(request: Request) -> Redirect:
    return await _alert(request, "alert.resolve")


FORMS = [login_form, login, logout, answer, alert_seen, alert_resolve]
