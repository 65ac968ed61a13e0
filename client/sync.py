"""`Client`: the sync client of `tandem serve` (docs/api.md, "The Python client").

    from tandem.client import Client, Rejected, inputs
    with Client("http://127.0.0.1:8765", token) as tandem:
        result = tandem.submit(inputs.HumanMessage(conversation_id="fg", message_id="m3", text="ship it"))
        result.position, result.at, result.events

One kept-alive connection (client/transport.py); not for several threads at
once (give each thread its own). What each call does is client/protocol.py's.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from tandem.client import protocol
from tandem.client.inputs import Input
from tandem.client.protocol import Lost, Pause, Reply, RetryPolicy, Steps, T
from tandem.client.results import BatchResult, EventPage, Explained, Health, Message, Result, View, Views
from tandem.client.transport import Connection, timeout_s_default


class Client:
    """`url` (http://host:port), `token` (the bearer token: it is the actor);
    `timeout_s` for each request; `retry`, how calls retry (client/protocol.py)."""

    def __init__(self, url: str, token: str, *, timeout_s: float = timeout_s_default, retry: RetryPolicy = RetryPolicy()) -> None:
        self.connection = Connection(url, token, timeout_s)
        self.retry = retry
        self.head_seen = 0  # the highest head an answer showed this client

    def _run(self, steps: Steps[T]) -> T:
        reply: Reply | Lost | None = None
        while True:
            try:
                step = steps.send(reply)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            if isinstance(step, Pause):
                time.sleep(step.seconds)
                reply = None
                continue
            try:
                reply = self.connection.exchange(step)
            except OSError as error:  # ConnectionError and timeouts among them
                reply = Lost(f"{type(error).__name__}: {error}")

    def _saw(self, position: int | None) -> None:
        if position is not None and position > self.head_seen:
            self.head_seen = position

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exception: object) -> None:
        self.close()

    # ------------------------------------------------------------- inputs

    def submit(self, input: Input | Mapping[str, Any]) -> Result:
        """One input, given an `id` if it has none, resent with it until
        answered: its Result when accepted; Rejected when recorded as rejected."""
        batch = self._run(protocol.submitting([protocol.typed(input)], False, self.retry, self.head_seen))
        self._saw(batch.position)
        return protocol.single(batch)

    def submit_batch(self, inputs: Iterable[Input | Mapping[str, Any]]) -> BatchResult:
        """Inputs in one transaction (application/x-ndjson), each given an
        `id` if it has none: all recorded, or none. Rejected inputs do not
        raise: see BatchResult.rejected and raise_for_rejections()."""
        batch = self._run(protocol.submitting(protocol.batch_of(inputs), True, self.retry, self.head_seen))
        self._saw(batch.position)
        return batch

    # ------------------------------------------------------------ reading

    def views(self, at: int | None = None) -> Views:
        return self._run(protocol.views_steps(at, self.retry))

    def view(self, name: str, at: int | None = None) -> View:
        return self._run(protocol.view_steps(name, at, self.retry))

    def row(self, view: str, key: str | tuple[str, ...], at: int | None = None) -> dict[str, Any] | None:
        """The row of `view` keyed `key` (results.ROW_KEYS; a tuple for
        `questions`: task_id, question_key), or None."""
        return self._run(protocol.row_steps(view, key, at, self.retry))

    def events(self, after: int = 0, limit: int | None = None) -> EventPage:
        return self._run(protocol.events_page(after, limit, self.retry))

    def explain(self, id: str, kind: str | None = None) -> Explained:
        return self._run(protocol.explain_steps(id, kind, self.retry))

    def health(self) -> Health:
        health = self._run(protocol.health_steps())
        self._saw(health.position)
        return health

    # ------------------------------------------------------------- stream

    def stream(
        self, last_event_id: int | None = None, views: Iterable[str] | None = None, timeout_s: float | None = None
    ) -> Iterator[Message]:
        """The live stream's messages as they come, on a connection of its
        own; resume with the last `id` you saw. Not retried: on a lost
        connection, call it again with that id."""
        return self.connection.stream(last_event_id, views, timeout_s)

    # Row changes go here, driven by the stream's rows (`GET /v1/stream?rows=1`,
    # docs/api.md): `wait_for(view, predicate, timeout)` and `watch(views)`,
    # yielding each view's row changes (a `reset`: reload the views). Not yet.
