"""Group commit (adapters/group_commit.py, docs/api.md "Group commit"): the
requests that wait while the engine is busy share one transaction, and each
keeps what it would have had alone.

In-process, on a real SQLite store: the test holds `Service.engine_lock`
(as a commit in flight does), submits requests meanwhile, then lets go, so
the group is formed deterministically. Each group is compared with the same
requests submitted one at a time to a fresh store: the same answers, the
same events byte for byte.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tandem.adapters.group_commit import Body, GroupCommit, inputs_at_most
from tandem.adapters.runtime import Runtime, Settings
from tandem.adapters.service import ApiError, Service
from tandem.adapters.tokens import TokenTable
from tandem.replay.commits import Commit
from tandem.replay.edge import EdgeRefused, TokenActor
from tandem.replay.port import StoreError
from tandem.replay.traces import TraceInvalid

AT = "2026-03-01T09:00:00Z"  # every input's time: the same second, whoever commits it when


def line(value: dict[str, Any]) -> bytes:
    return json.dumps({"at": AT, **value}).encode()


def human_message(name: str) -> dict[str, Any]:
    return {"type": "human.message", "conversation_id": "fg", "message_id": name, "text": name, "id": name}


def single(actor: str, value: dict[str, Any]) -> Body:
    return Body(line(value), False, TokenActor(actor))


def batch(actor: str, values: list[dict[str, Any]]) -> Body:
    return Body(b"".join(line(value) + b"\n" for value in values), True, TokenActor(actor))


OPEN = single("daemon", {"type": "conversation.open", "conversation_id": "fg", "role": "foreground",
                         "context_limit": 200_000, "reserve": 20_000})  # fmt: skip
REQUESTS = [
    single("human", human_message("m1")),
    batch("human", [human_message("m2"), human_message("m3"), human_message("m4")]),
    single("background", {"type": "task.cancel", "task_id": "t", "id": "cancel"}),  # recorded, rejected not_authorized
    batch("human", [human_message("m5"), {"type": "no.such.kind"}]),  # 400: nothing of it recorded
    single("background", {**human_message("m6"), "actor": "human"}),  # 403 actor_mismatch
    single("human", human_message("m7")),
]


def _service(path: Path) -> Service:
    runtime = Runtime(Settings(store_url=f"sqlite:///{path}", runtime_inputs=False))
    runtime.open()
    return Service(runtime=runtime, reader=runtime.engine.store, tokens=TokenTable(()))  # type: ignore[union-attr]


def stored(service: Service) -> list[bytes]:
    """Every event as stored, in order."""
    assert service.engine.store is not None
    return [data for _, data in service.engine.store.read_encoded()]


def outcome_of(result: Commit | BaseException) -> Any:
    """What an answer says, comparable across stores."""
    if isinstance(result, Commit):
        return ("commit", result.head_before, result.position, [type(event).__name__ for event in result.events])
    if isinstance(result, ApiError):
        return ("refused", result.status, result.code)
    if isinstance(result, TraceInvalid):
        return ("invalid", [(error.line, error.message) for error in result.errors])
    if isinstance(result, EdgeRefused):
        return ("edge", result.status, result.code)
    return ("error", type(result).__name__, str(result))


def grouped(service: Service, bodies: list[Body]) -> tuple[list[Commit | BaseException], list[int]]:
    """Submit `bodies` while the engine is held (a commit in flight), then
    let go: the answers, and the requests of each call to `submit_bodies`."""
    calls: list[int] = []
    submit_bodies = service.runtime.submit_bodies

    def counted(group: Any) -> Any:
        calls.append(len(group))
        return submit_bodies(group)

    service.runtime.submit_bodies = counted  # type: ignore[method-assign]

    async def session() -> list[Commit | BaseException]:
        async with service.engine_lock:
            waiting = [asyncio.create_task(service.submit(body.data, body.batch, body.credential)) for body in bodies]
            for _ in range(3):
                await asyncio.sleep(0)
        return await asyncio.gather(*waiting, return_exceptions=True)

    try:
        return asyncio.run(session()), calls
    finally:
        service.runtime.submit_bodies = submit_bodies  # type: ignore[method-assign]


def one_by_one(service: Service, bodies: list[Body]) -> list[Commit | BaseException]:
    async def session() -> list[Commit | BaseException]:
        answers: list[Commit | BaseException] = []
        for body in bodies:
            try:
                answers.append(await service.submit(body.data, body.batch, body.credential))
            except Exception as error:
                answers.append(error)
        return answers

    return asyncio.run(session())


def opened(path: Path, step: Callable[..., Any] | None = None) -> Service:
    service = _service(path)
    if step is not None:
        service.engine.step = step
    one_by_one(service, [OPEN])
    return service


def test_a_group_is_one_transaction_and_equals_its_requests_one_by_one(tmp_path: Path) -> None:
    group = opened(tmp_path / "group.db")
    commits: list[Commit] = []
    group.engine.listeners.append(commits.append)
    head = group.engine.state.position
    answers, calls = grouped(group, REQUESTS)
    assert calls == [len(REQUESTS)]  # one transaction for them all

    alone = opened(tmp_path / "alone.db")
    assert [outcome_of(answer) for answer in answers] == [outcome_of(answer) for answer in one_by_one(alone, REQUESTS)]
    assert stored(group) == stored(alone)  # the same events, byte for byte

    made = [answer for answer in answers if isinstance(answer, Commit)]
    assert [answer.head_before for answer in made] == [head] + [answer.position for answer in made[:-1]]  # contiguous, in order
    assert commits == made  # a commit told to the listeners (the stream) per request, in order
    records = [event for answer in made for event in answer.events if type(event).__name__.startswith("Input")]
    assert [(record.file, record.line, record.input.id) for record in records] == [
        (f"http@{head}", 1, "m1"),
        (f"http@{made[1].head_before}", 1, "m2"), (f"http@{made[1].head_before}", 2, "m3"), (f"http@{made[1].head_before}", 3, "m4"),
        (f"http@{made[2].head_before}", 1, "cancel"),
        (f"http@{made[3].head_before}", 1, "m7"),
    ]  # fmt: skip
    assert type(records[4]).__name__ == "InputRejected" and records[4].reason == "not_authorized"
    assert isinstance(answers[3], TraceInvalid) and [error.line for error in answers[3].errors] == [2]
    assert isinstance(answers[4], EdgeRefused) and answers[4].code == "actor_mismatch"
    for service in (group, alone):
        service.runtime.close()


def test_a_request_whose_decision_fails_fails_alone(tmp_path: Path) -> None:
    """A bug in one request's decision: it alone fails (500), the others of
    its group are decided again without it and committed, as one by one."""
    from tandem.domain.dispatch import handle_input

    def broken(state: Any, value: Any, *rest: Any) -> None:
        if value.id == "m3":
            raise RuntimeError("a bug")
        handle_input(state, value, *rest)

    group, alone = opened(tmp_path / "group.db", broken), opened(tmp_path / "alone.db", broken)
    answers, calls = grouped(group, REQUESTS)
    assert calls == [len(REQUESTS)]
    assert outcome_of(answers[1]) == ("error", "RuntimeError", "a bug")
    assert [outcome_of(answer) for answer in answers] == [outcome_of(answer) for answer in one_by_one(alone, REQUESTS)]
    assert stored(group) == stored(alone)
    assert all(isinstance(answers[index], Commit) for index in (0, 2, 5))
    for service in (group, alone):
        service.runtime.close()


def test_a_failed_transaction_fails_every_request_in_it_and_records_nothing(tmp_path: Path) -> None:
    service = opened(tmp_path / "group.db")
    store = service.engine.store
    assert store is not None
    head = store.head()
    append = store.append

    def failing(*arguments: Any, **options: Any) -> Any:
        store.append = append  # type: ignore[method-assign]  # once
        raise StoreError("the disk is gone")

    store.append = failing  # type: ignore[method-assign]
    answers, calls = grouped(service, REQUESTS)
    assert calls == [len(REQUESTS)]
    assert [outcome_of(answer) for answer in answers] == [("refused", 503, "store_unavailable")] * len(REQUESTS)
    assert all("nothing was recorded" in answer.message for answer in answers)  # type: ignore[union-attr]
    assert store.head() == head and service.engine.state.position == head
    resent = one_by_one(service, REQUESTS)  # the same requests again: applied once, answered as alone
    alone = opened(tmp_path / "alone.db")
    assert [outcome_of(answer) for answer in resent] == [outcome_of(answer) for answer in one_by_one(alone, REQUESTS)]
    assert stored(service) == stored(alone)
    for each in (service, alone):
        each.runtime.close()


# ------------------------------------------------------------ the queue alone


def queued(bodies: list[Body], **options: Any) -> list[list[bytes]]:
    """The groups a GroupCommit makes of `bodies`, all waiting at once."""
    groups: list[list[bytes]] = []

    async def commit(group: list[Body]) -> list[Any]:
        groups.append([body.data for body in group])
        return [Commit(0, []) for _ in group]

    async def session() -> None:
        grouping = GroupCommit(commit, **options)
        await asyncio.gather(*(grouping.submit(body) for body in bodies))

    asyncio.run(session())
    return groups


def test_a_group_is_bounded_by_inputs_and_bytes_and_takes_the_first_whatever_its_size() -> None:
    ones = [single("human", human_message(f"m{number}")) for number in range(5)]
    three = batch("human", [human_message(f"b{number}") for number in range(3)])
    assert inputs_at_most(three) == 3 and inputs_at_most(ones[0]) == 1
    assert [len(group) for group in queued(ones)] == [5]  # all that waits, by default
    assert [len(group) for group in queued([*ones[:3], three, ones[3]], inputs_max=4)] == [3, 2]
    assert [len(group) for group in queued([three, *ones], inputs_max=2)] == [1, 2, 2, 1]  # the first is taken, over the bound
    size = len(ones[0].data)
    assert [len(group) for group in queued(ones, bytes_max=2 * size)] == [2, 2, 1]
    assert [len(group) for group in queued(ones, alone=lambda: True)] == [1, 1, 1, 1, 1]


def test_a_request_given_up_before_its_group_is_taken_is_never_committed() -> None:
    groups: list[list[bytes]] = []

    async def commit(group: list[Body]) -> list[Any]:
        groups.append([body.data for body in group])
        return [Commit(0, []) for _ in group]

    async def session() -> None:
        grouping = GroupCommit(commit)
        bodies = [single("human", human_message(f"m{number}")) for number in range(3)]
        waiting = [asyncio.create_task(grouping.submit(body)) for body in bodies]
        await asyncio.sleep(0)  # all three queued; the leader has not taken them yet
        waiting[1].cancel()
        done = await asyncio.gather(*waiting, return_exceptions=True)
        assert isinstance(done[1], asyncio.CancelledError)
        assert groups == [[bodies[0].data, bodies[2].data]]

    asyncio.run(session())


def test_every_request_of_a_failed_group_gets_the_error_of_its_own() -> None:
    async def commit(group: list[Body]) -> list[Any]:
        raise ApiError(503, "store_unavailable", "the store failed; nothing was recorded, retry")

    async def session() -> None:
        grouping = GroupCommit(commit)
        bodies = [single("human", human_message(f"m{number}")) for number in range(3)]
        done = await asyncio.gather(*(grouping.submit(body) for body in bodies), return_exceptions=True)
        assert [(error.status, error.code) for error in done] == [(503, "store_unavailable")] * 3  # type: ignore[union-attr]
        assert len({id(error) for error in done}) == 3  # each raised with its own traceback

    asyncio.run(session())


@pytest.mark.parametrize("count", [1, 2])
def test_a_deferred_start_goes_right_after_the_first_request_that_records(tmp_path: Path, count: int) -> None:
    """On an empty store `daemon.start` waits for the first input from
    outside, and is recorded right after that request, before the next one
    (as one by one): the first request is a group of its own."""
    runtime = Runtime(Settings(store_url=f"sqlite:///{tmp_path / 'store.db'}"))
    runtime.open()
    runtime.start()
    assert runtime.start_deferred
    service = Service(runtime=runtime, reader=runtime.engine.store, tokens=TokenTable(()))  # type: ignore[union-attr]
    stamped = Body(json.dumps(human_message("m1")).encode(), False, TokenActor("human"))  # after the start's time
    requests = [OPEN, stamped][:count]
    answers, calls = grouped(service, requests)
    assert calls == [1] * count
    assert all(isinstance(answer, Commit) for answer in answers)
    kinds = [json.loads(data).get("input", {}).get("type") for data in stored(service)]
    assert [kind for kind in kinds if kind is not None][:3] == ["conversation.open", "daemon.start", "human.message"][: count + 1]
    runtime.close()


def test_a_request_alone_in_the_server_is_committed_at_once_as_a_group_of_one() -> None:
    """Nothing else under way (`crowded()` false): no turn of the loop is
    waited for; its answer, or its refusal, is its own."""
    groups: list[list[bytes]] = []

    async def commit(group: list[Body]) -> list[Any]:
        groups.append([body.data for body in group])
        return [ValueError("refused") if b"m1" in body.data else Commit(0, []) for body in group]

    async def session() -> None:
        grouping = GroupCommit(commit, crowded=lambda: False)
        assert await grouping.submit(single("human", human_message("m0"))) == Commit(0, [])
        with pytest.raises(ValueError):
            await grouping.submit(single("human", human_message("m1")))
        assert not grouping.leading and not grouping.queue

    asyncio.run(session())
    assert [len(group) for group in groups] == [1, 1]
