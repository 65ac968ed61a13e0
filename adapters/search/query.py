"""A search, the same on every backend: the query read, each part of it
asked of the backend (a bounded list in a fixed order), and the parts
merged here (docs/api.md, "Search").

A query `q` (stripped of surrounding white space, at most
`query_chars_max` characters, at most `query_words_max` words) finds:

* things (each once, at its first part): whose id is `q` (part `id`); whose id
  starts with `q` (`id prefix`, by id); whose id holds every word of `q`
  (`words`, newest first: the latest named first);
* inputs (each once): whose id is `q` (`id`); whose id starts with `q`
  (`id prefix`, by id, then newest first); of kind `q` or by actor `q`
  when `q` is an input kind or an actor (`kind`, `actor`, newest first);
  whose text fields or id hold every word of `q` (`words`, newest first).

Each part is asked for at most `counted_max + 1` rows, in its order, the
orders are total (no ties), and the merge is done here: so every backend
gives the same results. `shown_max` of each list are shown; the rest are
counted, exactly up to `counted_max` matches in a part (past it, "more than").
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, get_args

import msgspec

from tandem.adapters.search.documents import distinct_words
from tandem.domain.input_base import Actor
from tandem.domain.inputs import INPUT_KINDS

query_chars_max = 512  # an id's bound (domain/input_base.py): any id can be searched whole
query_words_max = 16
shown_max = 50  # things, and inputs, shown at most
counted_max = 1_000  # matches of a part counted exactly

_KINDS = frozenset(INPUT_KINDS)
_ACTORS = frozenset(get_args(Actor))
assert not _KINDS & _ACTORS, "a query is an input kind or an actor, never both"


class QueryRefused(ValueError):
    """A query past the bounds (its message says which)."""


@dataclass(frozen=True)
class Query:
    text: str  # q, stripped
    words: tuple[str, ...]
    kind: str | None  # q, when it is an input kind
    actor: str | None  # q, when it is an actor


def read_query(q: str) -> Query:
    text = q.strip()
    if len(text) > query_chars_max:
        raise QueryRefused(f"a search is at most {query_chars_max} characters, not {len(text)}")
    words = tuple(distinct_words((text,), query_words_max + 1))
    if len(words) > query_words_max:
        raise QueryRefused(f"a search is at most {query_words_max} words")
    return Query(text, words, text if text in _KINDS else None, text if text in _ACTORS else None)


class ThingRow(msgspec.Struct, frozen=True, array_like=True):
    kind: str
    id: str
    first: int  # its first event's position
    last: int  # its last event's


class Backend(Protocol):
    """A search index's reads (adapters/search/sqlite.py, postgres.py,
    memory.py). `until`: only what the log held up to there (things first
    named by then, inputs recorded by then). `limit`: at most this many."""

    def things_exact(self, identifier: str, until: int, limit: int) -> list[ThingRow]:
        """Things with this id, newest first (the latest first named first)."""
        ...

    def things_prefix(self, prefix: str, until: int, limit: int) -> list[ThingRow]:
        """Things whose id starts with `prefix` and is longer, by id (its UTF-8 bytes), then kind."""
        ...

    def things_words(self, words: Sequence[str], until: int, limit: int) -> list[ThingRow]:
        """Things whose id holds every word, newest first."""
        ...

    def inputs_where(self, column: str, value: str, until: int, limit: int) -> list[int]:
        """The positions of the inputs whose `column` ("id", "kind" or "actor") is `value`, newest first."""
        ...

    def inputs_prefix(self, prefix: str, until: int, limit: int) -> list[int]:
        """Inputs whose id starts with `prefix` and is longer, by id, then newest first."""
        ...

    def inputs_words(self, words: Sequence[str], until: int, limit: int) -> list[int]:
        """Inputs whose text fields or id hold every word, newest first."""
        ...

    def input_ends(self, positions: Sequence[int]) -> dict[int, int]:
        """The last position of each of these inputs' events."""
        ...


@dataclass
class Found:
    """What a search found, before the inputs are read from the log."""

    things: list[tuple[ThingRow, str]]  # (the thing, the part that found it)
    things_more: int  # matches not shown
    things_more_exact: bool  # False: at least that many more
    inputs: list[tuple[int, str]]  # (position, part), as shown
    inputs_more: int
    inputs_more_exact: bool


def find(backend: Backend, query: Query, until: int) -> Found:
    """Ask each part of `query` of `backend` and merge them."""
    limit = counted_max + 1
    thing_parts: list[tuple[str, Sequence[ThingRow]]] = []
    input_parts: list[tuple[str, Sequence[int]]] = []
    if query.text:
        thing_parts += [("id", backend.things_exact(query.text, until, limit)), ("id prefix", backend.things_prefix(query.text, until, limit))]
        input_parts += [("id", backend.inputs_where("id", query.text, until, limit)), ("id prefix", backend.inputs_prefix(query.text, until, limit))]
    if query.kind:
        input_parts.append(("kind", backend.inputs_where("kind", query.kind, until, limit)))
    if query.actor:
        input_parts.append(("actor", backend.inputs_where("actor", query.actor, until, limit)))
    if query.words:
        thing_parts.append(("words", backend.things_words(query.words, until, limit)))
        input_parts.append(("words", backend.inputs_words(query.words, until, limit)))
    things, things_more, things_exact = _merged(thing_parts, lambda row: (row.kind, row.id), limit)
    inputs, inputs_more, inputs_exact = _merged(input_parts, lambda position: position, limit)
    return Found(things, things_more, things_exact, inputs, inputs_more, inputs_exact)


def _merged(parts: list[tuple[str, Sequence[Any]]], key: Callable[[Any], Hashable], limit: int) -> tuple[list[tuple[Any, str]], int, bool]:
    """The parts in order, each match once (at its first part): the first
    `shown_max`, how many more, and whether that count is exact (no part
    was cut at `limit`)."""
    seen: set[Hashable] = set()
    shown: list[tuple[Any, str]] = []
    for name, rows in parts:
        for row in rows:
            identity = key(row)
            if identity in seen:
                continue
            seen.add(identity)
            if len(shown) < shown_max:
                shown.append((row, name))
    exact = all(len(rows) < limit for _, rows in parts)
    return shown, len(seen) - len(shown), exact


def upper_bound(prefix: bytes) -> bytes | None:
    """The least byte string greater than every string starting with
    `prefix` (None: there is none). UTF-8 has no 0xFF byte, so for an id's
    bytes this is the prefix with its last byte raised by one."""
    trimmed = prefix.rstrip(b"\xff")
    if not trimmed:
        return None
    return trimmed[:-1] + bytes((trimmed[-1] + 1,))
