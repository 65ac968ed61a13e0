"""The views as they were at a past position, kept for the next pages of it.

A page in the past (`?at=P`) folds the views from the newest snapshot at or
before P: that costs what the state at P and the events since that snapshot
cost, not what the page shows. Folds of the past never change (the log is
append-only), so the last few asked for are kept: the page's next visit, the
other pages of the same moment, and the live script's refetch read them
again without folding.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

past_folds_kept_max = 2  # each holds the whole views at its position: memory of the order of the live views


class PastFolds:
    def __init__(self, kept: int = past_folds_kept_max) -> None:
        assert kept >= 1
        self.kept = kept
        self._folds: OrderedDict[int, Any] = OrderedDict()
        self._lock = threading.Lock()  # pages are read in worker threads

    def at(self, position: int, fold: Callable[[int], Any]) -> Any:
        """The views after `position` (an input boundary): kept, or folded now."""
        with self._lock:
            views = self._folds.get(position)
            if views is not None:
                self._folds.move_to_end(position)
                return views
        views = fold(position)  # outside the lock: two different positions fold at once
        with self._lock:
            self._folds[position] = views
            self._folds.move_to_end(position)
            while len(self._folds) > self.kept:
                self._folds.popitem(last=False)
        return views
