"""The recorder base: `replay.port.EventStore` on an eventsourcing recorder.

One log, one eventsourcing stream: every event is a `StoredEvent` with the
same `originator_id` (`log_stream_id`) and its position as
`originator_version`. The recorders' unique (originator_id, originator_version)
key is the optimistic concurrency check: an append writes positions
expected_head+1.. in one `insert_events` call (one transaction), and a writer
that lost the race hits the key on its first event and writes nothing.

Writes go through the recorders; each backend says how it reads a page of
the log, its head and its snapshots (`memory.py`, `sql.py`).
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import msgspec
from eventsourcing.persistence import IntegrityError, JSONTranscoder, Mapper, PersistenceError, StoredEvent

from tandem.adapters.store.url import redacted
from tandem.domain.events import EVENT_TYPES, Event, decode_event, encode_event, event_name
from tandem.replay.port import CommitUnknown, ConcurrencyError, Fenced, SnapshotInfo, StoreError, WriterClaim

# Rows fetched per query when reading the log. A page is fetched, its
# connection released, then decoded and yielded: the store never holds a
# connection while the caller works.
read_page_events_max = 10_000
# Events `read_pages` decodes and yields at a time, from a fetched page: few
# enough that a fold meets each event while its objects are still in the CPU
# cache, and that the memory of the events it drops is reused while hot (a
# whole 10,000-event page decoded before the first is folded is not). Measured
# (bench/PROFILE.md, issue 15's second pass), CPU an event of a full replay
# without views: 2.91 us at 10,000, 2.33 at 1,000, 2.23 at 500, 2.17 at 200.
decoded_page_events_max = 500
# Positions asked of one query by `read_positions` (a longer list takes several).
read_positions_query_max = 500

# One stream holds the whole log. Text ids work on all three recorders.
log_stream_id = "tandem-log"


# A stored event as the recorders' INSERT takes it:
# (originator_id, originator_version, topic, state).
Row = tuple[str, int, str, bytes]


# What an append refused by the fence says, in the database's own error (a
# PostgreSQL statement cannot raise by itself: the fence's check casts this
# text to an integer, and the error quotes it).
fenced_marker = "tandem-fenced: "


def fenced_message(error: BaseException) -> str | None:
    """What the fence said, if `error` (or its cause) is its refusal."""
    seen: BaseException | None = error
    while seen is not None:
        text = str(seen)
        start = text.find(fenced_marker)
        if start >= 0:
            return text[start + len(fenced_marker) :].split('"', 1)[0]
        seen = seen.__cause__
    return None


def stored_type_name(data: bytes) -> str:
    """A stored event's type name (its `topic`): its tag, read from the bytes
    when it is spelled first (as `encode_event` writes it), else decoded."""
    if data.startswith(_TAG_PREFIX):
        end = data.find(b'"', len(_TAG_PREFIX))
        name = data[len(_TAG_PREFIX) : end].decode("utf-8", "replace")
        if name in EVENT_TYPES:
            return name
    return event_name(decode_event(data))


_TAG_PREFIX = b'{"event":"'


class Positioned(NamedTuple):
    """An event with its position in the log: what the mapper maps."""

    position: int
    event: Event


def _stored_event_fast(originator_id: str, originator_version: int, topic: str, state: bytes) -> StoredEvent:
    """`StoredEvent(...)` at a fraction of the cost.

    `StoredEvent` is a frozen dataclass: its `__init__` sets each field through
    `object.__setattr__`, which costs about as much as encoding the event.
    Filling the instance dict directly gives an equal object (==, hash, repr).
    """
    stored = _new_object(StoredEvent)
    fields = stored.__dict__
    fields["originator_id"] = originator_id
    fields["originator_version"] = originator_version
    fields["topic"] = topic
    fields["state"] = state
    return stored


def _stored_event_plain(originator_id: str, originator_version: int, topic: str, state: bytes) -> StoredEvent:
    return StoredEvent(originator_id=originator_id, originator_version=originator_version, topic=topic, state=state)


_new_object = object.__new__
# The fast path relies on eventsourcing 9.5's layout (these four fields, kept in
# the instance dict, no slots); any other layout takes the constructor.
_stored_event = (
    _stored_event_fast
    if "__slots__" not in vars(StoredEvent)
    and [field.name for field in dataclasses.fields(StoredEvent)]
    == ["originator_id", "originator_version", "topic", "state"]
    and _stored_event_fast("x", 1, "t", b"s") == StoredEvent("x", 1, "t", b"s")
    else _stored_event_plain
)


class MsgspecMapper(Mapper):  # type: ignore[type-arg]
    """Positioned msgspec events <-> eventsourcing `StoredEvent`s.

    The default Mapper reads `vars(event)`, which msgspec Structs do not have.
    The state is our own deterministic JSON encoding (`encode_event`), so the
    transcoder eventsourcing asks for is never used.
    """

    def __init__(self) -> None:
        super().__init__(transcoder=JSONTranscoder())

    def to_stored_event(self, domain_event: Any) -> StoredEvent:
        positioned: Positioned = domain_event
        return _stored_event(*self.to_row(positioned.position, positioned.event))

    def to_row(self, position: int, event: Event) -> Row:
        """The event's row: (originator_id, originator_version, topic, state),
        the columns of the recorders' INSERT, in their order. What `append`
        writes (a `StoredEvent` only where a recorder needs one)."""
        return (log_stream_id, position, event_name(event), encode_event(event))

    def to_domain_event(self, stored_event: StoredEvent) -> Any:
        return Positioned(stored_event.originator_version, decode_event(stored_event.state))


# ------------------------------------------------------------------ the store


class RecorderStore:
    """Common append logic; subclasses say how to read and count."""

    def __init__(self, url: str, recorder: Any) -> None:
        self.url = url
        self._recorder = recorder
        self._mapper = MsgspecMapper()
        self._head_known: int | None = None
        # The writer generation this object claimed (`claim_writer`): its
        # appends are refused once another writer claimed a newer one. None:
        # it never claimed, its appends are not checked.
        self._generation: int | None = None
        self._deferred_claim: tuple[int | None, str, str] | None = None  # (pid, host, since) to claim at the first append

    # -- subclass hooks
    def _select_head(self) -> int:
        raise NotImplementedError

    def _select_page(self, after: int, until: int | None, limit: int) -> list[tuple[int, bytes]]:
        raise NotImplementedError

    def _select_positions(self, positions: list[int]) -> list[tuple[int, bytes]]:
        """The events at `positions` (ascending, distinct, at most
        `read_positions_query_max`), in position order."""
        raise NotImplementedError

    # -- port
    def head(self) -> int:
        self._head_known = self._guarded(self._select_head)
        return self._head_known

    def append(self, events: Sequence[Event], expected_head: int) -> int:
        assert expected_head >= 0, expected_head
        if self._head_known != expected_head:
            # Our cached head may be stale (another store object wrote):
            # look once before refusing.
            if self.head() != expected_head:
                raise ConcurrencyError(
                    f"expected head {expected_head}, but the head is {self._head_known}"
                )
        if not events:
            return expected_head
        # Encode everything before touching the database: an event that fails
        # to encode writes nothing.
        to_row = self._mapper.to_row
        rows = [to_row(expected_head + offset, event) for offset, event in enumerate(events, start=1)]
        self._claim_if_deferred()
        return self._insert(rows, expected_head)

    def append_encoded(self, data: Sequence[bytes], expected_head: int) -> int:
        assert expected_head >= 0, expected_head
        stored = []
        for offset, item in enumerate(data, start=1):
            # Decoded to check it and to name its topic; stored as given.
            try:
                event = decode_event(item)
            except (msgspec.DecodeError, msgspec.ValidationError) as error:
                raise ValueError(f"item {offset} does not decode as an event: {error}") from None
            stored.append((log_stream_id, expected_head + offset, event_name(event), bytes(item)))
        if self._head_known != expected_head and self.head() != expected_head:
            raise ConcurrencyError(f"expected head {expected_head}, but the head is {self._head_known}")
        if not stored:
            return expected_head
        self._claim_if_deferred()
        return self._insert(stored, expected_head)

    def _write_rows(self, rows: list[Row]) -> None:
        """Insert the rows in one transaction, all or none, raising
        eventsourcing's IntegrityError when a position is taken (and its
        PersistenceError for any other failure). By default through the
        recorder; a backend may write them more directly."""
        self._recorder.insert_events([_stored_event(*row) for row in rows], **self._insert_options())

    def _insert_options(self) -> dict[str, Any]:
        """What a backend's recorder is told besides the rows (the fence's check)."""
        return {}

    def _insert(self, stored: list[Row], expected_head: int) -> int:
        try:
            self._write_rows(stored)
        except Fenced:
            self._head_known = None
            raise
        except IntegrityError as error:
            self._head_known = None
            raise ConcurrencyError(
                f"another writer appended after position {expected_head}; nothing was written"
            ) from error
        except PersistenceError as error:
            self._head_known = None
            said = fenced_message(error)
            if said is not None:
                raise Fenced(self._fenced_text(said)) from error
            # The answer may be what was lost (a connection cut at COMMIT):
            # ask the store before saying what happened.
            if self.outcome(stored, expected_head, error):
                return expected_head + len(stored)
            raise StoreError(f"append to {redacted(self.url)} failed: {error}; nothing was recorded") from error
        self._head_known = expected_head + len(stored)
        return self._head_known

    def outcome(self, stored: list[Row], expected_head: int, failure: BaseException) -> bool:
        """After an append that failed with `failure` in a way that may have
        lost its answer (a connection cut at COMMIT): ask the store. True when
        the rows are stored (the append happened), False when nothing is
        stored after `expected_head` (it did not); ConcurrencyError when
        another writer's events are there; CommitUnknown when the store
        cannot be asked."""
        try:
            head = self.head()
            if head == expected_head:
                return False
            found = dict(self.read_positions([expected_head + 1, expected_head + len(stored)]))
        except StoreError as error:
            raise CommitUnknown(
                f"append to {redacted(self.url)} failed ({failure}) and the store cannot be asked whether it "
                f"happened ({error}): the inputs may have been recorded"
            ) from error
        first, last = stored[0], stored[-1]
        if found.get(first[1]) == first[3] and found.get(last[1]) == last[3]:
            self._head_known = head
            return True
        raise ConcurrencyError(f"another writer appended after position {expected_head}; nothing of ours was written")

    # -- writers (fencing)
    def claim_writer(self, pid: int | None, host: str, since: str, *, deferred: bool = False) -> WriterClaim | None:
        if deferred:
            # A command that may write nothing (a bad trace writes nothing):
            # claimed just before its first append, in a transaction of its own.
            self._deferred_claim = (pid, host, since)
            return None
        claim = self._guarded(self._claim, pid, host, since, verb="claiming the writer generation of")
        self._generation = claim.generation
        self._deferred_claim = None
        return claim

    def _claim_if_deferred(self) -> None:
        if self._deferred_claim is not None:
            self.claim_writer(*self._deferred_claim)

    def list_claims(self) -> list[WriterClaim]:
        return [WriterClaim(*row) for row in self._guarded(self._claims)]

    def _claim(self, pid: int | None, host: str, since: str) -> WriterClaim:
        """In one transaction: the fence's generation raised by one (waiting
        for the appends in flight), the claim recorded with the head."""
        raise NotImplementedError

    def _claims(self) -> list[tuple[int, int, int | None, str, str]]:
        raise NotImplementedError

    def _fenced_text(self, detail: str) -> str:
        return f"this writer (generation {self._generation}) was fenced off {redacted(self.url)}: {detail}; nothing was written"

    def read_encoded(self, after: int = 0, until: int | None = None) -> Iterator[tuple[int, bytes]]:
        while until is None or after < until:
            page = self._guarded(self._select_page, after, until, read_page_events_max)
            yield from page
            if len(page) < read_page_events_max:
                return
            after = page[-1][0]

    def read_matching(
        self, needles_by_type: Mapping[str, Collection[bytes]], after: int = 0, until: int | None = None
    ) -> Iterator[tuple[int, bytes]]:
        """Read and filtered here (an SQL store filters in the database)."""
        for position, data in self.read_encoded(after, until):
            needles = needles_by_type.get(stored_type_name(data))
            if needles is not None and any(needle in data for needle in needles):
                yield position, data

    def read_positions(self, positions: Iterable[int]) -> list[tuple[int, bytes]]:
        wanted = sorted({position for position in positions if position >= 1})
        found: list[tuple[int, bytes]] = []
        for start in range(0, len(wanted), read_positions_query_max):
            found.extend(self._guarded(self._select_positions, wanted[start : start + read_positions_query_max]))
        return found

    def read(self, after: int = 0, until: int | None = None) -> Iterator[tuple[int, Event]]:
        for position, data in self.read_encoded(after, until):
            yield position, decode_event(data)

    def read_pages(self, after: int = 0, until: int | None = None) -> Iterator[list[Event]]:
        """The events, decoded a part of a fetched page at a time
        (`decoded_page_events_max`): the replay loop's fast path (no
        generator step per event, each event folded while still cached)."""
        decode = decode_event
        while until is None or after < until:
            page = self._guarded(self._select_page, after, until, read_page_events_max)
            step = decoded_page_events_max
            for start in range(0, len(page), step):
                yield [decode(data) for _, data in page[start : start + step]]
            if len(page) < read_page_events_max:
                return
            after = page[-1][0]

    # -- snapshots (a cache beside the log; subclasses store them)
    def write_snapshot(self, position: int, fingerprint: str, body: bytes) -> None:
        if not isinstance(position, int) or position < 1:
            raise ValueError(f"a snapshot's position is 1 or more, not {position!r}")
        if not fingerprint or not isinstance(fingerprint, str):
            raise ValueError("a snapshot needs a fingerprint")
        head = self.head()
        if position > head:
            raise ValueError(f"snapshot position {position} is past the log's head ({head})")
        self._guarded(self._snapshot_write, position, fingerprint, bytes(body), verb="writing a snapshot to")

    def latest_snapshot(self, fingerprint: str, until: int | None = None) -> tuple[int, bytes] | None:
        return self._guarded(self._snapshot_latest, fingerprint, until)

    def list_snapshots(self) -> list[SnapshotInfo]:
        return [SnapshotInfo(*row) for row in self._guarded(self._snapshot_list)]

    def delete_snapshot(self, position: int, fingerprint: str) -> None:
        self._guarded(self._snapshot_delete, position, fingerprint, verb="deleting a snapshot from")

    def _snapshot_write(self, position: int, fingerprint: str, body: bytes) -> None:
        raise NotImplementedError

    def _snapshot_latest(self, fingerprint: str, until: int | None) -> tuple[int, bytes] | None:
        raise NotImplementedError

    def _snapshot_list(self) -> list[tuple[int, str, int]]:
        raise NotImplementedError

    def _snapshot_delete(self, position: int, fingerprint: str) -> None:
        raise NotImplementedError

    # -- the key table (a cache beside the log; subclasses store it)
    def keys_through(self, fingerprint: str) -> int:
        mark = self._guarded(self._keys_mark)
        return mark[1] if mark is not None and mark[0] == fingerprint else 0

    def read_key_positions(self, keys: Collection[tuple[str, str]], until: int) -> dict[tuple[str, str], list[int]]:
        return {key: self._guarded(self._keys_select, key, until) for key in dict.fromkeys(keys)}

    def read_key_rows(self, until: int) -> Iterator[tuple[str, str, int]]:
        after: tuple[str, str, int] | None = None
        while True:
            page = self._guarded(self._keys_page, after, until, read_page_events_max)
            yield from page
            if len(page) < read_page_events_max:
                return
            after = page[-1]

    def write_keys(self, fingerprint: str, after: int, through: int, rows: Sequence[tuple[str, str, int]]) -> bool:
        if not fingerprint or not isinstance(fingerprint, str):
            raise ValueError("a key table needs a fingerprint")
        if not 0 <= after <= through:
            raise ValueError(f"the key table's mark moves forward: from {after} to {through}?")
        outside = next((row for row in rows if not after < row[2] <= through), None)
        if outside is not None:
            raise ValueError(f"key row {outside!r} is not after {after} up to {through}")
        return bool(self._guarded(self._keys_write, fingerprint, after, through, rows, verb="writing keys to"))

    def _keys_mark(self) -> tuple[str, int] | None:
        """(fingerprint, through) of the key table; None: it has none."""
        raise NotImplementedError

    def _keys_select(self, key: tuple[str, str], until: int) -> list[int]:
        raise NotImplementedError

    def _keys_page(self, after: tuple[str, str, int] | None, until: int, limit: int) -> list[tuple[str, str, int]]:
        """Up to `limit` rows after the row `after` (None: from the first), positions up to `until`, in key order."""
        raise NotImplementedError

    def _keys_write(self, fingerprint: str, after: int, through: int, rows: Sequence[tuple[str, str, int]]) -> bool:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def _guarded(self, function: Any, *arguments: Any, verb: str = "reading") -> Any:
        try:
            return function(*arguments)
        except (PersistenceError, sqlite3.Error) as error:
            raise StoreError(f"{verb} {redacted(self.url)} failed: {error}") from error

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {redacted(self.url)}>"
