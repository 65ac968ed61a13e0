"""The consumer area's part of the decision state: its records, one mutable
dataclass per thing, and its part of the State (`state.<area>`: the records
and the indexes over them), written only by this area's code (domain/records.py
gathers every area's records; domain/state.py holds the parts). A record's
`state` starts where its lifecycle starts and moves only as its events say.
Records are pickled in snapshots: their module is part of the snapshot
fingerprint."""

from __future__ import annotations

from dataclasses import dataclass, field
from tandem.domain.lifecycles import (
    CONSUMER,
)


@dataclass(slots=True)
class Consumer:
    """A change-log consumer: its durable cursor, deletion watermarks and gaps."""

    consumer_id: str
    epoch: int
    seq: int = 0
    watermarks: dict[int, int] = field(default_factory=dict)  # epoch -> max_deleted_seq seen
    reached: dict[int, int] = field(default_factory=dict)  # epoch -> highest seq the cursor reached in it
    read: dict[int, int] = field(default_factory=dict)  # epoch -> highest seq applied from a batch (not a commit)
    state: str = CONSUMER.initial
    reconciliation_id: str | None = None  # the open one
    reconciliations: int = 0  # ids issued: {consumer_id}/r{n}
    gaps: int = 0
    skipped: int = 0  # batch entries at or below the cursor
    resets: int = 0  # sequence resets seen (Tandem's extension)

    def watermark(self, epoch: int | None = None) -> int:
        return self.watermarks.get(self.epoch if epoch is None else epoch, 0)


@dataclass(slots=True)
class ConsumerState:
    """The consumer area's part of the decision state (`state.consumer`): written
    only by this area's evolvers, read by others through it."""

    by_id: dict[str, Consumer] = field(default_factory=dict)


__all__ = ['ConsumerState', 'Consumer']  # re-exported by domain/records.py
