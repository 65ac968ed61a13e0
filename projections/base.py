"""What every view shares: a fold over events with its tracked position.

A view applies the events it cares about (`handlers`, by event class) and
ignores the rest; `render()` gives its part of the document of contract section 7.
Views re-decide nothing: events carry the states they set.

A handler may return False to say that what `render()` gives is as it was
(the live stream names only the views a commit changed); any other return
means it may have changed. Where working that out costs more than the
handler's effect, `quiet` names a handler with the same effect and no such
answer: the fold of stored events (replay, snapshots), which reads no
answer, calls it instead (e.g. every input's clock tick in `health`).
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Callable, Iterable
from typing import Any, ClassVar


def rfc3339(value: datetime.datetime | None) -> str | None:
    """RFC 3339 UTC, `Z`-suffixed, microseconds only when present."""
    if value is None:
        return None
    text = value.astimezone(datetime.timezone.utc).replace(tzinfo=None).isoformat()
    return text + "Z"


class View:
    name: ClassVar[str]
    handlers: ClassVar[dict[type, Callable[[Any, Any], None]]]
    # For the fold of stored events: handlers with the same effect as those
    # in `handlers` for their classes, without the changed-or-not answer.
    quiet: ClassVar[dict[type, Callable[[Any, Any], None]]] = {}

    def __init__(self) -> None:
        self.position = 0

    def apply(self, event: Any) -> None:
        handler = self.handlers.get(type(event))
        if handler is not None:
            handler(self, event)

    def render(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


def sorted_rows(rows: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Lists are sorted by their first key, in plain string order (contract section 7)."""
    return [rows[key] for key in sorted(rows)]


def picked_rows(rows: dict[str, dict[str, Any]], keys: Iterable[str]) -> list[dict[str, Any]]:
    """Of a view that renders `sorted_rows(rows)`, the rows of `keys` alone,
    as it renders them (copies: a page reads them after the engine moved on),
    in its order: what a page about one thing shows, at the cost of that
    thing, not of the view's length."""
    return [copy.deepcopy(rows[key]) for key in sorted(set(keys)) if key in rows]
