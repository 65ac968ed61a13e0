"""Store fixtures: one contract, run on memory, SQLite and PostgreSQL.

PostgreSQL comes from TANDEM_POSTGRES_URL (default below). When it cannot be
reached its cases are skipped, unless TANDEM_REQUIRE_POSTGRES=1, where they fail.
Each PostgreSQL case gets its own table, dropped afterwards.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator

import pytest

from tandem.adapters.store.url import side_table_suffixes
from tandem.adapters.store import open_store
from tandem.replay.port import EventStore

postgres_url_default = "postgresql://postgres@127.0.0.1:5432/test"
postgres_probe_timeout_s = 3


def postgres_url() -> str:
    return os.environ.get("TANDEM_POSTGRES_URL", postgres_url_default)


_postgres_unreachable_reason: list[str | None] = []


def postgres_unreachable_reason() -> str | None:
    """None when PostgreSQL answers; else why not. Probed once per session."""
    if not _postgres_unreachable_reason:
        import psycopg

        try:
            psycopg.connect(postgres_url(), connect_timeout=postgres_probe_timeout_s).close()
            _postgres_unreachable_reason.append(None)
        except psycopg.Error as error:
            _postgres_unreachable_reason.append(str(error).strip() or type(error).__name__)
    return _postgres_unreachable_reason[0]


def require_postgres() -> None:
    reason = postgres_unreachable_reason()
    if reason is None:
        return
    message = f"PostgreSQL at {postgres_url()} is unreachable: {reason}"
    if os.environ.get("TANDEM_REQUIRE_POSTGRES") == "1":
        pytest.fail(message + " (TANDEM_REQUIRE_POSTGRES=1)", pytrace=False)
    pytest.skip(message)


def _drop_postgres_table(table: str) -> None:
    """Drop a case's events table and what the store and the writer lock make beside it."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(postgres_url(), autocommit=True) as connection:
        for name in (table, *(table + suffix for suffix in side_table_suffixes)):
            connection.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(name)))


@pytest.fixture(
    params=[
        "memory",
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
    ]
)
def store_kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def store_url(store_kind: str, tmp_path) -> Iterator[str]:
    """A fresh, empty store's URL of the parametrized kind."""
    if store_kind == "memory":
        yield "memory:"
    elif store_kind == "sqlite":
        yield f"sqlite:///{tmp_path}/events.db"  # tmp_path is absolute: sqlite:////...
    else:
        require_postgres()
        table = f"tandem_test_{secrets.token_hex(6)}"
        separator = "&" if "?" in postgres_url() else "?"
        yield f"{postgres_url()}{separator}table={table}"
        _drop_postgres_table(table)


@pytest.fixture
def open_url() -> Iterator[Callable[[str], EventStore]]:
    """Opens stores and closes them all at teardown."""
    opened: list[EventStore] = []

    def open_(url: str) -> EventStore:
        store = open_store(url)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


@pytest.fixture
def store(store_url: str, open_url: Callable[[str], EventStore]) -> EventStore:
    return open_url(store_url)
