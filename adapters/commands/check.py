"""`tandem check SCENARIO --depth N`: bounded exhaustive checking (replay/check.py)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tandem.adapters.terminal import printable

NAME = "check"
HELP = "explore every interleaving of a scenario's moves, checking the invariants"
DESCRIPTION = (
    "Apply SCENARIO's setup, then explore breadth first every order of its moves (each at most once "
    "unless repeatable) up to --depth moves, pruning states already reached, and check the invariants "
    "catalog (docs/invariants.md) on every event and every state. Prints the states explored. On a "
    "violation it writes the SHORTEST counterexample as a trace (`tandem replay FILE` replays it), "
    "names the inputs whose removal alone makes every invariant hold (each with the `tandem whatif "
    "FILE --drop LINE` that shows what it changes), and exits 1. The scenario format is in docs/fuzzing.md."
)
ORDER = 40
EPILOG = "Exit codes: 0 no invariant violated; 1 a violation (counterexample written) or a file could not be written; 2 bad usage or a bad scenario."

EXIT_VIOLATION = 1


def _depth(text: str) -> int:
    from tandem.replay.proving import depth_max

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a depth: {text!r}") from None
    if not 0 <= value <= depth_max:
        raise argparse.ArgumentTypeError(f"the depth is from 0 to {depth_max}")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", metavar="SCENARIO", help="a scenario file (JSON: setup and moves)")
    parser.add_argument("--depth", type=_depth, required=True, metavar="N", help="explore sequences of up to N moves")
    parser.add_argument(
        "--out",
        metavar="FILE",
        help="where to write a counterexample trace (default: SCENARIO's name + .counterexample.jsonl, next to it)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> None:
    from tandem.adapters.commands.common import EXIT_USAGE, CliError
    from tandem.domain import dispatch
    from tandem.replay.proving import ScenarioError, check, load_scenario

    try:
        scenario = load_scenario(args.scenario)
    except ScenarioError as error:
        raise CliError(str(error), EXIT_USAGE) from error
    path = Path(args.scenario)
    out = Path(args.out) if args.out else path.with_name(path.name.removesuffix(".json") + ".counterexample.jsonl")
    # The decision rules are looked up now, not bound at import: tests swap in broken ones.
    step = dispatch.handle_input
    result = check(scenario, args.depth, step=step)
    found = result.counterexample
    if found is not None:
        try:
            found.write(out, scenario)
        except OSError as error:
            raise CliError(f"cannot write the counterexample to {out}: {error.strerror}") from error
        found.try_drops(step)  # the minimal what-ifs: which single inputs, dropped, make it hold
    if args.json:
        sys.stdout.write(json.dumps(result.to_json(), indent=2) + "\n")
    else:
        sys.stdout.write(_text(result, len(scenario.setup), len(scenario.moves)))
    if found is not None:
        raise CliError(f"invariant {found.invariant} violated; counterexample: {found.trace}", EXIT_VIOLATION)


def _text(result, setup: int, moves: int) -> str:
    levels = ", ".join(f"{n:,}" for n in result.levels) or "-"
    lines = [
        f"{result.scenario}: {setup} setup input(s), {moves} move(s), depth {result.depth}",
        f"states explored: {result.explored:,}; distinct: {result.distinct:,} (new per depth: {levels}); "
        f"depth reached: {result.depth_reached}; {result.seconds:.2f} s",
    ]
    found = result.counterexample
    if found is None:
        lines.append(f"invariants: {len(result.invariants)} checked on every event and state; none violated")
    else:
        steps = ", ".join(found.moves) if found.moves else "(the setup alone)"
        lines.append(f"VIOLATION after {len(found.moves)} move(s): {steps}")
        lines.append(f"  {found.message}")
        lines.append(f"counterexample: {found.trace} (tandem replay {found.trace} --json)")
        if found.whatif is not None:
            lines.extend(found.whatif.lines())
    return "\n".join(printable(line) for line in lines) + "\n"  # names and paths from the scenario, escaped
