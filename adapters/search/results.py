"""A search's answer (the console's `/search` page and `GET /v1/search`):
what adapters/search/query.py found, each input read from the log (its
record: seq, kind, actor, time, and an excerpt of the text that matched)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from tandem.adapters.search.documents import WORD, input_texts, word_chars_max
from tandem.adapters.search.query import Query, find, read_query
from tandem.domain import events as ev
from tandem.replay.explain.log import input_ref
from tandem.replay.explain.model import InputRef
from tandem.replay.port import EventStore

excerpt_chars = 160
excerpt_before_chars = 40  # of the text before the first word found


class ThingHit(msgspec.Struct, frozen=True, kw_only=True):
    kind: str  # a key kind of domain/keys.py (`action`, `task`, `question`, …)
    id: str
    first: int  # the position of its first event
    last: int  # of its last (as of the index's head)
    matched: str  # the part that found it: `id`, `id prefix`, `words`


class Excerpt(msgspec.Struct, frozen=True):
    field: str  # the input's field (`goal`, `blocking_reason`, `text`, …)
    text: str  # at most `excerpt_chars` of it, `…` where cut


class InputHit(msgspec.Struct, frozen=True, kw_only=True):
    position: int  # of its record
    last: int  # of its last event
    input: InputRef  # seq, file, line, type, id, actor, at, rejected
    excerpt: Excerpt | None  # where a word of the query is, else the start of its first text
    matched: str  # `id`, `id prefix`, `kind`, `actor`, `words`


class SearchResults(msgspec.Struct, frozen=True, kw_only=True):
    q: str
    words: list[str]  # the query's words, as they are matched
    indexed: bool  # False: this store has no search index yet (its writer builds it)
    position: int  # what was searched: the log up to here (the index's head, or ?at=)
    things: list[ThingHit]
    things_more: int  # matches not shown
    things_more_exact: bool  # False: at least `things_more`
    inputs: list[InputHit]
    inputs_more: int
    inputs_more_exact: bool


def search(index: Any, store: EventStore, q: str, until: int | None = None) -> SearchResults:
    """Search the log (up to `until`, else all the index holds). Raises
    QueryRefused for a query past the bounds."""
    query = read_query(q)
    with index.session() as reads:
        if reads is None:
            return _nothing(query, indexed=False, position=0)
        end = reads.head if until is None else min(until, reads.head)
        if not query.text:
            return _nothing(query, indexed=True, position=end)
        found = find(reads, query, end)
        ends = reads.input_ends([position for position, _ in found.inputs])
    return SearchResults(
        q=query.text, words=list(query.words), indexed=True, position=end,
        things=[ThingHit(kind=row.kind, id=row.id, first=row.first, last=row.last, matched=part) for row, part in found.things],
        things_more=found.things_more, things_more_exact=found.things_more_exact,
        inputs=_inputs(store, found.inputs, ends, query), inputs_more=found.inputs_more, inputs_more_exact=found.inputs_more_exact,
    )  # fmt: skip


def _nothing(query: Query, *, indexed: bool, position: int) -> SearchResults:
    return SearchResults(q=query.text, words=list(query.words), indexed=indexed, position=position, things=[], things_more=0,
                         things_more_exact=True, inputs=[], inputs_more=0, inputs_more_exact=True)  # fmt: skip


def _inputs(store: EventStore, shown: Sequence[tuple[int, str]], ends: dict[int, int], query: Query) -> list[InputHit]:
    read = dict(store.read_positions([position for position, _ in shown]))
    hits = []
    for position, part in shown:
        record = ev.decode_event(read[position])
        assert isinstance(record, (ev.InputAccepted, ev.InputRejected)), (position, type(record))
        hits.append(InputHit(position=position, last=ends.get(position, position), input=input_ref(record),
                             excerpt=excerpt(record.input, query.words), matched=part))  # fmt: skip
    return hits


def excerpt(value: Any, words: Sequence[str]) -> Excerpt | None:
    """The first of the input's texts holding one of `words`, around it;
    with none, the start of its first text (None: it has no text)."""
    wanted = frozenset(words)
    first: tuple[str, str] | None = None
    for name, text in input_texts(value):
        if first is None and text.strip():
            first = (name, text)
        for found in WORD.finditer(text) if wanted else ():
            if found.group().casefold()[:word_chars_max] in wanted:
                return Excerpt(name, _cut(text, found.start()))
    return None if first is None else Excerpt(first[0], _cut(first[1], 0))


def _cut(text: str, at: int) -> str:
    start = max(0, at - excerpt_before_chars) if len(text) > excerpt_chars else 0
    part = text[start : start + excerpt_chars]
    return ("…" if start > 0 else "") + part + ("…" if start + excerpt_chars < len(text) else "")
