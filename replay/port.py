"""The store port: what the engine runtime needs from an event store.

`replay/` defines it, `adapters/store/` implements it with eventsourcing's
recorders (memory, SQLite, PostgreSQL). The log is one ordered sequence of
events; a position is the 1-based index of an event in it.

Next to the log, a store keeps **snapshots** (`replay/snapshot.py`): opaque
bodies, each the folded state at a position, keyed by (fingerprint, position).
They are a cache: never required, never part of the log, not exported; a
snapshot whose fingerprint is not the running code's is never used.

The **key table** is another such cache (replay/key_table.py): per key of
domain/keys.py, as a code fingerprint's keyers give them, the positions of
the events that concern it, complete up to a mark (its `through`); written
beside the writer, where snapshots are, and read by a command that explains a
few things of a long log (replay/key_scan.py) instead of scanning it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import NamedTuple, Protocol

from tandem.domain.events import Event


class ConcurrencyError(Exception):
    """Another writer appended first: the expected head is no longer the head.
    Nothing of the refused append was written."""


class StoreError(Exception):
    """The store cannot be opened or read (bad URL, unreachable database...)."""


class Fenced(ConcurrencyError):
    """Another writer claimed the store since this store object did (its
    writer generation is newer): nothing of the refused append was written,
    and no append of this object will be again. A writer that gets it has
    lost its writer lock (its session ended, its lock file was replaced) and
    another writer holds it now: it must stop writing."""


class CommitUnknown(StoreError):
    """The append's answer was lost (the connection cut at COMMIT) and the
    store could not be asked since: its events may or may not be stored.
    Resending the same inputs with their `id`s is safe (a recorded one is
    answered as a duplicate); an input without an id may be applied twice."""


class WriterClaim(NamedTuple):
    """A writer's claim of a store (`EventStore.claim_writer`): its
    generation, the head when it claimed, and who claimed it."""

    generation: int
    after: int  # the head at the claim: this generation's appends start after it
    pid: int | None
    host: str
    since: str  # RFC 3339 UTC


class SnapshotInfo(NamedTuple):
    """A stored snapshot, without its body."""

    position: int
    fingerprint: str
    size: int  # bytes of its body


class EventStore(Protocol):
    url: str

    def head(self) -> int:
        """Position of the last stored event; 0 for an empty store."""
        ...

    def append(self, events: Sequence[Event], expected_head: int) -> int:
        """Append `events` at positions expected_head+1.. in one transaction.

        All or nothing: raises ConcurrencyError (writing nothing) if the head
        is no longer `expected_head`. Returns the new head.
        """
        ...

    def read(self, after: int = 0, until: int | None = None) -> Iterator[tuple[int, Event]]:
        """Events with after < position (<= until), in order, read in large pages."""
        ...

    def read_pages(self, after: int = 0, until: int | None = None) -> Iterator[list[Event]]:
        """The same events without positions, a page (list) at a time: for
        folds, which need no position per event."""
        ...

    def read_encoded(self, after: int = 0, until: int | None = None) -> Iterator[tuple[int, bytes]]:
        """The same events as stored bytes (for export, verify and benchmarks)."""
        ...

    def read_matching(
        self, needles_by_type: Mapping[str, Collection[bytes]], after: int = 0, until: int | None = None
    ) -> Iterator[tuple[int, bytes]]:
        """The stored events after `after` (up to `until`) whose type (its name)
        is a key of `needles_by_type` and whose stored bytes contain one of its needles
        (b"": any event of the type), in order, as stored bytes. For reads
        that keep a few events of a long log (replay/key_scan.py): an SQL
        store filters them in the database."""
        ...

    def read_positions(self, positions: Iterable[int]) -> list[tuple[int, bytes]]:
        """The events at the given positions (in any order, repeats allowed),
        as stored bytes, in position order, each once; a position that holds
        no event (below 1, past the head) is left out. For reads that know
        where their events are (replay/index.py), a few queries per call
        whatever the log's length."""
        ...

    def append_encoded(self, data: Sequence[bytes], expected_head: int) -> int:
        """`append` for events already encoded (import): each item must decode
        as an event (else ValueError, nothing written); it is stored as given,
        byte for byte."""
        ...

    # ------------------------------------------------------------ snapshots

    def claim_writer(self, pid: int | None, host: str, since: str, *, deferred: bool = False) -> WriterClaim | None:
        """Become the store's writer (under its writer lock): a new writer
        generation, greater than every earlier one. From then on every
        append of this store object checks, in its own transaction, that
        this is still the store's generation (else `Fenced`, nothing
        written), so a writer that lost its lock cannot append after a new
        writer claimed the store. A store object that never claimed appends
        unchecked (tests; a store nobody else writes). `deferred`: claimed
        just before this object's first append (None now), so that a command
        that ends up appending nothing writes nothing at all."""
        ...

    def list_claims(self) -> list[WriterClaim]:
        """Every claim of the store, oldest first (its writers' history)."""
        ...

    def write_snapshot(self, position: int, fingerprint: str, body: bytes) -> None:
        """Store a snapshot at `position` (1..head), replacing one with the
        same (fingerprint, position)."""
        ...

    def latest_snapshot(self, fingerprint: str, until: int | None = None) -> tuple[int, bytes] | None:
        """The snapshot with this fingerprint at the greatest position
        (<= until): (position, body); None when there is none."""
        ...

    def list_snapshots(self) -> list[SnapshotInfo]:
        """Every stored snapshot, by position (then fingerprint)."""
        ...

    def delete_snapshot(self, position: int, fingerprint: str) -> None:
        """Remove one snapshot (none there: nothing happens)."""
        ...

    # ------------------------------------------------------------ the key table

    def keys_through(self, fingerprint: str) -> int:
        """The position up to which the key table holds every event's keys as
        the code of `fingerprint` gives them (0: none, or another code's)."""
        ...

    def read_key_positions(self, keys: Collection[tuple[str, str]], until: int) -> dict[tuple[str, str], list[int]]:
        """Per (kind, id) of `keys` ("" for a kind without ids), the ascending
        positions of the key table up to `until` (a key it holds none of: [])."""
        ...

    def read_key_rows(self, until: int) -> Iterator[tuple[str, str, int]]:
        """Every row (kind, id, position) of the key table up to `until`, by
        kind, then id, then position (for `tandem verify`)."""
        ...

    def write_keys(self, fingerprint: str, after: int, through: int, rows: Sequence[tuple[str, str, int]]) -> bool:
        """Add `rows` (kind, id, position; each position after `after`, up to
        `through`, each row once) and move the table's mark to `through`, in
        one transaction, if its mark is `after` for `fingerprint` (0 with
        another code's: that code's rows are removed first); else write
        nothing and answer False (another process indexed meanwhile)."""
        ...

    def close(self) -> None: ...
