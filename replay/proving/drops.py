"""The minimal what-ifs of a failing trace: which single inputs, dropped,
leave every invariant holding (issue 27: fuzzing helps).

`single_drops(data, path)` takes a trace's bytes (a counterexample of
`tandem check`, a trace the fuzzer wrote), replays it with the invariants
after every input (`check_trace`, with the decision step and invariants of
the run that found it), then replays it again once per input with that one
input dropped (`replay/whatif/edits.py`'s `--drop`, so lines keep the
trace's own numbering) and keeps the inputs whose removal makes every
invariant hold. Each is what `tandem whatif TRACE --drop LINE` shows the
difference of. Bytes in, a `Drops` out: nothing is read or written.

Bounded: at most `drops_tried_max` inputs are tried, the last ones (the
nearest the violation, which is at the end of a counterexample), so a long
trace costs at most that many replays of itself.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tandem.domain.dispatch import handle_input as default_step
from tandem.replay.engine import DecisionStep, Located
from tandem.replay.proving.model import Invariant, InvariantViolation
from tandem.replay.proving.traces import check_trace
from tandem.replay.traces import TraceInvalid, parse_trace
from tandem.replay.whatif.edits import Edit, EditInvalid, apply

drops_tried_max = 32  # inputs dropped one at a time (the last ones of the trace)
label_id_chars_max = 40  # an input's id, as its label shows it


@dataclass(frozen=True, slots=True)
class Drop:
    """One input whose removal makes every invariant hold: its `line` in the
    trace and a short `label` (its type and main id)."""

    line: int
    label: str

    def to_json(self, path: str) -> dict[str, Any]:
        return {"line": self.line, "input": self.label, "command": whatif_command(path, self.line)}


@dataclass(slots=True)
class Drops:
    """What dropping single inputs of the trace at `path` found. `violated`:
    the trace as it is violates an invariant when replayed (if not, there is
    nothing to remove and nothing was tried); `violated_at`: the line of the
    input it is violated at (None when the engine raised); `inputs`: the
    trace's inputs; `tried`: how many were dropped (the last ones);
    `holding`: those whose removal makes every invariant hold, in line order."""

    path: str
    violated: bool
    violated_at: int | None
    inputs: int
    tried: int
    holding: list[Drop] = field(default_factory=list)

    def lines(self) -> list[str]:
        """The report, a line each (text from the trace: escape it to show)."""
        if not self.violated:
            return ["what-if: replayed from its inputs alone, the trace violates no invariant: no input's removal to suggest"]
        if not self.holding:
            out = [f"what-if: no single input's removal makes every invariant hold ({self.tried} input(s) tried)"]
        else:
            out = [f"what-if: {len(self.holding)} of the {self.tried} input(s) tried, each dropped alone, make every invariant hold:"]
            out += [f"  without {self._named(drop)} every invariant holds: {whatif_command(self.path, drop.line)}" for drop in self.holding]
        if self.tried < self.inputs:
            out.append(f"  (only the last {self.tried} of the trace's {self.inputs} inputs were tried)")
        return out

    def _named(self, drop: Drop) -> str:
        where = ", where it is violated" if drop.line == self.violated_at else ""
        return f"line {drop.line} ({drop.label}{where})"

    def to_json(self) -> dict[str, Any]:
        return {
            "violated": self.violated,
            "violated_at": self.violated_at,
            "inputs": self.inputs,
            "tried": self.tried,
            "without": [drop.to_json(self.path) for drop in self.holding],
        }


def whatif_command(path: str, line: int) -> str:
    """The command that shows what dropping `line` of the trace at `path` changes."""
    return f"tandem whatif {shlex.quote(path)} --drop {line}"


def single_drops(
    data: bytes,
    path: str,
    *,
    step: DecisionStep = default_step,
    invariants: Iterable[Invariant] | None = None,
    limit: int = drops_tried_max,
) -> Drops:
    """Drop each of the last `limit` inputs of the trace `data` (read from
    `path`, which names it in messages and commands) alone, and replay the
    rest with `step` and `invariants` (default: the catalog) checked after
    every input: the drops that leave every invariant holding. Raises
    `TraceInvalid` if the trace itself is bad."""
    chosen = None if invariants is None else list(invariants)
    original = parse_trace(data, path)
    items = original.items
    found = _violation(items, step, chosen)
    if found is None:
        return Drops(path, False, None, len(items), 0)
    tried = items[-limit:] if limit > 0 else []
    drops = Drops(path, True, found.applying.line if isinstance(found, InvariantViolation) else None, len(items), len(tried))
    raw = data.split(b"\n")
    for item in tried:
        line = item.line or 0
        if _holds_without(data, path, original.name, line, step, chosen):
            drops.holding.append(Drop(line, input_label(raw[line - 1])))
    return drops


def _violation(items: list[Located], step: DecisionStep, invariants: list[Invariant] | None) -> InvariantViolation | Exception | None:
    """The trace's first violation (or the engine's exception: `tandem check`
    counts one as a violation too), None if every invariant holds."""
    try:
        return check_trace(items, step=step, invariants=invariants)
    except Exception as error:  # the engine raised: a failure as much as a violation
        return error


def _holds_without(data: bytes, path: str, name: str, line: int, step: DecisionStep, invariants: list[Invariant] | None) -> bool:
    try:
        edited, _ = apply(data, [Edit("drop", line, f"--drop {line}")])
        fork = parse_trace(edited, path, name)
    except (EditInvalid, TraceInvalid):
        return False  # a fork the trace parser refuses is no what-if to suggest
    return _violation(fork.items, step, invariants) is None


def input_label(raw: bytes) -> str:
    """An input line as a label: its type and its main id (`action.propose r1`)."""
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return "an input"
    if not isinstance(value, dict):
        return "an input"
    kind = str(value.get("type", "an input"))
    ident = next((value[key] for key in LABEL_IDS if isinstance(value.get(key), str) and value[key]), None)
    if ident is None:
        return kind
    return f"{kind} {ident if len(ident) <= label_id_chars_max else ident[: label_id_chars_max - 1] + '…'}"


# The id an input's label shows: the first of these it has, the most specific first.
LABEL_IDS = (
    "attempt_id", "operation_id", "delivery_id", "call_id", "turn_id", "question_key", "task_id", "source_id",
    "alert_id", "incident_id", "investigation_id", "reconciliation_id", "request_id", "message_id", "card_id",
    "batch_id", "rule_id", "grant_id", "runtime_id", "consumer_id", "conversation_id", "foreground_id", "cause_key",
)  # fmt: skip
