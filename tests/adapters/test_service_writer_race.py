"""A commit that loses a race to another writer (one that got past the
writer lock, or took it while ours was lost) is 503 store_unavailable with
nothing recorded, and the next request succeeds on the folded store."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tandem.adapters.http_inputs import accept_inputs
from tandem.adapters.service import ApiError, Service
from tandem.adapters.runtime import Runtime, Settings
from tandem.adapters.store import open_store
from tandem.adapters.tokens import TokenTable, _digest
from tandem.adapters.trace import parse_trace
from tandem.replay.engine import Engine

TOKEN = "daemon-token-" + "x" * 32
TICK = b'{"type": "tick", "actor": "daemon"}'


def test_a_lost_race_is_503_and_the_next_request_succeeds(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    runtime = Runtime(Settings(store_url=url, runtime_inputs=False))
    runtime.open()
    runtime.start()
    service = Service(runtime=runtime, reader=runtime.engine.store, tokens=TokenTable(((_digest(TOKEN), "daemon"),)))  # type: ignore[union-attr]

    async def post() -> bytes:
        async def read(limit: int) -> bytes:
            return TICK

        return await accept_inputs(service, f"Bearer {TOKEN}", [], "application/json", read)

    async def session() -> None:
        await post()
        # Another writer appends behind the engine's back (its lock bypassed).
        other = Engine(open_store(url))
        other.submit(parse_trace(b'{"type": "tick", "at": "2030-01-01T00:00:00Z", "actor": "daemon"}\n', "x").lines[0].item)
        head = other.store.head()  # type: ignore[union-attr]
        with pytest.raises(ApiError) as refused:
            await post()
        assert (refused.value.status, refused.value.code) == (503, "store_unavailable")
        assert runtime.engine.store.head() == head  # type: ignore[union-attr]  # nothing of ours was written
        assert service.lock_lost is None  # the lock is still ours: the server goes on
        await post()  # the engine folded the store again: accepted after the other writer's input
        assert runtime.engine.store.head() > head  # type: ignore[union-attr]

    try:
        asyncio.run(session())
    finally:
        runtime.close()
