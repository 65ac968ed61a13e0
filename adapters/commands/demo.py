"""`tandem demo`: the bundled email-signup example, ingested and printed, or served."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tandem.adapters.commands import serve as serve_command
from tandem.adapters.commands.common import (
    CliError,
    ingest_files,
    layout_of,
    open_or_fail,
    print_views,
    store_url_default,
    table_options,
    view_name,
)
from tandem.projections import VIEW_NAMES
from tandem.adapters.ingest import ingest_batch_inputs_max
from tandem.replay.engine import Engine

NAME = "demo"
ORDER = 13
HELP = "run the bundled email-signup example on SQLite"
DESCRIPTION = (
    "Ingest fixtures/gates/02_prerequisite_user_away.jsonl (contract section 9) into the store and print the views. "
    "Running it again resumes: nothing is applied twice."
)
EPILOG = None

EXAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "gates" / "02_prerequisite_user_away.jsonl"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", default=store_url_default, metavar="URL", help=f"default {store_url_default}")
    table_options(parser, "print JSON (contract section 7)")
    parser.add_argument("--view", type=view_name, metavar="NAME", help=f"print one view only: {', '.join(VIEW_NAMES)}")
    parser.add_argument(
        "--serve",
        action="store_true",
        help="then serve it over HTTP (tandem serve, docs/api.md): prints the URL and a human token it generated "
        "(every actor's token goes to --tokens-file, mode 0600); stop with Ctrl-C",
    )
    parser.add_argument(
        "--listen",
        default=serve_command.listen_default,
        metavar="HOST:PORT",
        help=f"with --serve: where to listen (default {serve_command.listen_default}; port 0 picks a free port)",
    )
    parser.add_argument(
        "--tokens-file",
        type=Path,
        default=Path("tandem-demo-tokens.json"),
        metavar="FILE",
        help="with --serve: where the generated tokens go (default ./tandem-demo-tokens.json, replaced each run)",
    )


def run(args: argparse.Namespace) -> None:
    layout = layout_of(args, args.view)  # before anything is written
    if not EXAMPLE.exists():
        raise CliError(f"the bundled example is missing: {EXAMPLE} (install from a checkout: pip install -e .)")
    with open_or_fail(args.store, writing=True) as store:
        engine = Engine(store)
        ingest_files(engine, [str(EXAMPLE)], None, ingest_batch_inputs_max, quiet=False)
    print(f"store: {args.store}\n", file=sys.stderr)
    assert engine.views is not None
    if args.serve:
        serve_demo(args)
    else:
        print_views(engine.views, args.view, args.json, layout)


def serve_demo(args: argparse.Namespace) -> None:
    """Serve the demo store with fresh tokens, one per actor, in a 0600 file;
    print the URL and the human's token. The runtime records nothing of its
    own (the example's times are in the past: a wall-clock input would put
    every later line of it out of reach); inputs POSTed without `at` are
    stamped with the server's clock."""
    from tandem.adapters import serve  # as in `tandem serve`: the HTTP stack only when serving
    from tandem.adapters.tokens import ACTORS, new_token, write_tokens_file

    tokens = {actor: new_token() for actor in ACTORS}
    write_tokens_file(args.tokens_file, tokens)

    def announce(url: str) -> None:
        print(f"human token: {tokens['human']}  (every actor's token: {args.tokens_file}, mode 0600)")
        print(f'try: curl -H "Authorization: Bearer {tokens["human"]}" {url}/v1/views/actions')
        print("stop with Ctrl-C", flush=True)

    serve.run(serve_arguments(args.store, args.tokens_file, args.listen), announce=announce)


def serve_arguments(store: str, tokens: Path, listen: str) -> argparse.Namespace:
    """`tandem serve` arguments for `tandem demo --serve`: the defaults, and
    no input of the runtime's own."""
    parser = argparse.ArgumentParser()
    serve_command.configure(parser)
    return parser.parse_args(["--store", store, "--tokens", str(tokens), "--listen", listen, "--no-runtime-inputs"])
