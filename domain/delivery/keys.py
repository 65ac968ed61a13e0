"""Which ids each event of the delivery area concerns (domain/keys.py says how a
`"kind: path"` is read, and merges every area's `KEYS`)."""

from __future__ import annotations

from tandem.domain import events as ev

KEYS: dict[type[ev.Event], tuple[str, ...]] = {
    ev.TurnStarted: ("turn: turn_id",),
    ev.DeliveryCreated: ("delivery: delivery_id", "turn: turn_id", "update: included[].0", "checkpoint: checkpoint"),
    ev.DeliveryReceipted: ("delivery: delivery_id",),
    ev.TurnEnded: ("turn: turn_id", "delivery: released[]", "delivery: delivery_id"),
    ev.DeliveryComposed: ("delivery: delivery_id",),
}
