"""Fencing, part of the store contract (issue 22, point 2), on SQLite and
PostgreSQL: a writer's claim (`claim_writer`) gives it a writer generation;
every append of that store object checks, in its own transaction, that the
generation is still the store's, so a writer that lost its lock cannot
append once a new writer claimed the store. (A memory store is private to
its object: nobody else can claim it.)"""

from __future__ import annotations

import pytest

from tandem.replay.port import ConcurrencyError, EventStore, Fenced, WriterClaim
from tests.integration.test_store_contract import OpenUrl, contents, events


@pytest.fixture
def shared(store_kind: str, store_url: str) -> str:
    if store_kind == "memory":
        pytest.skip("a memory store is private to its object")
    return store_url


def test_a_writer_fenced_off_by_a_newer_claim_writes_nothing(shared: str, open_url: OpenUrl) -> None:
    old, new = open_url(shared), open_url(shared)
    first = old.claim_writer(101, "host-a", "2026-12-01T10:00:00Z")
    assert old.append(events(2), expected_head=0) == 2
    second = new.claim_writer(202, "host-b", "2026-12-01T10:00:05Z")
    assert (first.generation, first.after, second.generation, second.after) == (1, 0, 2, 2)
    before = contents(new)
    with pytest.raises(Fenced, match="generation 1 was fenced off: generation 2 writes the store now"):
        old.append(events(1, first_seq=3), expected_head=2)
    assert contents(new) == before  # nothing of it
    with pytest.raises(Fenced):  # and never again from that object
        old.append(events(1, first_seq=3), expected_head=2)
    assert new.append(events(1, first_seq=3), expected_head=2) == 3
    assert new.list_claims() == [
        WriterClaim(1, 0, 101, "host-a", "2026-12-01T10:00:00Z"),
        WriterClaim(2, 2, 202, "host-b", "2026-12-01T10:00:05Z"),
    ]


def test_a_writer_that_claims_again_writes_and_fences_the_other(shared: str, open_url: OpenUrl) -> None:
    """A writer whose lock session ended takes the lock again: a new claim,
    after which it writes and the one it replaced cannot."""
    a, b = open_url(shared), open_url(shared)
    a.claim_writer(1, "a", "t1")
    b.claim_writer(2, "b", "t2")
    with pytest.raises(Fenced):
        a.append(events(1), expected_head=0)
    again = a.claim_writer(1, "a", "t3")
    assert again.generation == 3
    assert a.append(events(1), expected_head=0) == 1
    with pytest.raises(Fenced):
        b.append(events(1, first_seq=2), expected_head=1)


def test_a_store_that_never_claimed_appends_unchecked(shared: str, open_url: OpenUrl) -> None:
    """Tests and tools that write a store nobody else writes need no claim;
    a stale head is still refused by the positions' key."""
    claimed, plain = open_url(shared), open_url(shared)
    claimed.claim_writer(1, "a", "t")
    assert plain.append(events(1), expected_head=0) == 1
    with pytest.raises(ConcurrencyError):
        claimed.append(events(1, first_seq=5), expected_head=0)
    assert claimed.append(events(1, first_seq=5), expected_head=1) == 2


def test_claims_are_kept_across_reopening_and_read_by_readers(shared: str, open_url: OpenUrl) -> None:
    writer = open_url(shared)
    writer.claim_writer(7, "h", "t")
    writer.append(events(3), expected_head=0)
    writer.close()
    from tandem.adapters.store import open_store

    reader: EventStore = open_store(shared, read_only=True)
    try:
        assert reader.list_claims() == [WriterClaim(1, 0, 7, "h", "t")]
    finally:
        reader.close()


def test_a_deferred_claim_writes_nothing_until_the_first_append(shared: str, open_url: OpenUrl) -> None:
    """`tandem ingest` of a bad trace writes nothing, not even a claim; its
    first append claims, and fences the writer before it."""
    old, command = open_url(shared), open_url(shared)
    old.claim_writer(1, "old", "t1")
    assert command.claim_writer(2, "cli", "t2", deferred=True) is None
    assert [claim.generation for claim in command.list_claims()] == [1]
    assert command.append(events(1), expected_head=0) == 1
    assert [(claim.generation, claim.pid) for claim in command.list_claims()] == [(1, 1), (2, 2)]
    with pytest.raises(Fenced):
        old.append(events(1, first_seq=2), expected_head=1)
