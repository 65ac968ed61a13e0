"""The event store: `replay.port.EventStore` on eventsourcing's recorders.

    url.py       store URLs (`parse_store_url`, `StoreAddress`, `store_url_help`,
                 the table-name rules, `redacted` for messages)
    recorder.py  the recorder base: one log, one eventsourcing stream; appends
                 with the optimistic concurrency check, paged reads, snapshots
    memory.py    `memory:` (eventsourcing's POPO recorder)
    sql.py       what SQLite and PostgreSQL share: statements, tables, opening
    sqlite.py    `sqlite:///...` (the embedded default)
    postgres.py  `postgresql://...`

URLs (`store_url_help`):
    memory:                              in this process only
    sqlite:///relative/path.db           a file (WAL, synchronous=FULL)
    sqlite:////absolute/path.db
    postgresql://user[:password]@host[:port]/dbname   (or postgres://)
    ...?table=NAME                       events table (default tandem_events)

Snapshots (`replay/snapshot.py`) live in a second table, `{table}_snapshots`
(fingerprint, position, body), created with the events table. They are a
cache written beside the log, never part of it.
"""

from __future__ import annotations

from tandem.adapters.store.memory import MemoryStore
from tandem.adapters.store.recorder import MsgspecMapper, Positioned, RecorderStore, log_stream_id
from tandem.adapters.store.sqlite import SQLiteStore
from tandem.adapters.store.url import (
    StoreAddress,
    parse_store_url,
    postgres_connect_timeout_s,
    redacted,
    snapshot_table_suffix,
    store_url_help,
    table_name_default,
    table_name_length_max,
)
from tandem.replay.port import EventStore

__all__ = [
    "MemoryStore",
    "MsgspecMapper",
    "Positioned",
    "RecorderStore",
    "SQLiteStore",
    "StoreAddress",
    "log_stream_id",
    "open_store",
    "parse_store_url",
    "postgres_connect_timeout_s",
    "redacted",
    "snapshot_table_suffix",
    "store_url_help",
    "table_name_default",
    "table_name_length_max",
]


def open_store(url: str, *, read_only: bool = False) -> EventStore:
    """Open (creating tables if needed) the store named by `url`. With
    `read_only` (the commands that only read), create and change nothing: a
    missing file, or a database without the store's table, is a StoreError
    naming it; an SQLite file is opened mode=ro, its journal mode untouched."""
    address = parse_store_url(url)
    if address.kind == "memory":
        return MemoryStore(url)
    if address.kind == "sqlite":
        return SQLiteStore(url, address.path, address.table, read_only=read_only)
    # Imported here: psycopg is loaded only by those who use PostgreSQL.
    from tandem.adapters.store.postgres import PostgresStore

    return PostgresStore(url, address.table, address.connect, read_only=read_only)
