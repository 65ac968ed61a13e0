"""The JSON model of `tandem whatif --json` and `POST /v1/whatif`
(docs/whatif.md): field order is the documented key order; keys are only
ever added."""

from __future__ import annotations

from typing import Any

from msgspec import Struct


class Where(Struct, frozen=True, kw_only=True):
    """Where an input is, in the original's numbering: its `line` (a trace's
    line, or a store's input number), or for an inserted one the line it was
    inserted after (`inserted_after`, `line` null) and which of the inputs
    inserted there it is (`inserted`, from 1): written `line 23+2`."""

    line: int | None
    inserted_after: int | None = None
    inserted: int | None = None

    def text(self, unit: str) -> str:
        if self.line is not None:
            return f"{unit} {self.line}"
        return f"{unit} {self.inserted_after}+{self.inserted or 1}"

    def order(self) -> tuple[int, int]:
        """Where it falls in the original's order: inserted inputs just after their line, in order."""
        return (self.line, 0) if self.line is not None else (self.inserted_after or 0, self.inserted or 1)


class Step(Struct, frozen=True, kw_only=True):
    """One decision about a thing, as its explanation tells it: the event,
    what it decided, the state it left the thing in, and the input behind it."""

    event: str
    summary: str
    state: str | None
    where: Where | None


class Record(Struct, frozen=True, kw_only=True):
    """One recorded event, its facts (the event's fields, input numbers as
    `Where`s), for a thing no explanation covers (a grant, the policy, ...)."""

    event: str
    where: Where | None
    facts: dict[str, Any]


class Side(Struct, frozen=True, kw_only=True):
    """A thing on one side: its state at the end (or at `--until`) and its
    decisions that the other side does not have."""

    state: str
    waiting: list[str] = []  # what it waits for there (explain's codes: prerequisite_pending, question_hold, ...)
    only_here: list[Step] = []
    records: list[Record] = []  # raw records only this side has (no explanation, or the same story with other facts)


class Thing(Struct, frozen=True, kw_only=True):
    """A thing whose decisions differ: `original` / `fork` null when it exists
    on one side only."""

    kind: str
    id: str
    original: Side | None
    fork: Side | None


class FieldChange(Struct, frozen=True, kw_only=True):
    field: str  # dotted into nested objects
    original: Any
    fork: Any


class RowChange(Struct, frozen=True, kw_only=True):
    key: str
    fields: list[FieldChange]


class ViewDiff(Struct, frozen=True, kw_only=True):
    view: str
    added: list[dict[str, Any]] = []
    removed: list[dict[str, Any]] = []
    changed: list[RowChange] = []


class Divergence(Struct, frozen=True, kw_only=True):
    """The first input where the two runs decide differently: where it is,
    and what each side did with it (`accepted`, `rejected: REASON`, `absent`)."""

    where: Where
    original: str
    fork: str


class WhatIf(Struct, frozen=True, kw_only=True):
    source: str
    unit: str  # "line" (a trace) or "input" (a store)
    edits: list[str]
    until: int | None
    different: bool
    first_divergence: Divergence | None
    decisions: list[Thing]
    views: list[ViewDiff]
