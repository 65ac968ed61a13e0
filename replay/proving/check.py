"""Bounded exhaustive checking: every interleaving of a small scenario's moves.

A scenario (scenario.py, docs/fuzzing.md) is a `setup` and a set of `moves`.
`check(scenario, depth)` explores, breadth first, every sequence of at most
`depth` moves, checks the invariants catalog (invariants.py) on every event
and every state reached, and prunes repeats: two sequences that reach the
same decision state with the same moves done are one state (its futures are
the same), so it is explored once. On a violation it returns the SHORTEST
counterexample (breadth first: no shorter sequence violates anything) as a
trace that `tandem replay` replays.

Times: the checker stamps every input's `at`. The first setup input is at
`start`, and each next input — setup or move — `gap_s` seconds after the one
before (the scenario's default, or the move's own), so every interleaving is
a valid trace and the time a state is reached depends only on which moves
were taken, not on their order.

Every state is reached by a restart: the parent's stored events are folded
into a fresh engine (`Engine(store)`, as a restarted daemon does), then the
move is applied. So "restart is replay" is exercised on every transition.
"""

from __future__ import annotations

import datetime
import hashlib
import io
import pickle
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from tandem.domain.dispatch import handle_input as default_step
from tandem.domain.events import Event
from tandem.domain.inputs import Input, format_at
from tandem.domain.state import State
from tandem.replay.engine import DecisionStep, Engine, Located
from tandem.replay.proving.drops import Drops, single_drops
from tandem.replay.proving.invariants import catalog
from tandem.replay.proving.model import Invariant, InvariantViolation
from tandem.replay.proving.monitor import Monitor
from tandem.replay.proving.scenario import Move, Scenario, load_scenario, parse_scenario
from tandem.replay.proving.store import ProvingStore
from tandem.replay.proving.traces import write_trace

depth_max = 64
ENGINE_ERROR = "engine_error"  # the "invariant" named when the engine itself raised


@dataclass
class Counterexample:
    """A shortest sequence of moves that violates an invariant (or makes the
    engine raise): the whole trace, setup included, with its times."""

    invariant: str
    detail: str
    message: str
    moves: list[str]
    lines: list[dict[str, Any]]  # setup then moves, each with its `at`
    setup_size: int
    trace: Path | None = None
    whatif: Drops | None = None  # the single inputs whose removal makes it hold (once written)

    def trace_lines(self) -> list[dict[str, Any] | str]:
        out: list[dict[str, Any] | str] = [*self.lines[: self.setup_size]]
        for number, (name, line) in enumerate(zip(self.moves, self.lines[self.setup_size :]), start=1):
            out.append(f"// move {number}: {name}")
            out.append(line)
        return out

    def write(self, path: str | Path, scenario: Scenario) -> Path:
        source = str(scenario.path) if scenario.path is not None else scenario.name
        header = [
            f"tandem check: shortest counterexample of {source} ({len(self.moves)} move(s) after {self.setup_size} setup input(s))",
            self.message,
            f"moves: {', '.join(self.moves) if self.moves else '(none: the setup alone)'}",
            "replay: tandem replay THIS_FILE --json",
        ]
        self.trace = write_trace(path, self.trace_lines(), header=[h.replace("\n", " ") for h in header])
        return self.trace

    def try_drops(self, step: DecisionStep = default_step, invariants: Iterable[Invariant] | None = None) -> Drops:
        """Once written: which single inputs of the trace, dropped, make every
        invariant hold (drops.py), with the run's decision step and invariants."""
        if self.trace is None:
            raise ValueError("write the counterexample first: its drops name the trace's lines")
        self.whatif = single_drops(self.trace.read_bytes(), str(self.trace), step=step, invariants=invariants)
        return self.whatif


@dataclass
class CheckResult:
    scenario: str
    depth: int  # the bound asked for
    depth_reached: int  # the deepest level at which a new state was found
    explored: int  # states explored: inputs applied to a state (transitions), setup excluded
    distinct: int  # distinct states kept (the state after the setup included)
    seconds: float
    invariants: list[str]
    counterexample: Counterexample | None = None
    levels: list[int] = field(default_factory=list)  # new distinct states per depth

    @property
    def ok(self) -> bool:
        return self.counterexample is None

    def to_json(self) -> dict[str, Any]:
        """The result as a JSON-ready dict (what `tandem check --json` prints)."""
        found = self.counterexample
        return {
            "scenario": self.scenario,
            "depth": self.depth,
            "depth_reached": self.depth_reached,
            "states_explored": self.explored,
            "distinct_states": self.distinct,
            "new_states_per_depth": self.levels,
            "seconds": round(self.seconds, 3),
            "invariants": self.invariants,
            "violation": None
            if found is None
            else {
                "invariant": found.invariant,
                "detail": found.detail,
                "message": found.message,
                "moves": found.moves,
                "trace": str(found.trace) if found.trace is not None else None,
                "whatif": found.whatif.to_json() if found.whatif is not None else None,
            },
        }


@dataclass
class _Node:
    events: tuple[Event, ...]  # the stored log (a child restarts from it)
    done: frozenset[int]  # indices of the moves taken at least once
    at: datetime.datetime | None  # the last input's time (None before any input)
    path: tuple[int, ...]  # the moves taken, in order
    lines: tuple[dict[str, Any], ...]  # the trace so far, times stamped


def check(
    scenario: Scenario | str | Path | dict[str, Any],
    depth: int,
    *,
    invariants: Iterable[Invariant] | None = None,
    step: DecisionStep = default_step,
    out: str | Path | None = None,
) -> CheckResult:
    """Explore every interleaving of `scenario`'s moves up to `depth` moves,
    breadth first, checking `invariants` (default: the catalog) on every event
    and state, with `step` as the decision step. With `out`, a counterexample
    is written there as a trace, and its single inputs whose removal makes
    every invariant hold are found (`counterexample.whatif`)."""
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario) if isinstance(scenario, (str, Path)) else parse_scenario(scenario)
    if not isinstance(depth, int) or depth < 0 or depth > depth_max:
        raise ValueError(f"depth must be an integer from 0 to {depth_max}")
    chosen = list(catalog() if invariants is None else invariants)
    search = _Search(scenario, chosen, step, CheckResult(scenario.name, depth, 0, 0, 0, 0.0, [i.name for i in chosen]))
    frontier = search.setup()
    for level in range(1, depth + 1):
        if not frontier:
            break
        frontier = search.level(frontier, level)
    if search.result.counterexample is None:
        search.result.distinct = len(search.seen)
    search.result.seconds = time.perf_counter() - search.begun
    if search.result.counterexample is not None and out is not None:
        search.result.counterexample.write(out, scenario)
        search.result.counterexample.try_drops(step, chosen)
    return search.result


@dataclass
class _Search:
    """One breadth-first exploration: the states seen, the result so far."""

    scenario: Scenario
    invariants: list[Invariant]
    step: DecisionStep
    result: CheckResult
    seen: set[tuple[bytes, frozenset[int]]] = field(default_factory=set)
    begun: float = field(default_factory=time.perf_counter)

    def setup(self) -> list[_Node]:
        """Apply the setup, in order, checked like everything else: the root
        node (none when the setup alone violates something)."""
        scenario = self.scenario
        store = ProvingStore()
        engine = Engine(store, step=self.step)
        monitor = Monitor(self.invariants)
        lines: list[dict[str, Any]] = []
        at: datetime.datetime | None = None
        for line, value, gap in scenario.setup:
            at = _next(at, gap, scenario)
            stamped, stamped_line = _stamp(value, line, at)
            lines.append(stamped_line)
            problem = _apply(engine, monitor, stamped)
            if problem is not None:
                self.result.counterexample = _counterexample(problem, scenario, lines, ())
                return []
        root = _Node(tuple(store.events), frozenset(), at, (), tuple(lines))
        self.seen.add((fingerprint(engine.state), root.done))
        return [root]

    def level(self, frontier: list[_Node], level: int) -> list[_Node]:
        """Every enabled move from every node of `frontier`: the new distinct
        nodes (none, with the counterexample set, at the first violation)."""
        moves = self.scenario.moves
        waits = [frozenset(_index(moves, name) for name in move.after) for move in moves]
        found: list[_Node] = []
        for node in frontier:
            for index, move in enumerate(moves):
                if (not move.repeatable and index in node.done) or not waits[index] <= node.done:
                    continue
                child = self._child(node, index, move, level)
                if self.result.counterexample is not None:
                    return []
                if child is not None:
                    found.append(child)
        self.result.levels.append(len(found))
        if found:
            self.result.depth_reached = level
        return found

    def _child(self, node: _Node, index: int, move: Move, level: int) -> _Node | None:
        """Restart from `node`'s stored events and apply `move`: the new node,
        or None if its state was seen (or it violated something: then the
        result has its counterexample)."""
        at = _next(node.at, move.gap_s, self.scenario)
        value, line = _stamp(move.input, move.line, at)
        store = ProvingStore(node.events)
        engine = Engine(store, step=self.step)
        monitor = Monitor(self.invariants, history=node.events)
        self.result.explored += 1
        problem = _apply(engine, monitor, value)
        path = (*node.path, index)
        if problem is not None:
            self.result.counterexample = _counterexample(problem, self.scenario, (*node.lines, line), path)
            self.result.depth_reached = level
            self.result.distinct = len(self.seen)
            return None
        done = node.done | {index}
        key = (fingerprint(engine.state), done)
        if key in self.seen:
            return None
        self.seen.add(key)
        return _Node(tuple(store.events), done, at, path, (*node.lines, line))


def _index(moves: Sequence[Move], name: str) -> int:
    for index, move in enumerate(moves):
        if move.name == name:
            return index
    raise KeyError(name)


def _next(at: datetime.datetime | None, gap_s: float, scenario: Scenario) -> datetime.datetime:
    """The next input's time: `start` for the very first, else `gap_s` later."""
    return scenario.start if at is None else at + datetime.timedelta(seconds=gap_s)


def _stamp(value: Input, line: dict[str, Any], at: datetime.datetime) -> tuple[Input, dict[str, Any]]:
    stamped = msgspec.structs.replace(value, at=at)
    return stamped, {"type": line["type"], "at": format_at(at), **{k: v for k, v in line.items() if k != "type"}}


@dataclass
class _Problem:
    invariant: str
    detail: str
    message: str


def _apply(engine: Engine, monitor: Monitor, value: Input) -> _Problem | None:
    try:
        events = engine.submit(Located(value))
        monitor.observe(value, events, engine.state, engine.views)
    except InvariantViolation as violation:
        return _Problem(violation.invariant.name, violation.detail, str(violation))
    except Exception as error:  # the engine itself failed: a bug as much as a violation
        return _Problem(ENGINE_ERROR, f"{type(error).__name__}: {error}", f"the engine raised {type(error).__name__}: {error}")
    return None


def _counterexample(problem: _Problem, scenario: Scenario, lines: Sequence[dict[str, Any]], path: Sequence[int]) -> Counterexample:
    names = [scenario.moves[i].name for i in path]
    setup_size = len(lines) - len(path)
    return Counterexample(problem.invariant, problem.detail, problem.message, names, list(lines), setup_size)


# ============================================================ state identity


# Bookkeeping that counts events and inputs, and the pass's scratch: not part
# of what a state IS (two orders of the same moves may differ in them only).
_SKIPPED_STATE_FIELDS = {
    "position": 0, "seq": 0, "dirty_actions": set(), "dirty_tasks": set(), "dirty_sources": set(), "watchdog_fresh": False, "traces": {},
    "unstalled": set(),
}  # fmt: skip


def fingerprint(state: State) -> bytes:
    """A digest of the decision state: equal digests mean equal states (the
    digest is of a faithful serialization of every fact field), so pruning on
    it never merges two different states. Not part of it: `position` and
    `seq` (counts of events and inputs), ingest progress and the pass's
    scratch. Equal states may rarely get different digests (a set's iteration
    order), which only costs some pruning; how objects are shared (a state
    folded from decoded events or built live) does not change it."""
    saved = {name: getattr(state, name) for name in _SKIPPED_STATE_FIELDS}
    try:
        for name, blank in _SKIPPED_STATE_FIELDS.items():
            setattr(state, name, blank)
        buffer = io.BytesIO()
        pickler = pickle.Pickler(buffer, protocol=5)
        pickler.fast = True  # no memo: how objects are shared must not change the digest
        pickler.dump(state)
        return hashlib.blake2b(buffer.getvalue(), digest_size=20).digest()
    finally:
        for name, value in saved.items():
            setattr(state, name, value)

