"""What a call does, without doing any I/O: one generator per call, shared
by the sync and the async client.

A call's generator yields a `Request` (the client sends it and sends back
the `Reply`, or `Lost` when the connection failed before a whole answer
came) or a `Pause` (the client sleeps, then sends back None), and returns
the call's value. The retries, the back-off, the ids, the search for an
original after a resend, and the decoding are written here once;
client/sync.py and client/asynchronous.py only drive it.

Retried (`RetryPolicy`, with the same body, so the same ids): a lost
connection (refused, reset, closed, timed out: the answer is unknown), and
`503 store_unavailable` or `503 commit_unknown` (docs/api.md, "Errors").
The pause before try n+1 is `delay_first_s * 2**(n-1)`, at least the
answer's Retry-After, at most `delay_max_s`; after `attempts_max` tries the
last failure is raised (ApiError, or ConnectionError for a lost connection).
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import msgspec

from tandem.client.errors import ApiError, api_error
from tandem.client.inputs import Input, parse
from tandem.client.results import (
    Answer,
    BatchResult,
    Event,
    EventPage,
    EventRef,
    Explained,
    Health,
    Result,
    View,
    Views,
    Work,
    decoded,
    row_of,
    view_of,
    views_of,
)

T = TypeVar("T")
JSON = "application/json"
NDJSON = "application/x-ndjson"
events_page_max = 1_000  # the server's largest page of GET /v1/events
# How far back from a resend's duplicate a search for its original goes (at
# most; it never goes below the head the client saw before the first try).
original_search_events_max = 100_000
RETRIED_CODES = frozenset({"store_unavailable", "commit_unknown"})


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    body: bytes | None = None
    content_type: str | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: bytes
    retry_after_s: float | None = None


@dataclass(frozen=True, slots=True)
class Lost:
    """The connection failed before a whole answer came: the request may or
    may not have been served."""

    reason: str


@dataclass(frozen=True, slots=True)
class Pause:
    seconds: float


Steps = Generator["Request | Pause", "Reply | Lost | None", T]


class RetryPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """How a call retries (see the module's docstring): `attempts_max` tries
    in all, the first included; pauses from `delay_first_s`, doubling, at
    least the server's Retry-After, at most `delay_max_s`."""

    attempts_max: int = 6
    delay_first_s: float = 0.1
    delay_max_s: float = 5.0

    def __post_init__(self) -> None:
        if self.attempts_max < 1 or self.delay_first_s < 0 or self.delay_max_s < self.delay_first_s:
            raise ValueError(f"a retry policy needs attempts_max >= 1 and 0 <= delay_first_s <= delay_max_s: {self!r}")

    def delay_s(self, tries: int, retry_after_s: float | None) -> float:
        """The pause after `tries` failed tries."""
        backoff = self.delay_first_s * 2 ** (tries - 1)
        return min(self.delay_max_s, max(backoff, retry_after_s or 0.0))


NO_RETRY = RetryPolicy(attempts_max=1)


def failure_of(reply: Reply | Lost | None) -> Exception:
    if isinstance(reply, Reply):
        return api_error(reply.status, reply.body, reply.retry_after_s)
    reason = reply.reason if isinstance(reply, Lost) else "no answer"
    return ConnectionError(f"the connection to the server failed: {reason}")


def retryable(failure: Exception) -> bool:
    return isinstance(failure, ConnectionError) or (
        isinstance(failure, ApiError) and failure.status == 503 and failure.code in RETRIED_CODES
    )


def exchanged(request: Request, policy: RetryPolicy) -> Steps[tuple[Reply, int]]:
    """Send `request` until a 2xx answer (and how many tries it took), or raise."""
    tries = 0
    while True:
        tries += 1
        reply = yield request
        if isinstance(reply, Reply) and 200 <= reply.status < 300:
            return reply, tries
        failure = failure_of(reply)
        if tries >= policy.attempts_max or not retryable(failure):
            raise failure
        yield Pause(policy.delay_s(tries, getattr(failure, "retry_after_s", None)))


def reading(request: Request, policy: RetryPolicy) -> Steps[bytes]:
    reply, _ = yield from exchanged(request, policy)
    return reply.body


def query(**parameters: Any) -> str:
    given = {name: value for name, value in parameters.items() if value is not None}
    return "?" + urlencode(given) if given else ""


def stream_path(views: Iterable[str] | None, rows: bool, keys: bool) -> str:
    """`/v1/stream` with its query: `?views=`, and `rows=1` (each change's
    row changes) or `rows=keys` (the keys of the rows it changed)."""
    if rows and keys:
        raise ValueError("a stream carries row changes (rows) or their keys (keys), not both")
    return "/v1/stream" + query(views=",".join(views) if views is not None else None, rows=1 if rows else "keys" if keys else None)


# ------------------------------------------------------------------- inputs


def typed(value: Input | Mapping[str, Any]) -> Input:
    """An input as its typed class (a dict is parsed, with the same checks)."""
    return value if isinstance(value, Input) else parse(value)


def batch_of(values: Iterable[Input | Mapping[str, Any]]) -> list[Input]:
    typed_values = [typed(value) for value in values]
    if not typed_values:
        raise ValueError("an empty batch: give at least one input")
    return typed_values


def single(batch: BatchResult) -> Result:
    """A one-input batch's result; Rejected when it was recorded as rejected."""
    rejected = batch.rejected
    if rejected:
        raise rejected[0]
    return batch.results[0]


def with_id(value: Input) -> Input:
    """`value` with an id: its own, or a new uuid (made once, before the first try)."""
    if value.id is not None:  # type: ignore[attr-defined]
        return value
    return msgspec.structs.replace(value, id=str(uuid.uuid4()))  # type: ignore[call-arg]


def submitting(values: Sequence[Input], batch: bool, policy: RetryPolicy, head_seen: int) -> Steps[BatchResult]:
    """`POST /v1/inputs` (one input, or a batch), each input with an id,
    resent on a retryable failure. A resend answered `duplicate_input` was
    recorded by an earlier try: its result is that earlier record's, found
    in the log after `head_seen` (the head the client saw before this call)."""
    sent = [with_id(value) for value in values]
    if batch:
        request = Request("POST", "/v1/inputs", b"".join(value.encoded() + b"\n" for value in sent), NDJSON)
    else:
        request = Request("POST", "/v1/inputs", sent[0].encoded(), JSON)
    reply, tries = yield from exchanged(request, policy)
    answer: Answer = decoded(reply.body, Answer)
    if len(answer.results) != len(sent):
        raise ValueError(f"the server answered {len(answer.results)} results for {len(sent)} inputs")
    results = [
        Result(id=value.id, line=line.line, position=answer.position, at=line.at, accepted=line.accepted, reason=line.reason, events=line.events)  # type: ignore[attr-defined]
        for value, line in zip(sent, answer.results)
    ]  # fmt: skip
    duplicates = [result for result in results if result.reason == "duplicate_input"]
    if tries > 1 and duplicates:
        high = min((result.events[0].position for result in duplicates if result.events), default=answer.position + 1) - 1
        found = yield from originals({result.id for result in duplicates if result.id}, head_seen, high, policy)
        results = [found.get(result.id, result) if result.reason == "duplicate_input" else result for result in results]  # type: ignore[arg-type]
    return BatchResult(position=answer.position, results=tuple(results), inputs=tuple(sent))


def events_page(after: int, limit: int | None, policy: RetryPolicy) -> Steps[EventPage]:
    data = yield from reading(Request("GET", "/v1/events" + query(after=after, limit=limit)), policy)
    page: EventPage = decoded(data, EventPage)
    return page


def _is_record_of(event: Event, ids: set[str]) -> bool:
    """Whether `event` records one of `ids` (accepted, or rejected for its
    own reason: not a duplicate's record)."""
    if event.input is None or event.input.id not in ids:
        return False
    return event.type == "InputAccepted" or (event.type == "InputRejected" and event.body.get("reason") != "duplicate_input")


def originals(ids: set[str], low: int, high: int, policy: RetryPolicy) -> Steps[dict[str, Result]]:
    """The results of the records of `ids` at positions in (low, high],
    searched from `high` back (at most `original_search_events_max` events),
    as `resent` Results. An id not found there is left out."""
    records: dict[str, Event] = {}
    top, bottom_max = high, max(low, high - original_search_events_max)
    while top > bottom_max and len(records) < len(ids):
        bottom = max(bottom_max, top - events_page_max)
        page = yield from events_page(bottom, top - bottom, policy)
        for event in reversed(page.events):
            if _is_record_of(event, ids) and event.input is not None and event.input.id not in records:
                records[event.input.id] = event  # type: ignore[index]
        top = bottom
    found: dict[str, Result] = {}
    for file in {record.input.file for record in records.values() if record.input is not None}:
        mine = [record for record in records.values() if record.input is not None and record.input.file == file]
        found.update((yield from _commit_results(mine, policy)))
    return found


def _commit_results(records: list[Event], policy: RetryPolicy) -> Steps[dict[str, Result]]:
    """The Results of `records` (inputs of one request, so of one commit):
    the log read forward from the first of them to the commit's end."""
    file = records[0].input.file if records[0].input is not None else None
    caused: dict[int | None, list[EventRef]] = {record.input.line: [] for record in records if record.input is not None}
    after, head, done = min(record.position for record in records) - 1, 0, False
    while not done:
        page = yield from events_page(after, events_page_max, policy)
        for event in page.events:
            if event.input is None or event.input.file != file:
                done = True
                break
            head = event.position
            if event.input.line in caused:
                caused[event.input.line].append(EventRef(event.position, event.type))
        done = done or page.next_after is None
        after = page.next_after or after
    return {record.input.id: _recorded(record, head, caused[record.input.line]) for record in records if record.input and record.input.id}


def _recorded(record: Event, head: int, events: list[EventRef]) -> Result:
    """The Result an input's record (InputAccepted or InputRejected) and its events say."""
    assert record.input is not None
    return Result(
        id=record.input.id, line=record.input.line, position=head, at=msgspec.convert(record.body["input"]["at"], datetime.datetime),
        accepted=record.type == "InputAccepted", reason=record.body.get("reason"), events=tuple(events), resent=True,
    )  # fmt: skip


# -------------------------------------------------------------------- reads


def views_steps(at: int | None, policy: RetryPolicy) -> Steps[Views]:
    data = yield from reading(Request("GET", "/v1/views" + query(at=at)), policy)
    return views_of(data)


def view_steps(name: str, at: int | None, policy: RetryPolicy) -> Steps[View]:
    data = yield from reading(Request("GET", f"/v1/views/{quote(name, safe='')}" + query(at=at)), policy)
    return view_of(name, data)


def row_steps(name: str, key: str | tuple[str, ...], at: int | None, policy: RetryPolicy) -> Steps[dict[str, Any] | None]:
    view = yield from view_steps(name, at, policy)
    return row_of(view, key)


def work_steps(runtime_id: str | None, policy: RetryPolicy) -> Steps[Work]:
    data = yield from reading(Request("GET", "/v1/work" + query(runtime_id=runtime_id)), policy)
    work: Work = decoded(data, Work)
    return work


def explain_steps(thing: str, kind: str | None, policy: RetryPolicy) -> Steps[Explained]:
    data = yield from reading(Request("GET", f"/v1/explain/{quote(thing, safe='')}" + query(kind=kind)), policy)
    explained: Explained = decoded(data, Explained)
    return explained


def health_steps() -> Steps[Health]:
    """`GET /v1/health`, once (no retry: it says how the server is now); a
    503 is `Health(status=its code)`."""
    reply = yield Request("GET", "/v1/health")
    if isinstance(reply, Reply) and reply.status == 503:
        return Health(status=api_error(reply.status, reply.body).code)
    if isinstance(reply, Reply) and 200 <= reply.status < 300:
        health: Health = decoded(reply.body, Health)
        return health
    raise failure_of(reply)
