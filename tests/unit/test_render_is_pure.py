"""Rendering a view changes nothing in it (issue 22, point 1).

A view's attributes are what a snapshot keeps (`replay.snapshot.views_data`)
and what `tandem verify` compares with the fold of the events. A `render()`
that wrote into them (the conversations view set each row's computed `state`
in place) made a snapshot depend on when someone last read the view: a
writer whose clients read `/v1/views` while `fg` ran kept `state: running`
in its stored row after the turn ended, and its next snapshot disagreed with
the events (`verify`: "fg state: snapshot 'running', re-derived 'idle'").

Every fixture trace, every view rendered after every input: the view's
attributes before and after each render are equal, and a second render
gives what the first gave."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tandem.adapters.trace import read_trace
from tandem.projections.base import sorted_rows
from tandem.projections.conversations import ConversationsView
from tandem.replay.engine import Engine
from tandem.replay.proving import InvariantViolation, Monitor
from tandem.replay.proving.invariants import by_name

REPO = Path(__file__).resolve().parents[2]
TRACES = sorted((REPO / "fixtures" / "traces").glob("*.jsonl")) + sorted((REPO / "fixtures" / "gates").glob("*.jsonl"))


@pytest.mark.parametrize("trace", TRACES, ids=lambda path: path.stem)
def test_rendering_any_view_after_any_input_changes_nothing_in_it(trace: Path) -> None:
    engine = Engine()
    assert engine.views is not None
    for line in read_trace(trace).lines:
        engine.submit(line.item)
        for name, view in engine.views.by_name.items():
            before = copy.deepcopy(vars(view))
            first = copy.deepcopy(view.render())
            assert vars(view) == before, f"{trace.name} line {line.item.line}: rendering {name} changed the view"
            assert view.render() == first, f"{trace.name} line {line.item.line}: {name} renders differently twice"


def _impure_render(self: ConversationsView) -> list[dict[str, Any]]:
    """The conversations view's render before issue 22: its computed `state`
    written into the stored rows."""
    rows = sorted_rows(self.rows)
    for row in rows:
        row["state"] = "running" if row["conversation_id"] in self.running else "idle"
    return rows


def test_the_catalog_finds_a_render_that_writes_into_its_view(monkeypatch: pytest.MonkeyPatch) -> None:
    """`reading_changes_nothing` (docs/invariants.md) fails on the old render,
    at the first input after which a rendered row's state changed."""
    trace = REPO / "fixtures" / "traces" / "lost_provider_ack.jsonl"
    monkeypatch.setattr(ConversationsView, "render", _impure_render)
    engine, monitor = Engine(), Monitor(invariants=by_name(["reading_changes_nothing"]))
    with pytest.raises(InvariantViolation) as violation:
        for line in read_trace(str(trace)).lines:
            events = engine.submit(line.item)
            monitor.observe(line.item.input, events, engine.state, engine.views, line=line.item.line)
    assert violation.value.invariant.name == "reading_changes_nothing"
    assert "conversations" in violation.value.detail
