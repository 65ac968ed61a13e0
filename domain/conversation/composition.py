"""Delivery composition (contract v1.2 section 6): the exact payload the
daemon's composer made of a delivery's manifest, recorded before the
provider's acceptance.

The engine freezes the manifest (`DeliveryCreated`: which messages and which
(cause, revision) pairs); `delivery.composed` records the payload's identity
(where it is stored, the digest of its bytes, the adapter that serialized it)
while the delivery is `submitting`. With `engine.configure` `payload_required:
true`, the provider's acceptance of a delivery is refused `payload_unrecorded`
until its payload is recorded. The display text's digest and the causes the
composer must label untrusted are computed by the views (projections/
conversations.py) from events every trace already records.
"""

from __future__ import annotations

from typing import Any

from tandem.domain import events as ev
from tandem.domain import inputs as inp
from tandem.domain.lifecycles import DELIVERY
from tandem.domain.lookups import known_delivery
from tandem.domain.reasons import Rejected
from tandem.domain.records import Delivery, Payload
from tandem.domain.state import State


def decide_composed(state: State, value: inp.ComposeDelivery, seq: int) -> list[ev.Event]:
    """Checks: stale_attempt (no such delivery, or not submitting), then
    payload_mismatch. The same digest again is accepted and changes nothing."""
    conversation, delivery = known_delivery(state, value.delivery_id)
    if not DELIVERY.allows(delivery.attempt_state, "compose"):
        raise Rejected("stale_attempt", f"{value.delivery_id!r} is {delivery.attempt_state}, not submitting")
    recorded = delivery.payload
    if recorded is not None:
        if recorded.digest != value.payload_digest:
            detail = f"{value.delivery_id!r} was composed as {recorded.digest} ({recorded.ref}), not {value.payload_digest}"
            raise Rejected("payload_mismatch", detail)
        return []  # composed already with this digest: accepted, nothing new to record
    return [
        ev.DeliveryComposed(
            cause=seq,
            conversation_id=conversation.conversation_id,
            delivery_id=delivery.delivery_id,
            payload_ref=value.payload_ref,
            payload_digest=value.payload_digest,
            adapter=value.adapter,
            tokens=inp.given(value.tokens),
        )
    ]


def require_payload(state: State, delivery: Delivery, attempt_state: str) -> None:
    """With payload_required, a receipt or reconcile that would make the
    delivery accepted or unknown needs its payload (a refusal leaves nothing
    with the provider, so it needs none)."""
    if state.authority.config.payload_required and attempt_state in PAYLOAD_NEEDED_FOR and delivery.payload is None:
        detail = (
            f"{delivery.delivery_id!r} has no payload recorded (delivery.composed) and payload_required is set: "
            f"its {attempt_state} cannot be recorded"
        )
        raise Rejected("payload_unrecorded", detail)


def _composed(state: State, event: ev.DeliveryComposed) -> None:
    delivery = state.conversation.by_id[event.conversation_id].deliveries[event.delivery_id]
    delivery.payload = Payload(event.payload_ref, event.payload_digest, event.adapter, event.tokens)


# The attempt states a provider holds the delivery in (contract v1.2 section 6).
PAYLOAD_NEEDED_FOR = frozenset({"accepted", "unknown"})

DECIDERS = {inp.ComposeDelivery: decide_composed}
EVOLVERS = {ev.DeliveryComposed: _composed}
REACTIONS: dict[type, Any] = {}
