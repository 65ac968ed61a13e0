"""Counterexample traces: write them, check them, make them short.

`write_trace` writes a JSON Lines trace (inputs and `//` comments) that
`tandem replay` replays; `check_trace` applies a trace to a fresh engine with
the invariants after every input; `minimize_trace` removes every input a
violation does not need. Traces are read by the one parser of trace text
(`replay.traces.parse_trace`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from tandem.domain.dispatch import handle_input as default_step
from tandem.domain.inputs import Input
from tandem.replay.engine import DecisionStep, Engine, Located
from tandem.replay.proving.invariants import catalog
from tandem.replay.proving.model import Invariant, InvariantViolation
from tandem.replay.proving.monitor import Monitor
from tandem.replay.traces import parse_trace


def trace_line(value: Input | dict[str, Any]) -> str:
    """One trace line (JSON, `type` and `at` first)."""
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    data = msgspec.json.decode(msgspec.json.encode(value))
    return json.dumps({k: v for k, v in data.items() if not (k in ("actor", "id") and v is None)}, ensure_ascii=False, separators=(", ", ": "))


def write_trace(path: str | Path, lines: Iterable[Input | dict[str, Any] | str], header: Iterable[str] = ()) -> Path:
    """Write a JSON Lines trace. `lines` are inputs (decoded or as dicts with
    their `at`), or strings starting with `//` (comments, which a trace may
    hold anywhere); `header` lines are written first as comments."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    out: list[str] = [f"// {text}" if not text.startswith("//") else text for text in header]
    for item in lines:
        if isinstance(item, str):
            out.append(item if item.startswith("//") else f"// {item}")
        else:
            out.append(trace_line(item))
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def _trace_inputs(path: str | Path) -> list[Located]:
    """The inputs of the trace file at `path`, each with its file name and
    line (raises `replay.traces.TraceInvalid` for a bad trace)."""
    return parse_trace(Path(path).read_bytes(), str(path)).items


def check_trace(
    trace: str | Path | Sequence[Located],
    *,
    step: DecisionStep = default_step,
    invariants: Iterable[Invariant] | None = None,
) -> InvariantViolation | None:
    """Apply a trace (a file, or its inputs) to a fresh engine (with `step`
    as its decision step) checking the invariants after every input: the
    violation found, or None."""
    items = _trace_inputs(trace) if isinstance(trace, (str, Path)) else list(trace)
    engine = Engine(step=step)
    monitor = Monitor(invariants)
    for item in items:
        events = engine.submit(item)
        try:
            monitor.observe(item.input, events, engine.state, engine.views, line=item.line)
        except InvariantViolation as violation:
            return violation
    return None


def minimize_trace(
    trace: Sequence[Located],
    invariant: str,
    *,
    step: DecisionStep = default_step,
    invariants: Iterable[Invariant] | None = None,
) -> list[Located]:
    """The trace with as many inputs removed as possible while `check_trace`
    still finds `invariant` violated (delta debugging: drop chunks, halving
    their size; every input left is needed). Times stay in order, since
    inputs are only removed. `invariants` defaults to the named one alone."""
    chosen = list(invariants) if invariants is not None else [i for i in catalog() if i.name == invariant]

    def fails(candidate: Sequence[Located]) -> bool:
        try:
            found = check_trace(candidate, step=step, invariants=chosen)
        except Exception:
            return False  # a candidate the engine cannot even apply does not reproduce it
        return found is not None and found.invariant.name == invariant

    current = list(trace)
    if not fails(current):
        return current
    chunks = 2
    while len(current) >= 2:
        size = math.ceil(len(current) / chunks)
        for start in range(0, len(current), size):
            candidate = current[:start] + current[start + size :]
            if candidate and fails(candidate):
                current = candidate
                chunks = max(chunks - 1, 2)
                break
        else:
            if size == 1:
                break
            chunks = min(chunks * 2, len(current))
    return current
