"""`tandem daemon`: the runtime without HTTP (the logic is adapters/daemon.py),
and the runtime's options, which `tandem serve` shares."""

from __future__ import annotations

import argparse
from pathlib import Path

from tandem.adapters import daemon
from tandem.adapters.commands.common import batch_size, positive_seconds
from tandem.replay.edge import SPOOL_ACTORS_DEFAULT
from tandem.adapters.ingest import ingest_batch_inputs_max
from tandem.adapters.store import store_url_help
from tandem.adapters.tokens import ACTORS

NAME = "daemon"
ORDER = 14
HELP = "run the engine: apply spooled traces and the watchdog's facts as they arrive"
DESCRIPTION = (
    "The long-running engine (docs/operations.md). Applies the files waiting in --spool (scanning it again "
    "until a scan finds nothing new), then records daemon.start; from then on it applies "
    "trace files renamed into --spool (in name order, each exactly once, even across a crash; one whose `at` "
    "is behind the store's last input is refused whole and raises incident spool_file_late/N naming it), imports "
    "the watchdog's heartbeats and incidents from --watchdog-db (read-only, once by id), records a tick "
    "when idle, and rewrites the health snapshot --health. On SIGTERM or SIGINT it records "
    "daemon.stop (expected), publishes state stopped and exits 0."
)
EPILOG = (
    f"Stores: {store_url_help}. Exit codes: 0 stopped as asked; 1 the store, spool or a file could "
    "not be used, or it stopped after an error; 2 bad usage."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store", required=True, metavar="URL", help="the event store to run on (sqlite:///..., postgresql://...)"
    )
    runtime_options(parser, spool_required=True)


def run(args: argparse.Namespace) -> None:
    daemon.run(args)


# --------------------------------------------------- the runtime's options


def spool_actors(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [name for name in names if name not in ACTORS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"actors are a comma-separated list of: {', '.join(ACTORS)}")
    return names


def tick_seconds(text: str) -> float:
    if text.strip() == "0":
        return 0.0
    return positive_seconds(text)


def runtime_options(parser: argparse.ArgumentParser, spool_required: bool) -> None:
    """The runtime's options (what `daemon.settings_from` reads), shared by
    `tandem daemon` and `tandem serve`: the spool, then the rounds."""
    _spool_options(parser, spool_required)
    _round_options(parser, "in the spool's parent folder" if spool_required else "in the spool's parent folder with --spool, else none")


def _spool_options(parser: argparse.ArgumentParser, required: bool) -> None:
    parser.add_argument(
        "--spool",
        required=required,
        type=Path,
        metavar="DIR",
        help="folder where writers drop traces: write a temporary name (starting with '.' or not ending in "
        "'.jsonl'), then rename to NAME.jsonl; applied in name order, then moved to DIR/done/, or to DIR/rejected/ "
        "with NAME.jsonl.error if refused (created owner-only if missing; refused if writable by group or others)",
    )
    parser.add_argument(
        "--spool-actors",
        type=spool_actors,
        default=SPOOL_ACTORS_DEFAULT,
        metavar="A,B,...",
        help=f"the actors spool files may speak for (default {','.join(SPOOL_ACTORS_DEFAULT)}): a file with an input "
        "from another actor is refused whole; human-only inputs come with a human token over HTTP",
    )


def _round_options(parser: argparse.ArgumentParser, default_where: str) -> None:
    """The files each round reads and writes (defaults said `default_where`), and its pace."""
    parser.add_argument(
        "--health",
        type=Path,
        metavar="FILE",
        help=f"the health snapshot published for the watchdog (default: tandem-health.json {default_where})",
    )
    parser.add_argument(
        "--watchdog-db",
        type=Path,
        metavar="FILE",
        help="the watchdog's SQLite file (its --db), read-only, to import heartbeats and incidents "
        f"(default: tandem-watchdog.db {default_where}; missing = no heartbeat, unattended dispatch held)",
    )
    parser.add_argument(
        "--interval",
        type=positive_seconds,
        default=1.0,
        metavar="SECONDS",
        help="pause between rounds (spool scan, watchdog import, idle tick) (default 1)",
    )
    parser.add_argument(
        "--publish-interval",
        type=positive_seconds,
        default=5.0,
        metavar="SECONDS",
        help="how often the health snapshot is rewritten (default 5)",
    )
    parser.add_argument(
        "--tick",
        type=tick_seconds,
        default=30.0,
        metavar="SECONDS",
        help="record a `tick` when no input came for this long, so time rules run while idle (default 30; 0 never)",
    )
    parser.add_argument(
        "--batch",
        type=batch_size,
        default=ingest_batch_inputs_max,
        metavar="N",
        help=f"spool inputs per transaction (default {ingest_batch_inputs_max})",
    )
