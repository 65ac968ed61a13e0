"""`tandem ingest TRACE...`: append traces to a persistent store, resumable."""

from __future__ import annotations

import argparse
import sys

from tandem.adapters.commands.common import horizon_of, ingest_files, open_or_fail, scan_traces, store_url_default, trace_options
from tandem.replay.edge import at_ahead_max_s
from tandem.adapters.snapshots_beside import snapshots_beside_for
from tandem.replay.engine import Engine

NAME = "ingest"
ORDER = 11
HELP = "append traces to a persistent store (resumable)"
DESCRIPTION = (
    "Append each TRACE to the store, committing --batch inputs per transaction. "
    "Interrupted and run again, it resumes after the last committed batch; no input is applied twice. "
    "Every trace is validated, and checked against the store and the traces before it, before anything is written "
    "(a bad line: exit 2, `line N: ...`, naming the file). A line whose `at` "
    f"is more than {at_ahead_max_s} s ahead of this machine's clock is bad too, unless --allow-future: every later "
    "input, live ones too, would have to come after it. It holds the store's writer lock throughout: "
    "while another writer holds it, it exits 1 at once (`store URL is locked by pid N on HOST since T`). "
    "Every 50,000 events or so a snapshot (so that the next start folds only what came after) is written by "
    "a process of its own beside it, which it waits for before it exits. "
    "With --restamp (a backfill: an old trace into a store that took later inputs), an input earlier than the "
    "store's last input, or than the input applied before it, is applied at that `at` instead of refused, "
    "so an id the store holds already is a recorded duplicate_input (idempotency_conflict if its body differs)."
)
EPILOG = None


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("traces", metavar="TRACE", nargs="+", help="JSON Lines trace file(s), in order")
    parser.add_argument("--store", default=store_url_default, metavar="URL", help=f"default {store_url_default}")
    parser.add_argument("--quiet", action="store_true", help="print nothing on success")
    parser.add_argument(
        "--restamp",
        action="store_true",
        help="record each input at the later of its own `at` and the `at` recorded before it (the store's last "
        "input's, then the previous line's) instead of refusing an input behind the store",
    )
    trace_options(parser)


def run(args: argparse.Namespace) -> None:
    traces = scan_traces(args.traces, args.name, horizon_of(args, args.store))  # before the store is opened or made
    with open_or_fail(args.store, writing=True) as store:
        # It prints no view, and its snapshots are written by a process beside it.
        engine = Engine(store, with_views=False, snapshots_beside=snapshots_beside_for(args.store))
        ingest_files(engine, traces, args.batch, quiet=args.quiet, warn_leaps=True, restamp=args.restamp)
        _finish_snapshot(engine, args.quiet)


def _finish_snapshot(engine: Engine, quiet: bool) -> None:
    """A snapshot being written beside is finished before ingest exits (said, unless --quiet)."""
    beside = engine.snapshots_beside
    if beside is not None and beside.busy() and not quiet:
        print(f"tandem: finishing the snapshot at position {beside.started_at_position:,} (written beside, pid "
              f"{beside.process.pid})", file=sys.stderr)  # type: ignore[attr-defined]
    engine.collect_beside(wait=True)
