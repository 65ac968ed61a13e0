"""A client's copy of the views, kept by the stream's row changes
(`GET /v1/stream?rows=1`, docs/api.md, "Row changes"): standard library
only, for a Python client as for the tests that hold the server to them.

    replica = Replica(tandem.views())                # GET /v1/views
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

from typing import Any


class Replica:
    def __init__(self, document: dict[str, Any]) -> None:
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
            key = change["key"]
            kept = self.keyed.get(name)
            if kept is None or kept[0] != key:
                kept = self.keyed[name] = (key, {row[key]: row for row in self.views[name]})
            rows = kept[1]
            for row in change["upserted"]:
                rows[row[key]] = row
            for removed in change["removed"]:
                rows.pop(removed, None)

    def document(self) -> dict[str, Any]:
        """The views as `GET /v1/views` answers them at `position`."""
        for name, (_, rows) in self.keyed.items():
            self.views[name] = [rows[key] for key in sorted(rows)]
        return {**self.views, "position": self.position}
