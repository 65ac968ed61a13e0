"""Projections: the views of spec/TRACE.md section 7, each a fold over events.

`Views` folds every event into every view and tracks the position it has
reached; `document()` is what `tandem replay TRACE --json` prints.
"""

from __future__ import annotations

from typing import Any

from projections.actions import ActionsView
from projections.alerts import AlertsView
from projections.base import View
from projections.cards import CardsView
from projections.consumers import ConsumersView
from projections.conversations import ConversationsView
from projections.health import HealthView
from projections.inbox import InboxView
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
            InboxView(),
            QuestionsView(),
            AlertsView(),
            ConversationsView(),
            ConsumersView(),
            HealthView(),
            UsageView(),
            CardsView(),
            RejectionsView(),
        ]
        self.by_name = {view.name: view for view in views}
        assert tuple(self.by_name) == VIEW_NAMES
        # The fold's hot loop: per event class, the views' handlers, bound once.
        self.handlers_by_event: dict[type, list[Any]] = {}
        for view in views:
            for event_type, handler in view.handlers.items():
                self.handlers_by_event.setdefault(event_type, []).append(handler.__get__(view))
        self.position = 0

    def apply(self, event: Any) -> None:
        handlers = self.handlers_by_event.get(type(event))
        if handlers is not None:
            for handler in handlers:
                handler(event)
        self.position += 1

    def document(self) -> dict[str, Any]:
        return {name: view.render() for name, view in self.by_name.items()}

    def view(self, name: str) -> Any:
        return self.by_name[name].render()
