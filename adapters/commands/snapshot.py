"""`tandem snapshot`: write a snapshot of a store's state and views now (replay/snapshot.py)."""

from __future__ import annotations

import argparse
import sys

from tandem.adapters.commands.common import CliError, open_or_fail
from tandem.adapters.store import store_url_help
from tandem.replay import snapshot as snapshots
from tandem.replay.engine import Engine
from tandem.replay.key_table import index_keys, keys_events_per_write_max
from tandem.replay.port import EventStore

NAME = "snapshot"
ORDER = 50
HELP = "write a snapshot now, so a restart folds only the events after it (--list, --drop)"
DESCRIPTION = (
    "Fold the store (from its newest usable snapshot) and write a snapshot of the state and views at its head, "
    "so that opening it folds only the events after that, and bring the store's key table (what `whatif --store` "
    "reads instead of scanning the log) up to there. Both are caches beside the log: engines also "
    "write them by themselves (every 50,000 events by default), a snapshot of other code is never used, and "
    "--drop removes them all without losing anything."
)
EPILOG = "Exit codes: 0 done; 1 the store could not be used; 2 bad usage."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", required=True, metavar="URL", help=store_url_help)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--list", action="store_true", help="list the stored snapshots instead")
    action.add_argument("--drop", action="store_true", help="delete every stored snapshot instead")


def run(args: argparse.Namespace) -> None:
    with open_or_fail(args.store) as store:
        if args.list:
            _list(store)
        elif args.drop:
            _drop(store)
        else:
            _write(store)


def _list(store: EventStore) -> None:
    listed = store.list_snapshots()
    for info in listed:
        print(snapshots.describe(info))
    print(f"{len(listed)} snapshot(s); the log's head is at position {store.head():,}", file=sys.stderr)


def _drop(store: EventStore) -> None:
    listed = store.list_snapshots()
    for info in listed:
        store.delete_snapshot(info.position, info.fingerprint)
    print(f"{len(listed)} snapshot(s) deleted", file=sys.stderr)


def _write(store: EventStore) -> None:
    engine = Engine(store, snapshot_every=0)
    if engine.state.position == 0:
        raise CliError("the store is empty: there is nothing to snapshot")
    if engine.snapshot_position == engine.state.position:
        print(f"a snapshot of the current code is already at the head (position {engine.state.position:,})")
    else:
        written = engine.write_snapshot()
        print(
            f"snapshot at position {written.position:,}: {written.size:,} bytes "
            f"(state {written.state_bytes:,}, views {written.views_bytes:,}), fingerprint {written.fingerprint[:12]}"
        )
    _keys(store, engine.state.position)


def _keys(store: EventStore, position: int) -> None:
    """The key table brought up to the snapshot's position, with progress on a long catch-up."""
    fingerprint = snapshots.code_fingerprint()
    started = store.keys_through(fingerprint)

    def progress(through: int, until: int) -> None:
        if until - started > keys_events_per_write_max:
            print(f"  key table: {through:,} of {until:,} events", file=sys.stderr, flush=True)

    indexed = index_keys(store, fingerprint, until=position, progress=progress)
    print(f"key table up to position {store.keys_through(fingerprint):,} ({indexed:,} events indexed now)")
