"""Typed inputs for the client: one class per input kind, made from the
domain's own input Structs (domain/inputs.py, domain/<area>/inputs.py), so
they cannot drift from what the server decodes.

    from tandem.client import inputs
    message = inputs.HumanMessage(conversation_id="fg", message_id="m3", text="ship it")

Each class has the domain kind's name, tag (`type`) and fields, with two
differences, both the edge's (docs/api.md, "Inputs"):

- `at` may be left out (UNSET): the server stamps its clock. Given, it must
  be an aware datetime in UTC. The domain's Struct requires `at`, as every
  trace line has one; here it is optional, and nothing else changes.
- a client input is checked whole when it is made: its fields are encoded
  and decoded by the domain's own edge (`decode_input`, with a stand-in `at`
  when none is given), so a wrong type, a value out of bounds or a missing
  alternative (`task.revise` with nothing to revise) raises
  `msgspec.ValidationError` naming the field (`Expected `str`, got `int` -
  at `$.conversation_id``) before anything is sent. An unknown field is a
  `TypeError` from the constructor (`Unexpected keyword argument 'colour'`),
  or a `ValidationError` from `parse` (`Object contains unknown field
  `colour``).
- a rule that depends on who sends the input (`action.propose` needs
  `generation` from `background`) is checked when it is made only if the
  input names its `actor`. Naming none, the input is the token's, which the
  client does not know: the server checks it for the token's actor (a
  `400 invalid_input` naming the field).

`id` may be left out too: the client gives the input one before its first
send (a uuid) and resends it with that id (docs/api.md, "The Python client").

The Structs inputs nest (`GrantRequest`, `Prerequisite`, ...) are the
domain's, re-exported here under their names. `KINDS` maps each kind's tag
to its class, `AnyInput` is their union, `parse` reads a dict or a JSON line
into one.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Union

import msgspec
import msgspec.inspect
from msgspec import NODEFAULT, UNSET, Meta, UnsetType

from tandem.client.kinds import KIND_DOCS
from tandem.domain import inputs as domain

# The `at` a check stands in when an input leaves it out: any aware UTC time
# does, the edge's checks do not depend on it (the server stamps its own).
check_at = "1970-01-01T00:00:00Z"
_encoder = msgspec.json.Encoder()


class Input(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="type", kw_only=True, omit_defaults=True):
    """An input as the client sends it: a kind's fields, `at` optional.
    `domain` is the domain's Struct of the same kind."""

    domain: ClassVar[type[domain.Input]]

    def __post_init__(self) -> None:
        check(self)

    @property
    def kind(self) -> str:
        """The `type` of the input (its tag)."""
        return self.__struct_config__.tag  # type: ignore[return-value]

    def encoded(self) -> bytes:
        """The JSON body this input is sent as (UNSET fields, `at` among them, left out)."""
        return _encoder.encode(self)


def check(value: Input) -> None:
    """Raise msgspec.ValidationError, naming the field, unless the server's
    edge would decode `value` (with a stand-in `at` when it has none), for
    whichever token sends it when it names no actor."""
    try:
        fields = msgspec.to_builtins(value)
    except TypeError as error:  # a value JSON cannot hold: say which field
        raise msgspec.ValidationError(f"{error} - at `$.{_unencodable(value)}`") from None
    if value.at is UNSET:  # type: ignore[attr-defined]
        fields["at"] = check_at
    domain.decode_input(_encoder.encode(fields), domain.Unnamed.UNKNOWN)


def _unencodable(value: Input) -> str:
    for name in value.__struct_fields__:
        try:
            msgspec.to_builtins(getattr(value, name))
        except TypeError:
            return name
    return "?"


def _docstring(kind: type[domain.Input], tag: str) -> str:
    what, where = KIND_DOCS[tag]
    fields = msgspec.structs.fields(kind)
    required = [f.name for f in fields if f.default is NODEFAULT and f.default_factory is NODEFAULT and f.name != "at"]
    optional = [f.name for f in fields if f.name not in required]
    actors = ", ".join(kind.actors)
    return (
        f"`{tag}`: {what[:1].upper()}{what[1:]}.\n\nSpecified in {where}. Actors: {actors} (the first is the "
        f"default). Fields: {', '.join(required) or 'none'}; optional: {', '.join(optional)}."
    )


def _field(info: msgspec.structs.FieldInfo) -> tuple[Any, ...]:
    if info.name == "at":
        return ("at", Annotated[datetime.datetime, Meta(tz=True)] | UnsetType, UNSET)
    if info.default_factory is not NODEFAULT:
        return (info.name, info.type, msgspec.field(default_factory=info.default_factory))
    if info.default is not NODEFAULT:
        return (info.name, info.type, info.default)
    return (info.name, info.type)


def _client_kind(kind: type[domain.Input]) -> type[Input]:
    """The client's class of a domain kind: its name, tag and fields, `at` optional."""
    tag = kind.__struct_config__.tag
    assert isinstance(tag, str), kind
    made = msgspec.defstruct(
        kind.__name__,
        [_field(info) for info in msgspec.structs.fields(kind)],
        bases=(Input,),
        module=__name__,
        namespace={"__doc__": _docstring(kind, tag), "domain": kind, "actors": kind.actors},
        tag=tag,
        frozen=True,
        forbid_unknown_fields=True,
        kw_only=True,
        omit_defaults=True,
    )
    return made  # type: ignore[no-any-return]


KINDS: dict[str, type[Input]] = {cls.__struct_config__.tag: _client_kind(cls) for cls in domain.AnyInput.__args__}  # type: ignore[misc]
AnyInput: Any = Union[tuple(KINDS.values())]  # type: ignore[valid-type]


def _nested_structs() -> dict[str, type]:
    """The Structs the kinds' fields hold (not inputs themselves), by name."""
    found: dict[str, type] = {}
    pending: list[Any] = [msgspec.inspect.type_info(cls) for cls in domain.AnyInput.__args__]  # type: ignore[attr-defined]
    seen: set[int] = set()
    while pending:
        node = pending.pop()
        if id(node) in seen or not isinstance(node, (msgspec.inspect.Type, msgspec.inspect.Field)):
            continue
        seen.add(id(node))
        if isinstance(node, msgspec.inspect.StructType) and not issubclass(node.cls, domain.Input):
            found[node.cls.__name__] = node.cls
        for name in node.__struct_fields__:
            part = getattr(node, name)
            pending.extend(part if isinstance(part, tuple) else (part,))
    return dict(sorted(found.items()))


NESTED: dict[str, type] = _nested_structs()
globals().update({cls.__name__: cls for cls in KINDS.values()})
globals().update(NESTED)
__all__ = ["Input", "AnyInput", "KINDS", "NESTED", "check", "parse", *(cls.__name__ for cls in KINDS.values()), *NESTED]


def parse(value: Mapping[str, Any] | bytes | str) -> Input:
    """A dict (or one JSON line) as its typed input; msgspec.ValidationError,
    naming the field, when it is not one (an unknown `type` or field, a
    wrong type)."""
    if isinstance(value, (bytes, str)):
        return msgspec.json.decode(value, type=AnyInput)  # type: ignore[no-any-return]
    return msgspec.convert(dict(value), AnyInput)  # type: ignore[no-any-return]
