"""Reading the log for explain: one pass keeps the events under the wanted
keys with their inputs, deciding from the stored bytes, before decoding,
which events can concern them (most concern nothing explain looks for, and
decoding is most of a read's cost); the `Resolver` looks facts up by key."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec

from tandem.domain import events as ev
from tandem.domain.keys import KEY_EXTRACTORS
from tandem.projections.base import rfc3339
from tandem.replay.explain.keys import Key, read_filter
from tandem.replay.explain.model import InputRef, Source
from tandem.replay.port import EventStore

# Distinct trace files a read notes (to tell whether the store holds others).
files_seen_max = 64
# Refused inputs named when an id names nothing.
rejected_listed_max = 5
# The rejections whose detail holds the facts they relied on (contract v1.2 section 10:
# duplicate_batch names the other action, the batch and its revisions; context_not_reseeded
# the reseed it waits for, or the context recovery, its figures and the inputs admitted): listed with it.
REJECTION_FACTS = frozenset({"duplicate_batch", "context_not_reseeded"})

Entry = tuple[int, Any, "InputRef | None"]  # (position, event, its input)
Grow = Callable[[Any, set[Key]], None]  # adds the keys a kept event leads to

RECORD_FILE = re.compile(rb'\{"event":"Input(?:Accepted|Rejected)","seq":\d+,"file":("(?:[^"\\]|\\.)*")')
_RECORD_TAGS = frozenset({b"InputAccepted", b"InputRejected"})
_TAG_START = len(b'{"event":"')


def input_ref(record: ev.InputAccepted | ev.InputRejected) -> InputRef:
    value = record.input
    return InputRef(
        seq=record.seq,
        file=record.file,
        line=record.line,
        type=value.input_type,
        id=value.id,
        actor=value.sender,
        at=rfc3339(value.at) or "",
        rejected=record.reason if isinstance(record, ev.InputRejected) else None,
    )


def source(entry: Entry | None) -> Source | None:
    if entry is None:
        return None
    position, event, reference = entry
    return Source(position=position, event=type(event).__name__, input=reference)


def at_of(entry: Entry) -> str | None:
    return entry[2].at if entry[2] is not None else None


def of_type(*kinds: type) -> Callable[[Any], bool]:
    return lambda event: isinstance(event, kinds)


def _strings(value: Any) -> Iterable[str]:
    """Every string in a JSON value (an input naming an id names it as a string)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _count_until(entries: Sequence[Entry], before: int) -> int:
    """How many of `entries` (in log order) are at or before `before`: by
    their positions alone (an indexed read's entries are fetched when read)."""
    positions = getattr(entries, "positions", None)
    if positions is not None:
        return bisect_right(positions, before)
    return bisect_right(entries, before, key=_position)


def _position(entry: Entry) -> int:
    return entry[0]


class Log:
    """One read of the log, keeping the events under the wanted keys (and the
    ones `grow` adds on the way) with their inputs. Inputs' records are
    decoded only for a kept event."""

    def __init__(self) -> None:
        self.by_key: dict[Key, list[Entry]] = defaultdict(list)
        self.task_conversation: dict[str, str] = {}
        self.head = 0
        # Up to `files_seen_max` of the store's trace files: enough to know
        # whether there are others than an explanation's (over HTTP every
        # request is one, `http@P`, so never all of them).
        self.files_seen: set[str] = set()
        self.rejected: list[InputRef] = []  # refused inputs that mention `mention` (at most rejected_listed_max)
        self.details: dict[int, str] = {}  # by seq: the detail of those whose reason's facts it holds

    def read(
        self,
        store: EventStore,
        wanted: set[Key],
        grow: Grow,
        prefilter: bool = True,
        mention: str | None = None,
        until: int | None = None,
    ) -> None:
        """Up to `until` (the head when None). `prefilter=False` decodes every
        event (the tests check it keeps the same)."""
        record_data: bytes | None = None
        reference: InputRef | None = None
        needles_by_tag = read_filter(wanted)
        mentioned = msgspec.json.encode(mention)[1:-1] if mention else None
        position = 0
        for position, data in store.read_encoded(until=until):
            tag = data[_TAG_START : data.find(b'"', _TAG_START)]
            if tag in _RECORD_TAGS:
                record_data, reference = data, None
                if len(self.files_seen) < files_seen_max and (named := RECORD_FILE.match(data)) is not None:
                    self.files_seen.add(msgspec.json.decode(named.group(1)))
                if mentioned is not None and tag == b"InputRejected" and mentioned in data:
                    self._note_rejected(data, mention)
                continue
            if prefilter:
                needles = needles_by_tag.get(tag)
                if needles is None:
                    continue
                for needle in needles:  # (a loop, not any(): this runs for most events of a read)
                    if needle in data:
                        break
                else:
                    continue
            event = ev.decode_event(data)
            if type(event) is ev.TaskDelegated:
                self.task_conversation[event.task_id] = event.conversation_id
            keys = dict.fromkeys(KEY_EXTRACTORS[type(event)](event))  # an event is kept once per key
            if not any(key in wanted for key in keys):
                continue
            before = len(wanted)
            grow(event, wanted)  # keys it leads to apply to itself too
            if len(wanted) != before:
                needles_by_tag = read_filter(wanted)
            if reference is None and record_data is not None:
                reference = input_ref(ev.decode_event(record_data))
            for key in keys:
                if key in wanted:
                    self.by_key[key].append((position, event, reference))
        self.head = position

    def _note_rejected(self, data: bytes, mention: str | None) -> None:
        """A refused input whose bytes hold `mention`: listed if it names it."""
        record = ev.decode_event(data)
        if len(self.rejected) < rejected_listed_max and mention in _strings(msgspec.to_builtins(record.input)):
            self.rejected.append(input_ref(record))
            if record.reason in REJECTION_FACTS:
                self.details[record.seq] = record.detail


class Resolver:
    """Finds the events facts name, by key; records what it was asked for
    (the keys the next read of the log must keep)."""

    def __init__(self, log: Log) -> None:
        self.log = log
        self.asked: set[Key] = set()

    def entries(self, key: Key) -> list[Entry]:
        self.asked.add(key)
        return self.log.by_key.get(key, [])

    def merged(self, keys: Iterable[Key]) -> list[Entry]:
        """The entries of several keys in log order, each event once."""
        found = {entry[0]: entry for key in keys for entry in self.entries(key)}
        return [found[position] for position in sorted(found)]

    def find(self, key: Key, before: int | None = None, where: Callable[[Any], bool] | None = None) -> Entry | None:
        """The latest event with `key` at or before `before` (any, if None)
        that satisfies `where`."""
        entries = self.entries(key)
        end = len(entries) if before is None else _count_until(entries, before)
        for index in range(end - 1, -1, -1):
            entry = entries[index]
            if where is None or where(entry[1]):
                return entry
        return None

    def source(self, key: Key, before: int | None = None, where: Callable[[Any], bool] | None = None) -> Source | None:
        return source(self.find(key, before, where))

    def task_conversation(self, task_id: str | None) -> str | None:
        return self.log.task_conversation.get(task_id) if task_id is not None else None
