"""What every view shares: a fold over events with its tracked position.

A view applies the events it cares about (`handlers`, by event class) and
ignores the rest; `render()` gives its part of the document of contract section 7.
Views re-decide nothing: events carry the states they set.

A handler may return False to say that what `render()` gives is as it was
(the live stream names only the views a commit changed); any other return
means it may have changed. A keyed list view's handlers (its `key` set)
return instead the key of the row whose rendering they may have changed,
or the keys as a tuple, list or set (maybe empty): the stream's row changes
render those rows alone (docs/api.md, "Row changes"). They must name every
row whose rendering they change, also through what `rendered` reads beside
the row (a task's progress times, a conversation's running turn, an inbox
row's holder). True or None means anything may have changed: the view is
then sent whole. The fold of stored events reads no return value. Where
working the answer out costs more than the handler's effect, `quiet` names
a handler with the same effect and no such answer: the fold of stored
events (replay, snapshots) calls it instead (e.g. every input's clock tick
in `health`).
"""

from __future__ import annotations

import copy
import datetime
import itertools
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
    handlers: ClassVar[dict[type, Callable[[Any, Any], Any]]]
    # For the fold of stored events: handlers with the same effect as those
    # in `handlers` for their classes, without the changed-or-not answer.
    quiet: ClassVar[dict[type, Callable[[Any, Any], Any]]] = {}
    # A keyed list view: the name of its rows' first key, by which `rows`
    # holds them and `render()` sorts them; its handlers return the keys
    # they touched. None: the view says its changes otherwise (`change`).
    key: ClassVar[str | None] = None

    def __init__(self) -> None:
        self.position = 0

    def apply(self, event: Any) -> None:
        handler = self.handlers.get(type(event))
        if handler is not None:
            handler(self, event)

    def render(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def rendered(self, row: dict[str, Any]) -> dict[str, Any]:
        """One row of a keyed view as `render()` gives it."""
        return row

    def listed(self, keys: Iterable[Any]) -> list[dict[str, Any]]:
        """The rows of `keys` (each held), as `render()` gives them, in the
        order given: copies, for a page read after the engine moved on."""
        rows: dict[Any, dict[str, Any]] = self.rows  # type: ignore[attr-defined]
        return [copy.deepcopy(self.rendered(rows[key])) for key in keys]

    def change(self, touched: Iterable[Any] | None) -> dict[str, Any]:
        """What changed since the last change was taken (`Views.take_changed`),
        in the stream's words (docs/api.md, "Row changes"), given the keys the
        handlers touched (None: anything may have changed). Keyed views:
        their touched rows as rendered, and the touched keys no row has now;
        any other list: the rows whole."""
        if self.key is None or touched is None:
            return {"rows": self.render()}
        rows: dict[str, dict[str, Any]] = self.rows  # type: ignore[attr-defined]
        keys = sorted(touched)
        return {
            "key": self.key,
            "upserted": [self.rendered(rows[key]) for key in keys if key in rows],
            "removed": [key for key in keys if key not in rows],
        }

    def touched_keys(self, touched: Iterable[Any] | None) -> dict[str, Any] | None:
        """Which rows changed, without the rows (`?rows=keys`): `{"key":
        FIELD, "touched": [KEY, ...]}`, the keys a `change` would upsert or
        remove; None when it names no keys (a whole list, a value)."""
        if self.key is None or touched is None:
            return None
        return {"key": self.key, "touched": sorted(touched)}


def sorted_rows(rows: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Lists are sorted by their first key, in plain string order (contract section 7)."""
    return [rows[key] for key in sorted(rows)]


def picked_rows(rows: dict[str, dict[str, Any]], keys: Iterable[str]) -> list[dict[str, Any]]:
    """Of a view that renders `sorted_rows(rows)`, the rows of `keys` alone,
    as it renders them (copies: a page reads them after the engine moved on),
    in its order: what a page about one thing shows, at the cost of that
    thing, not of the view's length."""
    return [copy.deepcopy(rows[key]) for key in sorted(set(keys)) if key in rows]


class ByState:
    """A keyed view's keys by their row's state, each state's in the order
    its rows entered it: what a console page counts and lists (newest
    first), at the cost of what it shows, never of the view's length. The
    view moves a key at every change of its row's state (`enter`); the
    invariants catalog checks it against the rows (I-VIEW-STATES)."""

    def __init__(self) -> None:
        self.keys: dict[str, dict[Any, None]] = {}

    def __eq__(self, other: object) -> bool:  # the same keys, in the same order
        return isinstance(other, ByState) and self._ordered() == other._ordered()

    def __repr__(self) -> str:
        return f"ByState({self._ordered()!r})"

    def _ordered(self) -> dict[str, list[Any]]:
        return {state: list(keys) for state, keys in self.keys.items()}

    def enter(self, key: Any, state: str, before: str | None = None) -> None:
        """The row of `key` is in `state` now, from `before` (None: a new row)."""
        if before == state:
            return
        if before is not None:
            del self.keys[before][key]
        self.keys.setdefault(state, {})[key] = None

    def count(self, states: Iterable[str]) -> int:
        return sum(len(self.keys.get(state, ())) for state in states)

    def keys_of(self, states: Iterable[str], start: int, size: int, newest_first: bool = True) -> list[Any]:
        """Keys `start` to `start + size` of `states`' keys, each state's
        newest first (else oldest first), the states in the order given."""
        found: list[Any] = []
        for state in states:
            keys = self.keys.get(state, {})
            if start >= len(keys):
                start -= len(keys)
                continue
            ordered = reversed(keys) if newest_first else iter(keys)
            found.extend(itertools.islice(ordered, start, start + size - len(found)))
            start = 0
            if len(found) == size:
                break
        return found

    def of(self, state: str) -> Iterable[Any]:
        """Every key in `state` (for the few live ones: sort or filter them)."""
        return self.keys.get(state, {}).keys()
