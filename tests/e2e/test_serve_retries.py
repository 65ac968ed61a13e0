"""A retry with the same `id`s is answered `duplicate_input` whatever its `at`
(docs/api.md, "Inputs"): found by the kill -9 soak (tests/soak/), whose
client resends a batch whose commit beat the kill but whose answer did not.

Before, a retried batch with its own `at`s (the first line's earlier than
the last line's, now the store's last input), or any retried input once a
later one was committed, was refused 409 `at_before_head`, "nothing
recorded": the client could not tell that its inputs were in the store,
against API.md's "a retried POST is a recorded `duplicate_input`".
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tandem.adapters.client import ApiError
from tests.e2e.serving import Served, store_head, tandem
from tests.e2e.test_serve_faults import recorded


def open_input(conversation: str, second: int) -> dict[str, object]:
    return {
        "type": "conversation.open", "conversation_id": conversation, "role": "foreground", "context_limit": 200_000,
        "reserve": 20_000, "at": f"2026-03-01T09:00:{second:02d}Z", "id": f"retry-{conversation}",
    }  # fmt: skip


def test_a_retried_batch_with_its_own_times_is_its_duplicate_line_by_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    batch = [open_input(f"c{number}", number) for number in range(4)]
    with Served(tmp_path, url, "--no-runtime-inputs") as server:
        client = server.client("daemon")
        first = client.submit_batch(batch)
        assert [result["accepted"] for result in first["results"]] == [True] * 4

        again = client.submit_batch(batch)  # the same body: its answer was lost
        assert [(result["accepted"], result["reason"]) for result in again["results"]] == [(False, "duplicate_input")] * 4
        # Recorded at the store's last `at`: the engine's clock never goes back.
        assert {result["at"] for result in again["results"]} == {"2026-03-01T09:00:03Z"}

        later = client.submit(open_input("c9", 9))
        assert later["results"][0]["accepted"]
        (alone,) = client.submit(batch[0])["results"]  # one input, retried after a later one
        assert (alone["accepted"], alone["reason"], alone["at"]) == (False, "duplicate_input", "2026-03-01T09:00:09Z")
        (conflict,) = client.submit({**batch[1], "reserve": 1})["results"]  # the id, another body
        assert (conflict["accepted"], conflict["reason"]) == (False, "idempotency_conflict")

        # A new input before the store's last one is still refused, nothing recorded.
        head = store_head(url)
        with pytest.raises(ApiError) as refused:
            client.submit({**open_input("new", 0), "id": "retry-new"})
        assert (refused.value.status, refused.value.code) == (409, "at_before_head")
        with pytest.raises(ApiError) as refused:
            client.submit({**open_input("new", 0), "id": None})
        assert (refused.value.status, refused.value.code) == (409, "at_before_head")
        assert store_head(url) == head

    accepted, rejected = recorded(url, "retry-")
    assert accepted == Counter({f"retry-c{number}": 1 for number in (0, 1, 2, 3, 9)})  # each applied once
    assert rejected == Counter({"retry-c0": 2, "retry-c1": 2, "retry-c2": 1, "retry-c3": 1})
    assert tandem("verify", "--store", url).returncode == 0
