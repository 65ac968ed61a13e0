"""`tandem serve`: the runtime with the HTTP API in front (the logic is
adapters/serve.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from tandem.adapters.commands.common import EXIT_USAGE, CliError, positive_count, positive_seconds, store_url_default
from tandem.adapters.commands.daemon import runtime_options
from tandem.adapters.stream import keepalive_s_default, stream_clients_max_default

NAME = "serve"
ORDER = 15
HELP = "serve the engine over HTTP: authenticated inputs, views, events, explain, live changes"
DESCRIPTION = (
    "The runtime of `tandem daemon` with the HTTP API in front (docs/api.md): POST "
    "/v1/inputs (the token is the actor), GET /v1/views, /v1/views/NAME, /v1/events, /v1/explain/ID, "
    "/v1/health, /v1/stream (Server-Sent Events), /openapi.json; with --github-secret-file, POST "
    "/v1/sources/github (signed GitHub webhook deliveries as observe inputs). Takes the store's writer "
    "lock (--follow: none, it serves a store another server writes; --standby: it follows until it gets "
    "the lock, then writes); with --spool it also applies spooled traces. On SIGTERM or SIGINT it stops accepting, ends the streams, finishes "
    "the requests in flight, records daemon.stop (expected) and exits 0."
)
EPILOG = (
    "API: docs/api.md, docs/sources.md. Exit codes: 0 stopped by SIGTERM or SIGINT; 1 the tokens, the "
    "GitHub secret, the store (locked by another writer, unreachable) or the spool could not be used; 2 bad usage."
)

listen_default = "127.0.0.1:8765"
# A slow client's deadlines (adapters/slow_clients.py): a request's head, from
# the connection's start (or the next request's first byte), and its body,
# from the end of its head. Past either the connection is closed.
head_timeout_s_default = 10.0
body_timeout_s_default = 30.0


def listen_address(text: str) -> tuple[str, int]:
    host, separator, port_text = text.rpartition(":")
    if not separator or not port_text.isdigit() or int(port_text) > 65535:
        raise argparse.ArgumentTypeError(f"--listen {text!r}: write HOST:PORT (port 0 picks a free one)")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port_text)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", metavar="URL", help=f"the event store (default {store_url_default})")
    parser.add_argument(
        "--tokens",
        type=Path,
        metavar="FILE",
        help='JSON {"tokens": [{"actor": "human", "token": "..."}, ...]}: each token is the actor it names; '
        "the file must be owned by the server's user and readable by it only (chmod 600), every token at least 32 "
        "characters, no key repeated",
    )
    parser.add_argument(
        "--stores",
        type=Path,
        metavar="FILE",
        help='serve several stores from this one process instead of --store and --tokens: JSON {"stores": '
        '[{"name": "alpha", "store": "URL", "tokens": "FILE"}, ...]} (optional per store: "spool", "health", '
        '"watchdog_db"); each request goes to the store its token (or console session) belongs to, the paths '
        "are the same (docs/operations.md)",
    )
    parser.add_argument(
        "--github-secret-file",
        type=Path,
        metavar="FILE",
        help="serve POST /v1/sources/github (GitHub webhook deliveries, no token: each is checked against its "
        "X-Hub-Signature-256 with this secret, docs/sources.md); FILE holds the webhook's secret, readable by "
        "its owner only (chmod 600), not empty",
    )
    parser.add_argument(
        "--listen",
        type=listen_address,
        default=listen_address(listen_default),
        metavar="HOST:PORT",
        help=f"where to listen (default {listen_default}; port 0 picks a free port, printed on the first line)",
    )
    _role_options(parser)
    runtime_options(parser, spool_required=False)
    _more_options(parser)


def _role_options(parser: argparse.ArgumentParser) -> None:
    roles = parser.add_mutually_exclusive_group()
    roles.add_argument(
        "--follow",
        action="store_true",
        help="serve the reads and the live stream from a store another `tandem serve` writes, never writing it: "
        "no writer lock, the store opened read-only, new events tailed (PostgreSQL LISTEN/NOTIFY, and a look "
        "every --interval); every write is 409 read_only naming the writer (docs/operations.md)",
    )
    roles.add_argument(
        "--standby",
        action="store_true",
        help="as --follow while another process holds the store's writer lock; when it is released (its holder "
        "stopped or was killed) take it, read to the store's head and become the writer; with the lock free at "
        "the start, write at once",
    )


def _more_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-runtime-inputs",
        action="store_true",
        help="record none of the runtime's own inputs (daemon.start, daemon.stop, idle ticks): for a store fed "
        "recorded traces whose times are in the past, which a wall-clock input would make unappendable",
    )
    parser.add_argument(
        "--stream-clients-max",
        type=positive_count,
        default=stream_clients_max_default,
        metavar="N",
        help=f"live streams served at once (default {stream_clients_max_default}); the next is refused 503",
    )
    parser.add_argument(
        "--stream-keepalive",
        type=positive_seconds,
        default=keepalive_s_default,
        metavar="SECONDS",
        help=f"a comment line on an idle stream this often (default {keepalive_s_default:g})",
    )
    parser.add_argument(
        "--head-timeout",
        type=positive_seconds,
        default=head_timeout_s_default,
        metavar="SECONDS",
        help=f"a request's head (its line and headers) must arrive within this (default {head_timeout_s_default:g}), "
        "from the connection's start or the next request's first byte; else the connection is closed",
    )
    parser.add_argument(
        "--body-timeout",
        type=positive_seconds,
        default=body_timeout_s_default,
        metavar="SECONDS",
        help=f"a request's body must arrive within this after its head (default {body_timeout_s_default:g}); else "
        "408 request_timeout, the connection closed, nothing recorded (a response, such as the live stream, lasts "
        "as long as it needs)",
    )


def run(args: argparse.Namespace) -> None:
    # Imported here: the HTTP stack (Litestar, uvicorn) costs every other command's start.
    from tandem.adapters import serve

    if args.stores is None:
        if args.tokens is None:
            raise CliError("give --tokens FILE (or --stores FILE for several stores)", EXIT_USAGE)
        args.store = args.store or store_url_default
    serve.run(args)
