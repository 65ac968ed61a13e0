"""The key table: a cache beside the log (replay/port.py), so that a command
explaining a few things of a long log reads where they are instead of
scanning it (replay/key_scan.py: `tandem whatif --store`).

It holds, per key of domain/keys.py as `LogIndex` has them ((kind, id), id
"" for a kind without ids), the positions of the events that concern it,
each event once per key: exactly `LogIndex`'s keys, for every event up to
the table's mark (`through`). The mark carries the code's fingerprint
(replay/snapshot.py), as a snapshot does: keys are what the running code's
keyers say, so another code's table is never read, and is replaced whole
by the next upkeep.

Upkeep (`index_keys`) goes where snapshots are written beside the writer (the
snapshot process, adapters/snapshots_beside.py, and `tandem snapshot`): it
reads the log from the mark to a position in parts of `keys_events_per_write_max`
events, each part written with the mark moved in one transaction, so the
table is always complete to its mark and an upkeep stopped halfway loses
only its last part. Two upkeeps at once: the second finds the mark moved
and stops (`write_keys` answers False). The writer's appends never wait for
it, nor pay for it: the table lags the head by up to a snapshot's spacing,
and a reader scans the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tandem.domain import events as ev
from tandem.replay.index import KEYERS, KEYED_TAGS
from tandem.replay.port import EventStore

keys_events_per_write_max = 50_000  # events indexed per transaction
_TAG_START = len(b'{"event":"')

KeyRow = tuple[str, str, int]  # (kind, id, position)


def key_rows(position: int, data: bytes) -> list[KeyRow]:
    """The key table's rows of one stored event: each of its keys once (an
    event of a type with no keys is not decoded)."""
    if data.startswith(b'{"event":"') and data[_TAG_START : data.find(b'"', _TAG_START)] not in KEYED_TAGS:
        return []
    event = ev.decode_event(data)
    return [(kind, identifier, position) for kind, identifier in dict.fromkeys(KEYERS[type(event)](event))]


def index_keys(
    store: EventStore, fingerprint: str, until: int | None = None, progress: Callable[[int, int], None] | None = None
) -> int:
    """Bring the store's key table for `fingerprint` up to `until` (the head
    when None): the events indexed (0: it was there, or another upkeep is
    writing it). `progress(through, until)` after each part written."""
    end = store.head() if until is None else min(until, store.head())
    through = store.keys_through(fingerprint)
    indexed = 0
    while through < end:
        part = min(end, through + keys_events_per_write_max)
        rows = [row for position, data in store.read_encoded(after=through, until=part) for row in key_rows(position, data)]
        if not store.write_keys(fingerprint, through, part, rows):
            return indexed  # another upkeep moved the mark: it goes on from there
        indexed += part - through
        through = part
        if progress is not None:
            progress(through, end)
    return indexed


def first_key_difference(derived: list[KeyRow], stored: Iterable[KeyRow]) -> tuple[int, str] | None:
    """Where the key table (`stored`, in key order) differs from the rows
    derived from the log (`derived`, any order): (the position, what); None
    when they are the same rows."""
    expected = iter(sorted(derived))
    for row in stored:
        wanted = next(expected, None)
        if wanted == row:
            continue
        if wanted is None or row < wanted:
            return row[2], f"the key table lists {_named(row)} at position {row[2]}; the event there has no such key"
        return wanted[2], f"the key table is missing {_named(wanted)} at position {wanted[2]}"
    wanted = next(expected, None)
    if wanted is not None:
        return wanted[2], f"the key table is missing {_named(wanted)} at position {wanted[2]}"
    return None


def _named(row: KeyRow) -> str:
    return f"({row[0]}, {row[1]!r})" if row[1] else f"({row[0]})"
