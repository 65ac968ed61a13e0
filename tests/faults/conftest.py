"""Fixtures of the fault tests (issue 22: trust under faults).

Each test here starts from a defect seen by an operator (a lost lock
session, a commit cut at COMMIT, a symlinked store, a full volume, a spool
race...), reproduces it against real processes and real servers, and
asserts what must hold instead. PostgreSQL cases fail rather than skip
under TANDEM_REQUIRE_POSTGRES=1, as everywhere."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.serving import postgres_store_url


@pytest.fixture
def postgres_store() -> Iterator[str]:
    """A PostgreSQL store on a table of its own, dropped after."""
    yield from postgres_store_url()
