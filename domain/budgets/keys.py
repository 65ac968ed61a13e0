"""Which ids each event of the budgets area concerns (domain/keys.py says how a
`"kind: path"` is read, and merges every area's `KEYS`)."""

from __future__ import annotations

from tandem.domain import events as ev

KEYS: dict[type[ev.Event], tuple[str, ...]] = {
    ev.DeadlineExceeded: ("action: operation_id",),
    ev.DeliveryDeferred: (
        "conversation: conversation_id", "delivery: facts.delivery_id", "update: facts.cause_key", "incident: facts.incident_id",
        "update: facts.urgent",
    ),  # fmt: skip
}
