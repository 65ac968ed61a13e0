"""An in-memory index of the log, so that a read about one thing visits that
thing's events, not the whole log (explain with `index=`, replay/timeline.py,
replay/input_timeline.py).

`LogIndex` holds, up to its `head`:

* per key of domain/keys.py (`("action", "op-1")`, `("heartbeat",)`), the
  ascending positions of the events that concern it — exactly the keys
  `event_keys` gives, each event once per key;
* per position, its event's type (one byte);
* the positions of the inputs' records (`InputAccepted`/`InputRejected`),
  each with its input's type, and per input type (`"action.propose"`) the
  positions of its records; the positions of the batches' `SourceProgressed`
  (which belong to no input). From these, `record_of(position)`: the record of
  the input whose transaction holds an event;
* the first `files_seen_max` distinct trace files, with where each was first
  seen (explain's `other_files`).

It is built by folding the log in pages (`LogIndex.build(store)`: stored
bytes; a record is read by a regular expression, not decoded; an event with no
key is not decoded) and kept current by `add(head_before, events)`, one
commit at a time (a LiveEngine listener: the decoded events, no I/O). One
writer at a time (`add` and `catch_up` take a lock); readers may read while
it writes: every read is bounded by a head the reader took first, and
positions only ever get appended.

Memory (measured with `bytes_used()`, and the same within 2 % with
tracemalloc, on bench/workload.py's synthetic steady state of 99,885 events,
49,312 keys): about 85 bytes an event, most of it the keys (an id string,
its dict slot, and its positions: one int while a key has one position, an
array("I") from the second on); the per-position parts are 1 byte (the
type) and about 1 byte each for the records and the records by input type.
A log of 1M such events: ~85 MB. Building it: ~2.9 µs an event from SQLite
(0.29 s for those 99,885 events); `add`: ~1.9 µs an event.

Bounds: positions fit in 32 bits (`positions_max`); at most `keys_max`
distinct keys and `input_types_max` input types. Past a bound the index
raises `IndexFull` and its owner drops it (reads then go to the log).
"""

from __future__ import annotations

import re
import sys
import threading
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec

from tandem.domain import events as ev
from tandem.domain.keys import KEY_EXTRACTORS, KINDS, SPECS, KeySpec
from tandem.replay.explain.log import RECORD_FILE, files_seen_max
from tandem.replay.port import EventStore

Key = tuple[str, ...]

positions_max = 2**32 - 1  # array("I")
keys_max = 5_000_000  # distinct keys (~100 bytes each: ~0.5 GB)
input_types_max = 255  # array("B")

EVENT_TYPES: tuple[type[ev.Event], ...] = tuple(ev.EVENT_TYPES.values())
assert len(EVENT_TYPES) <= 255, "an event type is one byte"
TYPE_IDS: dict[type, int] = {event_type: number for number, event_type in enumerate(EVENT_TYPES)}
_TAG_IDS: dict[bytes, int] = {event_type.__name__.encode(): number for event_type, number in TYPE_IDS.items()}
_RECORD_IDS = frozenset({TYPE_IDS[ev.InputAccepted], TYPE_IDS[ev.InputRejected]})
_PROGRESS_ID = TYPE_IDS[ev.SourceProgressed]
_TAG_START = len(b'{"event":"')
# A record as encode_event writes it, up to its input's type; another spelling is decoded.
_RECORD = re.compile(
    rb'\{"event":"Input(?:Accepted|Rejected)","seq":\d+,"file":(?:null|"(?:[^"\\]|\\.)*"),'
    rb'"line":(?:null|\d+),"input":\{"type":"([^"\\]+)"'
)

Keyer = Callable[[Any], list[tuple[str, str]]]  # an event's keys as (kind, id), "" for a singleton


class IndexFull(Exception):
    """The log outgrew one of the index's bounds: drop the index."""


class IndexGap(Exception):
    """A commit does not follow the index's head (another writer appended):
    catch up from the store."""


def _simple(spec: KeySpec) -> tuple[str, str | None, bool, str | None] | None:
    """(kind, field, is a list, unless) for a key that is one field or each
    item of one list field (or a singleton: field None); None for the others."""
    if not spec.fields:
        return spec.kind, None, False, None
    if spec.steps or len(spec.fields) != 1 or spec.fields[0][:1].isdigit():
        return None
    field = spec.fields[0]
    return spec.kind, field.removesuffix("[]"), field.endswith("[]"), spec.unless


def _keyer(event_type: type, specs: tuple[KeySpec, ...]) -> Keyer:
    """What domain/keys.py's extractor gives, as (kind, id) pairs: direct
    attribute reads when every key is a field or a list's items (most event
    types), the extractor itself otherwise (tests/integration/
    test_explain_indexed.py checks they agree on every fixture)."""
    simple = [_simple(spec) for spec in specs]
    if any(spec is None for spec in simple):
        extract = KEY_EXTRACTORS[event_type]
        return lambda event: [split_key(key) for key in extract(event)]
    plan = [spec for spec in simple if spec is not None]

    def keys(event: Any) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        for kind, field, listed, unless in plan:
            if field is None:
                found.append((kind, ""))
                continue
            value = getattr(event, field)
            for identifier in (value or ()) if listed else (value,):
                if identifier and identifier != unless:
                    found.append((kind, identifier))
        return found

    return keys


KEYERS: dict[type, Keyer] = {event_type: _keyer(event_type, specs) for event_type, specs in SPECS.items()}
KEYED_TAGS = frozenset(event_type.__name__.encode() for event_type, specs in SPECS.items() if specs)


def split_key(key: Key) -> tuple[str, str]:
    """A key as (kind, id), "" for a kind without ids: the key table's and the keyers' shape."""
    return key[0], key[1] if len(key) > 1 else ""


class LogIndex:
    """The index of one store's log up to `head` (see the module's docstring)."""

    def __init__(self) -> None:
        self.head = 0
        self._lock = threading.Lock()
        self._types = array("B")  # per position - 1
        self._keys: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}  # kind -> id -> int | array("I")
        self._key_count = 0
        self._records = array("I")
        self._record_inputs = array("B")  # per record, its input type's number
        self._input_names: list[str] = []
        self._input_numbers: dict[str, int] = {}
        self._by_input: list[array[int]] = []  # per input type's number, its records' positions
        self._progress = array("I")
        self._files: dict[str, int] = {}  # file -> where first seen (at most files_seen_max)

    # ------------------------------------------------------------ building

    @classmethod
    def build(cls, store: EventStore, until: int | None = None) -> LogIndex:
        """The index of `store`'s log up to `until` (its head if None)."""
        index = cls()
        index.catch_up(store, until)
        return index

    @classmethod
    def after(cls, head: int) -> LogIndex:
        """An index of the events after `head` only, fed by `add(head, ...)`:
        the positions up to `head` are not indexed (their reads go to another
        index: replay/key_scan.py's `Spliced`)."""
        index = cls()
        index.head = head
        index._types = array("B", bytes(head))  # placeholders: one byte a position
        return index

    def catch_up(self, store: EventStore, until: int | None = None) -> int:
        """Index the events after `head` up to `until` (the store's head if
        None), a page at a time; returns the new head."""
        page: list[tuple[int, bytes]] = []
        for item in store.read_encoded(after=self.head, until=until):
            page.append(item)
            if len(page) == 4_096:
                self._fold_encoded(page)
                page = []
        self._fold_encoded(page)
        return self.head

    def _fold_encoded(self, page: list[tuple[int, bytes]]) -> None:
        if not page:
            return
        if page[-1][0] > positions_max:
            raise IndexFull(f"positions past {positions_max}")
        with self._lock:
            assert page[0][0] == self.head + 1, (page[0][0], self.head)
            for position, data in page:
                tag = data[_TAG_START : data.find(b'"', _TAG_START)]
                number = _TAG_IDS.get(tag)
                if number in _RECORD_IDS and (matched := _RECORD.match(data)) is not None:
                    named = RECORD_FILE.match(data)
                    file = msgspec.json.decode(named.group(1)) if named is not None else None
                    self._types.append(number)
                    self._note_record(position, matched.group(1).decode(), file)
                elif number is not None and number not in _RECORD_IDS and tag not in KEYED_TAGS:
                    self._types.append(number)
                    if number == _PROGRESS_ID:
                        self._progress.append(position)
                else:
                    self._note(position, ev.decode_event(data), data)
            self.head = page[-1][0]

    def add(self, head_before: int, events: Sequence[ev.Event]) -> bool:
        """Index one commit (the events after `head_before`). A commit the
        index already holds is skipped (False); one that does not follow its
        head raises IndexGap."""
        with self._lock:
            if head_before + len(events) <= self.head:
                return False
            if head_before != self.head:
                raise IndexGap(f"a commit after position {head_before}, but the index ends at {self.head}")
            if head_before + len(events) > positions_max:
                raise IndexFull(f"positions past {positions_max}")
            for position, event in enumerate(events, start=head_before + 1):
                self._note(position, event)
            self.head = head_before + len(events)
            return True

    def _note(self, position: int, event: ev.Event, data: bytes | None = None) -> None:
        number = TYPE_IDS[type(event)]
        self._types.append(number)
        if number in _RECORD_IDS:
            assert isinstance(event, (ev.InputAccepted, ev.InputRejected))
            file = event.file
            if data is not None:  # what explain's read notes of stored bytes
                named = RECORD_FILE.match(data)
                file = msgspec.json.decode(named.group(1)) if named is not None else None
            self._note_record(position, event.input.input_type, file)
        elif number == _PROGRESS_ID:
            self._progress.append(position)
        else:
            for kind, identifier in KEYERS[type(event)](event):
                self._note_key(kind, identifier, position)

    def _note_record(self, position: int, input_type: str, file: str | None) -> None:
        number = self._input_numbers.get(input_type)
        if number is None:
            if len(self._input_names) >= input_types_max:
                raise IndexFull(f"over {input_types_max} input types")
            number = self._input_numbers[input_type] = len(self._input_names)
            self._input_names.append(input_type)
            self._by_input.append(array("I"))
        self._records.append(position)
        self._record_inputs.append(number)
        self._by_input[number].append(position)
        if file is not None and len(self._files) < files_seen_max and file not in self._files:
            self._files[file] = position

    def _note_key(self, kind: str, identifier: str, position: int) -> None:
        table = self._keys[kind]
        held = table.get(identifier)
        if held is None:
            if self._key_count >= keys_max:
                raise IndexFull(f"over {keys_max} keys")
            table[identifier] = position  # one position: an int, not an array
            self._key_count += 1
        elif type(held) is int:
            if held != position:  # an event is kept once per key
                table[identifier] = array("I", (held, position))
        elif held[-1] != position:
            held.append(position)

    # ------------------------------------------------------------- reading

    def positions(self, key: Key, after: int = 0, until: int | None = None) -> Sequence[int]:
        """The positions of the events with `key`, after `after`, up to `until`
        (the head if None), ascending."""
        kind, identifier = split_key(key)
        held = self._keys.get(kind, {}).get(identifier)
        if held is None:
            return ()
        if type(held) is int:
            return (held,) if after < held <= (self.head if until is None else until) else ()
        end = len(held) if until is None else bisect_right(held, until)
        return held[bisect_right(held, after, 0, end) : end]

    def count(self, key: Key) -> int:
        held = self._keys.get(key[0], {}).get(split_key(key)[1])
        return 0 if held is None else 1 if type(held) is int else len(held)

    def kinds_of(self, identifier: str) -> list[str]:
        """The key kinds with an event under `identifier` (not the singletons)."""
        return [kind for kind, table in self._keys.items() if identifier and identifier in table]

    def type_at(self, position: int) -> type[ev.Event]:
        return EVENT_TYPES[self._types[position - 1]]

    def record_before(self, position: int) -> int | None:
        """The latest record at or before `position` (what explain's read
        takes as an event's input)."""
        found = bisect_right(self._records, position)
        return self._records[found - 1] if found else None

    def record_of(self, position: int) -> int | None:
        """The record of the input whose events hold `position`: None for a
        batch's SourceProgressed and what follows it before the next record
        (as /v1/events says)."""
        if self._types[position - 1] == _PROGRESS_ID:
            return None
        record = self.record_before(position)
        if record is None:
            return None
        progressed = bisect_right(self._progress, position)
        return None if progressed and self._progress[progressed - 1] > record else record

    def input_type_of(self, record: int) -> str:
        """The input type of the record at `record`."""
        found = bisect_left(self._records, record)
        assert found < len(self._records) and self._records[found] == record, record
        return self._input_names[self._record_inputs[found]]

    def input_types(self) -> list[str]:
        return list(self._input_names)

    def records(self, input_type: str | None = None, until: int | None = None) -> Sequence[int]:
        """The positions of the records (of one input type), up to `until`."""
        if input_type is None:
            held = self._records
        else:
            number = self._input_numbers.get(input_type)
            if number is None:
                return ()
            held = self._by_input[number]
        return held if until is None else held[: bisect_right(held, until)]

    def input_end(self, record: int, until: int | None = None) -> int:
        """The last position of the input whose record is at `record`: before
        the next record or the batch's SourceProgressed (or at `until`)."""
        end = self.head if until is None else until
        following = bisect_right(self._records, record)
        if following < len(self._records):
            end = min(end, self._records[following] - 1)
        progressed = bisect_right(self._progress, record)
        if progressed < len(self._progress):
            end = min(end, self._progress[progressed] - 1)
        return end

    def files_seen(self, until: int | None = None) -> set[str]:
        """Of the first `files_seen_max` distinct trace files, those seen by `until`."""
        with self._lock:
            seen = list(self._files.items())
        return {file for file, first in seen if until is None or first <= until}

    def bytes_used(self) -> int:
        """About how much memory the index holds (its containers and strings)."""
        size = sys.getsizeof
        total = sum(size(part) for part in (self._types, self._records, self._record_inputs, self._progress, self._keys))
        total += sum(size(held) for held in self._by_input) + sum(size(name) for name in self._input_names)
        for table in self._keys.values():
            total += size(table) + sum(size(identifier) + size(held) for identifier, held in table.items())
        return total

    def __repr__(self) -> str:
        return f"<LogIndex head={self.head} keys={self._key_count}>"


def keys_of(event: ev.Event) -> list[Key]:
    """The event's keys as the index holds them (domain/keys.py's, in its order)."""
    return list(dict.fromkeys((kind, identifier) if identifier else (kind,) for kind, identifier in KEYERS[type(event)](event)))


def positions_in(index: LogIndex, keys: Iterable[Key], until: int) -> list[int]:
    """The positions of several keys up to `until`, ascending, each once."""
    return sorted({position for key in keys for position in index.positions(key, until=until)})
