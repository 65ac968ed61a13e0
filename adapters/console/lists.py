"""The console's lists, complete or paginated (docs/api.md, "The console"):
a list page shows `page_rows` rows at a time (`?page=N`, from 1) and says
how many more there are, linked; a short list on the overview shows its
first few and links the rest ("9 more"). Filters a count links to
(`/tasks?state=active`) are checked against the values the view can hold:
another is a 400 naming them."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tandem.adapters.service import ApiError
from tandem.projections import Views

page_rows = 25  # rows on one page of a list: a screenful (a page costs what it shows)
page_digits_max = 9


@dataclass(frozen=True)
class Window:
    """One page of a list: its rows, where they are in it, and what follows."""

    rows: Sequence[Any]
    page: int  # from 1
    total: int
    size: int

    @property
    def first(self) -> int:
        """The 1-based index of the first row shown (0 when none is)."""
        return (self.page - 1) * self.size + 1 if self.rows else 0

    @property
    def last(self) -> int:
        return self.first + len(self.rows) - 1 if self.rows else 0

    @property
    def more(self) -> int:
        """Rows after this page."""
        return max(0, self.total - (self.page - 1) * self.size - len(self.rows))

    @property
    def next(self) -> int | None:
        return self.page + 1 if self.more else None

    @property
    def previous(self) -> int | None:
        return self.page - 1 if self.page > 1 else None


def window(rows: Sequence[Any], page: int = 1, size: int = page_rows) -> Window:
    start = (page - 1) * size
    return Window(rows[start : start + size], page, len(rows), size)


def page_query(value: str | None) -> int:
    """`?page=N`: a whole number from 1 (none: 1)."""
    if value is None or value == "":
        return 1
    if not (value.isascii() and value.isdigit()) or len(value) > page_digits_max or int(value) < 1:
        raise ApiError(400, "invalid_query", f"?page={value[:40]!r}: a page is a whole number from 1")
    return int(value)


def choice_query(name: str, value: str | None, allowed: Sequence[str]) -> str | None:
    """A filter's value: one of `allowed`, or None when not given."""
    if value is None or value == "":
        return None
    if value not in allowed:
        raise ApiError(400, "invalid_query", f"?{name}={value[:40]!r}: one of {', '.join(allowed)}")
    return value


# ------------------------------------------------------------ over the views
# A list page reads the rows it shows, never the whole view: the keyed views
# keep their keys by state (projections/base.py, `ByState`), newest first.


def listed(views: Views, name: str, states: Sequence[str] | None, page: int, size: int = page_rows, newest_first: bool = True) -> Window:
    """Page `page` of view `name`'s rows in `states` (None: every row),
    newest first (or oldest): each state's rows in the order they entered
    it, the states in the order given; every row in the order the rows were
    first made."""
    view: Any = views.by_name[name]
    start = (page - 1) * size
    if states is None:
        keys = list(itertools.islice(reversed(view.rows) if newest_first else iter(view.rows), start, start + size))
        total = len(view.rows)
    else:
        keys = view.by_state.keys_of(states, start, size, newest_first)
        total = view.by_state.count(states)
    return Window(view.listed(keys), page, total, size)


def live_rows(views: Views, name: str, states: Sequence[str], wanted: Callable[[dict[str, Any]], bool] | None = None) -> list[dict[str, Any]]:
    """Every row of view `name` in `states` (the few live ones) that `wanted`
    keeps (as stored, before rendering), as rendered, sorted by key."""
    view: Any = views.by_name[name]
    keys = sorted(key for state in states for key in view.by_state.of(state) if wanted is None or wanted(view.rows[key]))
    return view.listed(keys)


def count(views: Views, name: str, states: Sequence[str]) -> int:
    return views.by_name[name].by_state.count(states)  # type: ignore[attr-defined, no-any-return]


def retained(views: Views) -> list[dict[str, Any]]:
    """The inbox's pending (retained) rows, as rendered: the few live ones."""
    inbox: Any = views.by_name["inbox"]
    return inbox.listed(list(inbox.retained))
