"""Group commit for `tandem serve`: the requests that arrive while a commit
is in flight share the next transaction, and its fsync (docs/api.md,
"Inputs", "Group commit").

Every door that records inputs (`POST /v1/inputs`, the console's forms, the
GitHub webhook) hands its request's body to `GroupCommit.submit` and awaits
its own answer. The first request to find no commit under way leads: it
lets the loop take one turn (the requests read in that turn join it), takes
what waits, in arrival order, up to `group_inputs_max` inputs and
`group_body_bytes_max` bytes of bodies (the first request always, however
big), and has the runtime decide and commit them as one transaction (its
`submit_bodies`, holding the engine: `commit_bodies` below); what came
meanwhile is then led by a task, group after group, until nothing waits.

Each request keeps what it would have had alone: its inputs decided after
the requests before it, contiguous, in its own `file` (`http@P`), its own
answer, its own refusal (a 400 of one refuses nothing else). Nothing is
answered before the transaction is stored; a transaction that fails fails
every request in it, with the error one request alone would have had (`503
store_unavailable`: nothing of any of them was recorded, safe to resend
with the same ids). While a group commits, the next requests queue behind
it. A request alone waits for one turn of the loop, no more: a group is
never held open for more to come.
"""

from __future__ import annotations

import asyncio
import copy
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tandem.replay.commits import Commit
from tandem.replay.edge import Credential
from tandem.replay.engine import Located, PartFailed
from tandem.replay.traces import Trace

if TYPE_CHECKING:
    from tandem.adapters.runtime import LiveEngine

# A transaction holds at most this many inputs of requests (a batch counts
# its lines, blank and comment lines included) ...
group_inputs_max = 1_000
# ... and at most this many bytes of their bodies; the first request of a
# group is taken whatever its size (a batch of 16 MiB is a group of its own).
group_body_bytes_max = 1_048_576

Outcome = Commit | Exception  # what a request of a group is answered: its commit, or why it was refused


@dataclass(frozen=True, slots=True)
class Body:
    """One request's inputs as they came (`POST /v1/inputs`, a console
    form, a webhook delivery): the bytes, whether they are a batch (JSON
    Lines), and who sends them."""

    data: bytes
    batch: bool
    credential: Credential


# ------------------------------------------------ deciding a group (in the engine)


def commit_bodies(engine: LiveEngine, bodies: Sequence[Body], parse: Callable[[Body, int], Trace]) -> list[Outcome]:
    """Decide and commit `bodies` in one transaction, each request as it
    would be alone after the ones before it: `parse(body, head)` checks it
    whole against the state they left (its file `http@{head}`, head the
    position before its first event), its inputs are decided, and it gets
    its own `Commit`. What each is answered, in order: its Commit, or why it
    alone was refused (TraceInvalid, EdgeRefused; or its decision's failure,
    a bug: the group is then decided again without it). A failure of the
    transaction (the store, the writer lock) is raised: nothing written; so
    is anything that fails a request alone (a group of one)."""
    if len(bodies) == 1:  # nothing to keep apart: the plain path
        head = engine.state.position
        trace = parse(bodies[0], head)
        return [engine.commit([line.item for line in trace.lines]) if trace.lines else Commit(head, [])]
    failed: dict[int, Exception] = {}
    while True:
        outcomes: list[Outcome | None] = [failed.get(index) for index in range(len(bodies))]
        failing = _commit_group(engine, bodies, parse, outcomes)
        if failing is None:
            return [outcome for outcome in outcomes if outcome is not None]
        failed[failing[0]] = failing[1]


def _commit_group(
    engine: LiveEngine, bodies: Sequence[Body], parse: Callable[[Body, int], Trace], outcomes: list[Outcome | None]
) -> tuple[int, Exception] | None:
    """Parse and decide each request not answered yet, in order, then
    commit them all; None, or (the request, the error) when deciding one
    failed (nothing committed, the engine folded the store again)."""
    deciding: list[int] = []  # the request of each part

    def parts() -> Iterator[list[Located]]:
        for index, body in enumerate(bodies):
            if outcomes[index] is not None:
                continue
            head = engine.state.position
            try:
                trace = parse(body, head)
            except Exception as refused:  # TraceInvalid, EdgeRefused (or a bug): this request's alone
                outcomes[index] = refused
                continue
            if not trace.lines:
                outcomes[index] = Commit(head, [])
                continue
            deciding.append(index)
            yield [line.item for line in trace.lines]

    try:
        commits = engine.commit_parts(parts())
    except PartFailed as failed:
        return deciding[failed.index], failed.error
    for index, commit in zip(deciding, commits):
        outcomes[index] = commit
    return None


# ------------------------------------------------------- the queue (on the loop)


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
    is recorded right after the first request that records something);
    `crowded()` whether any other request is under way in the server (read,
    not answered yet): when none is, a request that finds nothing queued is
    committed at once, without waiting a turn of the loop for others."""

    def __init__(
        self,
        commit: Callable[[list[Body]], Awaitable[list[Outcome]]],
        alone: Callable[[], bool] = lambda: False,
        crowded: Callable[[], bool] = lambda: True,
        inputs_max: int = group_inputs_max,
        bytes_max: int = group_body_bytes_max,
    ) -> None:
        self.commit = commit
        self.alone = alone
        self.crowded = crowded
        self.inputs_max = inputs_max
        self.bytes_max = bytes_max
        self.queue: deque[Waiting] = deque()
        self.leading = False  # a group is being taken or committed: the next requests wait for the leader
        self.leader: asyncio.Task[None] | None = None  # the task that leads, once the first leader's request is answered

    async def submit(self, body: Body) -> Commit:
        """Queue `body` for the next group; its commit once stored (or why it
        was refused). A request that finds no commit under way leads: it
        commits the first group itself (no task to start, no hop to its
        answer), then leaves what came meanwhile to a leader task."""
        loop = asyncio.get_running_loop()
        if not self.leading and not self.crowded():  # nothing to group it with: a group of one, at once
            self.leading = True
            try:
                (outcome,) = await self.commit([body])
            finally:
                self._pass_on(loop)
            if isinstance(outcome, Exception):
                raise outcome
            return outcome
        waiting = Waiting(body, loop.create_future(), inputs_at_most(body))
        self.queue.append(waiting)
        if self.leading:
            return await waiting.answer
        self.leading = True
        try:
            await self._one_group()  # its own request is the first
        finally:
            self._pass_on(loop)
        return await waiting.answer

    def _pass_on(self, loop: asyncio.AbstractEventLoop) -> None:
        """A leading request is answered: what came meanwhile goes to a leader task."""
        if self.queue:
            self.leader = loop.create_task(self._lead())
        else:
            self.leading = False

    async def _lead(self) -> None:
        """Commit groups while requests wait."""
        try:
            while self.queue:
                await self._one_group()
        finally:
            self.leading, self.leader = False, None
            for waiting in self.queue:  # cancelled with requests waiting: they are not left waiting
                waiting.answer.cancel()
            self.queue.clear()

    async def _one_group(self) -> None:
        await asyncio.sleep(0)  # the requests read in the same turn of the loop join this group
        group = self.take()
        if group:
            await self._commit(group)

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


__all__ = ["Body", "GroupCommit", "Outcome", "commit_bodies", "group_body_bytes_max", "group_inputs_max", "inputs_at_most"]
