"""An append whose answer was lost (issue 22, point 3): the store asks what
happened before it says anything. Stored: the append stands (the caller
gets the new head, as if nothing went wrong). Nothing stored: "nothing was
recorded", the only case where that is said (PostgreSQL, after a lost
connection: tried once more on a new pool first). Cannot be asked:
CommitUnknown, never "nothing was recorded"."""

from __future__ import annotations

from typing import Any

import pytest
from eventsourcing.persistence import OperationalError

from tandem.replay.port import CommitUnknown, StoreError
from tests.integration.test_store_contract import OpenUrl, contents, events


@pytest.fixture
def durable(store_kind: str, store_url: str) -> str:
    if store_kind == "memory":
        pytest.skip("a memory store loses no answer")
    return store_url


def lose_answer(store: Any, *, stored: bool, times: int = 1) -> list[int]:
    """The next `times` appends' rows written (or not), then the answer lost."""
    original = store._write_rows
    calls: list[int] = []

    def write(rows: list[Any]) -> None:
        calls.append(len(rows))
        if len(calls) > times:
            original(rows)
            return
        if stored:
            original(rows)
        raise OperationalError("server closed the connection unexpectedly (injected)")

    store._write_rows = write
    return calls


def test_an_append_stored_but_unanswered_stands(durable: str, open_url: OpenUrl) -> None:
    store = open_url(durable)
    store.append(events(1), expected_head=0)
    calls = lose_answer(store, stored=True)
    assert store.append(events(2, first_seq=2), expected_head=1) == 3
    assert calls == [2]  # asked the store, not written again
    assert [position for position, _ in contents(store)] == [1, 2, 3]
    assert store.append(events(1, first_seq=4), expected_head=3) == 4


def test_an_append_not_stored_says_nothing_was_recorded_or_is_tried_again(
    store_kind: str, durable: str, open_url: OpenUrl
) -> None:
    store = open_url(durable)
    calls = lose_answer(store, stored=False)
    if store_kind == "postgres":  # a lost connection: once more, on a new pool
        assert store.append(events(2), expected_head=0) == 2
        assert calls == [2, 2]
    else:
        with pytest.raises(StoreError, match="nothing was recorded") as refused:
            store.append(events(2), expected_head=0)
        assert not isinstance(refused.value, CommitUnknown)
        assert contents(store) == []


def test_an_append_whose_outcome_cannot_be_asked_is_commit_unknown(durable: str, open_url: OpenUrl) -> None:
    store = open_url(durable)
    store.append(events(1), expected_head=0)
    lose_answer(store, stored=True, times=2)

    def away(*arguments: Any, **options: Any) -> Any:
        raise StoreError("reading failed: the server is away (injected)")

    store.head = away  # type: ignore[method-assign]
    with pytest.raises(CommitUnknown, match="may have been recorded") as unknown:
        store.append(events(1, first_seq=2), expected_head=1)
    assert "nothing was recorded" not in str(unknown.value)
