"""Snapshots: the folded state and views at a position, so a restart folds
only the tail of the log.

A snapshot is a cache. It is never required (without one, a restart folds the
whole log), never part of the log (it lives in the store's snapshot table, is
not exported, and deleting it loses nothing), and never wrong for the code
that reads it:

- **Fingerprint.** Each snapshot is keyed by a fingerprint: SHA-256 of the
  snapshot format version, the Python version and pickle protocol (pickle
  layouts) and the source text of every module that defines what is folded
  (`domain/**/*.py`, `projections/**/*.py`). Any change of that code gives a new
  fingerprint, so old snapshots are simply not found: a full replay, never a
  state folded by other rules.
- **Bound to its log.** The body records the SHA-256 of the stored bytes of
  the event at its position; a snapshot whose event is not there any more (a
  log replaced under it) is not used.

Trust model: the body is a pickle, and unpickling runs code named in it. A
snapshot is therefore trusted data, exactly like the events beside it: whoever
can write the store's tables can already write any history. Do not load
snapshots from a store you would not replay. `tandem verify` re-derives the
state and the views at every snapshot's position and compares (replay/verify.py).

Body layout: a fixed header (magic, position, SHA-256 of the event at the
position, length of the state part), then the state part (a pickle of
`State`), then the views part (a pickle of each view's attributes). The two
parts are separate so an engine without views unpickles only the state, and
`tandem show` only the views.

Cost (bench/run.py, "restart"): pickling costs about 1 µs per object of the
live state and unpickling a little less, and the body is held in memory twice
while written (about 400 bytes per live action, 400 per inbox cause).
"""

from __future__ import annotations

import hashlib
import logging
import pickle
import platform
import struct
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tandem.domain.events import Event
from tandem.domain.state import State
from tandem.projections import Views
from tandem.replay.port import EventStore, SnapshotInfo

snapshot_format = 1
pickle_protocol = 5
# The newest snapshots of the current fingerprint kept after each write (an
# unreadable newest one falls back to the one before); snapshots of other
# fingerprints (other code) are removed by every write.
snapshots_kept_max = 2
# How many stored snapshots a load tries, newest first, before a full replay.
snapshot_load_attempts_max = 2

_magic = b"TANDEM-SNAPSHOT\x00"
_header = struct.Struct(">16sQ32sQ")  # magic, position, sha256(event at position), len(state part)

log = logging.getLogger("tandem.snapshots")


class SnapshotUnusable(Exception):
    """A stored snapshot that cannot be used (bad body, other log, unpicklable)."""


# ---------------------------------------------------------------- fingerprint

_fingerprint: list[str] = []


def folded_sources() -> list[tuple[str, Path]]:
    """The modules whose code defines what a snapshot holds, each with its
    name in the package (`domain/tasks/events.py`): every folder, not only
    the top one, so a change in an area's module is a new fingerprint."""
    import tandem.domain as domain
    import tandem.projections as projections

    files: list[tuple[str, Path]] = []
    for package in (domain, projections):
        folder = Path(package.__file__).resolve().parent  # type: ignore[arg-type]
        paths = sorted(path for path in folder.rglob("*.py") if "__pycache__" not in path.parts)
        files.extend((path.relative_to(folder.parent).as_posix(), path) for path in paths)
    return files


def code_fingerprint() -> str:
    """The running code's fingerprint (computed once per process)."""
    if not _fingerprint:
        digest = hashlib.sha256()
        digest.update(
            f"tandem-snapshot/{snapshot_format}/python {platform.python_version_tuple()[:2]}"
            f"/pickle {pickle_protocol}\n".encode()
        )
        for name, path in folded_sources():
            digest.update(f"{name}\n".encode())
            data = path.read_bytes()
            digest.update(len(data).to_bytes(8, "big"))
            digest.update(data)
        _fingerprint.append(digest.hexdigest())
    return _fingerprint[0]


# ---------------------------------------------------------------------- body


def event_digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def encode_body(position: int, event_data: bytes, state: State | None, views: Views) -> bytes:
    """The body of a snapshot at `position` (whose stored event is `event_data`)."""
    state_part = pickle.dumps(state, protocol=pickle_protocol) if state is not None else b""
    views_part = pickle.dumps(views_data(views), protocol=pickle_protocol)
    header = _header.pack(_magic, position, event_digest(event_data), len(state_part))
    return b"".join((header, state_part, views_part))


def views_data(views: Views) -> dict[str, dict[str, Any]]:
    """What a snapshot keeps of the views: each view's attributes (their
    handlers are class attributes, rebuilt by `Views()`)."""
    return {name: dict(vars(view)) for name, view in views.by_name.items()}


@dataclass(frozen=True, slots=True)
class Body:
    position: int
    digest: bytes  # SHA-256 of the stored event at `position`
    data: memoryview
    state_end: int

    def state(self) -> State:
        if self.state_end == _header.size:
            raise SnapshotUnusable("it holds no state part")
        state = pickle.loads(self.data[_header.size : self.state_end])
        if type(state) is not State:
            raise SnapshotUnusable(f"its state part is a {type(state).__name__}")
        if state.position != self.position:
            raise SnapshotUnusable(f"its state is at position {state.position}, its header says {self.position}")
        return state

    def views(self) -> Views:
        return _views_of(pickle.loads(self.data[self.state_end :]), self.position)


def _views_of(data: Any, position: int) -> Views:
    """Views holding each view's attributes from `data` (`views_data`'s, unpickled)."""
    views = Views()
    if not isinstance(data, dict) or set(data) != set(views.by_name):
        raise SnapshotUnusable("its views part does not hold the views")
    for name, attributes in data.items():
        target = vars(views.by_name[name])
        target.clear()
        target.update(attributes)
    views.position = position
    return views


def copy_views(views: Views) -> Views:
    """A copy of `views` sharing nothing with them: what a snapshot of them
    would load (a pickle's round trip), without the snapshot."""
    return _views_of(pickle.loads(pickle.dumps(views_data(views), protocol=pickle_protocol)), views.position)


def fold_views(views: Views, events: Iterable[Event]) -> int:
    """Apply `events` to `views` as a replay does (no changed-or-not marks); how many."""
    handlers_by_event = views.handlers_by_event
    count = 0
    for event in events:
        handlers = handlers_by_event.get(type(event))
        if handlers is not None:
            for handler in handlers:
                handler(event)
        count += 1
    return count


def decode_body(body: bytes, position: int) -> Body:
    """Check a body's header (it says the `position` it is stored at)."""
    if len(body) < _header.size:
        raise SnapshotUnusable(f"its body is {len(body)} bytes, shorter than a header")
    magic, at, digest, state_length = _header.unpack_from(body)
    if magic != _magic:
        raise SnapshotUnusable("its body does not start with the snapshot header")
    if at != position:
        raise SnapshotUnusable(f"its body says position {at}")
    state_end = _header.size + state_length
    if state_end > len(body):
        raise SnapshotUnusable("its body is cut short")
    return Body(at, digest, memoryview(body), state_end)


# ------------------------------------------------------------ load and write


@dataclass(frozen=True, slots=True)
class Loaded:
    position: int
    size: int  # bytes of the body
    state: State | None
    views: Views | None


def load(store: EventStore, until: int, with_state: bool = True, with_views: bool = True) -> Loaded | None:
    """The newest usable snapshot of the running code at a position <= until,
    with the parts asked for; None when there is none (fold from 0).

    Call it with the collector paused: unpickling makes many objects."""
    fingerprint = code_fingerprint()
    limit = until
    for _ in range(snapshot_load_attempts_max):
        if limit < 1:
            return None
        found = store.latest_snapshot(fingerprint, until=limit)
        if found is None:
            return None
        position, body = found
        try:
            decoded = decode_body(body, position)
            stored = [data for _, data in store.read_encoded(after=position - 1, until=position)]
            if not stored or event_digest(stored[0]) != decoded.digest:
                raise SnapshotUnusable(f"the stored event at {position} is not the one it was taken after")
            state = decoded.state() if with_state else None
            views = decoded.views() if with_views else None
        except Exception as error:  # a cache: any failure means "fold instead"
            log.warning("snapshot at position %d of %s not used (%s: %s)", position, store, type(error).__name__, error)
            limit = position - 1
            continue
        return Loaded(position, len(body), state, views)
    return None


def views_at(store: EventStore, position: int, use_snapshots: bool = True) -> Views:
    """The views after the first `position` events: the newest usable
    snapshot's views at or before it (unless `use_snapshots` is false), and
    the events after it folded. What `tandem show` prints, and what an engine
    without views needs to write a snapshot."""
    views, start = Views(), 0
    if use_snapshots:
        loaded = load(store, position, with_state=False)
        if loaded is not None and loaded.views is not None:
            views, start = loaded.views, loaded.position
    folded = 0
    for page in store.read_pages(after=start, until=position):
        folded += fold_views(views, page)
    views.position = start + folded
    return views


@dataclass(frozen=True, slots=True)
class Written:
    position: int
    fingerprint: str
    size: int
    state_bytes: int
    views_bytes: int
    seconds: float


def write(store: EventStore, state: State, views: Views | None) -> Written:
    """Store a snapshot of `state` (at `state.position`, the store's head) and
    of the views there (folded from the last snapshot when `views` is None),
    then remove the snapshots no longer worth keeping."""
    started = time.perf_counter()
    position = state.position
    if position < 1:
        raise ValueError("nothing to snapshot: the log is empty")
    stored = [data for _, data in store.read_encoded(after=position - 1, until=position)]
    if not stored:
        raise ValueError(f"the store holds no event at position {position}")
    if views is None:
        views = views_at(store, position)
    if views.position != position:
        raise ValueError(f"the views are at position {views.position}, the state at {position}")
    body = encode_body(position, stored[0], state, views)
    if state.position != position or views.position != position:
        # Another thread folded while this one pickled (never allowed: the
        # engine is one thread's at a time): what was pickled is no position's.
        raise ValueError(f"the state or the views moved from position {position} while the snapshot was encoded")
    fingerprint = code_fingerprint()
    store.write_snapshot(position, fingerprint, body)
    prune(store, fingerprint)
    state_bytes = _header.unpack_from(body)[3]
    return Written(
        position,
        fingerprint,
        len(body),
        state_bytes,
        len(body) - _header.size - state_bytes,
        time.perf_counter() - started,
    )


def prune(store: EventStore, fingerprint: str) -> None:
    """Keep the newest `snapshots_kept_max` snapshots of `fingerprint`; remove
    the others and every snapshot of another fingerprint (other code)."""
    mine = [info for info in store.list_snapshots() if info.fingerprint == fingerprint]
    keep = {info.position for info in mine[-snapshots_kept_max:]}
    for info in store.list_snapshots():
        if info.fingerprint != fingerprint or info.position not in keep:
            store.delete_snapshot(info.position, info.fingerprint)


def describe(info: SnapshotInfo) -> str:
    current = "current code" if info.fingerprint == code_fingerprint() else "other code: unused"
    return f"position {info.position:,}  {info.size:,} bytes  fingerprint {info.fingerprint[:12]}  ({current})"
