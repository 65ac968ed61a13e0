"""Which ids each event of the consumer area concerns (domain/keys.py says how a
`"kind: path"` is read, and merges every area's `KEYS`)."""

from __future__ import annotations

from tandem.domain import events as ev

KEYS: dict[type[ev.Event], tuple[str, ...]] = {
    ev.ConsumerCreated: ("consumer: consumer_id",),
    ev.CursorMoved: ("consumer: consumer_id",),
    ev.EntriesSkipped: ("consumer: consumer_id",),
    ev.SequenceReset: ("consumer: consumer_id",),
    ev.WatermarkRaised: ("consumer: consumer_id",),
    ev.ReconciliationStarted: ("reconciliation: reconciliation_id", "consumer: consumer_id"),
    ev.ReconciliationCommitted: ("reconciliation: reconciliation_id", "consumer: consumer_id"),
}
