"""`tandem verify`: re-derive a store's events and snapshots and compare (replay/verify.py)."""

from __future__ import annotations

import argparse
import json
import sys

from tandem.adapters.commands.common import CliError, open_or_fail
from tandem.adapters.store import store_url_help
from tandem.adapters.terminal import printable
from tandem.replay.verify import verify

NAME = "verify"
ORDER = 41
HELP = "re-derive every event from the recorded inputs and compare with the store"
DESCRIPTION = (
    "Re-derive every event of the store from its recorded inputs (a fresh engine, today's rules) and compare "
    "them, position by position, byte for byte, with the stored events; then compare the state and views of "
    "every stored snapshot with the ones derived from the events. On the first divergence print its "
    "position, the input that caused it (seq, trace file and line, type) and both sides, and exit 1."
)
EPILOG = f"Exit codes: 0 clean; 1 a divergence, or the store could not be used; 2 bad usage. Stores: {store_url_help}"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", required=True, metavar="URL", help=store_url_help)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> None:
    with open_or_fail(args.store, read_only=True) as store:
        report = verify(store)
    if args.json:
        sys.stdout.write(json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n")
    else:
        if report.divergence is not None:
            # the stored and re-derived events quote their inputs: escaped, one line each
            sys.stdout.write("\n".join(map(printable, report.divergence.lines())) + "\n")
        sys.stdout.write(report.summary() + "\n")
    if not report.ok:
        raise CliError("the store diverges from what its inputs re-derive" + ("" if args.json else " (above)"))
