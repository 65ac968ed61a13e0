"""The search index of a `memory:` store: the same documents in this
process's memory, searched by a scan (such a store is small), giving what
the databases give (tests/integration/test_search_backends.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from tandem.adapters.search.documents import Batch
from tandem.adapters.search.query import ThingRow


@dataclass
class _Thing:
    n: int
    kind: str
    id: str
    first: int
    last: int
    words: frozenset[str]

    def row(self) -> ThingRow:
        return ThingRow(self.kind, self.id, self.first, self.last)


@dataclass
class _Input:
    position: int
    last: int
    kind: str
    actor: str
    id: str | None
    words: frozenset[str]


class MemoryIndex:
    kind = "memory"
    read_only = False

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.head = 0
        self._things: dict[tuple[str, str], _Thing] = {}
        self._inputs: list[_Input] = []  # by position

    # -- upkeep
    def prepare(self, *, drop: bool = False) -> None:
        if drop:
            with self._lock:
                self.head, self._things, self._inputs = 0, {}, []

    @contextmanager
    def session(self) -> Iterator[MemoryIndex]:
        """The reads of one search (adapters/search/sqlite.py's `session`): itself."""
        yield self

    def open_input(self) -> int | None:
        """The last input, if its events may go on after the head."""
        with self._lock:
            last = self._inputs[-1] if self._inputs else None
            return last.position if last is not None and last.last == self.head else None

    def write(self, batch: Batch) -> bool:
        with self._lock:
            if batch.after != self.head:
                return False
            if batch.extended is not None:
                position, last = batch.extended
                assert self._inputs and self._inputs[-1].position == position, (position, batch.after)
                self._inputs[-1].last = last
            self._inputs += [_Input(d.position, d.last, d.kind, d.actor, d.id, frozenset(d.words)) for d in batch.inputs]
            for (kind, identifier), doc in batch.things.items():
                held = self._things.get((kind, identifier))
                if held is None:
                    self._things[(kind, identifier)] = _Thing(len(self._things), kind, identifier, doc.first, doc.last, frozenset(doc.words))
                else:
                    held.last = doc.last
            self.head = batch.head
            return True

    def close(self) -> None:
        pass

    # -- reads (adapters/search/query.py's Backend)
    def _things_until(self, until: int) -> list[_Thing]:
        with self._lock:
            return [thing for thing in self._things.values() if thing.first <= until]

    def _inputs_until(self, until: int) -> list[_Input]:
        with self._lock:
            return [one for one in self._inputs if one.position <= until]

    def things_exact(self, identifier: str, until: int, limit: int) -> list[ThingRow]:
        found = sorted((t for t in self._things_until(until) if t.id == identifier), key=lambda t: -t.n)
        return [t.row() for t in found[:limit]]

    def things_prefix(self, prefix: str, until: int, limit: int) -> list[ThingRow]:
        found = [t for t in self._things_until(until) if t.id.startswith(prefix) and t.id != prefix]
        found.sort(key=lambda t: (t.id.encode(), t.kind))
        return [t.row() for t in found[:limit]]

    def things_words(self, words: Sequence[str], until: int, limit: int) -> list[ThingRow]:
        wanted = frozenset(words)
        found = sorted((t for t in self._things_until(until) if wanted <= t.words), key=lambda t: -t.n)
        return [t.row() for t in found[:limit]]

    def inputs_where(self, column: str, value: str, until: int, limit: int) -> list[int]:
        assert column in ("id", "kind", "actor"), column
        return [one.position for one in reversed(self._inputs_until(until)) if getattr(one, column) == value][:limit]

    def inputs_prefix(self, prefix: str, until: int, limit: int) -> list[int]:
        found = [one for one in self._inputs_until(until) if one.id is not None and one.id.startswith(prefix) and one.id != prefix]
        found.sort(key=lambda one: (one.id.encode(), -one.position))  # type: ignore[union-attr]
        return [one.position for one in found[:limit]]

    def inputs_words(self, words: Sequence[str], until: int, limit: int) -> list[int]:
        wanted = frozenset(words)
        return [one.position for one in reversed(self._inputs_until(until)) if wanted <= one.words][:limit]

    def input_ends(self, positions: Sequence[int]) -> dict[int, int]:
        wanted = set(positions)
        with self._lock:
            return {one.position: one.last for one in self._inputs if one.position in wanted}
