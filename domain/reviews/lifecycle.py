"""The lifecycles of the reviews area: none. Nothing of this area has states of
its own (what it decides moves the things of other areas, through their
lifecycles); the module is here so that every area has the same files."""

from __future__ import annotations

from tandem.domain.lifecycle_base import Lifecycle

LIFECYCLES: tuple[Lifecycle, ...] = ()
__all__: list[str] = []
