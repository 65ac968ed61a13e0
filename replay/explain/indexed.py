"""Explain's reads through a `LogIndex` (replay/index.py): the same `Log` a
full read makes — the same entries under the same keys, the same inputs, the
same task conversations, files and head — from the index's positions and
only the events they name, fetched by position (`store.read_positions`) when
asked for.

What a full read keeps under a key is every event with that key from the
read's start, or, for a key that `grow` added on the way, from the event that
added it (itself included). So the only events a read must visit in order
are those that can grow the wanted keys (the `leads_to` event types: a
task's delegation, a turn's deliveries); every other event is fetched only
when a renderer asks for it (a fact's `find` looks back from a position:
it fetches backwards, a few events at a time). The index's head when the
reads start (or `until`, if before it) is the head of every round: a
document is as of one position.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from tandem.domain import events as ev
from tandem.domain.keys import KINDS as KEY_KINDS
from tandem.domain.keys import event_types_with
from tandem.replay.explain.keys import Key
from tandem.replay.explain.log import Entry, Grow, input_ref
from tandem.replay.explain.model import InputRef
from tandem.replay.port import EventStore

if TYPE_CHECKING:
    from tandem.replay.index import LogIndex

# Events fetched at once: forwards (a thing's own events, in log order), and
# backwards (a fact's latest event before a position), growing by 4x from the
# first to the most.
forward_fetch_first = 64
backward_fetch_first = 4
fetch_events_max = 1_024


class Fetched:
    """The events the reads fetched, decoded once for every round, with
    their inputs' records."""

    def __init__(self, store: EventStore, index: LogIndex) -> None:
        self.store = store
        self.index = index
        self.events: dict[int, Any] = {}
        self.inputs: dict[int, InputRef] = {}

    def fetch(self, positions: Sequence[int]) -> None:
        wanted = [position for position in positions if position not in self.events]
        if not wanted:
            return
        records = {self.index.record_before(position) for position in wanted} - self.inputs.keys() - {None}
        asked = set(wanted)
        for position, data in self.store.read_positions([*wanted, *records]):  # type: ignore[list-item]
            event = ev.decode_event(data)
            if position in asked:
                self.events[position] = event
            if position in records:
                self.inputs[position] = input_ref(event)
        missing = [position for position in wanted if position not in self.events]
        assert not missing, f"the store holds no events at {missing[:5]} (the index is of another log?)"

    def entry(self, position: int) -> Entry:
        record = self.index.record_before(position)
        return position, self.events[position], self.inputs[record] if record is not None else None


class Entries(Sequence[Entry]):
    """The entries of one key (what `Log.by_key[key]` holds), fetched when read."""

    def __init__(self, fetched: Fetched, positions: Sequence[int]) -> None:
        self.fetched = fetched
        self.positions = positions  # ascending: what Resolver.find bisects
        self._backward = backward_fetch_first

    def __len__(self) -> int:
        return len(self.positions)

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, slice):
            return [self[index] for index in range(*item.indices(len(self)))]
        index = item + len(self) if item < 0 else item
        position = self.positions[index]
        if position not in self.fetched.events:
            # Read one at a time from the end (find): fetch a window before it.
            self.fetched.fetch(self.positions[max(0, index - self._backward + 1) : index + 1])
            self._backward = min(self._backward * 4, fetch_events_max)
        return self.fetched.entry(position)

    def __iter__(self) -> Iterator[Entry]:
        step, start = forward_fetch_first, 0
        while start < len(self.positions):
            window = self.positions[start : start + step]
            self.fetched.fetch(window)
            for position in window:
                yield self.fetched.entry(position)
            start, step = start + step, min(step * 4, fetch_events_max)

    def __reversed__(self) -> Iterator[Entry]:
        for index in range(len(self) - 1, -1, -1):
            yield self[index]


class ByKey:
    """`Log.by_key` of one read: the wanted keys, each from its start."""

    def __init__(self, fetched: Fetched, starts: dict[Key, int], until: int) -> None:
        self.fetched = fetched
        self.starts = starts
        self.until = until
        self._entries: dict[Key, Entries] = {}

    def get(self, key: Key, default: Any = None) -> Any:
        entries = self._entries.get(key)
        if entries is None:
            start = self.starts.get(key)
            if start is None:
                return default
            # From `start` on, the event at `start` included.
            positions = self.fetched.index.positions(key, after=max(0, start - 1), until=self.until)
            entries = self._entries[key] = Entries(self.fetched, positions)
        return entries if len(entries) else default


class TaskConversations:
    """`Log.task_conversation`: a task's conversation, from its latest
    TaskDelegated up to the head (a full read notes every one)."""

    def __init__(self, fetched: Fetched, until: int) -> None:
        self.fetched = fetched
        self.until = until

    def get(self, task_id: str, default: Any = None) -> Any:
        index = self.fetched.index
        for position in reversed(index.positions(("task", task_id), until=self.until)):
            if index.type_at(position) is ev.TaskDelegated:
                self.fetched.fetch([position])
                return self.fetched.events[position].conversation_id
        return default


class IndexedLog:
    """A `Log` (log.py) of one read, served by the index."""

    def __init__(self, fetched: Fetched, starts: dict[Key, int], until: int) -> None:
        self.head = until
        self.by_key = ByKey(fetched, starts, until)
        self.task_conversation = TaskConversations(fetched, until)
        self._fetched = fetched
        self.rejected: list[InputRef] = []  # only the error path lists them: a full read
        self.details: dict[int, str] = {}

    @property
    def files_seen(self) -> set[str]:
        """Asked of the index when used (only `document` uses it)."""
        return self._fetched.index.files_seen(self.head)


class IndexedReads:
    """Reads of one store's log through its index, all as of one head."""

    def __init__(self, store: EventStore, index: LogIndex, grow: Grow, lead_types: set[type], until: int | None = None) -> None:
        self.index = index
        self.until = index.head if until is None else min(until, index.head)
        self.fetched = Fetched(store, index)
        self.grow = grow
        self.lead_types = lead_types
        self.lead_kinds = {kind for lead in lead_types for kind in _kinds_of_type(lead)}

    def read(self, wanted: set[Key]) -> IndexedLog:
        """The log a full read of `wanted` would make (`wanted` grows as it would)."""
        return IndexedLog(self.fetched, self._starts(wanted), self.until)

    def _starts(self, wanted: set[Key]) -> dict[Key, int]:
        """Where each wanted key's entries start: 0, or, for a key a kept
        event's `grow` adds, that event's position. Visits, in log order, the
        kept events whose type can grow the keys."""
        starts = dict.fromkeys(wanted, 0)
        pending: list[int] = []
        for key in wanted:
            self._push_leads(pending, key, 0)
        self.fetched.fetch(sorted(set(pending)))
        last = 0
        while pending:
            position = heapq.heappop(pending)
            if position == last:
                continue
            last = position
            grown: set[Key] = set()
            self.grow(self.fetched.events[position], grown)
            for key in grown - wanted:
                wanted.add(key)
                starts[key] = position
                self.fetched.fetch(self._push_leads(pending, key, position))
        return starts

    def _push_leads(self, pending: list[int], key: Key, after: int) -> list[int]:
        """Add the key's events after `after` that can grow the keys; returns them."""
        if key[0] not in self.lead_kinds:
            return []
        pushed = [p for p in self.index.positions(key, after=after, until=self.until) if self.index.type_at(p) in self.lead_types]
        for position in pushed:
            heapq.heappush(pending, position)
        return pushed



def _kinds_of_type(event_type: type) -> set[str]:
    return {kind for kind in KEY_KINDS if event_type in event_types_with(kind)}
