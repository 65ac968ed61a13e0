"""Tandem's proving tools: what you need to fuzz and model-check your own
orchestration in pytest (docs/fuzzing.md, docs/invariants.md).

    from tandem.replay.proving import check, catalog, state_invariant, machine

Invariants (invariants.py, the catalog; the checks in event_invariants.py and
state_invariants.py, listed in docs/invariants.md): `catalog()` (the built-in
list plus the registered ones), `register(inv)` / `unregister(inv)`, the
decorators `event_invariant` (check(before, event, applying)) and
`state_invariant` (check(world)), `Invariant`, `Applying`, `World`,
`Monitor` (runs invariants as inputs are applied), `InvariantViolation`,
`section_4_codes`.

Bounded checking (check.py, scenario.py): `check(scenario, depth,
invariants=..., step=...)` -> `CheckResult` (with its `counterexample`),
`load_scenario`, `parse_scenario`, `Scenario`, `ScenarioError`, `depth_max`.

Traces (traces.py): `write_trace`, `check_trace` (the invariants over a
recorded trace), `minimize_trace`; `single_drops` (drops.py) -> `Drops`:
the single inputs of a failing trace whose removal makes every invariant
hold (what `tandem check` and a `FuzzFailure` print). The store (store.py): `ProvingStore`, an
in-process event store with crash injection, and `InjectedCrash`.

Fuzzing (fuzz.py, generators/): `TandemMachine` (a RuleBasedStateMachine),
`machine(...)` (a customised machine class), `machine_settings(...)`,
`traces()` (a strategy of whole traces), `FuzzFailure`. These need
Hypothesis (the `test` extra), and are imported when first used: this
package is the Hypothesis boundary, and the rest of it (what `tandem check`
runs) does without.
"""

from __future__ import annotations

import importlib
from typing import Any

from tandem.replay.proving.check import CheckResult, Counterexample, check, depth_max
from tandem.replay.proving.drops import Drop, Drops, single_drops
from tandem.replay.proving.invariants import by_name, catalog, register, unregister
from tandem.replay.proving.model import Applying, Invariant, InvariantViolation, World, event_invariant, state_invariant
from tandem.replay.proving.monitor import Monitor
from tandem.replay.proving.restated import section_4_codes
from tandem.replay.proving.scenario import Scenario, ScenarioError, load_scenario, parse_scenario
from tandem.replay.proving.store import InjectedCrash, ProvingStore
from tandem.replay.proving.traces import check_trace, minimize_trace, write_trace

# The fuzzing names, and the module each is imported from on first use.
_FUZZING: dict[str, str] = {
    "TandemMachine": "tandem.replay.proving.fuzz",
    "FuzzFailure": "tandem.replay.proving.fuzz",
    "machine": "tandem.replay.proving.fuzz",
    "machine_settings": "tandem.replay.proving.fuzz",
    "traces": "tandem.replay.proving.generators.kinds",
}

__all__ = sorted(
    [
        "Applying", "CheckResult", "Counterexample", "Drop", "Drops", "InjectedCrash", "Invariant", "InvariantViolation", "Monitor",
        "ProvingStore", "Scenario", "ScenarioError", "World", "by_name", "catalog", "check", "check_trace",
        "depth_max", "event_invariant", "load_scenario", "minimize_trace", "parse_scenario", "register",
        "section_4_codes", "single_drops", "state_invariant", "unregister", "write_trace", *_FUZZING,
    ]
)  # fmt: skip


def __getattr__(name: str) -> Any:
    module = _FUZZING.get(name)
    if module is None:
        raise AttributeError(f"module 'tandem.replay.proving' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
