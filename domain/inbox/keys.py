"""Which ids each event of the inbox area concerns (domain/keys.py says how a
`"kind: path"` is read, and merges every area's `KEYS`)."""

from __future__ import annotations

from tandem.domain import events as ev

KEYS: dict[type[ev.Event], tuple[str, ...]] = {
    ev.ObservationRecorded: ("update: cause_key",),
    ev.ObservationRepeated: ("update: cause_key",),
    ev.UpdateRevised: ("update: cause_key",),
    ev.UpdateTriaged: ("update: cause_key",),
    ev.CardProposed: ("update: cause_key",),
}
