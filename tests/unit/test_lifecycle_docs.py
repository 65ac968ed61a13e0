"""The lifecycle classes are the single definition of the transitions: the docs
are drawn from them, and no machine is ever built while deciding or replaying."""

from __future__ import annotations

from pathlib import Path

import pytest
from statemachine import StateMachine

from tandem.adapters.trace import read_trace
from tandem.domain.lifecycles import diagrams_markdown
from tandem.replay.engine import Engine

ROOT = Path(__file__).resolve().parents[2]


def test_docs_lifecycles_is_drawn_from_the_classes() -> None:
    assert (ROOT / "docs" / "lifecycles.md").read_text() == diagrams_markdown(), (
        "docs/lifecycles.md is stale: run python -m tandem.domain.lifecycles > docs/lifecycles.md"
    )


def test_no_state_machine_is_built_while_deciding_or_replaying(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: StateMachine, *args: object, **kwargs: object) -> None:
        raise AssertionError("a StateMachine was instantiated")

    monkeypatch.setattr(StateMachine, "__init__", refuse)
    engine = Engine()
    for line in read_trace(str(ROOT / "fixtures" / "gates" / "02_prerequisite_user_away.jsonl")).lines:
        engine.submit(line.item)
    assert engine.views.view("tasks")[0]["state"] == "completed"
