"""The lifecycle diagrams the console shows: SVGs drawn from the machines
(domain/lifecycles.py) at documentation time and committed under
docs/lifecycles/, so serving them needs no Graphviz."""

from __future__ import annotations

from pathlib import Path

from tandem.domain.lifecycles import LIFECYCLES

DRAWINGS = Path(__file__).resolve().parents[2] / "docs" / "lifecycles"


def names() -> list[str]:
    return [lifecycle.name for lifecycle in LIFECYCLES]


def svg(name: str) -> bytes | None:
    if name not in names():
        return None
    path = DRAWINGS / f"{name}.svg"
    return path.read_bytes() if path.exists() else None
