"""The input kinds of the reviews area: one tagged msgspec Struct per kind, fields
of bounded types (domain/input_base.py); domain/inputs.py assembles every
area's into the one union a trace line is decoded into."""

from __future__ import annotations

from typing import ClassVar

from tandem.domain.input_base import (
    Actor,
    Identifier,
    Input,
)


class AliasSource(Input, tag="source.alias"):  # contract v1.2 section 7.2
    actors: ClassVar[tuple[Actor, ...]] = ("source", "daemon")  # contract v1.2 section 7.2
    source_id: Identifier  # the alias
    alias_of: Identifier  # the source it is the same object as


__all__ = ['AliasSource']  # every name here is the registry's: `inp.Name`
