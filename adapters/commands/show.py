"""`tandem show [VIEW]`: the views rebuilt from a store, now or at a position."""

from __future__ import annotations

import argparse
import sys

from tandem.adapters.commands.common import (
    EXIT_USAGE,
    CliError,
    integer_at_least,
    layout_of,
    open_or_fail,
    print_views,
    store_url_default,
    table_options,
    view_name,
)
from tandem.projections import VIEW_NAMES
from tandem.replay.engine import input_boundary, project

NAME = "show"
ORDER = 12
HELP = "print views from a store"
DESCRIPTION = "Rebuild the views from the store's events and print them."
EPILOG = None


def position(text: str) -> int:
    return integer_at_least(text, 0, "a position", "a position is 0 or more")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("view", nargs="?", type=view_name, metavar="VIEW", help=f"one of: {', '.join(VIEW_NAMES)}")
    parser.add_argument("--store", default=store_url_default, metavar="URL", help=f"default {store_url_default}")
    table_options(parser, "print JSON (contract section 7)")
    parser.add_argument(
        "--at",
        type=position,
        metavar="POSITION",
        help="time travel: the views after the store's first POSITION events (0 = empty); a position inside "
        "one input's events shows the views before that input",
    )


def run(args: argparse.Namespace) -> None:
    layout = layout_of(args, args.view)
    with open_or_fail(args.store, read_only=True) as store:
        until = None
        if args.at is not None:
            head = store.head()
            if args.at > head:
                raise CliError(f"--at {args.at} is past the store's last event ({head})", EXIT_USAGE)
            until = input_boundary(store, args.at)
            if until != args.at:
                print(
                    f"tandem: position {args.at} is inside an input's events; showing the views before that input "
                    f"(position {until})",
                    file=sys.stderr,
                )
        views = project(store, until=until)
    print_views(views, args.view, args.json, layout)
