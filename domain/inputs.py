"""Inputs: the commands of docs/contract/ (its README lists every kind), one tagged msgspec Struct per kind.

A trace line is decoded once, at the edge, into one of these Structs by
`INPUT_DECODER`; past that point nothing re-parses JSON. A decode failure is a
schema error (the whole trace is refused); a well-formed input the domain
refuses is a rejection (recorded, processing goes on).

Evolution rule (msgspec's): new fields get defaults, existing field types never
change. `UNSET` marks "not given", which the contract distinguishes from `null` and
from zero (a usage field left out is unknown, not 0).

This module is the registry: each area declares its kinds in
`domain/<area>/inputs.py` (its `__all__`); they are re-exported here
(`inp.DelegateTask`) and assembled, in `domain/areas.py`'s order, into the
one union a trace line is decoded into.
"""

from __future__ import annotations

import datetime
import sys
from typing import Any, Union

import msgspec
import msgspec.inspect

from tandem.domain.areas import area_modules, exported
from tandem.domain.nesting import (
    lone_surrogate_error,
    nesting_depth_max,
    opening_brackets,
    repeated_key_error,
    too_deep_error,
    too_deep_in_json,
    too_deep_in_value,
    unbounded_integer_error,
)
from tandem.domain.input_base import (  # noqa: F401 (re-exported: `inp.Identifier` is input_base's)
    identifier_chars_max,
    text_chars_max,
    list_items_max,
    Identifier,
    Text, ToolName,
    Count,
    Positive,
    Revision,
    Tokens,
    Time,
    Actor,
    HUMAN_ONLY,
    given,
    Input,
    Unnamed,
    require_one_of,
    require_exactly_one,
)
from tandem.domain.authority.inputs import *  # noqa: F403
from tandem.domain.tasks.inputs import *  # noqa: F403
from tandem.domain.actions.inputs import *  # noqa: F403
from tandem.domain.inbox.inputs import *  # noqa: F403
from tandem.domain.reviews.inputs import *  # noqa: F403
from tandem.domain.consumer.inputs import *  # noqa: F403
from tandem.domain.conversation.inputs import *  # noqa: F403
from tandem.domain.conversation.inputs import *  # noqa: F403
from tandem.domain.alerts.inputs import *  # noqa: F403
from tandem.domain.budgets.inputs import *  # noqa: F403
from tandem.domain.tools.inputs import *  # noqa: F403
from tandem.domain.health.inputs import *  # noqa: F403
from tandem.domain.investigations.inputs import *  # noqa: F403

_AREA_INPUTS = area_modules("inputs")
_here = sys.modules[__name__]
assert all(getattr(_here, name, None) is getattr(module, name) for module in _AREA_INPUTS for name in module.__all__), (
    "every area's inputs are re-exported here (an area missing from the imports above)"
)

_KINDS: tuple[type[Input], ...] = tuple(exported(_AREA_INPUTS, Input))
AnyInput: Any = Union[_KINDS]  # type: ignore[valid-type]

# The actors each kind accepts, the first its default, as each kind's class declares them.
ACTORS: dict[str, tuple[str, ...]] = {cls.__struct_config__.tag: cls.actors for cls in _KINDS}  # type: ignore[misc]


def accepted_actors(kind: str) -> tuple[str, ...]:
    return ACTORS.get(kind, HUMAN_ONLY)


# The kinds with rules that depend on who sends them (`Input.check_sent_by`):
# an input of one that names no actor is checked by `decode_input`, for the
# sender it is told.
SENDER_CHECKED: frozenset[type[Input]] = frozenset(
    cls for cls in _KINDS if cls.check_sent_by is not Input.check_sent_by
)

INPUT_KINDS: tuple[str, ...] = tuple(cls.__struct_config__.tag for cls in AnyInput.__args__)  # type: ignore[attr-defined]
INPUT_DECODER = msgspec.json.Decoder(AnyInput)
_ENCODER = msgspec.json.Encoder()


# ------------------------------------------------------------------ nesting


def _holds_any(info: msgspec.inspect.Type) -> bool:
    """Whether a field's type admits free-form values (`Any`) anywhere in it."""
    pending: list[Any] = [info]
    seen: set[int] = set()
    while pending:
        node = pending.pop()
        if isinstance(node, msgspec.inspect.AnyType):
            return True
        if id(node) in seen or not isinstance(node, (msgspec.inspect.Type, msgspec.inspect.Field)):
            continue
        seen.add(id(node))
        for name in node.__struct_fields__:
            part = getattr(node, name)
            pending.extend(part if isinstance(part, tuple) else (part,))
    return False


def _free_form_fields() -> dict[type, tuple[str, ...]]:
    """Each input kind's fields that admit `Any` (derived, so a new free-form
    field is bounded too). Kinds without one are not walked: the fast path."""
    found: dict[type, tuple[str, ...]] = {}
    for cls in AnyInput.__args__:  # type: ignore[attr-defined]
        names = tuple(f.name for f in msgspec.inspect.type_info(cls).fields if _holds_any(f.type))
        if names:
            found[cls] = names
    return found


_FREE_FORM_FIELDS = _free_form_fields()

_UTC = datetime.timedelta(0)


def format_at(moment: datetime.datetime) -> str:
    """An input's `at` as a trace writes it: RFC 3339 UTC, `Z`, microseconds
    only when there are some."""
    text = moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")
    return text.removesuffix(".000000") + "Z"


def decode_input(line: bytes | str, unnamed: str | Unnamed = Unnamed.KIND_DEFAULT) -> AnyInput:
    """Decode one trace line; raises msgspec.ValidationError / DecodeError.

    This is the edge: `at` must be UTC, nesting within `nesting_depth_max`,
    every integer within `integer_magnitude_max` and no key repeated in an
    object here. Stored inputs (decoded inside events) were checked when they
    arrived and are not checked again.

    `unnamed`: who sends the input if it names no actor, for the rules that
    depend on it (`generation` from `background`): the kind's default (a
    trace line: `actor` stays unset), an actor's name (HTTP: the token's,
    and the input is returned as that actor's, `actor` filled in), or not
    known (`Unnamed.UNKNOWN`, the client's check: those rules are left to
    the server)."""
    try:
        value = INPUT_DECODER.decode(line)
    except msgspec.DecodeError as error:
        raise lone_surrogate_error(line.encode() if isinstance(line, str) else line) or error from None
    except RecursionError:
        # Deeper than the interpreter's stack allows: find where, iteratively.
        path = too_deep_in_json(line.encode() if isinstance(line, str) else line)
        if path is None:
            raise  # not deep input: the caller's stack was already nearly full
        raise too_deep_error(path) from None
    if value.actor is None:
        value = _sent_by(value, unnamed)
    fields = _FREE_FORM_FIELDS.get(type(value))
    # Only free-form fields can nest beyond the schema, and no deeper than the
    # line has opening brackets (C-speed counts: most lines skip the walk).
    if fields is not None and opening_brackets(line) > nesting_depth_max:
        for name in fields:
            path = too_deep_in_value(getattr(value, name), name)
            if path is not None:
                raise too_deep_error(path)
    if value.at.utcoffset() != _UTC:
        raise msgspec.ValidationError("`at` must be an RFC 3339 time in UTC (ending in Z or +00:00) - at `$.at`")
    raw = line.encode() if isinstance(line, str) else line
    refused = unbounded_integer_error(raw) or repeated_key_error(raw)
    if refused is not None:
        raise refused
    return value


def _sent_by(value: Input, unnamed: str | Unnamed) -> Input:
    """`value`, which names no actor, checked for who sends it (`decode_input`)."""
    try:
        if isinstance(unnamed, str):
            return msgspec.structs.replace(value, actor=unnamed)  # its __post_init__ checks it for that actor
        if type(value) in SENDER_CHECKED:
            value.check_sent_by(value.actors[0] if unnamed is Unnamed.KIND_DEFAULT else None)
        return value
    except ValueError as error:  # said as msgspec says a rule of `__post_init__`
        raise msgspec.ValidationError(str(error)) from None


def canonical_body(value: Input) -> bytes:
    """The body an idempotency key guards: everything but `at`, actor resolved."""
    return _ENCODER.encode(msgspec.structs.replace(value, at=_EPOCH, actor=value.sender, id=None))


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
