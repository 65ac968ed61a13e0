"""New stores opened at once in one PostgreSQL database (issue 22).

Seen by an operator: two writers starting at once on two new tables of one
database, one failed `cannot open ...: tuple concurrently updated`. Opening
a store creates its tables, and eventsourcing's recorder creates, with every
events table, the database's one `es_insert_events_text` function (`CREATE
OR REPLACE`): two sessions replacing it at once collide in the catalog.
Here `processes` writers start together (a barrier), each on a new table of
its own, as `tandem serve` does (the writer lock, then the store), several
rounds over: every one opens. Before the fix every round failed (8 processes,
measured 10 rounds of 10)."""

from __future__ import annotations

import multiprocessing
import secrets
from typing import Any

import pytest

from tests.integration.conftest import postgres_url, require_postgres

pytestmark = pytest.mark.postgres

processes = 8
rounds = 4
round_timeout_s = 120


def open_as_a_writer(barrier: Any, url: str, answers: Any) -> None:
    """In a process of its own: the writer lock and the store of `url`, at the barrier's signal."""
    from tandem.adapters.store import open_store
    from tandem.adapters.writer_lock import acquire_writer_lock

    barrier.wait()
    try:
        lock = acquire_writer_lock(url)
        try:
            open_store(url).close()
        finally:
            lock.release()
        answers.put((url, None))
    except Exception as error:  # reported to the test, whatever it is
        answers.put((url, f"{type(error).__name__}: {error}"))


def drop(tables: list[str]) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(postgres_url(), autocommit=True) as connection:
        for table in tables:
            for name in (table, f"{table}_snapshots", f"{table}_writer"):
                connection.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(name)))


def test_new_stores_opened_at_once_in_one_database_all_open() -> None:
    require_postgres()
    context = multiprocessing.get_context("fork")  # no connection is open in this process: nothing shared
    separator = "&" if "?" in postgres_url() else "?"
    for number in range(rounds):
        tables = [f"tandem_race_{secrets.token_hex(6)}" for _ in range(processes)]
        barrier, answers = context.Barrier(processes), context.Queue()
        workers = [
            context.Process(target=open_as_a_writer, args=(barrier, f"{postgres_url()}{separator}table={table}", answers))
            for table in tables
        ]
        try:
            for worker in workers:
                worker.start()
            failed = [answer for _ in workers if (answer := answers.get(timeout=round_timeout_s))[1] is not None]
            for worker in workers:
                worker.join(timeout=round_timeout_s)
        finally:
            for worker in workers:
                if worker.is_alive():
                    worker.kill()
            drop(tables)
        assert not failed, f"round {number + 1}: {len(failed)} of {processes} failed: {failed}"
