"""Fixtures the e2e tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.serving import postgres_store_url


@pytest.fixture
def postgres_store() -> Iterator[str]:
    """A PostgreSQL store on a table of its own, dropped after (skipped, or
    failed under TANDEM_REQUIRE_POSTGRES=1, when PostgreSQL is unreachable)."""
    yield from postgres_store_url()
