"""`tandem whatif TRACE EDIT... [--until LINE] [--json]`: change the past,
see exactly which decisions change (docs/whatif.md). The logic is
replay/whatif/ and adapters/whatif.py; this is its command line."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import msgspec

from tandem.adapters.commands.common import EXIT_FAILED, EXIT_USAGE, CliError, open_or_fail
from tandem.adapters.commands.replay import line_number
from tandem.adapters.terminal import terminal_width
from tandem.adapters.whatif import whatif_trace
from tandem.adapters.whatif_render import render
from tandem.adapters.whatif_store import whatif_store
from tandem.replay.whatif.edits import PARSERS, Edit, EditInvalid
from tandem.replay.whatif.model import WhatIf

NAME = "whatif"
ORDER = 22
HELP = "change the past (drop, replace, insert, move an input, set a field): which decisions and views change"
DESCRIPTION = (
    "Replay TRACE twice, as it is and with the EDITs (they compose, in the order given, each naming lines by the "
    "trace's own numbering, as --until and explain's file:line do), or with --store compare the store's log with "
    "a fork of it (folded from its newest snapshot before the first edited input, its later inputs applied again, "
    "edited, in memory; inputs named by number, as explain's `input N`), and print the difference: the first input "
    "where the two runs decide differently; each thing (operation, attempt, task, question, cause, alert, ...) "
    "whose decisions differ, with its state on each side and the steps of its explanation only one side has; "
    "and per view, the rows added, removed and changed field by field. Tandem calls no model: its decisions are "
    "a function of its inputs, so the answer is exact, and nothing runs but the engine. Nothing is written: "
    "not the trace, not a store. An edited input's authority is checked as any trace's (an actor may do what "
    "its kind allows, nothing more)."
)
EPILOG = (
    "EDITs: --drop LINE; --replace LINE=JSON (or LINE=@FILE); --insert-after LINE=JSON (LINE 0: before the "
    "first line); --shift LINE=SECONDS (its `at` moved, and the line with it, after the last input whose `at` "
    "is not later); --set LINE.FIELD=VALUE (VALUE is JSON if it reads as JSON, else text; FIELD may go into "
    "objects: 12.grant.allowed_operations='[\"worker.start\"]'). "
    "Exit codes: 0 no difference; 1 the runs differ; 2 a bad edit (which, and why; nothing is written), a bad "
    "trace, or bad usage."
)


class _Edit(argparse.Action):
    """Every edit option appends to one list, so that edits keep their order."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None) -> None:
        edits = list(getattr(namespace, "edits", None) or [])
        edits.append((self.const, values))
        namespace.edits = edits


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", metavar="TRACE", nargs="?", help="a JSON Lines trace file (or --store)")
    parser.add_argument(
        "--store", metavar="URL", help="a store instead of a trace: LINE is then an input's number (explain's `input N`); read only"
    )
    for option, op, metavar, text in (
        ("--drop", "drop", "LINE", "leave the input on LINE out"),
        ("--replace", "replace", "LINE=JSON", "put this input (or @FILE's) in LINE's place"),
        ("--insert-after", "insert_after", "LINE=JSON", "add this input (or @FILE's) after LINE (0: first)"),
        ("--shift", "shift", "LINE=SECONDS", "move LINE's input in time (negative: earlier)"),
        ("--set", "set", "LINE.FIELD=VALUE", "change one field of LINE's input"),
    ):
        parser.add_argument(option, action=_Edit, const=op, dest="edits", metavar=metavar, help=text)
    parser.add_argument("--until", type=line_number, metavar="LINE", help="compare as of LINE (the original's numbering)")
    parser.add_argument("--json", action="store_true", help="print the difference as JSON (docs/whatif.md)")


def _whatif(args: argparse.Namespace, edits: list[Edit]) -> WhatIf:
    if (args.trace is None) == (args.store is None):
        raise CliError("give a TRACE or --store URL (one of them)", EXIT_USAGE)
    if args.trace is not None:
        return whatif_trace(args.trace, edits, args.until)
    with open_or_fail(args.store, read_only=True) as store:
        return whatif_store(store, args.store, edits, args.until)


def run(args: argparse.Namespace) -> None:
    try:
        edits = [PARSERS[op](text) for op, text in (args.edits or [])]
        result = _whatif(args, edits)
    except EditInvalid as invalid:
        raise CliError(f"{invalid}; nothing was written", EXIT_USAGE) from None
    except FileNotFoundError as error:
        raise CliError(f"cannot read trace {args.trace}: {error.strerror}", EXIT_USAGE) from None
    if args.json:
        sys.stdout.write(msgspec.json.encode(result).decode() + "\n")
    else:
        sys.stdout.write(render(result, terminal_width()))
    if result.different:
        things, views = len(result.decisions), len(result.views)
        raise CliError(f"the runs differ: {things} thing(s) decided differently, {views} view(s) changed", EXIT_FAILED)
