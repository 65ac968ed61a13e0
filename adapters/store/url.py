"""Store URLs: parsed and checked without opening anything.

    memory:                              in this process only
    sqlite:///relative/path.db           a file (WAL, synchronous=FULL)
    sqlite:////absolute/path.db
    postgresql://user[:password]@host[:port]/dbname   (or postgres://)
    ...?table=NAME                       events table (default tandem_events)
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, NoReturn
from urllib.parse import parse_qs, unquote, urlsplit

from tandem.replay.port import StoreError

table_name_default = "tandem_events"
# PostgreSQL names an index "<table>_notification_id_idx"; identifiers are at
# most 63 bytes, so the table name gets 63 - 20. ("<table>_snapshots_pkey", the
# snapshot table's key, needs 15; "<table>_keys_through_pkey" 18.)
table_name_length_max = 43
snapshot_table_suffix = "_snapshots"
fence_table_suffix = "_fence"  # the store's writer generation (adapters/store/recorder.py, fencing)
claims_table_suffix = "_claims"  # every writer's claim of the store: generation, head, pid, host, since
keys_table_suffix = "_keys"  # the key table: (kind, id, position) of every event up to its mark (replay/key_table.py)
keys_through_table_suffix = "_keys_through"  # the key table's mark: its code's fingerprint, and the position it is complete to
sessions_table_suffix = "_sessions"  # the console's sessions (adapters/sessions.py): hashed ids, never the ids
# The search index's tables (adapters/search/), a cache beside the log like the snapshots.
search_table_suffixes = ("_search", "_search_things", "_search_inputs")
# Every table a store keeps beside its events table (the writer lock's
# `_writer` too, on PostgreSQL): what dropping a store drops.
side_table_suffixes = (
    snapshot_table_suffix, fence_table_suffix, claims_table_suffix, keys_table_suffix, keys_through_table_suffix,
    sessions_table_suffix, "_writer", *search_table_suffixes,
)  # fmt: skip
postgres_port_default = 5432
postgres_connect_timeout_s = 5  # a store and its writer lock wait this long for PostgreSQL

store_url_help = (
    "store URL: memory: | sqlite:///relative/path.db | sqlite:////absolute/path.db"
    " | postgresql://user[:password]@host[:port]/dbname (or postgres://);"
    " optional ?table=NAME (default tandem_events)"
)

_table_name_pattern = re.compile(r"[a-z_][a-z0-9_]*")
_password_pattern = re.compile(r"(://[^/:@]*):[^/@]*@")


@dataclasses.dataclass(frozen=True)
class StoreAddress:
    """Where a store URL points, parsed (`parse_store_url`)."""

    kind: str  # "memory", "sqlite" or "postgresql"
    table: str  # the events table
    path: str = ""  # SQLite: the database file
    connect: dict[str, Any] = dataclasses.field(default_factory=dict)  # PostgreSQL: psycopg.connect's arguments


def parse_store_url(url: str) -> StoreAddress:
    """Parse (and check) a store URL without opening anything; StoreError if it is bad."""
    scheme, separator, _ = url.partition(":")
    if not separator:
        _refuse(url, "no scheme")
    base, _, query = url.partition("?")
    table = _table_from_query(url, query)
    scheme = scheme.lower()
    if scheme == "memory":
        if base != "memory:":
            _refuse(url, "write just `memory:`")
        return StoreAddress("memory", table)
    if scheme == "sqlite":
        prefix = "sqlite:///"
        if not base.startswith(prefix) or len(base) == len(prefix):
            _refuse(url, "an SQLite URL is sqlite:///relative/path or sqlite:////absolute/path")
        return StoreAddress("sqlite", table, path=unquote(base[len(prefix) :]))
    if scheme in ("postgresql", "postgres"):
        return StoreAddress("postgresql", table, connect=_postgres_connect_arguments(url, base))
    _refuse(url, f"unknown scheme {scheme!r}")


def redacted(url: str) -> str:
    """The URL without its password, for messages."""
    return _password_pattern.sub(r"\1:***@", url)


def _refuse(url: str, reason: str) -> NoReturn:
    raise StoreError(f"bad store URL {redacted(url)!r}: {reason}. Accepted: {store_url_help}")


def _table_from_query(url: str, query: str) -> str:
    if not query:
        return table_name_default
    try:
        parameters = parse_qs(query, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        _refuse(url, f"cannot parse the query {query!r}")
    unknown = sorted(set(parameters) - {"table"})
    if unknown:
        _refuse(url, f"unknown parameter(s) {', '.join(unknown)}")
    values = parameters.get("table", [table_name_default])
    if len(values) != 1:
        _refuse(url, "give `table` once")
    table = values[0]
    if not _table_name_pattern.fullmatch(table) or len(table) > table_name_length_max:
        _refuse(
            url,
            f"table {table!r} must be a plain lower-case identifier ([a-z_][a-z0-9_]*)"
            f" of at most {table_name_length_max} characters",
        )
    return table


def _postgres_connect_arguments(url: str, base: str) -> dict[str, Any]:
    try:
        parts = urlsplit(base)
        port = parts.port or postgres_port_default
    except ValueError as error:
        _refuse(url, str(error))
    dbname = unquote(parts.path.lstrip("/"))
    if not parts.hostname or not parts.username or not dbname or "/" in dbname:
        _refuse(url, "a PostgreSQL URL needs a user, a host and a database name")
    return {
        "host": parts.hostname,
        "port": port,
        "user": unquote(parts.username),
        "password": unquote(parts.password or ""),
        "dbname": dbname,
    }
