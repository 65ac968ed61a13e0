"""What a console page shows, read from the engine: its live views (held
briefly, as every engine use is), or the views as they were after the first
P events (`?at=P`, folded on the reader store in a worker thread, snapped
back to an input boundary as `tandem show --at` does). The clock a page
shows ages by is the engine's — the `at` of the last input folded — never
the browser's."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tandem.adapters.http_inputs import ApiError
from tandem.domain import events as ev
from tandem.projections import Views
from tandem.replay.engine import input_boundary, project

position_digits_max = 18
forward_events_max = 100_000  # "next input" looks this far ahead (a batch of inputs is one input's events here)


@dataclass
class Seen:
    """The views a page needs, where they were taken, and the engine's clock."""

    views: dict[str, Any]
    position: int  # the position they are the views after
    head: int  # the store's committed head now
    at: int | None  # the asked position (None: now, live)
    now: datetime.datetime | None  # the last folded input's `at`
    asked: int | None = None  # the position asked for, before snapping back
    previous: int | None = None  # in the past: the input boundary before this one
    next: int | None = None  # and the one after

    @property
    def past(self) -> bool:
        return self.at is not None


def _taken(views: Views, names: Iterable[str]) -> tuple[dict[str, Any], datetime.datetime | None]:
    health = views.by_name["health"]
    return {name: views.view(name) for name in names}, getattr(health, "now", None)


def next_boundary(store: Any, boundary: int, head: int) -> int | None:
    """The input boundary after the input that starts after `boundary`
    (None at the head): where "next input" goes."""
    if boundary >= head:
        return None
    starts = (ev.InputAccepted, ev.InputRejected)
    for position, event in store.read(after=boundary + 1, until=min(head, boundary + forward_events_max)):
        if isinstance(event, starts):
            return position - 1
    return min(head, boundary + forward_events_max)


def position_query(value: str | None, name: str = "at") -> int | None:
    if value is None or value == "":
        return None
    if not (value.isascii() and value.isdigit()) or len(value) > position_digits_max:
        raise ApiError(400, "invalid_query", f"?{name}={value!r}: a position is a whole number, 0 or more")
    return int(value)


async def seen(service: Any, names: Iterable[str], at: int | None) -> Seen:
    """The views `names` now, or after the first `at` events."""
    names = tuple(names)
    if at is None:

        def live() -> Seen:
            engine = service.engine
            views, now = _taken(engine.views, names)
            return Seen(views, engine.committed, engine.committed, None, now)

        return await service.with_engine(live)

    def past() -> Seen:
        head = service.reader.head()
        if at > head:
            raise ApiError(400, "invalid_query", f"?at={at} is past the store's last event ({head})")
        boundary = input_boundary(service.reader, at)
        views, now = _taken(project(service.reader, until=boundary), names)
        previous = input_boundary(service.reader, boundary - 1) if boundary > 0 else None
        return Seen(views, boundary, head, boundary, now, asked=at, previous=previous, next=next_boundary(service.reader, boundary, head))

    return await service.reading(past)
