"""Which ids each event of the reviews area concerns (domain/keys.py says how a
`"kind: path"` is read, and merges every area's `KEYS`)."""

from __future__ import annotations

from tandem.domain import events as ev

KEYS: dict[type[ev.Event], tuple[str, ...]] = {
    ev.SourceAliased: ("source: source_id", "source: alias_of"),
    ev.BatchJoined: ("update: cause_key", "batch: batch_id"),
    ev.BatchRevised: ("update: cause_key", "batch: batch_id"),
    ev.BatchFixSuperseded: ("action: operation_id",),
}
