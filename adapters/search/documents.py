"""What the search index holds, made from the log's events, the same for
every backend (docs/operations.md, "The search index").

* A **thing**: every (kind, id) key of domain/keys.py that has an id (an
  action's operation id, a task, a question `task/key`, an alert, an
  update's cause, a conversation, …), with the first and last positions of
  its events, and words: those of its id, then those of the input whose
  events first name it (a task is found by its goal, a question by its
  blocking reason, a cause by its observation's text). Things are numbered
  in the order the log first names them (`n`): "newest first" among things
  is by that order.
* An **input**: every input's record (`InputAccepted`/`InputRejected`), at
  its position, with the last position of its events, its kind, actor and
  id, and the words of its text fields (every field of type `Text`: a
  goal, a question's blocking reason, an answer, an observation's text and
  scope, a card's summary, …) and of its id.

Words are cut and folded here, once, in Python, and given to each database
as they are (SQLite FTS5's `ascii` tokenizer, which splits only at ASCII
separators, here spaces, and folds only ASCII letters, which are folded
already; PostgreSQL's `array_to_tsvector`, which parses nothing): so a word
is the same word on every backend. A word is a run of Unicode letters and
digits (`[^\\W_]+`), case-folded, cut at `word_chars_max` characters.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec
import msgspec.inspect as mi

from tandem.domain import events as ev
from tandem.domain.input_base import text_chars_max
from tandem.domain.inputs import AnyInput
from tandem.replay.index import KEYERS

# Bounds (docs/operations.md, "The search index").
word_chars_max = 64  # a longer word is cut (in a query too, so it still matches)
text_chars_indexed_max = 65_536  # of an input's text fields, in field order: the rest is not searched
words_per_input_max = 4_096  # distinct words of one input (the first ones)

WORD = re.compile(r"[^\W_]+")


def words_of(text: str) -> list[str]:
    """The words of `text`, in order (repeats included)."""
    if text.isascii():  # the common case, at C speed: ASCII folds by lower(), and splits the same before or after
        found = WORD.findall(text.lower())
        return found if max(map(len, found), default=0) <= word_chars_max else [word[:word_chars_max] for word in found]
    return [word.casefold()[:word_chars_max] for word in WORD.findall(text)]


def distinct_words(texts: Iterable[str], limit: int) -> list[str]:
    """The first `limit` distinct words of `texts`, in order of appearance."""
    seen: dict[str, None] = {}
    for text in texts:
        seen.update(dict.fromkeys(words_of(text)))
        if len(seen) >= limit:
            return list(seen)[:limit]
    return list(seen)


# ------------------------------------------------------- an input's text fields

Texts = Callable[[Any], Iterator[str]]  # a value's texts (strings of type Text)


def _texts_plan(info: Any, depth: int = 0) -> Texts | None:
    """How to find the `Text` strings in a value of type `info` (None: it
    holds none). Derived from the inputs' declared types, so a new text
    field is searched without a word here."""
    if depth > 8:
        return None
    if isinstance(info, mi.StrType):
        return (lambda value: iter((value,))) if info.max_length == text_chars_max else None
    if isinstance(info, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)):
        item = _texts_plan(info.item_type, depth + 1)
        return None if item is None else (lambda value: (text for one in value for text in item(one)))
    if isinstance(info, mi.DictType):
        inner = _texts_plan(info.value_type, depth + 1)
        return None if inner is None else (lambda value: (text for one in value.values() for text in inner(one)))
    if isinstance(info, mi.StructType):
        return _struct_plan(info, depth)
    if isinstance(info, mi.UnionType):
        return _union_plan(info, depth)
    return None


def _struct_plan(info: mi.StructType, depth: int) -> Texts | None:
    plans = [(f.name, plan) for f in info.fields if (plan := _texts_plan(f.type, depth + 1)) is not None]
    if not plans:
        return None

    def texts(value: Any) -> Iterator[str]:
        for name, plan in plans:
            held = getattr(value, name)
            if held is not None and held is not msgspec.UNSET:
                yield from plan(held)

    return texts


_PYTHON_TYPES = {mi.StrType: str, mi.ListType: list, mi.DictType: dict, mi.SetType: set, mi.FrozenSetType: frozenset,
                 mi.VarTupleType: tuple}  # fmt: skip


def _union_plan(info: mi.UnionType, depth: int) -> Texts | None:
    """A union's members that hold text, told apart by the value's Python type."""
    by_type: dict[type, Texts] = {}
    for member in info.types:
        plan = _texts_plan(member, depth + 1)
        if plan is not None:
            python = member.cls if isinstance(member, mi.StructType) else _PYTHON_TYPES[type(member)]
            by_type[python] = plan
    if not by_type:
        return None

    def texts(value: Any) -> Iterator[str]:
        plan = by_type.get(type(value))
        return plan(value) if plan is not None else iter(())

    return texts


def _field_plans(kind: type) -> tuple[tuple[str, Texts], ...]:
    info = mi.type_info(kind)
    assert isinstance(info, mi.StructType)
    return tuple((f.name, plan) for f in info.fields if (plan := _texts_plan(f.type, 1)) is not None)


# Per input kind (its class), its text fields and how to read each.
TEXT_FIELDS: dict[type, tuple[tuple[str, Texts], ...]] = {kind: _field_plans(kind) for kind in AnyInput.__args__}


def input_texts(value: Any) -> Iterator[tuple[str, str]]:
    """(field, text) for each text of an input, in field order, at most
    `text_chars_indexed_max` characters in all (the last one cut)."""
    left = text_chars_indexed_max
    for name, plan in TEXT_FIELDS[type(value)]:
        held = getattr(value, name)
        if held is None or held is msgspec.UNSET:
            continue
        for text in plan(held):
            if left <= 0:
                return
            yield name, text[:left]
            left -= len(text)


@functools.lru_cache(maxsize=65_536)  # a batch names many things the index holds already
def id_words(identifier: str) -> tuple[str, ...]:
    return tuple(distinct_words((identifier,), words_per_input_max))


def record_words(data: bytes) -> list[str]:
    """`input_words` of the input whose record is `data` (stored bytes)."""
    record = ev.decode_event(data)
    assert isinstance(record, (ev.InputAccepted, ev.InputRejected)), type(record)
    return input_words(record.input)


def input_words(value: Any) -> list[str]:
    """The words an input is found by: its text fields', then its id's."""
    texts = [text for _, text in input_texts(value)]
    if value.id is not None:
        texts.append(value.id)
    return distinct_words(texts, words_per_input_max)


# ------------------------------------------------------------------ documents


@dataclass
class InputDoc:
    position: int  # its record's
    last: int  # its last event's
    kind: str  # the input's type (`action.propose`)
    actor: str
    id: str | None
    words: list[str]


@dataclass
class ThingDoc:
    kind: str
    id: str
    first: int
    last: int
    words: list[str]  # of its id


@dataclass
class Batch:
    """What a run of events adds to the index, to be written in one
    transaction: the inputs recorded in it, the things it names (new ones
    in the order the log first names them, with their first position; and
    the last position of every one), how far the input open before it
    reaches now (`extended`), and the head it brings the index to."""

    after: int  # the index's head before it
    head: int
    inputs: list[InputDoc] = field(default_factory=list)
    things: dict[tuple[str, str], ThingDoc] = field(default_factory=dict)  # in first-naming order within the batch
    extended: tuple[int, int] | None = None  # (an earlier input's position, its new last position)


class Documents:
    """Turns the log's events, in order, into batches. It remembers the
    input still open at the end of a batch (its events may go on in the
    next one): its position and words (a keeper that starts reads them
    back: `open_input` from the index, its words from its record)."""

    def __init__(self, head: int, open_input: int | None, open_words: list[str] | None = None) -> None:
        self.head = head
        self.open_input = open_input
        self.open_words = open_words or []

    def batch(self, events: Iterable[tuple[int, ev.Event]]) -> Batch:
        made = Batch(after=self.head, head=self.head)
        current: InputDoc | None = None  # the batch's own open input
        for position, event in events:
            assert position == made.head + 1, (position, made.head)
            made.head = position
            if isinstance(event, (ev.InputAccepted, ev.InputRejected)):
                value = event.input
                current = InputDoc(position, position, value.input_type, value.sender, value.id, input_words(value))
                made.inputs.append(current)
                self.open_input, self.open_words = position, current.words
                continue
            if isinstance(event, ev.SourceProgressed):  # a batch's marker ends its last input's events
                current, self.open_input, self.open_words = None, None, []
                continue
            if current is not None:
                current.last = position
            elif self.open_input is not None:
                made.extended = (self.open_input, position)
            self._things(made, position, event, self.open_words if self.open_input is not None else [])
        self.head = made.head
        return made

    @staticmethod
    def _things(made: Batch, position: int, event: ev.Event, words: list[str]) -> None:
        for kind, identifier in KEYERS[type(event)](event):
            if not identifier:
                continue  # a singleton (`("policy",)`): no id to find it by
            held = made.things.get((kind, identifier))
            if held is None:
                named = list(dict.fromkeys([*id_words(identifier), *words]))[:words_per_input_max]
                made.things[(kind, identifier)] = ThingDoc(kind, identifier, position, position, named)
            else:
                held.last = position
