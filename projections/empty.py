"""Views whose inputs have not landed yet (inbox, alerts, consumers, cards).

They are part of the document already, empty, so its shape is final; each
gets its own module when its issue lands.
"""

from __future__ import annotations

from typing import Any

from projections.base import View


class EmptyListView(View):
    handlers: dict = {}

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name  # type: ignore[misc]

    def render(self) -> list[Any]:
        return []
