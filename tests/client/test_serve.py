"""tandem.client against a real `tandem serve` (docs/api.md, "The Python
client"), the sync `Client` and the `AsyncClient` through the same checks:
a typed input accepted, with its id, `at` and events as the log holds them;
a rejection raised as `Rejected` with its code; a batch with its rejections
listed; bad input refused before anything is sent (nothing reaches the
server, its head does not move); and the typed reads."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx
import msgspec
import pytest

from tests.client import aio
from tandem.client import ApiError, AsyncClient, BatchRejected, Client, Rejected, inputs
from tandem.client.protocol import Request
from tests.e2e.serving import Served, store_head

Call = Callable[..., Any]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    directory = tmp_path_factory.mktemp("client")
    with Served(directory, f"sqlite:///{directory}/events.db", "--no-runtime-inputs") as served:
        Client(served.url, served.tokens["daemon"]).submit(
            inputs.OpenConversation(conversation_id="fg", role="foreground", context_limit=200_000, reserve=20_000)
        )
        Client(served.url, served.tokens["human"]).submit(message("first"))  # its delivery is fg/d1
        yield served


class Sync:
    """The sync client, counting the requests it sends."""

    def __init__(self, server: Served, actor: str = "human") -> None:
        self.client = Client(server.url, server.tokens[actor])
        self.sent: list[Request] = []
        exchange = self.client.connection.exchange
        self.client.connection.exchange = lambda request: self.sent.append(request) or exchange(request)  # type: ignore[method-assign]

    def __call__(self, name: str, *arguments: Any, **options: Any) -> Any:
        return getattr(self.client, name)(*arguments, **options)

    @property
    def requests(self) -> int:
        return len(self.sent)


class Async:
    """The async client, each call run to its end; counting the requests httpx sends."""

    def __init__(self, server: Served, actor: str = "human") -> None:
        self.url, self.token = server.url, server.tokens[actor]
        self.sent: list[httpx.Request] = []

    def __call__(self, name: str, *arguments: Any, **options: Any) -> Any:
        async def call() -> Any:
            async with AsyncClient(self.url, self.token) as client:
                async def count(request: httpx.Request) -> None:
                    self.sent.append(request)

                client.http.event_hooks["request"].append(count)
                method: Callable[..., Awaitable[Any]] = getattr(client, name)
                return await method(*arguments, **options)

        return aio.run(call())

    @property
    def requests(self) -> int:
        return len(self.sent)


CLIENTS = {"sync": Sync, "async": Async}


@pytest.fixture(params=list(CLIENTS))
def flavour(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def message(name: str, conversation: str = "fg", **fields: Any) -> inputs.Input:
    return inputs.HumanMessage(conversation_id=conversation, message_id=name, text="hello", **fields)


def test_a_typed_input_is_accepted_with_its_id_at_and_events(server: Served, flavour: str) -> None:
    call = CLIENTS[flavour](server)
    result = call("submit", message(f"accepted-{flavour}"))
    assert result.accepted and result.reason is None and not result.resent and result.line == 1
    assert result.position == store_head(server.store_url) == result.events[-1].position
    assert result.events[0].type == "InputAccepted" and "MessageQueued" in [e.type for e in result.events]
    page = call("events", result.events[0].position - 1, len(result.events))
    assert [(e.position, e.type) for e in page.events] == [(e.position, e.type) for e in result.events]
    record = page.events[0]
    assert record.input.id == result.id and result.id  # the id the client gave it
    assert record.body["input"]["at"] == result.at.strftime("%Y-%m-%dT%H:%M:%SZ")  # stamped by the server


def test_a_rejected_input_raises_rejected_with_its_code(server: Served, flavour: str) -> None:
    call = CLIENTS[flavour](server)
    head = store_head(server.store_url)
    with pytest.raises(Rejected) as rejected:
        call("submit", message(f"rejected-{flavour}", conversation="nowhere"))
    assert rejected.value.code == "unknown_conversation" and rejected.value.message == "a conversation named does not exist"
    assert rejected.value.input.conversation_id == "nowhere" and rejected.value.input.id
    assert rejected.value.result.events[0].type == "InputRejected" and store_head(server.store_url) == rejected.value.result.position > head
    background = CLIENTS[flavour](server, "background")
    with pytest.raises(Rejected) as refused:
        background("submit", inputs.CancelTask(task_id="nothing"))
    assert refused.value.code == "not_authorized"


def test_a_batch_lists_its_results_and_its_rejections(server: Served, flavour: str) -> None:
    call = CLIENTS[flavour](server)
    batch = call("submit_batch", [message(f"batch-{flavour}-1"), {"type": "human.message", "conversation_id": "nowhere",
                                   "message_id": f"batch-{flavour}-2", "text": "x"}, message(f"batch-{flavour}-3")])  # fmt: skip
    assert call.requests == 1 and batch.position == store_head(server.store_url)
    assert [(r.line, r.accepted, r.reason) for r in batch.results] == [(1, True, None), (2, False, "unknown_conversation"), (3, True, None)]
    assert [r.id for r in batch.results] == [value.id for value in batch.inputs] and all(batch.inputs[n].id for n in range(3))
    (rejected,) = batch.rejected
    assert (rejected.code, rejected.input.message_id, rejected.result.line) == ("unknown_conversation", f"batch-{flavour}-2", 2)
    with pytest.raises(BatchRejected) as raised:
        batch.raise_for_rejections()
    assert [r.code for r in raised.value.rejected] == ["unknown_conversation"] and raised.value.result is batch
    assert call("submit_batch", [message(f"batch-{flavour}-4")]).raise_for_rejections() is None


BAD = [
    ("an unknown field, as a dict", lambda f: {"type": "human.message", "conversation_id": "fg", "message_id": f"bad-{f}", "text": "x", "colour": "red"},
     msgspec.ValidationError, "Object contains unknown field `colour`"),
    ("a wrong type, as a dict", lambda f: {"type": "human.message", "conversation_id": "fg", "message_id": f"bad-{f}", "text": 3},
     msgspec.ValidationError, "Expected `str`, got `int` - at `$.text`"),
]  # fmt: skip


@pytest.mark.parametrize("what, value, error, said", BAD, ids=[what for what, *_ in BAD])
def test_bad_input_fails_before_anything_is_sent(server: Served, flavour: str, what: str, value: Call, error: type, said: str) -> None:
    call = CLIENTS[flavour](server)
    head = store_head(server.store_url)
    with pytest.raises(error) as refused:
        call("submit", value(flavour))
    assert said in str(refused.value) and not isinstance(refused.value, ApiError)
    with pytest.raises(error):
        call("submit_batch", [message(f"fine-{flavour}"), value(flavour)])  # one bad input: the batch is not sent
    assert call.requests == 0 and store_head(server.store_url) == head


def test_bad_typed_input_fails_when_made_so_never_reaches_a_client(server: Served) -> None:
    head = store_head(server.store_url)
    with pytest.raises(TypeError, match="Unexpected keyword argument 'colour'"):
        message("bad-typed", colour="red")
    with pytest.raises(msgspec.ValidationError, match=r"Expected `str`, got `int` - at `\$.conversation_id`"):
        inputs.HumanMessage(conversation_id=7, message_id="m", text="x")  # type: ignore[arg-type]
    assert store_head(server.store_url) == head


def test_the_reads_are_typed(server: Served, flavour: str) -> None:
    call = CLIENTS[flavour](server)
    accepted = call("submit", message(f"reads-{flavour}"))
    views = call("views")
    assert views.position >= accepted.position and "conversations" in views.views and "position" not in views.views
    view = call("view", "conversations")
    assert view.name == "conversations" and view.rows and view.value is None
    assert call("view", "usage").value is not None
    row = call("row", "conversations", "fg")
    assert row is not None and row["conversation_id"] == "fg" and call("row", "conversations", "elsewhere") is None
    with pytest.raises(ValueError, match="no rows by key"):
        call("row", "usage", "fg")
    explained = call("explain", "fg/d1", "delivery")  # the first message's delivery, its id holding a `/`
    assert explained.id == "fg/d1" and [match["kind"] for match in explained.matches] == ["delivery"]
    with pytest.raises(ApiError) as unknown:
        call("explain", "nothing-named-so")
    assert (unknown.value.status, unknown.value.code) == (404, "unknown_id")
    health = call("health")
    assert (health.status, health.writer) == ("ok", True) and health.position >= accepted.position
    assert call("events", 0, 1).events[0].position == 1


def test_the_stream_resumes_from_a_results_position(server: Served, flavour: str) -> None:
    call = CLIENTS[flavour](server)
    before = call("submit", message(f"stream-{flavour}-1"))
    after = call("submit", message(f"stream-{flavour}-2"))
    if flavour == "sync":
        first = next(iter(call.client.stream(last_event_id=before.position, timeout_s=30)))
    else:
        async def first_message() -> Any:
            async with AsyncClient(server.url, server.tokens["human"]) as client:
                async for received in client.stream(last_event_id=before.position, timeout_s=30):
                    return received

        first = aio.run(first_message())
    assert (first.id, first.event, first.data["position"]) == (after.position, "change", after.position)


def test_a_keys_stream_names_the_rows_a_commit_changed(server: Served, flavour: str) -> None:
    """`stream(keys=True)` (`?rows=keys`): each change with the keys of the
    rows it changed, not the rows; asking for rows and keys is refused."""
    call = CLIENTS[flavour](server)
    before = call("submit", message(f"keys-{flavour}-1"))
    after = call("submit", message(f"keys-{flavour}-2"))
    if flavour == "sync":
        first = next(iter(call.client.stream(last_event_id=before.position, timeout_s=30, keys=True)))
        with pytest.raises(ValueError, match="not both"):
            next(iter(call.client.stream(rows=True, keys=True)))
    else:
        async def first_message() -> Any:
            async with AsyncClient(server.url, server.tokens["human"]) as client:
                async for received in client.stream(last_event_id=before.position, timeout_s=30, keys=True):
                    return received

        first = aio.run(first_message())
    assert (first.id, first.event) == (after.position, "change") and "rows" not in first.data
    assert list(first.data["keys"]) == first.data["views"]
    assert first.data["keys"]["conversations"] == {"key": "conversation_id", "touched": ["fg"]}


def test_the_first_client_still_speaks_dicts(server: Served) -> None:
    from tandem.adapters.client import ApiError as FirstApiError, Client as FirstClient

    assert FirstApiError is ApiError
    answer = FirstClient(server.url, server.tokens["human"]).submit({"type": "human.message", "conversation_id": "nowhere", "message_id": "first", "text": "x"})
    assert answer["results"][0]["accepted"] is False and answer["results"][0]["reason"] == "unknown_conversation"
