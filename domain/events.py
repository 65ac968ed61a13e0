"""Events: immutable facts, in the past tense, one frozen msgspec Struct each.

Every transaction starts with the input that caused it (`InputAccepted` or
`InputRejected`, carrying the decoded input itself), so any store can be
re-derived from its own inputs and verified. Every other event names that
input's sequence number in `cause` (contract section 8) and carries the resulting
states it sets, so a projection is a plain fold that re-decides nothing.

Provenance (contract section 8): an event the engine decides by itself also
records the facts it relied on (the Structs of domain/facts.py), so that
`tandem explain` walks recorded links and re-decides nothing. Which ids each
event concerns is declared once, in its area's keys.py.

Encoding: the tagged union is written as JSON with its tag in `"event"`. New
fields get defaults; existing field types never change (msgspec's rule). The
encoding is deterministic: the same trace gives the same bytes.

This module is the registry: each area declares its events in
`domain/<area>/events.py` (its `__all__`); they are re-exported here
(`ev.TaskDelegated`) and assembled, in `domain/areas.py`'s order, into the
one union the log is written in.
"""

from __future__ import annotations

import sys
from typing import Any, Union

import msgspec

from tandem.domain.areas import area_modules, exported
from tandem.domain.event_base import Decision, Event, InputAccepted, InputRejected, SourceProgressed  # noqa: F401
from tandem.domain.facts import (  # noqa: F401 (the Structs events carry: `ev.BlockFact` is facts.BlockFact)
    AlertFacts, ApprovalRef, BatchFixFacts, BlockFact, CandidateUpdate, ClaimFacts, DeadlineFacts, DeferralFacts,
    DeliveryBudget, Envelope, PreemptFacts, PrerequisiteFact, PrerequisiteSpec, QuestionRef, RefusalFacts, Revisions, SourceFacts,
    TaskStateFact, ToolFacts,
)
from tandem.domain.authority.events import *  # noqa: F403
from tandem.domain.tasks.events import *  # noqa: F403
from tandem.domain.actions.events import *  # noqa: F403
from tandem.domain.inbox.events import *  # noqa: F403
from tandem.domain.reviews.events import *  # noqa: F403
from tandem.domain.consumer.events import *  # noqa: F403
from tandem.domain.conversation.events import *  # noqa: F403
from tandem.domain.conversation.events import *  # noqa: F403
from tandem.domain.alerts.events import *  # noqa: F403
from tandem.domain.budgets.events import *  # noqa: F403
from tandem.domain.tools.events import *  # noqa: F403
from tandem.domain.health.events import *  # noqa: F403
from tandem.domain.investigations.events import *  # noqa: F403

_AREA_EVENTS = area_modules("events")
_here = sys.modules[__name__]
assert all(getattr(_here, name, None) is getattr(module, name) for module in _AREA_EVENTS for name in module.__all__), (
    "every area's events are re-exported here (an area missing from the imports above)"
)

_TYPES: tuple[type[Event], ...] = (InputAccepted, InputRejected, SourceProgressed, *exported(_AREA_EVENTS, Event))
AnyEvent: Any = Union[_TYPES]  # type: ignore[valid-type]

EVENT_TYPES: dict[str, type[Event]] = {cls.__name__: cls for cls in AnyEvent.__args__}  # type: ignore[attr-defined]

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(AnyEvent)


def event_name(event: Event) -> str:
    return type(event).__name__


def encode_event(event: Event) -> bytes:
    return _encoder.encode(event)


def decode_event(data: bytes) -> AnyEvent:
    return _decoder.decode(data)
