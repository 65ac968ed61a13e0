"""Tandem's replay package: the engine runtime, and what you need to fuzz and
model-check your own orchestration in pytest (docs/fuzzing.md).

    from tandem.replay import Engine, Located, check, catalog, state_invariant

The engine: `Engine(store, with_views=..., step=...)`, `Located(input, file, line)`.

Invariants (replay/proving/invariants.py, listed in docs/invariants.md):
`catalog()` (the built-in list plus the registered ones), `register(inv)` /
`unregister(inv)`, the decorators `event_invariant` (check(before, event,
step)) and `state_invariant` (check(world)), `Invariant`, `Monitor` (runs
invariants as inputs are applied), `InvariantViolation`, `section_4_codes`.

Bounded checking (replay/proving/check.py): `check(scenario, depth, invariants=...,
step=...)` -> `CheckResult` (with its `counterexample`), `load_scenario`,
`parse_scenario`, `Scenario`, `ScenarioError`.

Traces: `write_trace`, `read_trace`, `check_trace` (the invariants over a
recorded trace), `minimize_trace`, `LogStore` (an in-process store).

Fuzzing (replay/proving/fuzz.py; needs Hypothesis, the `test` extra, and is imported
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
    "Invariant": "tandem.replay.proving.invariants",
    "InvariantViolation": "tandem.replay.proving.invariants",
    "Monitor": "tandem.replay.proving.invariants",
    "Step": "tandem.replay.proving.invariants",
    "World": "tandem.replay.proving.invariants",
    "catalog": "tandem.replay.proving.invariants",
    "register": "tandem.replay.proving.invariants",
    "unregister": "tandem.replay.proving.invariants",
    "event_invariant": "tandem.replay.proving.invariants",
    "state_invariant": "tandem.replay.proving.invariants",
    "section_4_codes": "tandem.replay.proving.invariants",
    "check": "tandem.replay.proving.check",
    "CheckResult": "tandem.replay.proving.check",
    "Counterexample": "tandem.replay.proving.check",
    "Scenario": "tandem.replay.proving.check",
    "ScenarioError": "tandem.replay.proving.check",
    "load_scenario": "tandem.replay.proving.check",
    "parse_scenario": "tandem.replay.proving.check",
    "check_trace": "tandem.replay.proving.check",
    "minimize_trace": "tandem.replay.proving.check",
    "read_trace": "tandem.replay.proving.check",
    "write_trace": "tandem.replay.proving.check",
    "LogStore": "tandem.replay.proving.check",
    "TandemMachine": "tandem.replay.proving.fuzz",
    "FuzzFailure": "tandem.replay.proving.fuzz",
    "machine": "tandem.replay.proving.fuzz",
    "machine_settings": "tandem.replay.proving.fuzz",
    "traces": "tandem.replay.proving.fuzz",
}

__all__ = sorted(_EXPORTS)

# `check` is both a submodule and its main function: bind the function now,
# so that `from replay import check` is the function however the submodule
# was first imported (write `from replay.check import ...` for the module).
from tandem.replay.proving.check import check  # noqa: E402


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
