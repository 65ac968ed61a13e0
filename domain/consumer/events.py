"""The events of the consumer area: immutable facts, in the past tense, one frozen
msgspec Struct each (domain/events.py assembles every area's into the one
union the log is written in)."""

from __future__ import annotations

from tandem.domain.event_base import (  # the bases, re-exported: `ev.Decision`
    Decision,
)


class ConsumerCreated(Decision, frozen=True, kw_only=True):
    consumer_id: str
    epoch: int


class CursorMoved(Decision, frozen=True, kw_only=True):
    consumer_id: str
    epoch: int
    seq: int


class EntriesSkipped(Decision, frozen=True, kw_only=True):
    """A batch's entries at or below the cursor, skipped and counted (v1.1)."""
    consumer_id: str
    epoch: int
    count: int
    cursor_seq: int  # the cursor they were at or below


class SequenceReset(Decision, frozen=True, kw_only=True):
    """Tandem's extension (docs/contract/consumer.md, "Sequence resets"): a
    batch in the cursor's epoch carried, at a seq the consumer had read from
    a batch (`entry_seq` <= `read_seq`), an entry the inbox's repeat rules do
    not hold: the producer restarted its seq. Recorded after the batch's
    `EntriesSkipped`; it names the first such entry and what it carried."""
    consumer_id: str
    epoch: int
    cursor_seq: int  # the cursor the batch's skipped entries were at or below
    read_seq: int  # the highest seq of this epoch the consumer applied from a batch
    entry_seq: int
    source_id: str
    cause_key: str
    fingerprint: str


class WatermarkRaised(Decision, frozen=True, kw_only=True):
    consumer_id: str
    epoch: int
    max_deleted_seq: int


class ReconciliationStarted(Decision, frozen=True, kw_only=True):
    consumer_id: str
    reconciliation_id: str
    reason: str  # "epoch_changed" or "history_deleted"
    epoch_seen: int
    # The cursor it was at, and the epoch's deletion watermark (history_deleted: above the cursor's seq).
    cursor_epoch: int | None = None
    cursor_seq: int | None = None
    max_deleted_seq: int | None = None


class ReconciliationCommitted(Decision, frozen=True, kw_only=True):
    consumer_id: str
    reconciliation_id: str
    epoch: int
    seq: int
    gaps: int
    # What the cursor was committed from: max(retained_head, watermark, where it had reached).
    retained_head: int | None = None
    watermark: int | None = None


__all__ = ['ConsumerCreated', 'CursorMoved', 'EntriesSkipped', 'SequenceReset', 'WatermarkRaised', 'ReconciliationStarted', 'ReconciliationCommitted']  # every name here is the registry's: `ev.Name`
