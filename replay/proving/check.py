"""Bounded exhaustive checking: every interleaving of a small scenario's moves.

A **scenario** (a JSON file, docs/fuzzing.md) is a `setup` — inputs applied
in order — and a set of `moves` — inputs that may happen in any order after
it, each at most once unless marked `repeatable`, each enabled only once the
moves it names in `after` have happened. `check(scenario, depth)` explores,
breadth first, every sequence of at most `depth` moves, checks the invariants
catalog (replay/proving/invariants.py) on every event and every state reached, and
prunes repeats: two sequences that reach the same decision state with the
same moves done are one state (its futures are the same), so it is explored
once. On a violation it returns the SHORTEST counterexample (breadth first:
no shorter sequence violates anything) as a trace that `tandem replay`
replays.

Times: the checker stamps every input's `at`. The first setup input is at
`start`, and each next input — setup or move — `gap_s` seconds after the one
before (the scenario's default, or the move's own), so every interleaving is
a valid trace and the time a state is reached depends only on which moves
were taken, not on their order.

Every state is reached by a restart: the parent's stored events are folded
into a fresh engine (`Engine(store)`, as a restarted daemon does), then the
move is applied. So "restart is replay" is exercised on every transition.

Also here: reading and writing traces (`read_trace`, `write_trace`),
`check_trace` (the invariants over a recorded trace, for a counterexample
found by the fuzzer or by this checker), and `LogStore`, an in-process event
store for both.
"""

from __future__ import annotations

import datetime
import hashlib
import io
import json
import math
import pickle
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from tandem.domain import events as ev
from tandem.domain.dispatch import step as default_step
from tandem.domain.events import Event, encode_event
from tandem.domain.inputs import Input, decode_input, format_at
from tandem.domain.state import State
from tandem.replay.engine import Engine, Located
from tandem.replay.engine import Step as Rules
from tandem.replay.proving.invariants import Invariant, InvariantViolation, Monitor, catalog
from tandem.replay.port import ConcurrencyError

DEFAULT_START = datetime.datetime(2026, 3, 1, 9, 0, 0, tzinfo=datetime.timezone.utc)
DEFAULT_GAP_S = 1.0
moves_max = 64  # a scenario is small: its interleavings are explored exhaustively
depth_max = 64
ENGINE_ERROR = "engine_error"  # the "invariant" named when the engine itself raised


# ====================================================================== store


class LogStore:
    """An in-process event store (the `replay.port.EventStore` protocol) over a
    list of events: what the checker restarts engines from, and what the
    fuzzer uses when it is given no other store. `crash_next_append()` makes
    the next append fail (writing nothing), as a crash before the commit."""

    url = "log:"

    def __init__(self, events: Iterable[Event] = ()) -> None:
        self.events: list[Event] = list(events)
        self._crash = False

    def head(self) -> int:
        return len(self.events)

    def crash_next_append(self) -> None:
        self._crash = True

    def append(self, events: Sequence[Event], expected_head: int) -> int:
        if expected_head != len(self.events):
            raise ConcurrencyError(f"expected head {expected_head}, but the head is {len(self.events)}")
        if self._crash:
            self._crash = False
            raise InjectedCrash(f"injected crash: append of {len(events)} event(s) after position {expected_head} not written")
        self.events.extend(events)
        return len(self.events)

    def append_encoded(self, data: Sequence[bytes], expected_head: int) -> int:
        return self.append([ev.decode_event(item) for item in data], expected_head)

    def read(self, after: int = 0, until: int | None = None) -> Iterator[tuple[int, Event]]:
        stop = len(self.events) if until is None else min(until, len(self.events))
        for position in range(after + 1, stop + 1):
            yield position, self.events[position - 1]

    def read_pages(self, after: int = 0, until: int | None = None) -> Iterator[list[Event]]:
        stop = len(self.events) if until is None else min(until, len(self.events))
        if after < stop:
            yield self.events[after:stop]

    def read_encoded(self, after: int = 0, until: int | None = None) -> Iterator[tuple[int, bytes]]:
        for position, event in self.read(after, until):
            yield position, encode_event(event)

    # Snapshots are a cache (replay/port.py): this store keeps none, so every
    # engine opened on it folds the whole log.
    def write_snapshot(self, position: int, fingerprint: str, body: bytes) -> None:
        return None

    def latest_snapshot(self, fingerprint: str, until: int | None = None) -> None:
        return None

    def list_snapshots(self) -> list[Any]:
        return []

    def delete_snapshot(self, position: int, fingerprint: str) -> None:
        return None

    def close(self) -> None:
        return None


class InjectedCrash(Exception):
    """A store append failed on purpose (crash injection): nothing was written."""


# ===================================================================== traces


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


class TraceError(ValueError):
    """A trace this module cannot read: `path line N: what is wrong`."""


def read_trace(path: str | Path) -> list[Located]:
    """The inputs of a JSON Lines trace (blank and `//` lines skipped but
    counted), each with its file name and line."""
    path = Path(path)
    inputs: list[Located] = []
    previous: datetime.datetime | None = None
    for number, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        text = raw.strip()
        if not text or text.startswith(b"//"):
            continue
        try:
            value = decode_input(text)
        except (msgspec.ValidationError, msgspec.DecodeError) as error:
            raise TraceError(f"{path} line {number}: {error}") from None
        if previous is not None and value.at < previous:
            raise TraceError(f"{path} line {number}: `at` goes backwards")
        previous = value.at
        inputs.append(Located(value, path.name, number))
    return inputs


def check_trace(
    trace: str | Path | Sequence[Located],
    *,
    step: Rules = default_step,
    invariants: Iterable[Invariant] | None = None,
) -> InvariantViolation | None:
    """Apply a trace to a fresh engine (with `step` as its decision rules)
    checking the invariants after every input: the violation found, or None."""
    items = read_trace(trace) if isinstance(trace, (str, Path)) else list(trace)
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
    step: Rules = default_step,
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


# =================================================================== scenarios


class ScenarioError(ValueError):
    """A scenario file that cannot be used: `FILE: where: what is wrong`."""


@dataclass(frozen=True)
class Move:
    name: str
    line: dict[str, Any]  # the input as written (no `at`)
    input: Input  # decoded (its `at` a placeholder, stamped when applied)
    gap_s: float
    repeatable: bool = False
    after: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    start: datetime.datetime
    setup: tuple[tuple[dict[str, Any], Input, float], ...]  # (line, input, gap before it)
    moves: tuple[Move, ...]
    path: Path | None = None


_SCENARIO_KEYS = {"description", "start", "gap_s", "setup", "moves"}
_SETUP_KEYS = {"input", "gap_s"}
_MOVE_KEYS = {"name", "input", "gap_s", "repeatable", "after", "note"}


def load_scenario(path: str | Path) -> Scenario:
    """Read and check a scenario file (raises ScenarioError naming what and where)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ScenarioError(f"{path}: cannot read: {error.strerror}") from None
    try:
        document = json.loads(data)
    except UnicodeDecodeError as error:
        raise ScenarioError(f"{path}: invalid UTF-8 at byte {error.start}") from None
    except json.JSONDecodeError as error:
        raise ScenarioError(f"{path}: bad JSON at line {error.lineno} column {error.colno}: {error.msg}") from None
    return parse_scenario(document, name=str(path), path=path)


def parse_scenario(document: Any, name: str = "<scenario>", path: Path | None = None) -> Scenario:
    def fail(where: str, what: str) -> ScenarioError:
        return ScenarioError(f"{name}: {where}: {what}" if where else f"{name}: {what}")

    if not isinstance(document, dict):
        raise fail("", "a scenario is a JSON object with `setup` and `moves`")
    unknown = sorted(set(document) - _SCENARIO_KEYS)
    if unknown:
        raise fail("", f"unknown key(s) {', '.join(map(repr, unknown))}; a scenario has {', '.join(sorted(_SCENARIO_KEYS))}")
    description = document.get("description", "")
    if not isinstance(description, str):
        raise fail("description", "must be a string")
    start = DEFAULT_START
    if "start" in document:
        try:
            start = decode_input(json.dumps({"type": "tick", "at": document["start"]})).at
        except (msgspec.ValidationError, msgspec.DecodeError, TypeError):
            raise fail("start", f"{document['start']!r} is not an RFC 3339 UTC time") from None
    default_gap = _gap(document.get("gap_s", DEFAULT_GAP_S), lambda what: fail("gap_s", what))

    setup_items = document.get("setup", [])
    if not isinstance(setup_items, list):
        raise fail("setup", "must be a list of inputs")
    setup: list[tuple[dict[str, Any], Input, float]] = []
    for index, item in enumerate(setup_items):
        where = f"setup[{index}]"
        gap = default_gap
        if isinstance(item, dict) and "input" in item and "type" not in item:
            unknown = sorted(set(item) - _SETUP_KEYS)
            if unknown:
                raise fail(where, f"unknown key(s) {', '.join(map(repr, unknown))}; a wrapped setup input has `input` and `gap_s`")
            gap = _gap(item.get("gap_s", default_gap), lambda what: fail(f"{where}.gap_s", what))
            item = item["input"]
            where += ".input"
        line, value = _input(item, lambda what: fail(where, what))
        setup.append((line, value, gap))

    raw_moves = document.get("moves")
    if not isinstance(raw_moves, list) or not raw_moves:
        raise fail("moves", "must be a non-empty list of moves ({name, input, ...})")
    if len(raw_moves) > moves_max:
        raise fail("moves", f"{len(raw_moves)} moves, over the {moves_max}-move limit")
    moves: list[Move] = []
    names: set[str] = set()
    for index, item in enumerate(raw_moves):
        where = f"moves[{index}]"
        if not isinstance(item, dict):
            raise fail(where, "a move is an object {name, input, gap_s?, repeatable?, after?}")
        unknown = sorted(set(item) - _MOVE_KEYS)
        if unknown:
            raise fail(where, f"unknown key(s) {', '.join(map(repr, unknown))}; a move has {', '.join(sorted(_MOVE_KEYS))}")
        move_name = item.get("name")
        if not isinstance(move_name, str) or not move_name:
            raise fail(where, "`name` (a non-empty string) is required")
        where = f"moves[{index}] ({move_name})"
        if move_name in names:
            raise fail(where, f"another move is already named {move_name!r}")
        names.add(move_name)
        if "input" not in item:
            raise fail(where, "`input` is required")
        line, value = _input(item["input"], lambda what: fail(f"{where}.input", what))
        gap = _gap(item.get("gap_s", default_gap), lambda what: fail(f"{where}.gap_s", what))
        repeatable = item.get("repeatable", False)
        if not isinstance(repeatable, bool):
            raise fail(f"{where}.repeatable", "must be true or false")
        after = item.get("after", [])
        if isinstance(after, str):
            after = [after]
        if not isinstance(after, list) or not all(isinstance(a, str) for a in after):
            raise fail(f"{where}.after", "must be a list of move names")
        moves.append(Move(move_name, line, value, gap, repeatable, tuple(after)))
    for index, move in enumerate(moves):
        for needed in move.after:
            if needed not in names:
                raise fail(f"moves[{index}] ({move.name}).after", f"no move is named {needed!r}")
            if needed == move.name:
                raise fail(f"moves[{index}] ({move.name}).after", "a move cannot wait for itself")
    title = path.stem if path is not None else name
    return Scenario(title, description, start, tuple(setup), tuple(moves), path)


def _gap(value: Any, fail: Callable[[str], ScenarioError]) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise fail(f"{value!r} is not a number of seconds >= 0")
    return float(value)


def _input(item: Any, fail: Callable[[str], ScenarioError]) -> tuple[dict[str, Any], Input]:
    if not isinstance(item, dict):
        raise fail("an input is a JSON object with a `type` (a trace line without `at`)")
    if "at" in item:
        raise fail("remove `at`: the checker stamps every input's time (use `gap_s` to let time pass)")
    line = {"type": item.get("type"), "at": format_at(DEFAULT_START), **{k: v for k, v in item.items() if k != "type"}}
    try:
        value = decode_input(json.dumps(line))
    except (msgspec.ValidationError, msgspec.DecodeError) as error:
        raise fail(_input_message(error)) from None
    return dict(item), value


def _input_message(error: Exception) -> str:
    text = str(error)
    if "Invalid value" in text and "$.type" in text:
        return "unknown input type " + text.split("Invalid value ", 1)[1].split(" - at", 1)[0]
    return text


# ============================================================== the checker


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

    def as_json(self) -> dict[str, Any]:
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
    step: Rules = default_step,
    out: str | Path | None = None,
) -> CheckResult:
    """Explore every interleaving of `scenario`'s moves up to `depth` moves,
    breadth first, checking `invariants` (default: the catalog) on every event
    and state, with `step` as the decision rules. With `out`, a counterexample
    is written there as a trace."""
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario) if isinstance(scenario, (str, Path)) else parse_scenario(scenario)
    if not isinstance(depth, int) or depth < 0 or depth > depth_max:
        raise ValueError(f"depth must be an integer from 0 to {depth_max}")
    chosen = list(catalog() if invariants is None else invariants)
    begun = time.perf_counter()
    result = CheckResult(scenario.name, depth, 0, 0, 0, 0.0, [i.name for i in chosen])

    # The setup, in order, checked like everything else.
    engine = Engine(LogStore(), step=step)
    monitor = Monitor(chosen)
    lines: list[dict[str, Any]] = []
    at: datetime.datetime | None = None
    for line, value, gap in scenario.setup:
        at = _next(at, gap, scenario)
        stamped, stamped_line = _stamp(value, line, at)
        lines.append(stamped_line)
        problem = _apply(engine, monitor, stamped)
        if problem is not None:
            result.counterexample = _counterexample(problem, scenario, lines, ())
            return _finish(result, begun, scenario, out)
    assert isinstance(engine.store, LogStore)
    root = _Node(tuple(engine.store.events), frozenset(), at, (), tuple(lines))
    seen = {(fingerprint(engine.state), root.done)}
    frontier = [root]
    moves = scenario.moves
    waits = [frozenset(_index(moves, name) for name in move.after) for move in moves]

    for level in range(1, depth + 1):
        found: list[_Node] = []
        for node in frontier:
            for index, move in enumerate(moves):
                if not move.repeatable and index in node.done:
                    continue
                if not waits[index] <= node.done:
                    continue
                at = _next(node.at, move.gap_s, scenario)
                value, line = _stamp(move.input, move.line, at)
                engine = Engine(LogStore(node.events), step=step)
                monitor = Monitor(chosen, history=node.events)
                result.explored += 1
                problem = _apply(engine, monitor, value)
                path = (*node.path, index)
                if problem is not None:
                    result.counterexample = _counterexample(problem, scenario, (*node.lines, line), path)
                    result.depth_reached = level
                    result.distinct = len(seen)
                    return _finish(result, begun, scenario, out)
                done = node.done | {index}
                key = (fingerprint(engine.state), done)
                if key in seen:
                    continue
                seen.add(key)
                assert isinstance(engine.store, LogStore)
                found.append(_Node(tuple(engine.store.events), done, at, path, (*node.lines, line)))
        result.levels.append(len(found))
        if found:
            result.depth_reached = level
        frontier = found
        if not frontier:
            break
    result.distinct = len(seen)
    return _finish(result, begun, scenario, out)


def _finish(result: CheckResult, begun: float, scenario: Scenario, out: str | Path | None) -> CheckResult:
    result.seconds = time.perf_counter() - begun
    if result.counterexample is not None and out is not None:
        result.counterexample.write(out, scenario)
    return result


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
    "position": 0, "seq": 0, "dirty_actions": set(), "dirty_tasks": set(), "watchdog_fresh": False, "traces": {},
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
