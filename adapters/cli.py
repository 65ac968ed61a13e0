"""`tandem`: the command line.

Exit codes: 0 done; 1 the store or a file could not be used; 2 bad usage or a
bad trace (schema errors are printed as `line N: what is wrong`, at most 20,
and nothing is written to any store).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec

from tandem.adapters import daemon, watchdog
from tandem.adapters.ingest import TraceMismatch, ingest, ingest_batch_inputs_max
from tandem.adapters.process import batch_size
from tandem.adapters.render import render_document, render_view
from tandem.adapters.store import open_store, store_url_help
from tandem.adapters.trace import TraceInvalid, read_trace
from tandem.adapters.writer_lock import WriterLock, acquire_writer_lock
from tandem.projections import VIEW_NAMES, Views
from tandem.replay.engine import Engine, input_boundary, project
from tandem.replay.port import ConcurrencyError, EventStore, StoreError

DEFAULT_STORE = "sqlite:///tandem.db"
EXAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "gates" / "02_prerequisite_user_away.jsonl"

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class CliError(Exception):
    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.code = code


# ------------------------------------------------------------------ output


def print_views(views: Views, view: str | None, as_json: bool) -> None:
    if as_json:
        value: Any = views.view(view) if view else views.document()
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(value), indent=2).decode() + "\n")
    elif view:
        sys.stdout.write(render_view(view, views.view(view)))
    else:
        sys.stdout.write(render_document(views.document()))


# ---------------------------------------------------------------- commands


def _open_store(url: str) -> EventStore:
    try:
        return open_store(url)
    except StoreError as error:
        raise CliError(str(error)) from error


@contextmanager
def writer_lock(url: str) -> Iterator[WriterLock]:
    """The store's writer lock (adapters/writer_lock.py) for a writing
    command's whole run; refused at once (exit 1) while another writer holds it."""
    try:
        lock = acquire_writer_lock(url)
    except StoreError as error:
        raise CliError(str(error)) from error
    with lock:
        yield lock


def _open(url: str, with_views: bool = True) -> Engine:
    try:
        return Engine(_open_store(url), with_views=with_views)
    except StoreError as error:
        raise CliError(str(error)) from error


def _ingest_files(
    engine: Engine, paths: list[str], name: str | None, batch: int, quiet: bool, until_line: int | None = None
) -> None:
    if name is not None and len(paths) > 1:
        raise CliError("--name names one trace; give one TRACE with it", EXIT_USAGE)
    traces = []
    for path in paths:  # validate every trace before writing anything
        try:
            trace = read_trace(path, name)
        except FileNotFoundError as error:
            raise CliError(str(error), EXIT_USAGE) from error
        if until_line is not None:
            # Time travel: the whole trace is validated, then only its lines up to `until_line` apply.
            trace = dataclasses.replace(trace, lines=[t for t in trace.lines if (t.item.line or 0) <= until_line])
        traces.append(trace)
    for trace in traces:
        try:
            result = ingest(engine, trace, batch_inputs=batch)
        except TraceMismatch as error:
            raise CliError(str(error), EXIT_USAGE) from error
        except ConcurrencyError as error:
            raise CliError(f"another writer appended to the store meanwhile; run again to resume ({error})") from error
        if not quiet:
            print(
                f"{trace.name}: {result.applied} input(s) applied ({result.rejected} rejected), "
                f"{result.skipped} already in the store",
                file=sys.stderr,
            )


def cmd_replay(args: argparse.Namespace) -> None:
    with writer_lock(args.store):  # memory: (the default) needs none
        engine = _open(args.store)
        _ingest_files(engine, [args.trace], args.name, args.batch, quiet=True, until_line=args.until)
    assert engine.views is not None
    print_views(engine.views, args.view, args.json)


def cmd_ingest(args: argparse.Namespace) -> None:
    with writer_lock(args.store):
        engine = _open(args.store, with_views=False)  # ingest prints no view
        _ingest_files(engine, args.traces, args.name, args.batch, quiet=args.quiet)


def cmd_show(args: argparse.Namespace) -> None:
    store = _open_store(args.store)
    try:
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
    except StoreError as error:
        raise CliError(str(error)) from error
    print_views(views, args.view, args.json)


def cmd_demo(args: argparse.Namespace) -> None:
    if not EXAMPLE.exists():
        raise CliError(f"the bundled example is missing: {EXAMPLE} (install from a checkout: pip install -e .)")
    with writer_lock(args.store):
        engine = _open(args.store)
        _ingest_files(engine, [str(EXAMPLE)], None, ingest_batch_inputs_max, quiet=False)
    print(f"store: {args.store}\n", file=sys.stderr)
    assert engine.views is not None
    if not args.serve:
        print_views(engine.views, None, args.json)
        return
    assert engine.store is not None
    engine.store.close()
    _serve_demo(args)


def _serve_demo(args: argparse.Namespace) -> None:
    """Serve the demo store with fresh tokens, one per actor, in a 0600 file;
    print the URL and the human's token. The runtime records nothing of its
    own (the example's times are in the past: a wall-clock input would put
    every later line of it out of reach); inputs POSTed without `at` are
    stamped with the server's clock."""
    from tandem.adapters import serve
    from tandem.adapters.tokens import ACTORS, new_token, write_tokens_file

    tokens = {actor: new_token() for actor in ACTORS}
    write_tokens_file(args.tokens_file, tokens)

    def announce(url: str) -> None:
        print(f"human token: {tokens['human']}  (every actor's token: {args.tokens_file}, mode 0600)")
        print(f'try: curl -H "Authorization: Bearer {tokens["human"]}" {url}/v1/views/actions')
        print("stop with Ctrl-C", flush=True)

    serve_args = serve.demo_arguments(args.store, args.tokens_file, args.listen)
    try:
        serve.run(serve_args, announce=announce)
    except serve.ServeError as error:
        raise CliError(str(error), error.code) from error


def cmd_daemon(args: argparse.Namespace) -> None:
    try:
        daemon.run(args)
    except daemon.DaemonError as error:
        raise CliError(str(error), error.code) from error


def cmd_serve(args: argparse.Namespace) -> None:
    from tandem.adapters import serve

    try:
        serve.run(args)
    except serve.ServeError as error:
        raise CliError(str(error), error.code) from error


def cmd_watchdog(args: argparse.Namespace) -> None:
    try:
        watchdog.run(args)
    except watchdog.WatchdogError as error:
        raise CliError(str(error), error.code) from error


# ------------------------------------------------------------------ parser


def _view_name(text: str) -> str:
    if text not in VIEW_NAMES:
        raise argparse.ArgumentTypeError(f"unknown view {text!r}; views: {', '.join(VIEW_NAMES)}")
    return text


def _line_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a line number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("lines count from 1")
    return value


def _position(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a position: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("a position is 0 or more")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tandem",
        description=(
            "Tandem: the durable core of a foreground/background agent orchestrator. "
            "Inputs (JSON Lines traces, spec/TRACE.md) are decided into immutable events "
            "in an append-only store; views are folds of those events."
        ),
        epilog=f"Stores: {store_url_help}\nExit codes: 0 done, 1 store or file unusable, 2 bad usage or bad trace.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def view_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--json", action="store_true", help="print the views as JSON (spec section 7)")
        sub.add_argument(
            "--view", type=_view_name, metavar="NAME", help=f"print one view only: {', '.join(VIEW_NAMES)}"
        )

    def batch_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--batch",
            type=batch_size,
            default=ingest_batch_inputs_max,
            metavar="N",
            help=f"inputs per transaction (group commit; default {ingest_batch_inputs_max}; 1 = one transaction per input)",
        )
        sub.add_argument(
            "--name",
            metavar="NAME",
            help="the identity inputs are keyed by in the store (default: the file's name)",
        )

    replay = commands.add_parser(
        "replay",
        help="apply a trace and print the views",
        description="Validate TRACE, apply every input, print the views. "
        "Nothing is written if any line is bad (exit 2, `line N: ...`).",
    )
    replay.add_argument("trace", metavar="TRACE", help="a JSON Lines trace file")
    replay.add_argument("--store", default="memory:", metavar="URL", help="store to append to (default memory:)")
    replay.add_argument(
        "--until",
        type=_line_number,
        metavar="LINE",
        help="time travel: apply only the inputs on lines 1..LINE (the whole trace is still validated)",
    )
    view_options(replay)
    batch_options(replay)
    replay.set_defaults(handler=cmd_replay)

    ingest_parser = commands.add_parser(
        "ingest",
        help="append traces to a persistent store (resumable)",
        description="Append each TRACE to the store, committing --batch inputs per transaction. "
        "Interrupted and run again, it resumes after the last committed batch; no input is applied twice. "
        "Every trace is validated before anything is written. It holds the store's writer lock throughout: "
        "while another writer holds it, it exits 1 at once (`store URL is locked by pid N on HOST since T`).",
    )
    ingest_parser.add_argument("traces", metavar="TRACE", nargs="+", help="JSON Lines trace file(s), in order")
    ingest_parser.add_argument("--store", default=DEFAULT_STORE, metavar="URL", help=f"default {DEFAULT_STORE}")
    ingest_parser.add_argument("--quiet", action="store_true", help="print nothing on success")
    batch_options(ingest_parser)
    ingest_parser.set_defaults(handler=cmd_ingest)

    show = commands.add_parser(
        "show",
        help="print views from a store",
        description="Rebuild the views from the store's events and print them.",
    )
    show.add_argument("view", nargs="?", type=_view_name, metavar="VIEW", help=f"one of: {', '.join(VIEW_NAMES)}")
    show.add_argument("--store", default=DEFAULT_STORE, metavar="URL", help=f"default {DEFAULT_STORE}")
    show.add_argument("--json", action="store_true", help="print JSON (spec section 7)")
    show.add_argument(
        "--at",
        type=_position,
        metavar="POSITION",
        help="time travel: the views after the store's first POSITION events (0 = empty); a position inside "
        "one input's events shows the views before that input",
    )
    show.set_defaults(handler=cmd_show)

    demo = commands.add_parser(
        "demo",
        help="run the bundled email-signup example on SQLite",
        description="Ingest fixtures/gates/02_prerequisite_user_away.jsonl (spec section 9) into the store and print the views. "
        "Running it again resumes: nothing is applied twice.",
    )
    demo.add_argument("--store", default=DEFAULT_STORE, metavar="URL", help=f"default {DEFAULT_STORE}")
    demo.add_argument("--json", action="store_true", help="print JSON (spec section 7)")
    demo.add_argument(
        "--serve",
        action="store_true",
        help="then serve it over HTTP (tandem serve, docs/api.md): prints the URL and a human token it generated "
        "(every actor's token goes to --tokens-file, mode 0600); stop with Ctrl-C",
    )
    demo.add_argument(
        "--listen",
        default="127.0.0.1:8765",
        metavar="HOST:PORT",
        help="with --serve: where to listen (default 127.0.0.1:8765; port 0 picks a free port)",
    )
    demo.add_argument(
        "--tokens-file",
        type=Path,
        default=Path("tandem-demo-tokens.json"),
        metavar="FILE",
        help="with --serve: where the generated tokens go (default ./tandem-demo-tokens.json, replaced each run)",
    )
    demo.set_defaults(handler=cmd_demo)

    daemon_parser = commands.add_parser(
        "daemon",
        help="run the engine: apply spooled traces and the watchdog's facts as they arrive",
        description="The long-running engine (docs/operations.md). Records daemon.start, then applies "
        "trace files renamed into --spool (in name order, each exactly once, even across a crash), imports "
        "the watchdog's heartbeats and incidents from --watchdog-db (read-only, once by id), records a tick "
        "when idle, and rewrites the health snapshot --health. On SIGTERM or SIGINT it records "
        "daemon.stop (expected), publishes state stopped and exits 0.",
        epilog=f"Stores: {store_url_help}. Exit codes: 0 stopped as asked; 1 the store, spool or a file could "
        "not be used, or it stopped after an error; 2 bad usage.",
    )
    daemon.configure_parser(daemon_parser)
    daemon_parser.set_defaults(handler=cmd_daemon)

    serve_parser = commands.add_parser(
        "serve",
        help="serve the engine over HTTP: authenticated inputs, views, events, explain, live changes",
        description="The runtime of `tandem daemon` with the HTTP API of API.md in front (docs/api.md): POST "
        "/v1/inputs (the token is the actor), GET /v1/views, /v1/views/NAME, /v1/events, /v1/explain/ID, "
        "/v1/health, /v1/stream (Server-Sent Events), /openapi.json. Takes the store's writer lock; with --spool "
        "it also applies spooled traces. On SIGTERM or SIGINT it stops accepting, ends the streams, finishes "
        "the requests in flight, records daemon.stop (expected) and exits 0.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from tandem.adapters import serve

    serve.configure(serve_parser)
    serve_parser.set_defaults(handler=cmd_serve)

    watchdog_parser = commands.add_parser(
        "watchdog",
        help="watch the daemon from outside: heartbeats, incidents, notifications",
        description="An independent process (docs/operations.md): each --interval it writes a heartbeat "
        "row to its own SQLite file --db and reads the daemon's health snapshot --health. A daemon that is "
        "dead or stale (and did not stop as asked) opens one incident row per occurrence and a notification "
        "(notify log and stderr, plus notify-send when on PATH); a daemon back and fresh gets a recovery "
        "row. The daemon imports these rows.",
        epilog="Exit codes: 0 stopped by SIGTERM or SIGINT; 1 a file could not be used; 2 bad usage.",
    )
    watchdog.configure_parser(watchdog_parser)
    watchdog_parser.set_defaults(handler=cmd_watchdog)

    for module in _command_modules():
        sub = commands.add_parser(module.NAME, help=module.HELP, description=module.DESCRIPTION)
        module.configure(sub)
        sub.set_defaults(handler=module.run)
    return parser


def _command_modules() -> list[Any]:
    """More subcommands: each module of `adapters/commands/` with NAME, HELP,
    DESCRIPTION, ORDER, `configure(parser)` and `run(args)` (raising CliError)."""
    import importlib
    import pkgutil

    from tandem.adapters import commands

    modules = [importlib.import_module(f"tandem.adapters.commands.{info.name}") for info in pkgutil.iter_modules(commands.__path__)]
    return sorted(modules, key=lambda module: (module.ORDER, module.NAME))


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.handler(args)
    except TraceInvalid as invalid:
        for error in invalid.errors:
            print(error, file=sys.stderr)
        if invalid.total > len(invalid.errors):
            print(f"... and {invalid.total - len(invalid.errors)} more bad line(s)", file=sys.stderr)
        print(f"tandem: {invalid.path} is not a valid trace; nothing was written", file=sys.stderr)
        return EXIT_USAGE
    except CliError as error:
        print(f"tandem: {error}", file=sys.stderr)
        return error.code
    except BrokenPipeError:
        return EXIT_OK
    return EXIT_OK


if __name__ == "__main__":
    # Run the canonical module, not this `__main__` copy: the subcommand
    # modules (adapters/commands/) import `adapters.cli.CliError`, which must
    # be the class main() catches, or `python -m adapters.cli` prints tracebacks.
    from tandem.adapters.cli import main as canonical_main

    sys.exit(canonical_main())
