"""Which ids each event of the consumer area concerns (domain/keys.py says how a
`"kind: path"` is read, and merges every area's `KEYS`)."""

from __future__ import annotations

from tandem.domain import events as ev

KEYS: dict[type[ev.Event], tuple[str, ...]] = {
    ev.ConsumerCreated: (),
    ev.CursorMoved: (),
    ev.EntriesSkipped: (),
    ev.SequenceReset: (),
    ev.WatermarkRaised: (),
    ev.ReconciliationStarted: ("reconciliation: reconciliation_id",),
    ev.ReconciliationCommitted: ("reconciliation: reconciliation_id",),
}
