"""Projections: the views of docs/contract/views.md, each a fold over events.

`Views` folds every event into every view and tracks the position it has
reached; `document()` is what `tandem replay TRACE --json` prints. Applied
one event at a time (`apply`, the live engine's way), it also keeps which
views changed and, of the keyed ones, which rows: `row_changes()` says
them in the live stream's words, `take_changed()` starts over.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from tandem.projections.actions import ActionsView
from tandem.projections.alerts import AlertsView
from tandem.projections.base import View
from tandem.projections.cards import CardsView
from tandem.projections.consumers import ConsumersView
from tandem.projections.conversations import ConversationsView
from tandem.projections.health import HealthView
from tandem.projections.inbox import InboxView
from tandem.projections.investigations import InvestigationsView
from tandem.projections.questions import QuestionsView
from tandem.projections.rejections import RejectionsView
from tandem.projections.runtimes import RuntimesView
from tandem.projections.tasks import TasksView
from tandem.projections.usage import UsageView

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
    "runtimes",  # contract v1.2: new top-level keys after `rejections`
    "investigations",  # contract v1.2 section 5.5
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
            RuntimesView(),
            InvestigationsView(),
        ]
        self.by_name = {view.name: view for view in views}
        assert tuple(self.by_name) == VIEW_NAMES
        # The fold's hot loop: per event class, the views' handlers, bound
        # once, each view's `quiet` ones where it has them (the fold reads no
        # changed-or-not answer).
        self.handlers_by_event: dict[type, list[Any]] = {}
        self.position = 0
        self.changed: set[str] = set()  # views `apply` changed since `take_changed`
        # Since `take_changed`: the keys each view's handlers touched (a
        # keyed view's rows), and the views a handler changed without saying
        # which rows.
        self.touched: dict[str, set[Any]] = {view.name: set() for view in views}
        self.whole: set[str] = set()
        # The handlers, with each view's name and touched keys: for `apply`,
        # which keeps which views changed, and which rows.
        self.named_handlers_by_event: dict[type, list[tuple[Any, str, set[Any]]]] = {}
        for view in views:
            assert set(view.quiet) <= set(view.handlers), f"{view.name}: a quiet handler stands for a handler"
            for event_type, handler in view.handlers.items():
                bound = handler.__get__(view)
                folding = view.quiet.get(event_type, handler).__get__(view)
                self.handlers_by_event.setdefault(event_type, []).append(folding)
                self.named_handlers_by_event.setdefault(event_type, []).append((bound, view.name, self.touched[view.name]))

    def apply(self, event: Any) -> None:
        handlers = self.named_handlers_by_event.get(type(event))
        if handlers is not None:
            for handler, name, touched in handlers:
                keys = handler(event)
                if keys is not False:
                    self.changed.add(name)
                    if type(keys) is str:
                        touched.add(keys)
                    elif keys is None or keys is True:
                        self.whole.add(name)
                    elif keys:
                        touched.update(keys)
        self.position += 1

    def take_changed(self) -> list[str]:
        """The views `apply` changed since the last call, in document order;
        their row changes start over."""
        changed = [name for name in self.by_name if name in self.changed]
        for name in changed:
            self.touched[name].clear()
        self.changed.clear()
        self.whole.clear()
        return changed

    def row_changes(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """(name, what changed) for each view `apply` changed since
        `take_changed` (take them before it), in document order, each
        rendered as it is asked for: docs/api.md, "Row changes"."""
        for name, view in self.by_name.items():
            if name in self.changed:
                yield name, view.change(None if name in self.whole else self.touched[name])

    def touched_keys(self) -> Iterator[tuple[str, dict[str, Any] | None]]:
        """(name, the keys of the rows it touched) for each view `apply`
        changed since `take_changed` (take them before it), in document
        order: what `row_changes` would say, the rows left out (None: any row
        may have changed). Costs the keys, never a rendering."""
        for name, view in self.by_name.items():
            if name in self.changed:
                yield name, view.touched_keys(None if name in self.whole else self.touched[name])

    def document(self) -> dict[str, Any]:
        return {name: view.render() for name, view in self.by_name.items()}

    def view(self, name: str) -> Any:
        return self.by_name[name].render()

    def pick(self, name: str, keys: Iterable[str]) -> list[dict[str, Any]]:
        """The rows of `keys` of the `tasks` or `actions` view (those a page
        about one task or action shows), as `view(name)` lists them."""
        return self.by_name[name].pick(keys)  # type: ignore[attr-defined]
