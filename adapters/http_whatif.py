"""`POST /v1/whatif` (docs/api.md, "What if: `POST /v1/whatif`"): `tandem
whatif --store` over the served store. Any token may ask, as any may read;
the answer is the JSON that command prints (the same bytes, without its
final newline). The fork is read from the reader store in a worker thread
(adapters/service.py, `Service.whatif`): the engine is never held, and
nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from litestar import Request, Response, post
from litestar.openapi.spec import OpenAPIMediaType, Reference, RequestBody

from tandem.adapters.api_schema import (
    BEARER,
    ERRORS_WHATIF,
    SCHEMA_REF,
    WhatIfDrop,
    WhatIfEdit,
    WhatIfInsertAfter,
    WhatIfReplace,
    WhatIfRequest,
    WhatIfSet,
    WhatIfShift,
    documented,
)
from tandem.adapters.http_inputs import JSON, actor_of_request, read_limited, service_of
from tandem.adapters.service import ApiError
from tandem.replay.whatif import edits as made
from tandem.replay.whatif.edits import Edit, EditInvalid, edit_value_bytes_max, edits_max
from tandem.replay.whatif.model import WhatIf

ROUTE = "/v1/whatif"
body_bytes_max = 2 * edit_value_bytes_max  # one input at a trace line's limit, and the rest of the body
OPS = "drop, replace, insert_after, shift, set"

BODY = RequestBody(
    required=True,
    description=f"`{JSON}`, at most {body_bytes_max} bytes: the edits (at most {edits_max}), in order, each naming "
    "inputs by the store's numbering (explain's `input N`), and optionally `until`, an input's number.",
    content={JSON: OpenAPIMediaType(schema=Reference(ref=SCHEMA_REF.format(name=WhatIfRequest.__name__)))},
)
_decoder = msgspec.json.Decoder(WhatIfRequest)


def _said(error: msgspec.MsgspecError) -> str:
    """msgspec's words, the field first: `edits[0].input: Expected `int`, got `str``."""
    message, found, where = str(error).rpartition(" - at `")
    if not found:
        return f"the body: {error}"
    field = where.rstrip("`").removeprefix("$").removeprefix(".")
    hint = f" (an op is one of {OPS})" if field.endswith(".op") else ""
    return f"{field or 'the body'}: {message}{hint}"


def request_of(body: bytes) -> WhatIfRequest:
    """The body, decoded; 400 `invalid_body` naming the field otherwise."""
    try:
        return _decoder.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise ApiError(400, "invalid_body", _said(error)) from None


def edits_of(request: WhatIfRequest) -> list[Edit]:
    """The request's edits as `tandem whatif` makes them (EditInvalid: one is bad)."""
    return [EDITS[type(edit)](edit) for edit in request.edits]


@post(
    ROUTE,
    status_code=200,
    summary="What if the past were otherwise: which decisions and views change (tandem whatif --store --json)",
    description="The store's inputs with the edits applied, replayed in memory from the newest snapshot before the "
    "first edited one, and compared with the store as it is: the first divergence, each thing decided otherwise "
    "(its state on each side, the steps only one side has), and per view the rows added, removed and changed. "
    "Read-only: the store is never written; an edited input's authority is checked as any input's.",
    responses=ERRORS_WHATIF,
    request_max_body_size=body_bytes_max + 1,
    operation_class=documented(request_body=BODY),
    security=BEARER,
)
async def post_whatif(request: Request) -> Response[WhatIf]:
    service = service_of(request)
    actor_of_request(service.tokens, request.headers.get("authorization"), request.query_params.items())
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != JSON:
        raise ApiError(415, "unsupported_media_type", f"Content-Type {kind or 'none'!r}: send {JSON}")
    asked = request_of(await read_limited(request.stream(), request.headers.get("content-length"), body_bytes_max))
    try:
        edits = edits_of(asked)
    except EditInvalid as invalid:
        raise ApiError(422, "bad_edit", str(invalid)) from None
    return Response(msgspec.json.encode(await service.whatif(edits, asked.until)), media_type=JSON)


EDITS: dict[type[Any], Callable[[Any], Edit]] = {
    WhatIfDrop: lambda edit: made.drop(edit.input),
    WhatIfReplace: lambda edit: made.replace(edit.input, edit.value),
    WhatIfInsertAfter: lambda edit: made.insert_after(edit.input, edit.value),
    WhatIfShift: lambda edit: made.shift(edit.input, edit.seconds),
    WhatIfSet: lambda edit: made.set_field(edit.input, edit.field, edit.value),
}
assert set(EDITS) == set(WhatIfEdit.__args__)  # type: ignore[attr-defined]
