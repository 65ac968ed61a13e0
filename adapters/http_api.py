"""The HTTP API of `tandem serve` (docs/api.md) on Litestar.

The routes read the request and say the answer; what they ask is the
application service's (adapters/service.py: submit, views, events, explain,
the stream's hub), which holds the engine — the store's single writer
(adapters/runtime.py) or, with `--follow` / `--standby`, a follower's fold of
a store another process writes (adapters/follow.py: every write is then 409
`read_only`) — one use at a time, and reads the log without waiting for it.

The token is the actor (adapters/tokens.py, replay/edge.py). Errors are
`{"error": {"code", "message"}}` (plus `errors` for 400), and a refused
request writes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import msgspec
from litestar import Litestar, Request, Response, get, head, post
from litestar.exceptions import HTTPException, NotFoundException
from litestar.openapi import OpenAPIConfig
from litestar.params import FromPath
from litestar.openapi.plugins import JsonRenderPlugin
from litestar.openapi.spec import (
    Components,
    OpenAPIMediaType,
    OpenAPIType,
    Parameter,
    Reference,
    RequestBody,
    Schema,
    SecurityScheme,
)
from litestar.response import Redirect, Stream

from tandem.adapters.api_schema import (
    ANSWERS,
    BEARER,
    ERRORS_READ,
    ERRORS_WRITE,
    INPUT_SCHEMA_NAME,
    INPUT_SCHEMAS,
    REQUESTS,
    VIEW_BODY_SCHEMA_NAME,
    Degraded,
    ErrorBody,
    EventsPage,
    ExplainDocument,
    Health,
    InputsResponse,
    ViewsDocument,
    answer_schemas,
    documented,
    error_body,
)
from tandem.adapters.http_inputs import (
    JSON,
    NDJSON,
    accept_inputs,
    actor_of_request,
    batch_body_bytes_max,
    raw_tail,
    read_limited,
    refuse_tokens_in_query,
    service_of,
    single_body_bytes_max,
)
from tandem.adapters.github_webhook import GithubAnswer, post_github
from tandem.adapters.http_whatif import post_whatif
from tandem.adapters.http_search import get_search
from tandem.adapters.service import ApiError, Service
from tandem.adapters.stream import StreamsClosed, StreamsFull
from tandem.adapters.console import SECURITY_HEADERS, NeedsSignIn, console_routes
from tandem.adapters.sessions import session_cookie
from tandem.adapters.console.templating import render as render_page
from tandem.projections import VIEW_NAMES
from tandem.projections.work import WorkBody
from tandem.replay.commits import events_page_max
from tandem.replay.explain import KINDS
from tandem.replay.input_errors import did_you_mean
from tandem.replay.port import StoreError

log = logging.getLogger("tandem.serve")

events_limit_default = 100
position_digits_max = 18  # a position in a query or a Last-Event-ID: below 10**18, far past any store


# ------------------------------------------ what /openapi.json says of the query

# The handlers read their query and body themselves (their checks and error
# codes, not Litestar's); these say what they read (api_schema.documented).
position_max = 10**position_digits_max - 1


def _query(name: str, description: str, schema: Schema) -> Parameter:
    return Parameter(name=name, param_in="query", required=False, description=description, schema=schema)


AT = _query(
    "at",
    "the views as they were after the first POSITION events, snapped back to an input boundary (as `tandem show "
    "--at`); past the store's last event: 400",
    Schema(type=OpenAPIType.INTEGER, minimum=0, maximum=position_max),
)
AFTER = _query("after", "the events after this position", Schema(type=OpenAPIType.INTEGER, minimum=0, maximum=position_max, default=0))
LIMIT = _query(
    "limit", "at most this many events", Schema(type=OpenAPIType.INTEGER, minimum=1, maximum=events_page_max, default=events_limit_default)
)
VIEW_NAME = Parameter(
    name="name",
    param_in="path",
    required=True,
    description="a view of docs/contract/views.md; another name is 404 `unknown_view`",
    schema=Schema(type=OpenAPIType.STRING, enum=list(VIEW_NAMES)),
)
KIND = _query("kind", "only a thing of this kind", Schema(type=OpenAPIType.STRING, enum=list(KINDS)))
VIEWS = _query(
    "views", "only the commits that changed one of these views (names, comma-separated)", Schema(type=OpenAPIType.STRING)
)
ROWS = _query(
    "rows",
    "1: every `change` message's data also holds `rows`, each named view's row changes (docs/api.md, \"Row "
    "changes\"), and a `reset` comes where a message's changes were not kept; keys (extension): `keys` instead, "
    "the keys of the rows each named view changed, without the rows; 0 (the default): without",
    Schema(type=OpenAPIType.STRING, enum=["0", "1", "keys"], default="0"),
)
LAST_EVENT_ID = Parameter(
    name="Last-Event-ID",
    param_in="header",
    required=False,
    description="the last `id` received: first a message for every commit after it that was missed (or, when "
    "over 1,000 or not a position of this store, one `reset`), then live ones",
    schema=Schema(type=OpenAPIType.STRING),
)
INPUT_REF = Reference(ref=f"#/components/schemas/{INPUT_SCHEMA_NAME}")
# As OpenAPI 3.1 has no schema for a sequence of JSON texts: the items,
# written one per line (blank lines and `//` lines are skipped).
NDJSON_BATCH = OpenAPIMediaType(
    schema=Schema(
        type=OpenAPIType.ARRAY,
        items=INPUT_REF,
        description=f"the inputs, one per line, each as `{JSON}` takes it (UTF-8): not a JSON array",
    )
)
INPUTS_BODY = RequestBody(
    required=True,
    description=f"One input (`{JSON}`, at most {single_body_bytes_max} bytes) or a batch (`{NDJSON}`, at most "
    f"{batch_body_bytes_max} bytes): the inputs of a trace (docs/contract/), `at` and `actor` optional. "
    "(A generated client sends a batch to /v1/inputs/batch, as a JSON array.)",
    content={JSON: OpenAPIMediaType(schema=INPUT_REF), NDJSON: NDJSON_BATCH},
)
BATCH_BODY = RequestBody(
    required=True,
    description=f"A batch, at most {batch_body_bytes_max} bytes, one transaction: a JSON array of inputs (`{JSON}`: "
    f"item N is the batch's line N), or the inputs one per line (`{NDJSON}`, as POST /v1/inputs takes a batch).",
    content={
        JSON: OpenAPIMediaType(
            schema=Schema(type=OpenAPIType.ARRAY, items=INPUT_REF, description="the inputs, in order: item N is line N")
        ),
        NDJSON: NDJSON_BATCH,
    },
)
RUNTIME_ID = _query(
    "runtime_id",
    "only the work of this worker runtime (the actions that name it, `envelope.runtime_id`); empty: 400",
    Schema(type=OpenAPIType.STRING, min_length=1),
)


# ----------------------------------------------------------- authentication


async def authenticate(request: Request) -> str:
    """The actor the request's bearer token speaks for (401 otherwise). A
    read (GET) may instead carry the console's session cookie: a browser's
    EventSource cannot send a header."""
    service = service_of(request)
    if request.method == "GET" and request.headers.get("authorization") is None:
        session = await service.sessions.find(request.cookies.get(session_cookie))
        if session is not None:
            refuse_tokens_in_query(service.tokens, request.query_params.items())
            return session.actor
    return actor_of_request(service.tokens, request.headers.get("authorization"), request.query_params.items())


@post(
    "/v1/inputs",
    status_code=200,
    summary="Submit one input (application/json) or a batch (application/x-ndjson)",
    description="The same inputs as a trace (docs/contract/), checked, decided and committed in one "
    "transaction. The bearer token is the actor. `at` may be left out (the server stamps it). "
    "(Served by the fast path of adapters/http_inputs.py; this handler describes it and serves the same.)",
    responses=ERRORS_WRITE,
    request_max_body_size=batch_body_bytes_max + 1,
    operation_class=documented(request_body=INPUTS_BODY),
    security=BEARER,
)
async def post_inputs(request: Request) -> Response[InputsResponse]:
    return await _inputs_answer(request, batch_route=False)


@post(
    "/v1/inputs/batch",
    status_code=200,
    summary="Submit a batch: a JSON array (application/json) or one input a line (application/x-ndjson)",
    description="The inputs of a batch, checked whole, then decided and committed in one transaction, as "
    "POST /v1/inputs takes an application/x-ndjson batch; a JSON array's item N is the batch's line N.",
    responses=ERRORS_WRITE,
    request_max_body_size=batch_body_bytes_max + 1,
    operation_class=documented(request_body=BATCH_BODY),
    security=BEARER,
)
async def post_inputs_batch(request: Request) -> Response[InputsResponse]:
    return await _inputs_answer(request, batch_route=True)


async def _inputs_answer(request: Request, batch_route: bool) -> Response[InputsResponse]:
    service = service_of(request)

    async def read(limit: int) -> bytes:
        return await read_limited(request.stream(), request.headers.get("content-length"), limit)

    headers = request.headers
    body = await accept_inputs(service, headers.get("authorization"), request.query_params.items(), headers.get("content-type", ""), read, batch_route)
    return Response(body, media_type=JSON)


# -------------------------------------------------------------------- views


def whole_number(text: str) -> int | None:
    """`text` as a whole number (ASCII digits, at most `position_digits_max`
    of them), else None. `str.isdigit` alone takes `²` (which int() then
    refuses: a 500) and `٣`, and int() refuses 5,000 digits."""
    if text.isascii() and text.isdigit() and len(text) <= position_digits_max:
        return int(text)
    return None


def _position_query(request: Request, name: str) -> int | None:
    text = request.query_params.get(name)
    if text is None:
        return None
    number = whole_number(text)
    if number is None:
        raise ApiError(400, "invalid_query", f"?{name}={text[:40]!r}: a whole number, 0 or more (ASCII digits, at most {position_digits_max})")
    return number


@get(
    "/v1/views",
    summary="Every view, live, or as it was after the first POSITION events (?at=)",
    responses=ERRORS_READ,
    operation_class=documented([AT]),
    security=BEARER,
)
async def get_views(request: Request) -> Response[ViewsDocument]:
    await authenticate(request)
    return Response(await _views_answer(request, None), media_type=JSON)


async def _views_answer(request: Request, name: str | None) -> bytes:
    """The views (one, or all when `name` is None): live, or `?at=`."""
    return await service_of(request).views(name, _position_query(request, "at"))


@get(
    "/v1/views/{name:str}",
    summary="One view (?at= as for /v1/views)",
    responses=ERRORS_READ,
    operation_class=documented([VIEW_NAME, AT], answer=VIEW_BODY_SCHEMA_NAME),
    security=BEARER,
)
async def get_view(request: Request, name: FromPath[str]) -> Response[Any]:
    await authenticate(request)
    if name not in VIEW_NAMES:
        raise ApiError(404, "unknown_view", f"no view {name!r}{did_you_mean(name, VIEW_NAMES)}; views: {', '.join(VIEW_NAMES)}")
    return Response(await _views_answer(request, name), media_type=JSON)


# ------------------------------------------------------------ events, explain


@get(
    "/v1/events",
    summary="The events after position ?after= (default 0), at most ?limit= (100, max 1000)",
    responses=ERRORS_READ,
    operation_class=documented([AFTER, LIMIT]),
    security=BEARER,
)
async def get_events(request: Request) -> Response[EventsPage]:
    await authenticate(request)
    after = _position_query(request, "after") or 0
    limit = _position_query(request, "limit")
    limit = events_limit_default if limit is None else limit
    if not 1 <= limit <= events_page_max:
        raise ApiError(400, "invalid_query", f"?limit={limit}: from 1 to {events_page_max}")
    rows, next_after = await service_of(request).events(after, limit)
    return Response(msgspec.json.encode({"events": rows, "next_after": next_after}), media_type=JSON)


@get(
    "/v1/explain/{id:path}",
    summary="Why something is as it is (tandem explain --json); ?kind= picks one kind",
    responses=ERRORS_READ,
    operation_class=documented([KIND]),
    security=BEARER,
)
async def get_explain(request: Request, id: FromPath[str]) -> Response[ExplainDocument]:
    await authenticate(request)
    thing = raw_tail(request.scope, "/v1/explain/") or id.lstrip("/")
    kind = request.query_params.get("kind")
    if kind is not None and kind not in KINDS:
        raise ApiError(400, "invalid_query", f"?kind={kind!r}: one of {', '.join(KINDS)}")
    if not thing.strip():
        raise ApiError(404, "unknown_id", "no id given")
    return Response(await service_of(request).explain(thing, kind), media_type=JSON)


@get(
    "/v1/work",
    summary="The work queue: every attempt out with the executor, oldest claim first, with what to do and what to send back",
    description="Exact at the engine's position (the answer's `position`): the actions view's attempts that are "
    "`submitting`, `queued`, `accepted` or `unknown`, or whose action is `cancel_requested` (`stop`), each with its "
    "frozen envelope and the executor inputs the engine accepts for it now.",
    responses=ERRORS_READ,
    operation_class=documented([RUNTIME_ID]),
    security=BEARER,
)
async def get_work(request: Request) -> Response[WorkBody]:
    await authenticate(request)
    runtime_id = request.query_params.get("runtime_id")
    if runtime_id is not None and not runtime_id.strip():
        raise ApiError(400, "invalid_query", "?runtime_id=: a runtime's id, not empty (leave it out for all the work)")
    return Response(await service_of(request).work(runtime_id), media_type=JSON)


@get("/v1/health", summary="Liveness without a token", responses={503: ERRORS_READ[503]})
async def get_health(request: Request) -> Response[Health]:
    service = service_of(request)
    engine = service.runtime.engine
    if engine is None or engine.stale:
        # An error body, as every error is (docs/api.md): the client reads its code.
        committed = f" (the last committed position: {engine.committed})" if engine is not None else ""
        raise ApiError(503, "store_unavailable", f"the store cannot be read now; it is folded again at the next request{committed}")
    follower = service.follower
    degraded = [Degraded(**fact) for fact in service.runtime.side_files.degraded()] or None
    if follower is not None and not follower.writing:
        body = Health(status="ok", position=engine.committed, writer=False, degraded=degraded, **follower.health())
    else:
        body = Health(status="ok", position=engine.committed, writer=True, degraded=degraded)
    return Response(msgspec.json.encode(body), media_type=JSON)


@head("/v1/health", summary="Liveness without a token, status only (for checkers that send HEAD)", responses={503: ERRORS_READ[503]})
async def head_health(request: Request) -> Response[None]:
    engine = service_of(request).runtime.engine
    return Response(b"", status_code=503 if engine is None or engine.stale else 200)


# ------------------------------------------------------------------- stream


def _views_filter(request: Request) -> frozenset[str] | None:
    text = request.query_params.get("views")
    if text is None:
        return None
    names = frozenset(part.strip() for part in text.split(",") if part.strip())
    unknown = sorted(names - set(VIEW_NAMES))
    if unknown or not names:
        named = ", ".join(name + did_you_mean(name, VIEW_NAMES) for name in unknown) or "(none given)"
        raise ApiError(404, "unknown_view", f"?views={text!r}: no view {named}; views: {', '.join(VIEW_NAMES)}")
    return names


def _rows_detail(request: Request) -> tuple[bool, bool]:
    """`?rows=`: (row changes, keys of the changed rows) for each message."""
    text = request.query_params.get("rows")
    if text is None or text == "0":
        return False, False
    if text in ("1", "keys"):
        return text == "1", text == "keys"
    raise ApiError(
        400, "invalid_query", f"?rows={text[:40]!r}: 1 (each message with its row changes), keys (with the keys of the rows it changed) or 0"
    )


@get(
    "/v1/stream",
    summary="Server-Sent Events: one `change` message per commit (id = the position after it)",
    responses={**ERRORS_READ, 503: ERRORS_READ[503]},
    media_type="text/event-stream",
    operation_class=documented([VIEWS, ROWS, LAST_EVENT_ID]),
    security=BEARER,
)
async def get_stream(request: Request) -> Stream:
    await authenticate(request)
    views = _views_filter(request)
    rows, keys = _rows_detail(request)
    last = (request.headers.get("last-event-id") or "").strip()  # empty: no id (EventSource sends none)
    last_event_id = whole_number(last) if last else None
    if last and last_event_id is None:
        # Not a number, so no position of this store: it cannot say what was
        # missed. -1 gets it a reset, as an id older than the kept commits does.
        last_event_id = -1
    service = service_of(request)
    hub = service.hub
    assert hub is not None
    abort = service.connection_aborter(request.scope) if service.connection_aborter is not None else None
    try:
        client, first = hub.subscribe(last_event_id, views, abort, rows, keys)
    except StreamsFull as full:
        raise ApiError(503, "too_many_streams", f"{full}; retry later") from None
    except StreamsClosed as closed:
        raise ApiError(503, "stopping", str(closed)) from None
    return Stream(
        hub.messages(client, first),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


# --------------------------------------------------------------------- app


def _error_response(request: Request, error: Exception) -> Response[ErrorBody]:
    if isinstance(error, NeedsSignIn):
        return Redirect(f"/login?next={quote(error.back, safe='')}", status_code=303)  # type: ignore[return-value]
    if isinstance(error, ApiError):
        status, code, message, errors = error.status, error.code, error.message, error.errors
    elif isinstance(error, StoreError):  # the console's sessions' table (adapters/sessions.py)
        status, code, message, errors = 503, "store_unavailable", f"the store cannot be read: {error}", None
    elif isinstance(error, NotFoundException):
        status, code, message, errors = 404, "not_found", f"no route {request.method} {request.url.path}", None
    elif isinstance(error, HTTPException) and error.status_code == 405:
        status, code, message, errors = 405, "method_not_allowed", f"{request.method} is not allowed on {request.url.path}", None
    elif isinstance(error, HTTPException) and error.status_code == 413:
        status, code, message, errors = 413, "too_large", "the body is over the size limit", None
    elif isinstance(error, HTTPException) and error.status_code < 500:
        status, code, message, errors = error.status_code, "bad_request", str(error.detail), None
    else:
        log.error("internal error on %s %s", request.method, request.url.path, exc_info=error)
        status, code, message, errors = 500, "internal_error", "the server failed; nothing more is said here (see its log)", None
    headers = {"Allow": ", ".join(sorted(error.headers.get("allow", "").split(", ")))} if status == 405 and isinstance(error, HTTPException) and error.headers else None
    if isinstance(error, ApiError) and error.headers():
        headers = {**(headers or {}), **error.headers()}
    if _is_page(request):
        page = render_page("error.html", status=status, code=code, message=message)
        return Response(page, status_code=status, media_type="text/html", headers=headers)  # type: ignore[return-value]
    return Response(error_body(code, message, errors), status_code=status, media_type=JSON, headers=headers)


def _is_page(request: Request) -> bool:
    """A browser asking for a console page gets an HTML error; the API, and
    anyone not asking for HTML, the JSON error body of docs/api.md."""
    path = request.url.path
    api = path.startswith("/v1/") or path == "/openapi.json" or path.startswith("/static/")
    return not api and "text/html" in request.headers.get("accept", "")


async def _secured(response: Response[Any]) -> Response[Any]:
    """Every answer says: no inline script, no framing, no sniffing."""
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


ROUTES = [
    post_inputs, post_inputs_batch, get_views, get_view, get_events, get_explain, get_work, post_whatif, get_health, head_health,
    get_stream, post_github, get_search,
]  # fmt: skip


def build_app(service: Service, on_startup: list[Callable[[], Awaitable[None]]] = (), on_shutdown: list[Callable[[], Awaitable[None]]] = ()) -> Litestar:  # type: ignore[assignment]
    app = Litestar(
        route_handlers=[*ROUTES, *console_routes()],
        exception_handlers={Exception: _error_response},
        after_request=_secured,
        openapi_config=OpenAPIConfig(
            title="Tandem",
            version="1.0.0",
            description="The engine as a service (docs/api.md): authenticated inputs, views, events, explain, what-ifs, live changes.",
            path="/openapi.json",  # the one document, nowhere else (the console has `/`)
            render_plugins=[JsonRenderPlugin(path="/")],
            components=Components(security_schemes={"bearer": SecurityScheme(type="http", scheme="bearer")}),
        ),
        on_startup=list(on_startup),
        on_shutdown=list(on_shutdown),
        logging_config=None,
        debug=False,
    )
    app.state.service = service
    # Litestar refers to components by the handlers' types; every component
    # is then msgspec's own schema of its Struct: the answers'
    # (api_schema.answer_schemas), the inputs' (api_schema.input_schemas).
    schemas = app.openapi_schema.components.schemas
    answers = answer_schemas([*ANSWERS, GithubAnswer, *REQUESTS])
    assert schemas is not None and not INPUT_SCHEMAS.keys() & answers.keys(), "component names clash"
    assert schemas.keys() <= answers.keys(), f"components not made from a Struct: {sorted(schemas.keys() - answers.keys())}"
    schemas.update(answers)  # type: ignore[arg-type]  # plain JSON Schema, written as it is
    schemas.update(INPUT_SCHEMAS)  # type: ignore[arg-type]
    return app
