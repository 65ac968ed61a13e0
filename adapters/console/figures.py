"""What the console's templates draw: a task's graph (adapters/console/graph.py)
and a lifecycle with the state a thing is in marked (adapters/diagrams.py),
each as markup made by our code from escaped text (`templates/figures.html`
puts them on a page)."""

from __future__ import annotations

from markupsafe import Markup
from tandem.adapters.console.graph import task_graph
from tandem.adapters.diagrams import LIFECYCLE_NAMES, highlighted_svg, states_of

# An explained thing's kind -> the lifecycle it lives by, where the names differ
# (the others share theirs: attempt, delivery, turn, alert, question, task, ...).
LIFECYCLE_OF_KIND = {"operation": "action"}


def lifecycle_of(kind: str, state: str | None) -> str | None:
    """The lifecycle that a thing of `kind` in `state` is drawn on, or None
    when its kind has none or its state is not one of that lifecycle's (an
    explained cause's state is a sentence, not a state)."""
    name = LIFECYCLE_OF_KIND.get(kind, kind)
    if name not in LIFECYCLE_NAMES or state not in states_of(name):
        return None
    return name


def lifecycle_drawing(name: str, state: str) -> Markup:
    """The lifecycle `name`, inline, `state`'s node marked (package data, no input text in it)."""
    return Markup(highlighted_svg(name, state))


GLOBALS = {"task_graph": task_graph, "lifecycle_of": lifecycle_of, "lifecycle_drawing": lifecycle_drawing}
