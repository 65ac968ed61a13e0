"""The engine stays held until the work on it has ended (issue 22, point 1).

`Service.with_engine` and the serve loop's `hold` run engine work in a worker
thread while holding `Service.engine_lock`. A cancelled waiter (a stopping
server cancels its rounds' task, uvicorn cancels requests past its grace)
used to let go of the lock at once while the thread went on deciding and
committing: the stop then ran `daemon.stop` and its snapshot beside a round
still committing, two threads on one engine, and a snapshot whose pickled
state had moved on while it was written (seen: `tandem verify` "state.position:
snapshot 6600, re-derived 6598" after a SIGTERM while a spool file was applied).
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from tandem.adapters.service import Service, to_thread_to_the_end
from tandem.adapters.runtime import Runtime, Settings
from tandem.adapters.tokens import TokenTable
from tandem.replay.engine import Engine, EngineBusy, Located
from tests.unit.helpers import decode, tick


def _service(tmp_path: Path) -> Service:
    runtime = Runtime(Settings(store_url=f"sqlite:///{tmp_path / 'store.db'}", runtime_inputs=False))
    runtime.open()
    return Service(runtime=runtime, reader=runtime.engine.store, tokens=TokenTable(()))  # type: ignore[union-attr]


@pytest.mark.parametrize("inline", [False, True])
def test_a_cancelled_caller_keeps_the_engine_until_its_thread_ends(tmp_path: Path, inline: bool) -> None:
    service = _service(tmp_path)
    service.commits_inline = False  # work in a thread, as on PostgreSQL
    started, release = threading.Event(), threading.Event()
    ended: list[str] = []

    def work() -> str:
        started.set()
        release.wait(10)
        ended.append("work")
        return "done"

    async def session() -> None:
        caller = asyncio.create_task(service.with_engine(work, inline=inline))
        await asyncio.to_thread(started.wait, 10)
        caller.cancel()
        await asyncio.sleep(0.05)
        assert not caller.done(), "the caller let go while its work was running"
        assert service.engine_lock.locked(), "the engine was let go while its work was running"
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await caller
        assert ended == ["work"]
        assert not service.engine_lock.locked()

    try:
        asyncio.run(session())
    finally:
        release.set()
        service.runtime.close()


def test_the_helper_answers_and_raises_as_the_work_does() -> None:
    async def session() -> None:
        assert await to_thread_to_the_end(lambda: 42) == 42
        with pytest.raises(ZeroDivisionError):
            await to_thread_to_the_end(lambda: 1 / 0)

    asyncio.run(session())


def test_an_engine_used_by_two_threads_at_once_refuses_the_second() -> None:
    """The engine asserts it is one thread's at a time (its state and views
    are folded in place): the second user gets EngineBusy, and the first's
    commit is untouched."""
    engine = Engine()
    inside, release = threading.Event(), threading.Event()
    original = engine.decide

    def slow_decide(item: Located) -> list:  # type: ignore[type-arg]
        inside.set()
        release.wait(10)
        return original(item)

    engine.decide = slow_decide  # type: ignore[method-assign]
    first = threading.Thread(target=engine.submit, args=(Located(decode(tick(at="2026-03-01T09:00:00Z"))),))
    first.start()
    assert inside.wait(10)
    try:
        with pytest.raises(EngineBusy):
            engine.submit(Located(decode(tick(at="2026-03-01T09:00:01Z"))))
    finally:
        release.set()
        first.join(10)
    assert engine.state.seq == 1
