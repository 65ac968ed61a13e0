"""The lifecycle diagrams, for the console's `/lifecycles` page: the SVGs drawn
from domain/lifecycles.py by `python -m tandem.domain.lifecycles --write docs`,
committed under docs/lifecycles/ and installed from there as package data
(`tandem.lifecycle_diagrams`, pyproject.toml), so serving them needs no
Graphviz and reads the same bytes from a checkout or an installed Tandem."""

from __future__ import annotations

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
