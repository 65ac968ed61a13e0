"""The `rejections` view: every refused input, in input order, with its line."""

from __future__ import annotations

from typing import Any

from tandem.domain import events as ev
from tandem.projections.base import View


class RejectionsView(View):
    name = "rejections"

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, Any]] = []
        # Whether the store holds inputs of several files: the first input's
        # file, then a flag (not every file seen: over HTTP every request is
        # a file of its own, `http@N`, and the set grew with every input).
        self.first_file: tuple[str | None] | None = None  # a 1-tuple: None is a file too
        self.several = False

    def _file(self, event: ev.InputAccepted | ev.InputRejected) -> None:
        """The fold's (`quiet`): note the input's file."""
        if self.several:
            return
        if self.first_file is None:
            self.first_file = (event.file,)
        elif self.first_file[0] != event.file:
            self.several = True

    def _accepted(self, event: ev.InputAccepted) -> bool:
        several = self.several
        self._file(event)
        return several != self.several  # rows show `file` from the second file on: all changed

    def _rejected(self, event: ev.InputRejected) -> tuple[int] | bool:
        """The new row's index, or True when every row changed (`file` shows from now on)."""
        several = self.several
        self._file(event)
        self.rows.append(
            {"line": event.line, "type": event.input.input_type, "reason": event.reason, "file": event.file}
        )
        return several != self.several or (len(self.rows) - 1,)

    handlers = {ev.InputAccepted: _accepted, ev.InputRejected: _rejected}
    quiet = {ev.InputAccepted: _file}

    def change(self, touched: Any) -> dict[str, Any]:
        """The rows appended (their indexes touched), or every row once the
        rows sent before changed (they show `file` from the second file on)."""
        if touched is None:
            return {"rows": self.render()}
        return {"appended": [self._shown(self.rows[index]) for index in sorted(touched)]}

    def _shown(self, row: dict[str, Any]) -> dict[str, Any]:
        # `file` only when the store holds several traces (contract section 1, 7).
        return row if self.several else {k: v for k, v in row.items() if k != "file"}

    def render(self) -> list[dict[str, Any]]:
        return [self._shown(row) for row in self.rows]
