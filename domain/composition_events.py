"""The delivery composition's own event (contract v1.2 section 6): the
payload the daemon's composer made of a delivery's manifest. Part of the one
union of domain/events.py (which re-exports it: `ev.DeliveryComposed`)."""

from __future__ import annotations

from tandem.domain.event_base import Decision


class DeliveryComposed(Decision, frozen=True, kw_only=True):
    """A `submitting` delivery's exact payload, recorded before the provider's
    acceptance: where it is stored, the digest of its bytes, the adapter that
    serialized it and its measured size (None when not reported)."""

    conversation_id: str
    delivery_id: str
    payload_ref: str
    payload_digest: str
    adapter: str
    tokens: int | None
