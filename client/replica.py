"""A client's copy of the views, kept by the stream's row changes
(`GET /v1/stream?rows=1`, docs/api.md, "Row changes"): what `watch` and
`wait_for` read, and what a UI or a test may keep by hand.

    replica = Replica(tandem.views())                # GET /v1/views (typed, or its JSON as a dict)
    for message in tandem.stream(last_event_id=replica.position, rows=True):
        if message.event == "reset":
            replica = Replica(tandem.views())        # reload, then go on
        else:
            replica.apply(message.data)
    replica.document()                               # == GET /v1/views at replica.position

A message at or before the replica's position (one that came before a
reload finished) is skipped: the views it was loaded from hold it already.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tandem.client.results import ROW_KEYS, Views

NOTHING: Any = object()  # what `found` gives when no row or value matches
wait_s_default = 30.0  # wait_for's timeout
tick_s = 1.0  # how often a waiting stream looks at its clock


class Replica:
    def __init__(self, document: dict[str, Any] | Views) -> None:
        if isinstance(document, Views):
            document = {**document.views, "position": document.position}
        self.position: int = document["position"]
        self.views: dict[str, Any] = {name: value for name, value in document.items() if name != "position"}
        # A keyed view's rows by key, once a change said its key (rendered
        # into `views` again by `document()`).
        self.keyed: dict[str, tuple[str, dict[Any, dict[str, Any]]]] = {}

    def apply(self, data: dict[str, Any]) -> bool:
        """Apply one `change` message's data; False (and nothing applied)
        when the replica is at or past its position already."""
        if data["position"] <= self.position:
            return False
        for name, change in data["rows"].items():
            self._apply(name, change)
        self.position = data["position"]
        return True

    def _apply(self, name: str, change: dict[str, Any]) -> None:
        if "value" in change:
            self.views[name] = change["value"]
        elif "rows" in change:
            self.views[name] = change["rows"]
            self.keyed.pop(name, None)
        elif "appended" in change:
            self.views[name] = self.views[name] + change["appended"]
        else:
            rows = self._keyed(name, change["key"])
            for row in change["upserted"]:
                rows[row[change["key"]]] = row
            for removed in change["removed"]:
                rows.pop(removed, None)

    def _keyed(self, name: str, key: str) -> dict[Any, dict[str, Any]]:
        kept = self.keyed.get(name)
        if kept is None or kept[0] != key:
            kept = self.keyed[name] = (key, {row[key]: row for row in self.views[name]})
        return kept[1]

    def document(self) -> dict[str, Any]:
        """The views as `GET /v1/views` answers them at `position`."""
        for name, (_, rows) in self.keyed.items():
            self.views[name] = [rows[key] for key in sorted(rows)]
        return {**self.views, "position": self.position}

    def rows(self, view: str) -> list[dict[str, Any]]:
        """A list view's rows, in the order `GET /v1/views/NAME` gives them."""
        kept = self.keyed.get(view)
        if kept is not None:
            return [kept[1][key] for key in sorted(kept[1])]
        return list(self.views[view])

    def value(self, view: str) -> Any:
        """A view as it is: the value of `health` and `usage`, a list view's rows."""
        return self.rows(view) if isinstance(self.views[view], list) or view in self.keyed else self.views[view]

    def row(self, view: str, key: str | tuple[str, ...]) -> dict[str, Any] | None:
        """The row of `view` keyed `key` (ROW_KEYS; a tuple for `questions`), or None."""
        names = ROW_KEYS.get(view)
        if names is None:
            raise ValueError(f"view {view!r} has no rows by key; those that do: {', '.join(ROW_KEYS)}")
        wanted = (key,) if isinstance(key, str) else tuple(key)
        kept = self.keyed.get(view)
        if kept is not None and len(names) == 1 and kept[0] == names[0]:
            return kept[1].get(wanted[0])
        return next((row for row in self.views[view] if tuple(row.get(n) for n in names) == wanted), None)


@dataclass(frozen=True)
class Change:
    """What `watch` yields: the views after one commit (`replica`, at
    `position`), the views it changed (`views`) and their row changes
    (`rows`, as the stream sent them). `reset`: the replica was loaded
    whole (the first change `watch` yields, and after the stream's
    `reset`): anything may have changed."""

    position: int
    views: Sequence[str]
    rows: dict[str, Any]
    replica: Replica
    reset: bool = False
    # The rows of each view worth a look: every row after a reset or a whole
    # list, else the upserted ones (what `wait_for` tests).
    touched: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def changed(position: int, data: dict[str, Any], replica: Replica) -> Change:
    touched = {name: change["upserted"] for name, change in data["rows"].items() if "upserted" in change}
    for name, change in data["rows"].items():
        if "rows" in change or "appended" in change:
            touched[name] = replica.rows(name)
    return Change(position, tuple(data["views"]), data["rows"], replica, False, touched)


def reloaded(replica: Replica) -> Change:
    return Change(replica.position, tuple(replica.views), {}, replica, True)


def found(change: Change, view: str, predicate: Callable[[Any], bool], key: str | tuple[str, ...] | None) -> Any:
    """What `wait_for` waits for, in this change: the row keyed `key` if it
    passes `predicate`; without a key, the first row of `view` (its value,
    for `health` and `usage`) that passes; else NOTHING."""
    replica = change.replica
    if key is not None:
        row = replica.row(view, key)
        return row if row is not None and predicate(row) else NOTHING
    if not isinstance(replica.views[view], list) and view not in replica.keyed:
        value = replica.views[view]
        return value if (change.reset or view in change.rows) and predicate(value) else NOTHING
    candidates = replica.rows(view) if change.reset else change.touched.get(view, ())
    return next((row for row in candidates if predicate(row)), NOTHING)


class Clock:
    """`watch`'s time: no message for `idle_s`, or past `deadline`
    (time.monotonic()), is a TimeoutError."""

    def __init__(self, idle_s: float | None, deadline: float | None) -> None:
        self.idle_s, self.deadline = idle_s, deadline
        self.last = time.monotonic()
        self.tick_s = tick_s if idle_s is not None or deadline is not None else None

    def expired(self) -> bool:
        now = time.monotonic()
        return (self.deadline is not None and now >= self.deadline) or (
            self.idle_s is not None and now - self.last >= self.idle_s
        )

    def check(self, heard: bool) -> None:
        """After a message (`heard`) or a tick: raise once the time is up."""
        if heard:
            self.last = time.monotonic()
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise TimeoutError("the condition was not met in time")
        if self.idle_s is not None and time.monotonic() - self.last >= self.idle_s:
            raise TimeoutError(f"no change for {self.idle_s} s")
