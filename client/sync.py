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
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from tandem.client import protocol, replica
from tandem.client.inputs import Input
from tandem.client.protocol import Lost, Pause, Reply, RetryPolicy, Steps, T
from tandem.client.replica import Change, Clock, wait_s_default
from tandem.client.results import BatchResult, EventPage, Explained, Health, Message, Result, View, Views, Work
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
        self,
        last_event_id: int | None = None,
        views: Iterable[str] | None = None,
        timeout_s: float | None = None,
        rows: bool = False,
        keys: bool = False,
    ) -> Iterator[Message]:
        """The live stream's messages as they come, on a connection of its
        own; resume with the last `id` you saw. Not retried: on a lost
        connection, call it again with that id. `rows`: each change carries
        its row changes (`?rows=1`; `watch` applies them for you); `keys`:
        the keys of the rows it changed instead (`?rows=keys`: what a page
        that fetches the rows it shows needs)."""
        return self.connection.stream(last_event_id, views, timeout_s, rows, keys)

    # -------------------------------------------------- waiting on changes

    def work(self, runtime_id: str | None = None) -> Work:
        """The work queue (`GET /v1/work`): the attempts out with the
        executor, oldest claim first, each with what to send back."""
        return self._run(protocol.work_steps(runtime_id, self.retry))

    def watch(self, views: Iterable[str] | None = None, *, timeout_s: float | None = None) -> Iterator[Change]:
        """The views as they change, commit by commit (the stream's row
        changes, `?rows=1`): first the views as they are (`reset`), then a
        Change per commit that changed one of `views` (None: any), its
        `replica` equal to `GET /v1/views` at its `position`. A `reset` of
        the stream reloads the views; a lost stream is resumed where the
        replica is (tried as `retry` says). `timeout_s`: raise TimeoutError
        when nothing came for this long (None: wait for ever)."""
        return self._watch(views, timeout_s, None)

    def wait_for(
        self,
        view: str,
        predicate: Callable[[Any], bool] = lambda row: True,
        *,
        key: str | tuple[str, ...] | None = None,
        timeout_s: float = wait_s_default,
    ) -> Any:
        """Wait until `view` has a row that passes `predicate` (the row keyed
        `key`, when given; the value, for `health` and `usage`) and return
        it: as it is now if it passes, else as the first commit that makes
        it pass. Driven by the stream, not by polling; TimeoutError after
        `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        for change in self._watch([view], None, deadline):
            match = replica.found(change, view, predicate, key)
            if match is not replica.NOTHING:
                return match
        raise AssertionError("watch ends only by raising")  # pragma: no cover

    def _watch(self, views: Iterable[str] | None, idle_s: float | None, deadline: float | None) -> Iterator[Change]:
        names = list(views) if views is not None else None
        kept = replica.Replica(self.views())
        yield replica.reloaded(kept)
        clock = Clock(idle_s, deadline)
        lost = 0
        while True:
            try:
                for message in self.connection.ticking(kept.position, names, clock.tick_s, rows=True):
                    clock.check(message is not None)
                    if message is None:
                        continue
                    lost = 0
                    if message.event == "reset":
                        kept = replica.Replica(self.views())
                        yield replica.reloaded(kept)
                    elif message.event == "change" and kept.apply(message.data):
                        yield replica.changed(kept.position, message.data, kept)
            except (ConnectionError, TimeoutError) as error:
                if isinstance(error, TimeoutError) and clock.expired():
                    raise
                lost += 1
                if lost >= self.retry.attempts_max:
                    raise
                time.sleep(self.retry.delay_first_s)
