"""`tandem demo`: the bundled email-signup example, ingested and printed, or served."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path

from tandem.adapters.commands import serve as serve_command
from tandem.adapters.commands.common import (
    CliError,
    ingest_files,
    layout_of,
    open_or_fail,
    print_views,
    scan_traces,
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


def listen_text(text: str) -> str:
    """An argparse type: HOST:PORT as `tandem serve --listen` takes it (checked here, passed on as text)."""
    serve_command.listen_address(text)
    return text


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
        type=listen_text,
        metavar="HOST:PORT",
        help=f"with --serve: where to listen (default {serve_command.listen_default}; port 0 picks a free port)",
    )
    parser.add_argument(
        "--tokens-file",
        type=Path,
        default=Path("tandem-demo-tokens.json"),
        metavar="FILE",
        help="with --serve: where the generated tokens go (default ./tandem-demo-tokens.json); made by this run, "
        "removed when it stops, never replacing a file already there (another run's: refused, exit 1)",
    )


def run(args: argparse.Namespace) -> None:
    """Ingest the example and print the views, or serve them. Everything that
    can refuse the run is checked before a file is written: the columns, the
    example, the tokens file (never replaced: `refuse_existing_tokens_file`)
    and the port (bound first), then the trace; only then is the store
    opened or made."""
    layout = layout_of(args, args.view)
    if not EXAMPLE.exists():
        raise CliError(f"the bundled example is missing: {EXAMPLE} (install from a checkout: pip install -e .)")
    bound = None
    if args.serve:
        from tandem.adapters.serve import bind_listening  # as in `tandem serve`: the HTTP stack only when serving

        refuse_existing_tokens_file(args.tokens_file)
        bound = bind_listening(*serve_command.listen_address(args.listen))
    try:
        traces = scan_traces([str(EXAMPLE)], None)
        with open_or_fail(args.store, writing=True) as store:
            engine = Engine(store)
            ingest_files(engine, traces, ingest_batch_inputs_max, quiet=False)
    except BaseException:
        if bound is not None:
            bound[0].close()
        raise
    print(f"store: {args.store}\n", file=sys.stderr)
    assert engine.views is not None
    if bound is not None:
        serve_demo(args, bound)
    else:
        print_views(engine.views, args.view, args.json, layout)


def refuse_existing_tokens_file(path: Path) -> None:
    """A tokens file already there is another run's (a demo serving now, or
    one killed before it could remove its file): replacing it would turn
    every token that server accepts into a 401 for whoever reads the file.
    Refused (exit 1), naming it and the ways on."""
    if os.path.lexists(path):
        raise CliError(
            f"{path} exists: another `tandem demo --serve` may be serving with its tokens (a run removes its own file "
            "when it stops). Stop that server, or remove the file if none is running, or give --tokens-file OTHER"
        )


def serve_demo(args: argparse.Namespace, bound: tuple[socket.socket, str]) -> None:
    """Serve the demo store with fresh tokens, one per actor, in a 0600 file
    made by this run (never one already there) and removed when it stops;
    print the URL and the human's token. The runtime records nothing of its
    own (the example's times are in the past: a wall-clock input would put
    every later line of it out of reach); inputs POSTed without `at` are
    stamped with the server's clock."""
    from tandem.adapters import serve
    from tandem.adapters.tokens import ACTORS, new_token, write_tokens_file

    tokens = {actor: new_token() for actor in ACTORS}
    try:
        written = write_tokens_file(args.tokens_file, tokens, exclusive=True)
    except FileExistsError:
        bound[0].close()
        refuse_existing_tokens_file(args.tokens_file)  # made meanwhile by another run
        raise
    except OSError as error:
        bound[0].close()
        raise CliError(f"cannot write {args.tokens_file}: {error.strerror}") from error

    def announce(url: str) -> None:
        print(f"human token: {tokens['human']}  (every actor's token: {args.tokens_file}, mode 0600)")
        print(f'try: curl -H "Authorization: Bearer {tokens["human"]}" {url}/v1/views/actions')
        print("stop with Ctrl-C", flush=True)

    try:
        serve.run(serve_arguments(args.store, args.tokens_file, args.listen), announce=announce, bound=bound)
    finally:
        remove_if_same(args.tokens_file, written)


def remove_if_same(path: Path, written: os.stat_result) -> None:
    """Remove `path` if it is still the file this run wrote (not one put in its place)."""
    try:
        now = os.stat(path)
        if (now.st_dev, now.st_ino) == (written.st_dev, written.st_ino):
            os.unlink(path)
    except OSError:
        pass


def serve_arguments(store: str, tokens: Path, listen: str) -> argparse.Namespace:
    """`tandem serve` arguments for `tandem demo --serve`: the defaults, and
    no input of the runtime's own."""
    parser = argparse.ArgumentParser()
    serve_command.configure(parser)
    return parser.parse_args(["--store", store, "--tokens", str(tokens), "--listen", listen, "--no-runtime-inputs"])
