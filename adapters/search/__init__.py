"""Search over the whole log (docs/api.md, "Search"; docs/operations.md,
"The search index"): ids, input kinds, actors and the free text of inputs,
answered from an index kept in the store's own database, the same results
on every backend.

    documents.py  what is indexed: things (ids) and inputs, their words
    query.py      a query read, its parts, their merge (the same everywhere)
    sqlite.py     the index of an SQLite store (FTS5)
    postgres.py   of a PostgreSQL store (tsvector, GIN)
    memory.py     of a memory store (a scan)
    keeper.py     the server's catch-up of the index after commits
    results.py    a search's answer, its inputs read from the log
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tandem.adapters.search.keeper import SearchKeeper
from tandem.adapters.search.query import QueryRefused
from tandem.adapters.search.results import SearchResults, search
from tandem.adapters.store.url import parse_store_url
from tandem.replay.port import EventStore


def open_index(url: str, *, read_only: bool) -> Any:
    """The search index of the store at `url` (nothing is opened or
    created yet). `read_only`: a follower's, which never writes."""
    address = parse_store_url(url)
    if address.kind == "memory":
        from tandem.adapters.search.memory import MemoryIndex

        return MemoryIndex()
    if address.kind == "sqlite":
        from tandem.adapters.search.sqlite import SqliteIndex

        return SqliteIndex(address.path, address.table, read_only=read_only)
    from tandem.adapters.search.postgres import PostgresIndex  # psycopg: loaded only by those who use PostgreSQL

    return PostgresIndex(url, address.connect, address.table, read_only=read_only)


@dataclass
class Searching:
    """A server's search: its index, and (when it may write the store) the keeper."""

    index: Any
    keeper: SearchKeeper | None

    def close(self) -> None:
        if self.keeper is not None:
            self.keeper.stop()
        self.index.close()


def start_searching(url: str, store: EventStore, may_write: Any, *, follower: bool) -> Searching:
    """The search of a server of `url` reading `store`: `follower` (opened
    read-only for good) never writes; otherwise a keeper indexes whenever
    `may_write()` (a standby: once it writes)."""
    index = open_index(url, read_only=follower)
    if follower:
        return Searching(index, None)
    keeper = SearchKeeper(index, store, may_write)
    keeper.start()
    return Searching(index, keeper)


__all__ = ["QueryRefused", "SearchResults", "SearchKeeper", "Searching", "open_index", "search", "start_searching"]
