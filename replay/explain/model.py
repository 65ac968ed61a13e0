"""The JSON model of `tandem explain --json` (docs/explain.md): field order
is the documented key order, and keys are only ever added."""

from __future__ import annotations

from typing import Any

from msgspec import Struct


class ExplainError(Exception):
    """Nothing to explain: no such id (or not of the asked kind)."""


class InputRef(Struct, frozen=True, kw_only=True):
    """The input behind a decision: its seq, where it came from, what it was.
    `rejected` is the reason when the input was refused (its pass still ran)."""

    seq: int
    file: str | None
    line: int | None
    type: str
    id: str | None
    actor: str
    at: str
    rejected: str | None = None


class Source(Struct, frozen=True, kw_only=True):
    """The event (and its input) that established a fact."""

    position: int
    event: str
    input: InputRef | None


class Current(Struct, frozen=True, kw_only=True):
    """The state, at the end of the log, of something a fact names."""

    state: str
    source: Source | None


class Fact(Struct, frozen=True, kw_only=True):
    """One fact a decision relied on. `name` says what it is (see
    docs/explain.md), `value` is its recorded value (a JSON value), `text`
    says it for a human, `source` is where it came from and `now` what it is
    at the end of the log, for a thing that can change."""

    name: str
    text: str
    value: Any = None
    source: Source | None = None
    now: Current | None = None


class Link(Struct, frozen=True, kw_only=True):
    """One link of the causal chain (an item of an explanation's `steps`):
    one recorded event, where it is in the log, what it decided, the state it
    left the explained thing in, and why. `count` > 1 folds that many
    consecutive repeats (observations seen again)."""

    position: int
    event: str
    summary: str
    state: str | None
    input: InputRef | None
    facts: list[Fact] = []
    count: int = 1


class Waiting(Struct, frozen=True, kw_only=True):
    """What the thing waits for now: a blocking code (or, outside `pending`,
    the input it expects), its facts, and `since`, the event (and input) that
    last changed it."""

    code: str
    text: str
    facts: list[Fact] = []
    since: Source | None = None


class Explanation(Struct, frozen=True, kw_only=True):
    kind: str
    id: str
    state: str
    summary: str
    steps: list[Link]
    waiting: list[Waiting]
    related: list[str]
    steps_omitted: int = 0


class Document(Struct, frozen=True, kw_only=True):
    """What `tandem explain --json` prints: the id, the store's last position
    when it was explained, the trace files the inputs it names came from
    (whether the store holds inputs of other files too), and one explanation
    per kind the id names."""

    id: str
    position: int
    files: list[str]  # the trace files of the inputs it names
    matches: list[Explanation]
    other_files: bool = False  # the store holds inputs of other files too
