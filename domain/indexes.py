"""The small structures the state's indexes are made of, shared by the
kernel's State and the areas' parts: `Timers` (due times in order), the
set-valued index helpers, and `reachable` (a walk over ids)."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Timers:
    """Due times in time order: a sorted list (bisect in, bisect out; an
    entry is in it at most once). Open questions are few: a list is enough."""

    entries: list[tuple[Any, ...]] = field(default_factory=list)

    def add(self, entry: tuple[Any, ...]) -> None:
        entries = self.entries
        index = bisect.bisect_left(entries, entry)
        if index == len(entries) or entries[index] != entry:
            entries.insert(index, entry)

    def discard(self, entry: tuple[Any, ...]) -> None:
        entries = self.entries
        index = bisect.bisect_left(entries, entry)
        if index < len(entries) and entries[index] == entry:
            del entries[index]


def reachable(start: str, neighbours: Callable[[str], Iterable[str]]) -> Iterator[str]:
    """`start` and every id reachable from it (depth first, each once)."""
    stack = [start]
    seen: set[str] = set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        yield current
        stack.extend(neighbours(current))


def index_add(index: dict[str, set[str]], key: str | None, operation_id: str) -> None:
    if key is not None:
        members = index.get(key)
        if members is None:
            index[key] = {operation_id}
        else:
            members.add(operation_id)  # no set made to be thrown away, as setdefault's default would be


def index_remove(index: dict[str, set[str]], key: str | None, operation_id: str) -> None:
    members = index.get(key) if key is not None else None
    if members is not None:
        members.discard(operation_id)
        if not members:
            del index[key]  # type: ignore[arg-type]

