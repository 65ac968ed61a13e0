"""What a console page shows, read from the engine: its live views (held
briefly, as every engine use is), or the views as they were after the first
P events (`?at=P`, folded on the reader store in a worker thread, snapped
back to an input boundary as `tandem show --at` does). The clock a page
shows ages by is the engine's — the `at` of the last input folded — never
the browser's."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tandem.adapters.service import ApiError, Service
from tandem.domain import events as ev
from tandem.projections import Views
from tandem.replay.engine import input_boundary, project

position_digits_max = 18
forward_events_max = 100_000  # "next input" looks this far ahead for its input's end
RECORDS = (ev.InputAccepted, ev.InputRejected)  # every input's events start with its record
STARTS = (*RECORDS, ev.SourceProgressed)  # a batch's marker ends its last input's events; it is no input


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


Pick = Callable[[Views], dict[str, Any]]  # a page's rows of one thing, by view, and what they need read with them


def _taken(views: Views, names: Iterable[str], pick: Pick | None) -> tuple[dict[str, Any], datetime.datetime | None]:
    health = views.by_name["health"]
    taken = {name: views.view(name) for name in names}
    if pick is not None:
        taken.update(pick(views))
    return taken, getattr(health, "now", None)


def _last_record(store: Any, boundary: int) -> tuple[int, Any] | None:
    """The record (position, event) of the last input folded into the views
    after `boundary` (None before the first), read back in growing windows."""
    window = 64
    until = boundary
    while until > 0:
        after = max(0, until - window)
        records = [(position, event) for position, event in store.read(after=after, until=until) if isinstance(event, RECORDS)]
        if records:
            return records[-1]
        until, window = after, window * 2
    return None


def previous_boundary(store: Any, boundary: int) -> int | None:
    """The views before the last input folded into those after `boundary`
    (None before the first): where "previous input" goes. A batch's
    SourceProgressed marker is no input: stepping back over it would show
    the same views again."""
    record = _last_record(store, boundary)
    return None if record is None else record[0] - 1


def clock_at(store: Any, boundary: int) -> datetime.datetime | None:
    """The engine's clock in the views after `boundary` (the last input's
    `at`), read from the log alone: what a page of the past that shows no
    view needs of them."""
    record = _last_record(store, boundary)
    return None if record is None else record[1].input.at


def next_boundary(store: Any, boundary: int, head: int) -> int | None:
    """The views after the first input after `boundary`, its events ended
    (None if no input follows): where "next input" goes. Reads forward in
    growing windows (an input's events are few), at most
    `forward_events_max` events."""
    first: int | None = None
    end = min(head, boundary + forward_events_max)
    after, window = boundary, 64
    while after < end:
        until = min(end, after + window)
        for position, event in store.read(after=after, until=until):
            if first is None:
                if isinstance(event, RECORDS):
                    first = position
            elif isinstance(event, STARTS):
                return position - 1
        after, window = until, window * 2
    return end if first is not None or end < head else None


def position_query(value: str | None, name: str = "at") -> int | None:
    if value is None or value == "":
        return None
    if not (value.isascii() and value.isdigit()) or len(value) > position_digits_max:
        raise ApiError(400, "invalid_query", f"?{name}={value!r}: a position is a whole number, 0 or more")
    return int(value)


async def seen(service: Service, names: Iterable[str], at: int | None, pick: Pick | None = None) -> Seen:
    """The views `names` now, or after the first `at` events; with `pick`,
    also the rows it picks (a page about one task or action: only its rows)."""
    names = tuple(names)
    if at is None:

        def live() -> Seen:
            engine = service.engine
            assert engine.views is not None
            views, now = _taken(engine.views, names, pick)
            return Seen(views, engine.committed, engine.committed, None, now)

        return await service.with_engine(live)

    def past() -> Seen:
        head = service.reader.head()
        if at > head:
            raise ApiError(400, "invalid_query", f"?at={at} is past the store's last event ({head})")
        boundary = input_boundary(service.reader, at)
        if names or pick is not None:
            views, now = _taken(service.past.at(boundary, lambda position: project(service.reader, until=position)), names, pick)
        else:  # a page of the log alone (the timeline, search, an explain chain): no fold
            views, now = {}, clock_at(service.reader, boundary)
        previous = previous_boundary(service.reader, boundary)
        return Seen(views, boundary, head, boundary, now, asked=at, previous=previous, next=next_boundary(service.reader, boundary, head))

    return await service.reading(past)
