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
        self.files: set[str | None] = set()

    def _file(self, event: ev.InputAccepted) -> None:
        self.files.add(event.file)  # the fold's (`quiet`)

    def _accepted(self, event: ev.InputAccepted) -> bool:
        if event.file in self.files:
            return False  # nearly every input: a file seen before
        several = len(self.files) > 1
        self._file(event)
        return several != (len(self.files) > 1)  # rows show `file` from the second file on

    def _rejected(self, event: ev.InputRejected) -> None:
        self.files.add(event.file)
        self.rows.append(
            {"line": event.line, "type": event.input.input_type, "reason": event.reason, "file": event.file}
        )

    handlers = {ev.InputAccepted: _accepted, ev.InputRejected: _rejected}
    quiet = {ev.InputAccepted: _file}

    def render(self) -> list[dict[str, Any]]:
        # `file` only when the store holds several traces (contract section 1, 7).
        several = len(self.files) > 1
        return [row if several else {k: v for k, v in row.items() if k != "file"} for row in self.rows]
