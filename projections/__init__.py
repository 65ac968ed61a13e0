"""Projections: the views of spec/TRACE.md section 7, each a fold over events.

`Views` folds every event into every view and tracks the position it has
reached; `document()` is what `tandem replay TRACE --json` prints.
"""

from __future__ import annotations

from typing import Any

from projections.actions import ActionsView
from projections.base import View
from projections.conversations import ConversationsView
from projections.empty import EmptyListView
from projections.health import HealthView
from projections.questions import QuestionsView
from projections.rejections import RejectionsView
from projections.tasks import TasksView
from projections.usage import UsageView

VIEW_NAMES: tuple[str, ...] = (
    "tasks",
    "actions",
    "inbox",
    "questions",
    "alerts",
    "conversations",
    "consumers",
    "health",
    "usage",
    "cards",
    "rejections",
)


class Views:
    def __init__(self) -> None:
        views: list[View] = [
            TasksView(),
            ActionsView(),
            EmptyListView("inbox"),
            QuestionsView(),
            EmptyListView("alerts"),
            ConversationsView(),
            EmptyListView("consumers"),
            HealthView(),
            UsageView(),
            EmptyListView("cards"),
            RejectionsView(),
        ]
        self.by_name = {view.name: view for view in views}
        assert tuple(self.by_name) == VIEW_NAMES
        # Only views that handle something see events: the fold's hot loop.
        self.active = [view for view in views if view.handlers]
        self.position = 0

    def apply(self, event: Any) -> None:
        for view in self.active:
            view.apply(event)
        self.position += 1

    def document(self) -> dict[str, Any]:
        return {name: view.render() for name, view in self.by_name.items()}

    def view(self, name: str) -> Any:
        return self.by_name[name].render()
