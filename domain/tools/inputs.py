"""The input kinds of the tools area: one tagged msgspec Struct per kind, fields
of bounded types (domain/input_base.py); domain/inputs.py assembles every
area's into the one union a trace line is decoded into."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from msgspec import UNSET, Meta, UnsetType
from tandem.domain.input_base import (
    Actor,
    Identifier,
    Input,
    Revision,
    Text,
    ToolName,
    list_items_max,
)

ToolRole = Literal["background", "worker"]


class SetToolPolicy(Input, tag="tool_policy.set"):
    actors: ClassVar[tuple[Actor, ...]] = ("daemon", "human")
    role: ToolRole
    allowed_tools: Annotated[list[ToolName], Meta(max_length=list_items_max)]
    read_roots: Annotated[list[Text], Meta(max_length=list_items_max)]


class AdmitRuntime(Input, tag="runtime.admit"):
    actors: ClassVar[tuple[Actor, ...]] = ("daemon",)
    runtime_id: Identifier
    role: ToolRole
    adapter: Identifier
    tool_policy_revision: Revision
    tools: Annotated[list[ToolName], Meta(max_length=list_items_max)]
    read_roots: Annotated[list[Text], Meta(max_length=list_items_max)]
    conversation_id: Identifier | UnsetType = UNSET
    generation: Revision | UnsetType = UNSET
    inherited_tools: Annotated[list[ToolName], Meta(max_length=list_items_max)] = []
    isolation_test_ref: Identifier | UnsetType = UNSET

    def __post_init__(self) -> None:
        background = self.role == "background"
        for name in ("conversation_id", "generation"):
            if background and getattr(self, name) is UNSET:
                raise ValueError(f"a background runtime needs `{name}`")
            if not background and getattr(self, name) is not UNSET:
                raise ValueError(f"`{name}` is only for a background runtime")


class RequestTool(Input, tag="tool.request"):
    actors: ClassVar[tuple[Actor, ...]] = ("daemon",)
    runtime_id: Identifier
    call_id: Identifier
    tool: ToolName
    read_paths: Annotated[list[Text], Meta(max_length=list_items_max)] = []
    write_paths: Annotated[list[Text], Meta(max_length=list_items_max)] = []
    operation_id: Identifier | UnsetType = UNSET
    investigation_id: Identifier | UnsetType = UNSET  # contract v1.2 section 5.1


__all__ = ['SetToolPolicy', 'AdmitRuntime', 'RequestTool']  # every name here is the registry's: `inp.Name`
