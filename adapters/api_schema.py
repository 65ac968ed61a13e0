"""The shapes of the HTTP API's bodies (docs/api.md), as msgspec Structs: what the
handlers return and what `/openapi.json` describes; and the parts of that
document Litestar cannot derive from the handlers, which read their query
and body themselves (`documented`, `INPUT_SCHEMAS`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import Operation, Parameter, Reference, RequestBody
from msgspec import UNSET, Meta, Struct, UnsetType

from tandem.replay.edge import RESERVED_KINDS
from tandem.domain import events as ev
from tandem.domain.inputs import AnyInput, format_at
from tandem.projections.rows import (
    VALUE_VIEWS,
    VIEW_ROWS,
    ActionRow,
    AlertRow,
    CardRow,
    ConsumerRow,
    ConversationRow,
    HealthValue,
    InboxRow,
    InvestigationRow,
    QuestionRow,
    RejectionRow,
    RuntimeRow,
    TaskRow,
    UsageValue,
)
from tandem.projections.work import WorkBody
from tandem.replay.commits import Commit
from tandem.replay.explain.model import Document as ExplainDocument
from tandem.replay.whatif.edits import edits_max, shift_seconds_max
from tandem.replay.whatif.model import WhatIf
from tandem.adapters.search.results import SearchResults


class LineError(Struct, frozen=True):
    line: int
    message: str


class ErrorDetail(Struct, frozen=True):
    code: str
    message: str


class ErrorBody(Struct, frozen=True, omit_defaults=True):
    error: ErrorDetail
    errors: list[LineError] | UnsetType = UNSET


def error_body(code: str, message: str, errors: list[dict[str, Any]] | None = None) -> bytes:
    lines = UNSET if errors is None else [LineError(**error) for error in errors]
    return msgspec.json.encode(ErrorBody(ErrorDetail(code, message), lines))


class EventRef(Struct, frozen=True):
    position: int
    type: str


class InputResult(Struct, frozen=True):
    line: int | None
    at: str
    accepted: bool
    reason: str | None
    events: list[EventRef]


class InputsResponse(Struct, frozen=True):
    position: int
    results: list[InputResult]


def results_of(commit: Commit) -> list[InputResult]:
    """One result per input: its record opens its events (the domain's and
    the pass's, in order)."""
    results: list[InputResult] = []
    refs: list[EventRef] = []
    last_at, last_text = None, ""  # a batch's inputs mostly share their `at`: format each once
    position = commit.head_before
    for event in commit.events:
        position += 1
        kind = type(event)
        if kind is ev.InputAccepted or kind is ev.InputRejected:
            refs = []
            at = event.input.at  # type: ignore[union-attr]
            if at != last_at:
                last_at, last_text = at, format_at(at)
            reason = None if kind is ev.InputAccepted else event.reason  # type: ignore[union-attr]
            results.append(InputResult(event.line, last_text, kind is ev.InputAccepted, reason, refs))  # type: ignore[union-attr]
        refs.append(EventRef(position, kind.__name__))
    return results


class ViewsDocument(Struct, frozen=True, forbid_unknown_fields=True):
    """The document `tandem replay --json` prints (docs/contract/views.md,
    with every key added in v1.2), plus the position: every view, and no other key
    (the schema's `additionalProperties: false`, so a view the document forgets
    fails the service's own schema check). Each view's rows are its Struct of
    projections/rows.py."""

    position: int
    tasks: list[TaskRow]
    actions: list[ActionRow]
    inbox: list[InboxRow]
    questions: list[QuestionRow]
    alerts: list[AlertRow]
    conversations: list[ConversationRow]
    consumers: list[ConsumerRow]
    health: HealthValue
    usage: UsageValue
    cards: list[CardRow]
    rejections: list[RejectionRow]
    runtimes: list[RuntimeRow]  # contract v1.2 section 1.6
    investigations: list[InvestigationRow]  # contract v1.2 section 5.5


def _view_body(name: str) -> type[Struct]:
    """`{"position", "rows"}` of one view (`{"position", "value"}` for a value view), typed."""
    row = VIEW_ROWS[name]
    field: tuple[str, Any] = ("value", row) if name in VALUE_VIEWS else ("rows", list[row])  # type: ignore[valid-type]
    return msgspec.defstruct(f"{name.title()}View", [("position", int), field], frozen=True, forbid_unknown_fields=True, module=__name__)


VIEW_BODIES: dict[str, type[Struct]] = {name: _view_body(name) for name in VIEW_ROWS}


class InputRefBody(Struct, frozen=True):
    file: str | None
    line: int | None
    id: str | None


class EventBody(Struct, frozen=True):
    position: int
    type: str
    input: InputRefBody | None
    body: dict[str, Any]


class EventsPage(Struct, frozen=True):
    events: list[EventBody]
    next_after: int | None


class Degraded(Struct, frozen=True):
    """A side file the runtime cannot write now (adapters/side_files.py): which, where, why, since when."""

    what: str  # "health_file"
    path: str
    reason: str  # the system's words: "No space left on device"
    since: str  # RFC 3339 UTC, its first failure


class Health(Struct, frozen=True, omit_defaults=True):
    """The writer answers the first three only, and `degraded` while a side
    file cannot be written; a follower or a standby (`tandem serve --follow`
    / `--standby`) adds the rest (docs/api.md)."""

    status: str
    position: int
    writer: bool
    role: str | None = None  # "follower" or "standby"
    store_head: int | None = None  # the store's head at its last look
    lag_events: int | None = None  # store_head - position
    caught_up_s_ago: float | None = None  # since its position was last the store's head
    looked_s_ago: float | None = None  # since it last read the store's head
    listening: bool | None = None  # its LISTEN session is up (PostgreSQL)
    writer_holder: str | None = None  # who holds the writer lock: "pid N on HOST since T"
    degraded: list[Degraded] | None = None  # side files that cannot be written now; absent when none


def _errors(*statuses: int) -> dict[int, ResponseSpec]:
    described = {
        400: "invalid input or query (`errors` lists the bad lines)",
        401: "no valid bearer token",
        403: "actor_mismatch or reserved: nothing recorded",
        404: "unknown view, id or route",
        405: "method not allowed",
        409: "at_before_head or at_in_future, or read_only (a follower: the message names the writer): nothing recorded",
        413: "body too large",
        415: "unsupported media type",
        422: "bad_edit: an edit that cannot be applied to the store's inputs (the message names it and why): nothing written",
        503: "store unavailable (nothing recorded; retry with the same id), commit_unknown (it may have been recorded: "
        "resend with the same id), or too many streams; with Retry-After (seconds)",
    }
    return {
        status: ResponseSpec(data_container=ErrorBody, description=described[status], generate_examples=False)
        for status in statuses
    }


ERRORS_READ = _errors(400, 401, 404, 405, 503)
ERRORS_WRITE = _errors(400, 401, 403, 404, 405, 409, 413, 415, 503)
ERRORS_WHATIF = _errors(400, 401, 404, 405, 413, 415, 422, 503)


# ------------------------------------------------- POST /v1/whatif's body
#
# An edit of `tandem whatif --store` (docs/api.md, "What if"), told apart by
# `op`; `input` is an input's number (explain's `input N`, the store's seq).

input_number_max = 10**18 - 1
InputNumber = Annotated[int, Meta(ge=1, le=input_number_max, description="an input's number (explain's `input N`)")]
Seconds = Meta(ge=-shift_seconds_max, le=shift_seconds_max)


class WhatIfDrop(Struct, frozen=True, forbid_unknown_fields=True, tag_field="op", tag="drop"):
    """Leave the input out (`--drop N`)."""

    input: InputNumber


class WhatIfReplace(Struct, frozen=True, forbid_unknown_fields=True, tag_field="op", tag="replace"):
    """Put `value`, an input as a trace line has it, in its place (`--replace N=JSON`)."""

    input: InputNumber
    value: dict[str, Any]


class WhatIfInsertAfter(Struct, frozen=True, forbid_unknown_fields=True, tag_field="op", tag="insert_after"):
    """Add `value` after the input (0: before the first) (`--insert-after N=JSON`)."""

    input: Annotated[int, Meta(ge=0, le=input_number_max, description="an input's number; 0: before the first")]
    value: dict[str, Any]


class WhatIfShift(Struct, frozen=True, forbid_unknown_fields=True, tag_field="op", tag="shift"):
    """Move the input's `at` by `seconds` (negative: earlier), and the input with it (`--shift N=SECONDS`)."""

    input: InputNumber
    seconds: Annotated[int, Seconds] | Annotated[float, Seconds]


class WhatIfSet(Struct, frozen=True, forbid_unknown_fields=True, tag_field="op", tag="set"):
    """Set one field of the input, dotted into objects, to `value`, any JSON value (`--set N.FIELD=VALUE`)."""

    input: InputNumber
    field: Annotated[str, Meta(min_length=1, max_length=1_000)]
    value: Any


WhatIfEdit = WhatIfDrop | WhatIfReplace | WhatIfInsertAfter | WhatIfShift | WhatIfSet


class WhatIfRequest(Struct, frozen=True, forbid_unknown_fields=True):
    """The edits, in order, each naming inputs by the store's numbering; `until`: compare as of that input."""

    edits: Annotated[list[WhatIfEdit], Meta(max_length=edits_max)]
    until: InputNumber | None = None


# ------------------------------------------------------ the OpenAPI document

BEARER: list[dict[str, list[str]]] = [{"bearer": []}]  # the security of every route but /v1/health
INPUT_SCHEMA_NAME = "Input"


def input_schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schemas (OpenAPI components) of one input as POST /v1/inputs
    takes it, made from the input Structs the edge decodes with: `Input` (one
    of the kinds, told apart by `type`) and one per kind and shared part. As a
    trace line (docs/contract/), but `at` may be left out, and the kinds
    only the runtime records (`daemon.start`, `daemon.stop`) are not there."""
    (root,), components = msgspec.json.schema_components([AnyInput], ref_template="#/components/schemas/{name}")
    reserved = {
        name
        for name, schema in components.items()
        if schema.get("properties", {}).get("type", {}).get("enum", [None])[0] in RESERVED_KINDS
    }
    assert len(reserved) == len(RESERVED_KINDS), reserved
    references = {f"#/components/schemas/{name}" for name in reserved}
    root["anyOf"] = [choice for choice in root["anyOf"] if choice["$ref"] not in references]
    mapping = root["discriminator"]["mapping"]
    root["discriminator"]["mapping"] = {kind: ref for kind, ref in mapping.items() if ref not in references}
    schemas: dict[str, dict[str, Any]] = {INPUT_SCHEMA_NAME: root}
    for name, schema in components.items():
        if name in reserved:
            continue
        if "at" in schema.get("properties", {}):
            schema["required"] = [field for field in schema.get("required", []) if field != "at"]
        schemas[name] = schema
    return schemas


INPUT_SCHEMAS = input_schemas()

SCHEMA_REF = "#/components/schemas/{name}"
VIEW_BODY_SCHEMA_NAME = "ViewBody"
# Every answer of the API, by the Struct the service encodes it from (or
# that describes what it encodes: the views are dicts, their rows' Structs
# projections/rows.py); the GitHub route's is added by the app.
ANSWERS: tuple[type[Struct], ...] = (
    InputsResponse,
    ErrorBody,
    ViewsDocument,
    *VIEW_BODIES.values(),
    EventsPage,
    Health,
    ExplainDocument,
    WorkBody,
    WhatIf,
    SearchResults,
)
# The request bodies a handler decodes itself, described by their Structs too.
REQUESTS: tuple[type[Struct], ...] = (WhatIfRequest,)


def answer_schemas(answers: Sequence[type[Struct]]) -> dict[str, dict[str, Any]]:
    """The JSON Schemas (OpenAPI components) of the answers, made by msgspec
    from their Structs, as it encodes and decodes them (a Struct that refuses
    unknown fields says `additionalProperties: false`); and `ViewBody`, any
    of the views' bodies (`GET /v1/views/{name}`: which one, its name says)."""
    _, components = msgspec.json.schema_components(answers, ref_template=SCHEMA_REF)
    for schema in components.values():
        _open_tuples(schema)
    components[VIEW_BODY_SCHEMA_NAME] = {
        "title": VIEW_BODY_SCHEMA_NAME,
        "description": "One view, as its name says: `rows` of that view's row schema, or for `health` and `usage` "
        "its `value` (any of, not one of: an empty list of rows is every list view's)",
        "anyOf": [{"$ref": SCHEMA_REF.format(name=body.__name__)} for body in VIEW_BODIES.values()],
    }
    return components


def _open_tuples(schema: Any) -> None:
    """Drop a tuple's `items: false` (no item past its `prefixItems`), which
    its `maxItems` says already: generators (openapi-python-client) cannot
    read a boolean schema, and refuse the whole document for it."""
    if isinstance(schema, dict):
        if "prefixItems" in schema and schema.get("items") is False and "maxItems" in schema:
            del schema["items"]
        for value in schema.values():
            _open_tuples(value)
    elif isinstance(schema, list):
        for value in schema:
            _open_tuples(value)


def documented(
    parameters: Sequence[Parameter] = (), request_body: RequestBody | None = None, answer: str | None = None
) -> type[Operation]:
    """An Operation class (Litestar's `operation_class=`) that adds, to what
    Litestar derives from a handler's signature, the parameters and the body
    the handler reads and checks itself (so that its own checks and error
    codes apply, not Litestar's). A parameter named as one Litestar derived
    (a path parameter) replaces it. `answer`: the component its 200 answer
    is (when the handler's signature cannot say it: `ViewBody`)."""

    @dataclass
    class Documented(Operation):
        def __post_init__(self) -> None:
            if parameters:
                given = {(parameter.name, parameter.param_in) for parameter in parameters}
                derived = [
                    parameter
                    for parameter in self.parameters or []
                    if not isinstance(parameter, Parameter) or (parameter.name, parameter.param_in) not in given
                ]
                self.parameters = [*derived, *parameters]
            if request_body is not None:
                self.request_body = request_body
            if answer is not None:
                assert self.responses is not None
                content = self.responses["200"].content  # type: ignore[union-attr]
                assert content is not None
                content["application/json"].schema = Reference(ref=SCHEMA_REF.format(name=answer))

    return Documented
