"""Scenarios for the bounded checker: a `setup` and a set of `moves`.

A **scenario** (a JSON file, docs/fuzzing.md) is a `setup` — inputs applied
in order — and a set of `moves` — inputs that may happen in any order after
it, each at most once unless marked `repeatable`, each enabled only once the
moves it names in `after` have happened. Inputs are written without `at`:
the checker stamps every input's time (`gap_s` seconds after the one before).
`load_scenario` reads and checks a file, `parse_scenario` a decoded document;
both raise `ScenarioError` naming what is wrong and where.
"""

from __future__ import annotations

import datetime
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from tandem.domain.inputs import Input, decode_input, format_at

DEFAULT_START = datetime.datetime(2026, 3, 1, 9, 0, 0, tzinfo=datetime.timezone.utc)
DEFAULT_GAP_S = 1.0
moves_max = 64  # a scenario is small: its interleavings are explored exhaustively


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


Fail = Callable[[str, str], ScenarioError]  # (where, what) -> the error to raise


def parse_scenario(document: Any, name: str = "<scenario>", path: Path | None = None) -> Scenario:
    """Check a decoded scenario document (raises ScenarioError naming what and where)."""

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
    start = _start(document, fail)
    default_gap = _gap(document.get("gap_s", DEFAULT_GAP_S), lambda what: fail("gap_s", what))
    setup = _setup(document.get("setup", []), default_gap, fail)
    moves = _moves(document.get("moves"), default_gap, fail)
    title = path.stem if path is not None else name
    return Scenario(title, description, start, tuple(setup), tuple(moves), path)


def _start(document: dict[str, Any], fail: Fail) -> datetime.datetime:
    if "start" not in document:
        return DEFAULT_START
    try:
        return decode_input(json.dumps({"type": "tick", "at": document["start"]})).at
    except (msgspec.ValidationError, msgspec.DecodeError, TypeError):
        raise fail("start", f"{document['start']!r} is not an RFC 3339 UTC time") from None


def _setup(setup_items: Any, default_gap: float, fail: Fail) -> list[tuple[dict[str, Any], Input, float]]:
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
    return setup


def _moves(raw_moves: Any, default_gap: float, fail: Fail) -> list[Move]:
    if not isinstance(raw_moves, list) or not raw_moves:
        raise fail("moves", "must be a non-empty list of moves ({name, input, ...})")
    if len(raw_moves) > moves_max:
        raise fail("moves", f"{len(raw_moves)} moves, over the {moves_max}-move limit")
    moves: list[Move] = []
    names: set[str] = set()
    for index, item in enumerate(raw_moves):
        moves.append(_move(index, item, names, default_gap, fail))
    for index, move in enumerate(moves):
        for needed in move.after:
            if needed not in names:
                raise fail(f"moves[{index}] ({move.name}).after", f"no move is named {needed!r}")
            if needed == move.name:
                raise fail(f"moves[{index}] ({move.name}).after", "a move cannot wait for itself")
    return moves


def _move(index: int, item: Any, names: set[str], default_gap: float, fail: Fail) -> Move:
    """One move, checked; its name is added to `names` (the names so far)."""
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
    return Move(move_name, line, value, gap, repeatable, tuple(after))


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

