"""The catalog's invariant of contract v1.2 section 6 (delivery composition):
"freeze a bounded manifest and exact payload durably before provider I/O".
Restated from the state, not asked of domain/conversation/composition.py, so the check
does not share the code it checks."""

from __future__ import annotations

from tandem.domain import events as ev
from tandem.domain.events import Event
from tandem.domain.state import State
from tandem.replay.proving.model import Applying, event_invariant

# The attempt states in which the provider holds (or may hold) a delivery.
_WITH_THE_PROVIDER = ("accepted", "unknown")


def _delivery(state: State, conversation_id: str, delivery_id: str):
    conversation = state.conversation.by_id.get(conversation_id)
    return conversation.deliveries.get(delivery_id) if conversation is not None else None


@event_invariant
def payload_frozen_before_acceptance(before: State, event: Event, applying: Applying) -> str | None:
    """A delivery's exact payload is frozen before the provider holds it:
    under `payload_required`, no delivery becomes accepted or unknown without
    its recorded payload; and a payload is recorded only while the delivery is
    submitting, once (a second `delivery.composed` never replaces it)."""
    if isinstance(event, ev.DeliveryReceipted) and event.attempt_state in _WITH_THE_PROVIDER:
        delivery = _delivery(before, event.conversation_id, event.delivery_id)
        if before.authority.config.payload_required and delivery is not None and delivery.payload is None:
            return f"{event.delivery_id} became {event.attempt_state} under payload_required with no payload recorded"
    elif isinstance(event, ev.DeliveryComposed):
        delivery = _delivery(before, event.conversation_id, event.delivery_id)
        if delivery is None or delivery.attempt_state != "submitting":
            state = delivery.attempt_state if delivery is not None else "unknown"
            return f"{event.delivery_id} composed while it is {state}, not submitting"
        if delivery.payload is not None:
            return f"{event.delivery_id} composed again: {delivery.payload.digest} replaced by {event.payload_digest}"
    return None
