"""`tandem replay TRACE`: apply a trace and print the views."""

from __future__ import annotations

import argparse

from tandem.adapters.commands.common import (
    horizon_of,
    ingest_files,
    integer_at_least,
    layout_of,
    open_or_fail,
    print_views,
    scan_traces,
    table_options,
    trace_options,
    view_name,
)
from tandem.replay.edge import at_ahead_max_s
from tandem.projections import VIEW_NAMES
from tandem.replay.engine import Engine

NAME = "replay"
ORDER = 10
HELP = "apply a trace and print the views"
DESCRIPTION = (
    "Validate TRACE, apply every input, print the views. "
    "Nothing is written if any line is bad (exit 2, `line N: ...`). With a --store other than memory:, an `at` "
    f"more than {at_ahead_max_s} s ahead of this machine's clock is bad too, unless --allow-future."
)
EPILOG = None


def line_number(text: str) -> int:
    return integer_at_least(text, 1, "a line number", "lines count from 1")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", metavar="TRACE", help="a JSON Lines trace file")
    parser.add_argument("--store", default="memory:", metavar="URL", help="store to append to (default memory:)")
    parser.add_argument(
        "--until",
        type=line_number,
        metavar="LINE",
        help="time travel: apply only the inputs on lines 1..LINE (the whole trace is still validated)",
    )
    table_options(parser, "print the views as JSON (contract section 7)")
    parser.add_argument("--view", type=view_name, metavar="NAME", help=f"print one view only: {', '.join(VIEW_NAMES)}")
    trace_options(parser)


def run(args: argparse.Namespace) -> None:
    layout = layout_of(args, args.view)  # before anything is written
    traces = scan_traces([args.trace], args.name, horizon_of(args, args.store))  # before the store is opened or made
    with open_or_fail(args.store, writing=True) as store:  # memory: (the default) needs no lock
        engine = Engine(store)
        ingest_files(engine, traces, args.batch, quiet=True, until_line=args.until)
    assert engine.views is not None
    print_views(engine.views, args.view, args.json, layout)
