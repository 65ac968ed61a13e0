"""The areas of the domain, in one place: each is a folder `domain/<area>/`
with the same few modules (its inputs, events, state, rules, lifecycle, keys
and reasons), and docs/contract/ has a file of the same name. The kernel's
registries (domain/events.py, domain/inputs.py, domain/rules.py, ...) assemble
what every area declares, in this order; a new area is added here and to the
registries' imports (an assert at import names the one forgotten).
"""

from __future__ import annotations

import importlib
from types import ModuleType

AREAS: tuple[str, ...] = (
    "authority", "tasks", "actions", "inbox", "reviews", "consumer", "conversation", "alerts", "budgets",
    "tools", "health", "investigations",
)  # fmt: skip

# The modules every area has (tests/unit/test_layout.py checks the folders).
AREA_MODULES: tuple[str, ...] = ("inputs", "events", "state", "rules", "lifecycle", "keys", "reasons")


def area_modules(module: str) -> tuple[ModuleType, ...]:
    """Each area's `module` (e.g. "events"), in `AREAS` order."""
    assert module in AREA_MODULES, module
    return tuple(importlib.import_module(f"tandem.domain.{area}.{module}") for area in AREAS)


def exported(modules: tuple[ModuleType, ...], kind: type) -> list[type]:
    """The classes of `kind` that `modules` export (`__all__`), in order."""
    found = [getattr(module, name) for module in modules for name in module.__all__]
    return [value for value in found if isinstance(value, type) and issubclass(value, kind)]
