"""`POST /v1/inputs`: the hot path of `tandem serve`, and its authentication.

`accept_inputs` is the route: the token is the actor, the body is one input
(`application/json`) or a batch (`application/x-ndjson`), validated whole,
then one transaction. Two doors lead to it: the Litestar handler (which also
describes it in `/openapi.json`) and `InputsFastPath`, an ASGI wrapper in
front of the Litestar app that serves this one route without Litestar's
request and response machinery (about a fifth of a durable input's cost over
HTTP; bench/serve.py). Both call the same function and answer the same bytes;
it authenticates and reads, the application service (adapters/service.py)
parses, checks and commits.

A token in the query string is refused, never used: URLs end up in logs.
"""

from __future__ import annotations

import logging
from urllib.parse import unquote
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

from litestar import Request

from tandem.adapters.api_schema import InputsResponse, error_body, results_of
from tandem.adapters.service import ApiError, Service
from tandem.adapters.tokens import TokenTable
from tandem.domain.nesting import lone_surrogate_error
from tandem.replay.edge import EdgeRefused, TokenActor
from tandem.replay.traces import TraceInvalid, line_bytes_max

import msgspec

log = logging.getLogger("tandem.serve")

batch_body_bytes_max = 16 * 1_048_576
single_body_bytes_max = line_bytes_max
query_value_token_chars_min = 16  # a shorter query value is never compared with the tokens
QUERY_TOKEN_NAMES = ("token", "access_token", "auth", "authorization", "bearer", "api_key", "apikey", "key")
JSON = "application/json"
NDJSON = "application/x-ndjson"
_encoder = msgspec.json.Encoder()


def service_of(request: Request) -> Service:
    """The application service the app was built on (http_api.build_app)."""
    service: Service = request.app.state.service
    return service


def actor_of_request(tokens: TokenTable, authorization: str | None, query: Iterable[tuple[str, str]]) -> str:
    """The actor the bearer token speaks for (401 `unauthenticated` otherwise)."""
    refuse_tokens_in_query(tokens, query)
    if authorization is None:
        raise ApiError(401, "unauthenticated", "no `Authorization: Bearer TOKEN` header")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(401, "unauthenticated", "the Authorization header must be `Bearer TOKEN`")
    actor = tokens.actor_of(token.strip())
    if actor is None:
        raise ApiError(401, "unauthenticated", "unknown token")
    return actor


def refuse_tokens_in_query(tokens: TokenTable, query: Iterable[tuple[str, str]]) -> None:
    """A token in the URL is refused (401), never used, whatever else the
    request carries: URLs end up in logs."""
    for name, value in query:
        named = _holds_token(tokens, name)  # a token as the name: never said back
        if named or name.lower() in QUERY_TOKEN_NAMES or _holds_token(tokens, value):
            where = "a query parameter's name" if named else f"query parameter {name!r}"
            raise ApiError(
                401, "unauthenticated", f"{where}: a token is never accepted in the URL; send it as "
                "`Authorization: Bearer TOKEN` (and replace that token: URLs are logged)"
            )  # fmt: skip


def query_holds_token(tokens: TokenTable, query_string: bytes) -> bool:
    """Whether a raw query string names or holds one of `tokens` as
    `refuse_tokens_in_query` would find it (several stores: which one refuses)."""
    return any(_holds_token(tokens, name) or _holds_token(tokens, value) for name, value in _query_pairs(query_string))


def _holds_token(tokens: TokenTable, text: str) -> bool:
    """Whether a query parameter's name or value is a known token, alone or as
    one of its words (`?TOKEN`, `?x=Bearer%20TOKEN`, `?x=%20TOKEN`: the header
    would take those too, and the URL is logged all the same)."""
    return any(len(word) >= query_value_token_chars_min and tokens.actor_of(word) is not None for word in text.split())


async def read_limited(chunks: AsyncIterator[bytes], declared: str | None, limit: int) -> bytes:
    """The body, refused 413 `too_large` as soon as it passes `limit` bytes
    (at once when its Content-Length says so)."""
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, "too_large", f"the body is {int(declared)} bytes, over the {limit}-byte limit")
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise ApiError(413, "too_large", f"the body is over the {limit}-byte limit")
        parts.append(chunk)
    return b"".join(parts)


def media_type(value: str) -> str:
    kind = value.split(";", 1)[0].strip().lower()
    if kind not in (JSON, NDJSON):
        shown = kind or "none"
        raise ApiError(415, "unsupported_media_type", f"Content-Type {shown!r}: send {JSON} (one input) or {NDJSON} (a batch)")
    return kind


async def accept_inputs(
    service: Service,
    authorization: str | None,
    query: Iterable[tuple[str, str]],
    content_type: str,
    read: Callable[[int], Awaitable[bytes]],
    batch_route: bool = False,
) -> bytes:
    """The route: authenticate, read, decide and commit; the 200 body (JSON).
    `batch_route` (POST /v1/inputs/batch): the body is a batch whatever its
    type, and `application/json` is a JSON array of inputs."""
    actor = actor_of_request(service.tokens, authorization, query)
    kind = media_type(content_type)
    batch = batch_route or kind == NDJSON
    data = await read(batch_body_bytes_max if batch else single_body_bytes_max)
    if batch_route and kind == JSON:
        data = array_lines(data)
    try:
        commit = await service.submit(data, batch, TokenActor(actor))
    except TraceInvalid as invalid:
        errors = [{"line": error.line, "message": error.message} for error in invalid.errors]
        more = f" (and {invalid.total - len(errors)} more)" if invalid.total > len(errors) else ""
        raise ApiError(400, "invalid_input", f"{invalid.total} bad line(s){more}: line {errors[0]['line']}: {errors[0]['message']}", errors) from None
    except EdgeRefused as refused:
        raise ApiError(refused.status, refused.code, refused.message) from None
    return _encoder.encode(InputsResponse(position=commit.position, results=results_of(commit)))


_array = msgspec.json.Decoder(list[msgspec.Raw])


def array_lines(data: bytes) -> bytes:
    """A JSON array of inputs as the batch of lines it stands for: item N,
    its bytes as sent, is line N (a newline between tokens becomes a space:
    in valid JSON none is inside a string). Not an array: 400 `invalid_input`,
    line 1 (the body)."""
    try:
        items = _array.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        message = f"the body is not a JSON array of inputs: {lone_surrogate_error(data) or error}"
        raise ApiError(400, "invalid_input", f"1 bad line(s): line 1: {message}", [{"line": 1, "message": message}]) from None
    return b"\n".join(bytes(item).replace(b"\r", b" ").replace(b"\n", b" ") for item in items)


# ----------------------------------------------------------------- fast path


class InputsFastPath:
    """ASGI: `POST /v1/inputs` straight to `accept_inputs`; everything else
    to the wrapped app."""

    def __init__(self, app: Any, service: Service) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/v1/inputs" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope["headers"])
        query_string = scope.get("query_string", b"")
        query = _query_pairs(query_string) if query_string else []

        async def read(limit: int) -> bytes:
            return await read_limited(_body_chunks(receive), headers.get("content-length"), limit)

        extra: list[tuple[bytes, bytes]] = []
        try:
            body = await accept_inputs(self.service, headers.get("authorization"), query, headers.get("content-type", ""), read)
            status = 200
        except ApiError as error:
            status, body = error.status, error_body(error.code, error.message, error.errors)
            extra = [(name.lower().encode(), value.encode()) for name, value in error.headers().items()]
        except _Disconnected:
            return
        except Exception:
            log.exception("internal error on POST /v1/inputs")
            status, body = 500, error_body("internal_error", "the server failed; nothing more is said here (see its log)")
        fixed = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": fixed + extra})
        await send({"type": "http.response.body", "body": body})


_WANTED = {b"authorization": "authorization", b"content-type": "content-type", b"content-length": "content-length"}


def _headers(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """The headers the route reads (ASGI gives them lower-cased)."""
    found: dict[str, str] = {}
    for name, value in raw:
        wanted = _WANTED.get(name)
        if wanted is not None:
            found[wanted] = value.decode("latin-1")
    return found


class _Disconnected(Exception):
    pass


async def _body_chunks(receive: Any) -> AsyncIterator[bytes]:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Disconnected
        chunk = message.get("body", b"")
        if chunk:
            yield chunk
        if not message.get("more_body", False):
            return


def _query_pairs(query_string: bytes) -> list[tuple[str, str]]:
    from urllib.parse import parse_qsl

    return parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)


def raw_tail(scope: Any, prefix: str) -> str | None:
    """The path after `prefix`, from the raw (still percent-encoded) path:
    ids hold slashes and `//` (`urgent:ci:https://scm/pr/7`), which the
    router's normalised path would fold."""
    raw = scope.get("raw_path")
    if not raw:
        return None
    path = raw.decode("latin-1").split("?", 1)[0]
    return unquote(path[len(prefix) :]) if path.startswith(prefix) else None
