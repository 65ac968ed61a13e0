"""The lifecycle diagrams, for the console's `/lifecycles` page: the SVGs drawn
from domain/lifecycles.py by `python -m tandem.domain.lifecycles --write docs`,
committed under docs/lifecycles/ and installed from there as package data
(`tandem.lifecycle_diagrams`, pyproject.toml), so serving them needs no
Graphviz and reads the same bytes from a checkout or an installed Tandem."""

from __future__ import annotations

import re
from importlib.resources import files

from tandem.domain.lifecycles import LIFECYCLES

# The lifecycles drawn, in the order docs/lifecycles.md shows them.
LIFECYCLE_NAMES: tuple[str, ...] = tuple(lifecycle.name for lifecycle in LIFECYCLES)
DATA_PACKAGE = "tandem.lifecycle_diagrams"


def lifecycle_svg(name: str) -> bytes:
    """The SVG of the lifecycle `name` (one of LIFECYCLE_NAMES: "action",
    "attempt", ...); KeyError for any other name, so no name reads another file."""
    if name not in LIFECYCLE_NAMES:
        raise KeyError(name)
    return files(DATA_PACKAGE).joinpath(f"{name}.svg").read_bytes()


# A drawing's node: Graphviz writes each state as `<g id="nodeN" class="node">`
# followed by its `<title>`, the state's name.
_NODE = re.compile(r'<g id="(node\d+)" class="node">(\s*<title>)([^<]*)(</title>)')


def states_of(name: str) -> tuple[str, ...]:
    """The states of the lifecycle `name` (KeyError for any other name)."""
    if name not in LIFECYCLE_NAMES:
        raise KeyError(name)
    return tuple(next(lifecycle for lifecycle in LIFECYCLES if lifecycle.name == name).states)


def highlighted_svg(name: str, state: str | None) -> str:
    """The SVG of the lifecycle `name`, to be put inline in a page: without
    its XML prologue, its ids prefixed `lifecycle-{name}-` (two drawings on
    one page never share one), and the node of `state` (one of its states;
    any other, or None, marks none) of class `node current`, which the
    console's stylesheet fills. Graphviz's bytes otherwise, from package data."""
    states = states_of(name)
    text = lifecycle_svg(name).decode()

    def mark(found: re.Match[str]) -> str:
        node, opening, title, closing = found.groups()
        current = " current" if title == state and state in states else ""
        return f'<g id="{node}" class="node{current}" data-state="{title}">{opening}{title}{closing}'

    text = _NODE.sub(mark, text[text.index("<svg") :]).replace(' id="', f' id="lifecycle-{name}-')
    return text.replace("<svg", f'<svg class="lifecycle-drawing" data-lifecycle="{name}"', 1)
