"""The delivery area's part of the decision state: its records, one mutable
dataclass per thing, filled by its evolvers (domain/records.py gathers every
area's; domain/state.py holds them and the indexes over them). A record's
`state` starts where its lifecycle starts and moves only as its events say.
Records are pickled in snapshots: their module is part of the snapshot
fingerprint."""

from __future__ import annotations

from dataclasses import dataclass, field
from tandem.domain.lifecycles import (
    DELIVERY,
    TURN,
)


@dataclass(slots=True)
class Delivery:
    """A context manifest: what one turn, steer or reseed payload held."""

    delivery_id: str
    turn_id: str | None
    epoch: int
    kind: str
    included: list[tuple[str, int]]
    messages: list[str]
    tokens: int
    attempt_state: str = DELIVERY.initial
    released: bool = False  # its turn failed or was interrupted: it holds nothing now
    orphaned: bool = False  # its turn failed while it was unknown: released once reconciled
    payload: Payload | None = None  # its exact payload, once composed (contract v1.2 section 6)
    checkpoint: str | None = None  # a background reseed's checkpoint (contract v1.2 section 5.3)


@dataclass(slots=True, frozen=True)
class Payload:
    """What `delivery.composed` recorded of a delivery's provider payload."""

    ref: str
    digest: str
    adapter: str
    tokens: int | None


@dataclass(slots=True)
class Turn:
    turn_id: str
    epoch: int
    kind: str
    messages: list[str] = field(default_factory=list)
    deliveries: list[str] = field(default_factory=list)
    state: str = TURN.initial


__all__ = ['Delivery', 'Payload', 'Turn']  # re-exported by domain/records.py
