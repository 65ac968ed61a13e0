"""The lifecycle classes are the single definition of the transitions: the docs
are drawn from them, and no machine is ever built while deciding or replaying.

docs/lifecycles.md and, under docs/lifecycles/, each lifecycle's DOT (drawn by
python-statemachine's diagram support, with pydot from the test extra) and SVG
(Graphviz's rendering of that DOT) are checked without Graphviz: the DOT must be
what the class draws now, and the SVG must carry the SHA-256 of that DOT (a
comment the drawing command writes) and show every state and event."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from statemachine import StateMachine

from tandem.adapters.diagrams import LIFECYCLE_NAMES, lifecycle_svg
from tandem.adapters.trace import read_trace
from tandem.domain.lifecycles import LIFECYCLES, WRITE_COMMAND, Lifecycle, diagrams_markdown, svg_stamp
from tandem.replay.engine import Engine

ROOT = Path(__file__).resolve().parents[2]
DRAWN = ROOT / "docs" / "lifecycles"
STALE = f"stale: run {WRITE_COMMAND} (it needs Graphviz, Debian's graphviz package)"
SVG = "{http://www.w3.org/2000/svg}"


def test_docs_lifecycles_is_drawn_from_the_classes() -> None:
    assert (ROOT / "docs" / "lifecycles.md").read_text() == diagrams_markdown(), f"docs/lifecycles.md is {STALE}"


def test_docs_lifecycles_holds_a_dot_and_an_svg_of_every_lifecycle_and_nothing_else() -> None:
    drawn = sorted(path.name for path in DRAWN.iterdir() if path.suffix in (".dot", ".svg"))
    assert drawn == sorted(f"{lifecycle.name}{suffix}" for lifecycle in LIFECYCLES for suffix in (".dot", ".svg")), STALE


@pytest.mark.parametrize("lifecycle", LIFECYCLES, ids=lambda lifecycle: lifecycle.name)
def test_each_dot_is_what_its_class_draws_now(lifecycle: Lifecycle) -> None:
    assert (DRAWN / f"{lifecycle.name}.dot").read_text() == lifecycle.dot(), f"docs/lifecycles/{lifecycle.name}.dot is {STALE}"


@pytest.mark.parametrize("lifecycle", LIFECYCLES, ids=lambda lifecycle: lifecycle.name)
def test_each_svg_was_drawn_from_its_dot_and_shows_the_lifecycle(lifecycle: Lifecycle) -> None:
    svg = (DRAWN / f"{lifecycle.name}.svg").read_text()
    assert svg_stamp((DRAWN / f"{lifecycle.name}.dot").read_text()) in svg, f"docs/lifecycles/{lifecycle.name}.svg is {STALE}"
    nodes = {
        "".join(node.find(f"{SVG}title").itertext()): node  # type: ignore[union-attr]
        for node in ET.fromstring(svg).iter(f"{SVG}g")
        if node.get("class") == "node"
    }
    assert sorted(nodes) == sorted(["__initial", *lifecycle.states])  # the initial dot, and every state
    for state in lifecycle.states:
        assert "".join(nodes[state].find(f"{SVG}text").itertext()) == state  # type: ignore[union-attr]
        borders = len(nodes[state].findall(f"{SVG}path"))
        assert borders == (2 if state in lifecycle.terminal else 1), f"{state}: {borders} borders"
    labels = {"".join(text.itertext()) for text in ET.fromstring(svg).iter(f"{SVG}text")}
    assert set(lifecycle.events) <= {event for label in labels for event in label.split(", ")}


def test_the_console_reads_each_svg_by_its_lifecycles_name() -> None:
    assert LIFECYCLE_NAMES == tuple(lifecycle.name for lifecycle in LIFECYCLES)
    for name in LIFECYCLE_NAMES:
        assert lifecycle_svg(name) == (DRAWN / f"{name}.svg").read_bytes()
    for other in ("nope", "../lifecycles", "action.dot", "action.svg", ""):
        with pytest.raises(KeyError):
            lifecycle_svg(other)


def test_no_state_machine_is_built_while_deciding_or_replaying(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: StateMachine, *args: object, **kwargs: object) -> None:
        raise AssertionError("a StateMachine was instantiated")

    monkeypatch.setattr(StateMachine, "__init__", refuse)
    engine = Engine()
    for line in read_trace(str(ROOT / "fixtures" / "gates" / "02_prerequisite_user_away.jsonl")).lines:
        engine.submit(line.item)
    assert engine.views.view("tasks")[0]["state"] == "completed"
