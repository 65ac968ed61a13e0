"""Views.pick: a page about one task or action takes only its rows, and they
are exactly the rows the whole view lists (on every fixture), copies the
engine's next commit cannot change under a page being rendered."""

from __future__ import annotations

from pathlib import Path

import pytest

from tandem.adapters.ingest import ingest
from tandem.adapters.trace import read_trace
from tandem.replay.engine import Engine
from tests.integration.test_event_digests import name, traces

KEYS = {"tasks": "task_id", "actions": "operation_id"}


@pytest.mark.parametrize("path", traces(), ids=name)
def test_picked_rows_are_the_views_rows(path: Path) -> None:
    engine = Engine()
    ingest(engine, read_trace(str(path)))
    for view, key in KEYS.items():
        rows = engine.views.view(view)
        ids = [row[key] for row in rows]
        for identifier in ids:
            assert engine.views.pick(view, [identifier]) == [row for row in rows if row[key] == identifier]
        assert engine.views.pick(view, ids[::-1] + ["nothing-named-so"]) == rows  # the view's order, once each
        if rows:
            (picked,) = engine.views.pick(view, [ids[0]])
            picked[key] = "changed"
            assert engine.views.view(view)[0][key] == ids[0]  # a copy
