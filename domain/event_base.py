"""The two bases of every event (domain/events.py): `Event`, tagged by its
class name in `"event"`, and `Decision`, an event caused by an input.
A module of their own so that the events of an area kept apart
(domain/tool_events.py) share them without importing domain/events.py."""

from __future__ import annotations

from msgspec import Struct


class Event(Struct, frozen=True, tag_field="event", kw_only=True, omit_defaults=False):
    pass


class Decision(Event, frozen=True, kw_only=True):
    """An event caused by an input; `cause` is that input's sequence number."""

    cause: int
