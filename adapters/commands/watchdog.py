"""`tandem watchdog`: watch the daemon from outside (the logic is adapters/watchdog.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from tandem.adapters import watchdog
from tandem.adapters.commands.common import positive_seconds

NAME = "watchdog"
ORDER = 16
HELP = "watch the daemon from outside: heartbeats, incidents, notifications"
DESCRIPTION = (
    "An independent process (docs/operations.md): each --interval it writes a heartbeat "
    "row to its own SQLite file --db and reads the daemon's health snapshot --health. A daemon that is "
    "dead or stale (and did not stop as asked) opens one incident row per occurrence and a notification "
    "(notify log and stderr, plus notify-send when on PATH); a daemon back and fresh gets a recovery "
    "row. The daemon imports these rows."
)
EPILOG = "Exit codes: 0 stopped by SIGTERM or SIGINT; 1 a file could not be used; 2 bad usage."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--health",
        required=True,
        type=Path,
        metavar="FILE",
        help="the daemon's health snapshot (the daemon's --health); the only thing read of the daemon",
    )
    parser.add_argument(
        "--db",
        required=True,
        type=Path,
        metavar="FILE",
        help="the watchdog's own SQLite file (created if missing; never the engine's database): "
        "heartbeats, incidents, recoveries; the daemon imports it (its --watchdog-db)",
    )
    parser.add_argument(
        "--max-age",
        type=positive_seconds,
        default=30.0,
        metavar="SECONDS",
        help="a snapshot older than this means the daemon is stale (default 30; "
        "keep it several times the daemon's --publish-interval)",
    )
    parser.add_argument(
        "--interval",
        type=positive_seconds,
        default=5.0,
        metavar="SECONDS",
        help="time between rounds: one heartbeat row and one look at the snapshot (default 5)",
    )
    parser.add_argument(
        "--notify-log",
        type=Path,
        metavar="FILE",
        help="where incidents and recoveries are appended, one line each "
        "(default: tandem-watchdog-notify.log next to --db); they also go to stderr, "
        "and to notify-send when it is on PATH",
    )
    parser.add_argument(
        "--providers",
        type=Path,
        metavar="FILE",
        help="a provider snapshot (tandem-providers/1 JSON: each provider's login and, when exposed, its "
        "credential expiry); each change of a provider's readiness becomes a readiness row, notified when "
        "not ready (default: none)",
    )


def run(args: argparse.Namespace) -> None:
    watchdog.run(args)
