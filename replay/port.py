"""The store port: what the engine runtime needs from an event store.

`replay/` defines it, `adapters/store.py` implements it with eventsourcing's
recorders (memory, SQLite, PostgreSQL). The log is one ordered sequence of
events; a position is the 1-based index of an event in it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from domain.events import Event


class ConcurrencyError(Exception):
    """Another writer appended first: the expected head is no longer the head.
    Nothing of the refused append was written."""


class StoreError(Exception):
    """The store cannot be opened or read (bad URL, unreachable database...)."""


class EventStore(Protocol):
    url: str

    def head(self) -> int:
        """Position of the last stored event; 0 for an empty store."""
        ...

    def append(self, events: Sequence[Event], expected_head: int) -> int:
        """Append `events` at positions expected_head+1.. in one transaction.

        All or nothing: raises ConcurrencyError (writing nothing) if the head
        is no longer `expected_head`. Returns the new head.
        """
        ...

    def read(self, after: int = 0, until: int | None = None) -> Iterator[tuple[int, Event]]:
        """Events with after < position (<= until), in order, read in large pages."""
        ...

    def read_pages(self, after: int = 0, until: int | None = None) -> Iterator[list[Event]]:
        """The same events without positions, a page (list) at a time: for
        folds, which need no position per event."""
        ...

    def read_encoded(self, after: int = 0, until: int | None = None) -> Iterator[tuple[int, bytes]]:
        """The same events as stored bytes (for export, verify and benchmarks)."""
        ...

    def close(self) -> None: ...
