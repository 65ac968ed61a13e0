"""Tandem's replay package: the engine runtime, and what you need to fuzz and
model-check your own orchestration in pytest (docs/fuzzing.md).

    from tandem.replay import Engine, Located, check, catalog, state_invariant

The engine: `Engine(store, with_views=..., step=...)`, `Located(input, file, line)`.

Invariants (replay/invariants.py, listed in docs/invariants.md):
`catalog()` (the built-in list plus the registered ones), `register(inv)` /
`unregister(inv)`, the decorators `event_invariant` (check(before, event,
step)) and `state_invariant` (check(world)), `Invariant`, `Monitor` (runs
invariants as inputs are applied), `InvariantViolation`, `section_4_codes`.

Bounded checking (replay/check.py): `check(scenario, depth, invariants=...,
step=...)` -> `CheckResult` (with its `counterexample`), `load_scenario`,
`parse_scenario`, `Scenario`, `ScenarioError`.

Traces: `write_trace`, `read_trace`, `check_trace` (the invariants over a
recorded trace), `minimize_trace`, `LogStore` (an in-process store).

Fuzzing (replay/fuzz.py; needs Hypothesis, the `test` extra, and is imported
only when one of these names is used): `TandemMachine` (a
RuleBasedStateMachine), `machine(...)` (a customised machine class),
`machine_settings(...)`, `traces()` (a strategy of whole traces),
`FuzzFailure`.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "Engine": "tandem.replay.engine",
    "Located": "tandem.replay.engine",
    "Invariant": "tandem.replay.invariants",
    "InvariantViolation": "tandem.replay.invariants",
    "Monitor": "tandem.replay.invariants",
    "Step": "tandem.replay.invariants",
    "World": "tandem.replay.invariants",
    "catalog": "tandem.replay.invariants",
    "register": "tandem.replay.invariants",
    "unregister": "tandem.replay.invariants",
    "event_invariant": "tandem.replay.invariants",
    "state_invariant": "tandem.replay.invariants",
    "section_4_codes": "tandem.replay.invariants",
    "check": "tandem.replay.check",
    "CheckResult": "tandem.replay.check",
    "Counterexample": "tandem.replay.check",
    "Scenario": "tandem.replay.check",
    "ScenarioError": "tandem.replay.check",
    "load_scenario": "tandem.replay.check",
    "parse_scenario": "tandem.replay.check",
    "check_trace": "tandem.replay.check",
    "minimize_trace": "tandem.replay.check",
    "read_trace": "tandem.replay.check",
    "write_trace": "tandem.replay.check",
    "LogStore": "tandem.replay.check",
    "TandemMachine": "tandem.replay.fuzz",
    "FuzzFailure": "tandem.replay.fuzz",
    "machine": "tandem.replay.fuzz",
    "machine_settings": "tandem.replay.fuzz",
    "traces": "tandem.replay.fuzz",
}

__all__ = sorted(_EXPORTS)

# `check` is both a submodule and its main function: bind the function now,
# so that `from replay import check` is the function however the submodule
# was first imported (write `from replay.check import ...` for the module).
from tandem.replay.check import check  # noqa: E402


def __getattr__(name: str) -> Any:
    # Imported on first use; the fuzzing names need Hypothesis only when asked for.
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'replay' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
