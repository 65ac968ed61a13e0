"""The two bases every event derives from (domain/events.py re-exports them):
a module of its own so that an area's events can live beside the union
(domain/health_events.py) without importing it."""

from __future__ import annotations

from msgspec import Struct


class Event(Struct, frozen=True, tag_field="event", kw_only=True, omit_defaults=False):
    pass


class Decision(Event, frozen=True, kw_only=True):
    """An event caused by an input; `cause` is that input's sequence number."""

    cause: int
