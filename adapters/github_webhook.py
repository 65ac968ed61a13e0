"""`POST /v1/sources/github`: GitHub webhook deliveries, signed, as
`observe` inputs (docs/sources.md, "The webhook"; contract section 10).

The route takes no bearer token: the signature is the credential and the
actor is `source`. In order, and nothing is recorded unless every step
passes:

1. a server started without `--github-secret-file`: 404 `not_found`;
2. a body over `payload_bytes_max` (GitHub's own 25 MB cap): 413 `too_large`;
3. `X-Hub-Signature-256` missing, or not the HMAC-SHA256 of the raw body
   with the secret (compared in constant time): 401 `bad_signature`;
4. a Content-Type other than application/json: 415;
5. no `X-GitHub-Event` or `X-GitHub-Delivery`, a body that is not a JSON
   object (UTF-8, no lone surrogate escape, no key repeated in an object),
   or a payload the mapping cannot read: 400 `invalid_delivery`;
6. else its observations (an event or action adapters/github.py does not
   map, ping, or a check naming no pull request: one ignored observation,
   with a `note` why; **extension**, never 422), `at` stamped by the server (as any input that
   leaves it out), in one transaction: 200 with what was recorded.

The secret file is checked as the tokens file is (adapters/tokens.py): a
regular file, readable by its owner only, not empty, at most
`secret_file_bytes_max` bytes; one trailing newline is not part of the secret.
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path
from typing import Any

import msgspec
from litestar import Request, Response, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import OpenAPIMediaType, OpenAPIType, Parameter, RequestBody, Schema
from msgspec import Struct

from tandem.adapters.api_schema import ErrorBody, InputResult, documented, results_of
from tandem.adapters.github import Delivery, DeliveryInvalid, decode_json, map_delivery, payload_bytes_max
from tandem.adapters.http_inputs import JSON, read_limited, service_of
from tandem.adapters.service import ApiError, Service
from tandem.adapters.tokens import read_private_file
from tandem.replay.edge import EdgeRefused, TokenActor
from tandem.replay.traces import TraceInvalid

secret_file_bytes_max = 65_536
SOURCE = "source"
ROUTE = "/v1/sources/github"


class SecretRefused(Exception):
    """The GitHub secret file cannot be used; the message names it and why."""


def load_github_secret(path: Path) -> bytes:
    """The webhook secret in `path` (see the module's docstring)."""
    where = f"GitHub secret file {path}"
    data = read_private_file(path, where, secret_file_bytes_max, SecretRefused)
    secret = data.removesuffix(b"\n").removesuffix(b"\r")
    if not secret.strip():
        raise SecretRefused(f"{where}: the secret is empty (write the webhook's secret, as set on GitHub)")
    return secret


def signature_matches(secret: bytes, body: bytes, header: str) -> bool:
    """Whether `header` is `sha256=` + the hex HMAC-SHA256 of `body`
    (constant time: how much of a guess matched is never told)."""
    expected = b"sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest().encode()
    return hmac.compare_digest(expected, header.strip().encode("latin-1"))


class GithubAnswer(Struct, frozen=True):
    """What a delivery recorded: the store head after it and one result per
    input (as POST /v1/inputs answers), and `note`, why it was recorded as
    an ignored observation when it was (else null)."""

    delivery: str
    event: str
    action: str | None
    position: int
    results: list[InputResult]
    note: str | None


# ------------------------------------------------- what /openapi.json says

_HEADERS = [
    ("X-Hub-Signature-256", True, "`sha256=` + the hex HMAC-SHA256 of the raw body with the webhook's secret"),
    ("X-GitHub-Event", True, "the event (`issue_comment`, `check_run`, `ping`, ...)"),
    ("X-GitHub-Delivery", True, "the delivery's guid: the input `id` (`GUID#n` when it concerns several pull requests)"),
]
HEADERS = [
    Parameter(name=name, param_in="header", required=required, description=description, schema=Schema(type=OpenAPIType.STRING))
    for name, required, description in _HEADERS
]
BODY = RequestBody(
    required=True,
    description=f"The webhook payload exactly as GitHub posts it (`{JSON}`, at most {payload_bytes_max} bytes).",
    content={JSON: OpenAPIMediaType(schema=Schema(type=OpenAPIType.OBJECT))},
)
_DESCRIBED = {
    400: "no X-GitHub-Event or X-GitHub-Delivery, or a body the mapping cannot read (`invalid_delivery`)",
    401: "X-Hub-Signature-256 missing or wrong (`bad_signature`): nothing recorded",
    403: "an id the runtime reserves (`reserved`): nothing recorded",
    404: "the server takes no GitHub deliveries (no --github-secret-file)",
    405: "method not allowed",
    413: "body too large",
    415: "not application/json",
    503: "store unavailable (nothing recorded; GitHub's redelivery is safe: same guid, same ids)",
}
RESPONSES = {
    status: ResponseSpec(data_container=ErrorBody, description=description, generate_examples=False)
    for status, description in _DESCRIBED.items()
}


# ------------------------------------------------------------------- route


def _delivery(headers: Any, body: bytes) -> Delivery:
    """The delivery the headers and body say; ApiError 400 otherwise."""
    event = (headers.get("x-github-event") or "").strip()
    guid = (headers.get("x-github-delivery") or "").strip()
    if not event or not guid:
        missing = " and ".join(name for name, value in (("X-GitHub-Event", event), ("X-GitHub-Delivery", guid)) if not value)
        raise ApiError(400, "invalid_delivery", f"no {missing} header: a GitHub delivery carries both")
    try:
        payload = decode_json(body, f"delivery {guid} ({event})")
    except DeliveryInvalid as invalid:
        raise ApiError(400, "invalid_delivery", str(invalid)) from None
    return Delivery(guid, event, None, payload)


def _check(request: Request, secret: bytes, body: bytes) -> None:
    header = request.headers.get("x-hub-signature-256")
    if header is None:
        raise ApiError(401, "bad_signature", "no X-Hub-Signature-256 header: set the webhook's secret on GitHub")
    if not signature_matches(secret, body, header):
        raise ApiError(401, "bad_signature", "X-Hub-Signature-256 is not the body's HMAC-SHA256 with the secret of --github-secret-file")
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != JSON:
        raise ApiError(415, "unsupported_media_type", f"Content-Type {kind or 'none'!r}: set the webhook's content type to {JSON}")


@post(
    ROUTE,
    status_code=200,
    summary="A GitHub webhook delivery, signed (no bearer token): its observations, as actor source",
    description="Checks X-Hub-Signature-256 (HMAC-SHA256 of the body with the secret of --github-secret-file), "
    "maps the delivery to observe inputs (docs/sources.md) and records them in one transaction, `at` stamped by "
    "the server. ping, an event or action not mapped, and a check naming no pull request are recorded as one "
    "ignored observation (200, `note` says why).",
    responses=RESPONSES,
    request_max_body_size=payload_bytes_max + 1,
    operation_class=documented(HEADERS, BODY),
)
async def post_github(request: Request) -> Response[GithubAnswer]:
    service = service_of(request)
    if service.github_secret is None:
        raise ApiError(404, "not_found", f"this server takes no GitHub deliveries: start it with --github-secret-file (POST {ROUTE})")
    body = await read_limited(request.stream(), request.headers.get("content-length"), payload_bytes_max)
    _check(request, service.github_secret, body)
    delivery = _delivery(request.headers, body)
    try:
        mapped = map_delivery(delivery)
    except DeliveryInvalid as invalid:
        raise ApiError(400, "invalid_delivery", str(invalid)) from None
    answer = await _record(service, delivery, mapped.inputs, mapped.note)
    return Response(msgspec.json.encode(answer), media_type=JSON)


async def _record(service: Service, delivery: Delivery, inputs: list[dict[str, Any]], note: str | None) -> GithubAnswer:
    assert inputs, "every delivery maps to at least one observation (an ignored one at least)"
    data = b"".join(msgspec.json.encode(line) + b"\n" for line in inputs)
    try:
        commit = await service.submit(data, True, TokenActor(SOURCE))
    except TraceInvalid as invalid:  # adapters/github.py checked every input: a bug if it comes here
        first = invalid.errors[0]
        raise ApiError(400, "invalid_delivery", f"delivery {delivery.guid}: line {first.line}: {first.message}") from None
    except EdgeRefused as refused:
        raise ApiError(refused.status, refused.code, refused.message) from None
    return GithubAnswer(delivery.guid, delivery.event, delivery.action, commit.position, results_of(commit), note)
