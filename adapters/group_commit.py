"""Group commit for `tandem serve`: the requests that arrive while a commit
is in flight share the next transaction, and its fsync (docs/api.md,
"Inputs", "Group commit").

Every door that records inputs (`POST /v1/inputs`, the console's forms, the
GitHub webhook) hands its request's body to `GroupCommit.submit` and awaits
its own answer. The first request to find no commit under way starts the
leader: a task that takes what waits, in arrival order, up to
`group_inputs_max` inputs and `group_body_bytes_max` bytes of bodies (the
first request always, however big), and has the runtime decide and commit
them as one transaction (adapters/runtime.py, `submit_bodies`). Each request
keeps what it would have had alone: its inputs decided after the requests
before it, contiguous, in its own `file` (`http@P`), its own answer, its own
refusal (a 400 of one refuses nothing else). Nothing is answered before the
transaction is stored; a transaction that fails fails every request in it,
with the error one request alone would have had (`503 store_unavailable`:
nothing of any of them was recorded, safe to resend with the same ids).
While the leader commits, the next requests queue behind it; it takes them
when its commit is done. A request alone waits for nothing: a group is
never held open for more to come.
"""

from __future__ import annotations

import asyncio
import copy
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from tandem.adapters.runtime import Body
from tandem.replay.commits import Commit

# A transaction holds at most this many inputs of requests (a batch counts
# its lines, blank and comment lines included) ...
group_inputs_max = 1_000
# ... and at most this many bytes of their bodies; the first request of a
# group is taken whatever its size (a batch of 16 MiB is a group of its own).
group_body_bytes_max = 1_048_576

Outcome = Commit | Exception  # what a request of a group is answered: its commit, or why it was refused


def inputs_at_most(body: Body) -> int:
    """The inputs `body` holds at most: 1, or a batch's lines."""
    if not body.batch:
        return 1
    return body.data.count(b"\n") + (0 if body.data.endswith(b"\n") else 1)


@dataclass(eq=False)
class Waiting:
    """A request waiting for its group's commit."""

    body: Body
    answer: asyncio.Future[Commit]
    inputs: int


class GroupCommit:
    """The queue of requests and the leader that commits them in groups.

    `commit(bodies)` decides and commits one group (what each request is
    answered, in order) or raises what fails them all; `alone()` says that
    the next request must be a group of its own (a deferred `daemon.start`
    is recorded right after the first request that records something)."""

    def __init__(
        self,
        commit: Callable[[list[Body]], Awaitable[list[Outcome]]],
        alone: Callable[[], bool] = lambda: False,
        inputs_max: int = group_inputs_max,
        bytes_max: int = group_body_bytes_max,
    ) -> None:
        self.commit = commit
        self.alone = alone
        self.inputs_max = inputs_max
        self.bytes_max = bytes_max
        self.queue: deque[Waiting] = deque()
        self.leader: asyncio.Task[None] | None = None

    async def submit(self, body: Body) -> Commit:
        """Queue `body` for the next group; its commit once stored (or why it was refused)."""
        loop = asyncio.get_running_loop()
        waiting = Waiting(body, loop.create_future(), inputs_at_most(body))
        self.queue.append(waiting)
        if self.leader is None:
            self.leader = loop.create_task(self._lead())
        return await waiting.answer

    async def _lead(self) -> None:
        """Commit groups while requests wait."""
        try:
            while self.queue:
                await asyncio.sleep(0)  # the requests read in the same turn of the loop join this group
                group = self.take()
                if group:
                    await self._commit(group)
        finally:
            self.leader = None
            if self.queue:  # cancelled with requests waiting: they are refused, not left waiting
                for waiting in self.queue:
                    if not waiting.answer.done():
                        waiting.answer.cancel()
                self.queue.clear()

    def take(self) -> list[Waiting]:
        """The next group: the requests waiting, in arrival order, within the
        bounds (the first one whatever its size); those whose request was
        given up meanwhile (cancelled) are dropped, never committed."""
        group: list[Waiting] = []
        inputs = size = 0
        while self.queue:
            waiting = self.queue[0]
            if waiting.answer.done():
                self.queue.popleft()
                continue
            size_after, inputs_after = size + len(waiting.body.data), inputs + waiting.inputs
            if group and (inputs_after > self.inputs_max or size_after > self.bytes_max):
                break
            self.queue.popleft()
            group.append(waiting)
            size, inputs = size_after, inputs_after
            if self.alone():
                break
        return group

    async def _commit(self, group: list[Waiting]) -> None:
        """Commit `group`; every request in it is answered, whatever happens
        (one left unanswered, the leader cancelled, is cancelled too)."""
        try:
            try:
                outcomes = await self.commit([waiting.body for waiting in group])
            except Exception as failure:  # the transaction failed: every request in it is refused so
                outcomes = each_its_own(failure, len(group))
            for waiting, outcome in zip(group, outcomes):
                if waiting.answer.done():  # given up while its commit was in flight
                    continue
                if isinstance(outcome, Exception):
                    waiting.answer.set_exception(outcome)
                else:
                    waiting.answer.set_result(outcome)
        finally:
            for waiting in group:
                if not waiting.answer.done():
                    waiting.answer.cancel()


def each_its_own(failure: Exception, count: int) -> list[Exception]:
    """`failure` for each of `count` requests, a copy each where it can be
    copied (each is raised in its own request, with its own traceback)."""
    try:
        return [failure] + [copy.copy(failure) for _ in range(count - 1)]
    except Exception:
        return [failure] * count


__all__ = ["GroupCommit", "Outcome", "group_body_bytes_max", "group_inputs_max", "inputs_at_most"]
