"""Live changes: one Server-Sent Events message per commit (docs/api.md, "Live
changes (SSE)").

The hub keeps the last `resume_messages_max` commits, and at most
`resume_inputs_max` inputs among them (rebuilt from the log at start,
replay/commits.py), so a client reconnecting with `Last-Event-ID: P` first
gets a message for every commit after P it missed, or, when P is older than
that (or not a position of this store), one `reset`. A kept message holds
what it says of each input (type, actor, at, accepted), never the input:
the ring's memory is bounded whatever the inputs' sizes. Publishing
never waits for a client: each has a bounded queue, and one that falls
`client_queue_messages_max` (or `client_queue_bytes_max`) behind (a client
that never reads) is cut off
with a `reset` and no longer counts towards `stream_clients_max`. Only the
event loop's thread touches the hub; commits made in another thread reach
it through `publish_threadsafe`.

A stream may ask for each message's row changes (`?rows=1`, docs/api.md,
"Row changes"): a message keeps them as the commit made them (rendered
only while `wants_rows`: a rows stream is open, or was while the ring's
messages were made, so that it can resume), at most
`resume_rows_bytes_max` of them in the ring, the oldest dropped first. A
rows stream is sent a `reset` where a message it should get has none (too
big, dropped, or made while nobody wanted them), and goes on. Or for the
keys of the rows each message changed (`?rows=keys`, what the console
needs): every commit has them (they cost no rendering), kept under the
same bound.

A client that stopped reading leaves its stream waiting in a send that never
completes (the server's socket buffers are full), where neither the `reset`
nor a stop can reach it; it would hold its connection, and a graceful stop,
for ever. So when such a stream is cut off, or the server stops, the
connection is aborted (`Client.abort`, given by the server) at once if it is
waiting in a send, else `abort_grace_s` later if it has not ended by then.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import msgspec

from tandem.projections import Views
from tandem.replay.commits import CommitSummary, InputFacts, facts_json

stream_clients_max_default = 100
client_queue_messages_max = 1_000
client_queue_bytes_max = 64 * 1_048_576  # a batch of 50k inputs makes a message of a few MiB
resume_messages_max = 1_000
resume_inputs_max = 50_000  # ~250 bytes each, message bytes included: ~12 MiB at most
resume_rows_bytes_max = 32 * 1_048_576  # the kept messages' row changes, as sent (each at most ~4 MiB)
# After a start, the rebuilt messages hold the row changes of the newest
# this many commits (rendering costs what the rows weigh: a conversation's
# holds its deliveries), and new commits' are rendered for
# `rows_start_grace_s` (a rows stream open before the restart reconnects
# within it) unless a rows stream opens.
start_rows_commits_max = 100
rows_start_grace_s = 10.0
views_changed_cached_max = 4_096  # sets of event types a commit held (few in practice)
keepalive_s_default = 15.0
# A cut-off or stopped stream not waiting in a send is given this long to
# send what it holds (and its reset) and end before its connection is aborted.
abort_grace_s = 2.0


def _views_by_event() -> dict[type, tuple[str, ...]]:
    """Which views an event type changes: those that fold it."""
    found: dict[type, list[str]] = {}
    for name, view in Views().by_name.items():
        for event_type in view.handlers:
            found.setdefault(event_type, []).append(name)
    return {event_type: tuple(names) for event_type, names in found.items()}


VIEWS_BY_EVENT = _views_by_event()
VIEW_ORDER = {name: number for number, name in enumerate(Views().by_name)}


class Message:
    """One commit's message; its bytes are made when first sent (a commit
    nobody is streaming costs a ring entry and its inputs' facts, no
    encoding). With row changes, its bytes for rows streams are made at once
    (`rows_wire`; None: it has none); with the keys of the changed rows
    (every commit's), its bytes for keys streams when first sent
    (`keys_wire`)."""

    __slots__ = ("position", "after", "views", "inputs", "_ordered", "_wire", "rows_wire", "keys", "_keys_wire")

    def __init__(self, summary: CommitSummary, views: frozenset[str], ordered: list[str]) -> None:
        self.position, self.after, self.views = summary.position, summary.after, views
        self.inputs: tuple[InputFacts, ...] = summary.input_facts()  # not the records: the inputs are not kept
        self._ordered = ordered
        self._wire: bytes | None = None
        self.rows_wire = self._encoded("rows", summary.rows) if summary.rows is not None else None
        self.keys = summary.keys  # encoded into `keys_wire` only if a keys stream takes it
        self._keys_wire: bytes | None = None

    def _encoded(self, detail: str = "", changes: bytes | None = None) -> bytes:
        data = {"position": self.position, "views": self._ordered, "inputs": facts_json(self.inputs)}
        if changes is not None:
            data[detail] = msgspec.Raw(changes)
        return b"id: %d\nevent: change\ndata: %s\n\n" % (self.position, msgspec.json.encode(data))

    @property
    def keys_wire(self) -> bytes | None:
        if self.keys is None:
            return None
        if self._keys_wire is None:
            self._keys_wire = self._encoded("keys", self.keys)
        return self._keys_wire

    def drop_details(self) -> None:
        """Forget its row changes and keys (the ring's bytes bound)."""
        self.rows_wire = self.keys = self._keys_wire = None

    @property
    def wire(self) -> bytes:
        if self._wire is None:
            self._wire = self._encoded()
        return self._wire


@functools.lru_cache(maxsize=views_changed_cached_max)
def views_changed(types: frozenset[type]) -> tuple[frozenset[str], list[str]]:
    """The views that fold any of `types` (as a set, and in document order)."""
    views = frozenset(name for event_type in types for name in VIEWS_BY_EVENT.get(event_type, ()))
    return views, sorted(views, key=VIEW_ORDER.__getitem__)


def message_of(summary: CommitSummary) -> Message:
    if summary.views is not None:
        return Message(summary, frozenset(summary.views), list(summary.views))
    return Message(summary, *views_changed(summary.types))


def _detail_bytes(message: Message) -> int:
    """What a kept message's row changes and keys take (`resume_rows_bytes_max`)."""
    return len(message.rows_wire or b"") + len(message.keys or b"")


def reset_wire(position: int) -> bytes:
    return b"id: %d\nevent: reset\ndata: %s\n\n" % (position, msgspec.json.encode({"position": position}))


class StreamsFull(Exception):
    """`stream_clients_max` clients are connected already."""


class StreamsClosed(Exception):
    """The server is stopping: it opens no new stream."""


@dataclass(eq=False)  # clients are told apart by identity (a set holds them)
class Client:
    views: frozenset[str] | None  # None: every message
    # Each message with its row changes (`?rows=1`: "rows_wire") or the keys
    # of the rows it changed (`?rows=keys`: "keys_wire"), or a reset where it
    # has none; None: the message alone.
    detail: str | None = None
    queue: deque[bytes] = field(default_factory=deque)
    queued_bytes: int = 0
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    abort: Callable[[], None] | None = None  # drops its connection at once (None: the server cannot)
    cut_off: bool = False  # fell too far behind: a reset, then the end
    closed: bool = False  # the server is stopping
    sending: bool = False  # waiting for a chunk to be sent: the client has not taken the last one
    ended: bool = False  # its stream is over

    def offer(self, message: Message) -> bool:
        """Queue `message` if it concerns this client; False once cut off."""
        if self.views is not None and not (self.views & message.views):
            return True
        if self.detail is None:
            wire = message.wire
        else:
            detailed = getattr(message, self.detail)
            wire = detailed if detailed is not None else reset_wire(message.position)
        if len(self.queue) >= client_queue_messages_max or self.queued_bytes + len(wire) > client_queue_bytes_max:
            self.cut_off = True
            self.ready.set()
            return False
        self.queue.append(wire)
        self.queued_bytes += len(wire)
        self.ready.set()
        return True


class Hub:
    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        history: list[CommitSummary],
        head: int,
        clients_max: int = stream_clients_max_default,
        keepalive_s: float = keepalive_s_default,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.loop = loop
        self.loop_thread = threading.get_ident()  # a hub is made in its loop's thread
        self.ring: deque[Message] = deque()
        self.ring_inputs = 0  # the inputs of the ring's messages
        self.ring_rows_bytes = 0  # the bytes of their row changes, as sent
        # Resumable from here on: every commit after `since` is in the ring.
        self.since = head
        for summary in history:
            self._keep(message_of(summary))
        self.head = head
        self.clients: set[Client] = set()
        self.rows_clients = 0  # of `clients`, those that asked for row changes
        # The last position a rows stream was open at (-1: none since the
        # start): it may resume from there. One open before a restart may
        # reconnect within `rows_start_grace_s`.
        self.rows_seen = -1
        self.monotonic = monotonic
        self.rows_grace_until = monotonic() + rows_start_grace_s
        self.ending: set[Client] = set()  # cut off, their stream not over yet
        self.clients_max = clients_max
        self.keepalive_s = keepalive_s
        self.closing = False

    # ------------------------------------------------------------ publish

    def publish_from_any_thread(self, summary: CommitSummary) -> None:
        """From the loop's own thread (a commit made inline), at once: no
        wake-up of the loop through its self-pipe; from another, through it."""
        if threading.get_ident() == self.loop_thread:
            self.publish(summary)
        else:
            self.loop.call_soon_threadsafe(self.publish, summary)

    def publish(self, summary: CommitSummary) -> None:
        message = message_of(summary)
        self._keep(message)
        self.head = message.position
        if self.rows_clients:
            self.rows_seen = message.position
        for client in list(self.clients):
            if not client.offer(message):
                self._leave(client)  # cut off: it no longer holds a place
                self.ending.add(client)
                self._end(client)

    def wants_rows(self) -> bool:
        """Whether the next commit's row changes are to be rendered: a rows
        stream is open, or was at a position the ring still resumes from,
        or the server started less than `rows_start_grace_s` ago. (Read
        from the committing thread: a stream opened meanwhile gets a reset
        where its first message has none.)"""
        return self.rows_clients > 0 or self.rows_seen >= self.since or self.monotonic() < self.rows_grace_until

    def _leave(self, client: Client) -> None:
        if client in self.clients:
            self.clients.discard(client)
            self.rows_clients -= client.detail == "rows_wire"

    def _keep(self, message: Message) -> None:
        """Into the ring, the oldest out past its bounds (the newest stays,
        whatever its size); past `resume_rows_bytes_max`, the oldest row changes out."""
        self.ring.append(message)
        self.ring_inputs += len(message.inputs)
        self.ring_rows_bytes += _detail_bytes(message)
        while len(self.ring) > 1 and (len(self.ring) > resume_messages_max or self.ring_inputs > resume_inputs_max):
            dropped = self.ring.popleft()
            self.ring_inputs -= len(dropped.inputs)
            self.ring_rows_bytes -= _detail_bytes(dropped)
        for kept in self.ring:
            if self.ring_rows_bytes <= resume_rows_bytes_max or kept is message:
                break
            self.ring_rows_bytes -= _detail_bytes(kept)
            kept.drop_details()
        self.since = self.ring[0].after

    def close(self) -> None:
        """The server is stopping: every stream ends."""
        self.closing = True
        for client in self.clients | self.ending:
            client.closed = True
            client.ready.set()
            self._end(client)

    def _end(self, client: Client) -> None:
        """See that a stream told to end does end: abort its connection now
        if it waits in a send (its client takes nothing), else soon unless
        it is over by then."""
        if client.sending:
            self._abort(client)
        else:
            self.loop.call_later(abort_grace_s, self._abort, client)

    @staticmethod
    def _abort(client: Client) -> None:
        if not client.ended and client.abort is not None:
            client.abort()

    # ---------------------------------------------------------- subscribe

    def subscribe(
        self,
        last_event_id: int | None,
        views: frozenset[str] | None,
        abort: Callable[[], None] | None = None,
        rows: bool = False,
        keys: bool = False,
    ) -> tuple[Client, bytes]:
        """A new client and what it must be sent first (missed messages, or a
        reset); with `rows`, each message with its row changes; with `keys`,
        with the keys of the rows it changed. `abort` drops its connection.
        Raises StreamsClosed, StreamsFull."""
        assert not (rows and keys), "one detail a stream"
        if self.closing:
            raise StreamsClosed("the server is stopping: it opens no new stream; connect again once it is back")
        if len(self.clients) >= self.clients_max:
            raise StreamsFull(f"{len(self.clients)} streams are open, the most this server keeps ({self.clients_max})")
        detail = "rows_wire" if rows else "keys_wire" if keys else None
        client = Client(views, detail, abort=abort)
        self.clients.add(client)
        if rows:
            self.rows_clients += 1
            self.rows_seen = max(self.rows_seen, self.head)
        return client, self._backlog(last_event_id, views, detail)

    def _backlog(self, last_event_id: int | None, views: frozenset[str] | None, detail: str | None) -> bytes:
        if last_event_id is None or last_event_id == self.head:
            return b""
        if last_event_id > self.head or last_event_id < self.since:
            return reset_wire(self.head)
        missed = [
            message
            for message in self.ring
            if message.position > last_event_id and (views is None or views & message.views)
        ]
        if detail is None:
            return b"".join(message.wire for message in missed)
        wires = [getattr(message, detail) for message in missed]
        if any(wire is None for wire in wires):
            return reset_wire(self.head)  # row changes (or keys) not kept (too big, or dropped): reload
        return b"".join(wires)

    async def messages(self, client: Client, first: bytes) -> AsyncIterator[bytes]:
        """The bytes of one stream: the backlog, then live messages, with a
        comment line every `keepalive_s` while idle. `client.sending` is
        true while a chunk waits to be sent (the one suspension point that
        its client, not the hub, decides the end of)."""
        chunk = b": connected\n\n" + first
        last = False
        try:
            while True:
                if chunk:
                    client.sending = True
                    yield chunk
                    client.sending = False
                if last:
                    return
                if not client.queue and not client.cut_off and not client.closed:
                    client.ready.clear()
                    try:
                        await asyncio.wait_for(client.ready.wait(), self.keepalive_s)
                    except asyncio.TimeoutError:
                        chunk = b": keep-alive\n\n"
                        continue
                chunk = b"".join(client.queue)
                client.queue.clear()
                client.queued_bytes = 0
                if client.cut_off:
                    chunk += reset_wire(self.head)
                last = client.cut_off or client.closed
        finally:
            client.ended = True
            self._leave(client)
            self.ending.discard(client)
