"""What the `tandem` subcommands share: the exit codes, the CLI error, opening
a store or failing (under the writer lock for a writing command), the option
types, and the trace and view helpers of `replay`, `ingest`, `show` and `demo`.

Not a subcommand itself: adapters/cli.py registers every other module of
this package.
"""

from __future__ import annotations

import argparse
import difflib
import sys
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import msgspec

from tandem.replay.edge import at_ahead_max_s
from tandem.adapters.health_file import utc_now
from tandem.adapters.ingest import TraceMismatch, check_traces, ingest, ingest_batch_inputs_max
from tandem.adapters.render import WIDE, Layout, known_columns, render_document, render_view
from tandem.adapters.store import open_store, parse_store_url
from tandem.adapters.terminal import printable, terminal_width
from tandem.adapters.writer_lock import WriterLock, acquire_writer_lock, claim_store
from tandem.domain.inputs import format_at
from tandem.projections import VIEW_NAMES, Views
from tandem.replay.engine import Engine
from tandem.replay.input_errors import did_you_mean
from tandem.replay.port import ConcurrencyError, EventStore, StoreError
from tandem.replay.trace_scan import ScannedTrace, TraceChanged, scan_trace
from tandem.replay.traces import Horizon

# 0 done; 1 the store or a file could not be used (or what the command
# checks does not hold); 2 bad usage or bad input (a trace, a scenario, a line).
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

store_url_default = "sqlite:///tandem.db"


class CliError(Exception):
    """A subcommand failed: `tandem` prints `tandem: MESSAGE` and exits with `code`."""

    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.code = code


# ------------------------------------------------------------------ stores


@contextmanager
def writer_lock_or_fail(url: str) -> Iterator[WriterLock]:
    """The store's writer lock (adapters/writer_lock.py) for the block;
    refused at once (CliError, exit 1) while another writer holds it. A
    block that fails (a refused command) with the store holding no event
    leaves none of the files this run created (`WriterLock.discard`); a
    block that fails because the store did (StoreError) leaves them."""
    try:
        lock = acquire_writer_lock(url)
    except StoreError as error:
        raise CliError(str(error)) from error
    with lock:
        try:
            yield lock
        except BaseException as error:
            # The store failing (a full disk, a lost database) is no refusal of
            # the command's input: what it holds stays as it is, readable, and
            # the same command resumes (docs/operations.md).
            if not isinstance(error, StoreError) and not isinstance(error.__cause__, StoreError):
                lock.discard()
            raise


def claim_or_fail(store: EventStore, lock: WriterLock) -> None:
    """Claim `store` under `lock` (its appends fenced: adapters/writer_lock.py
    `claim_store`) at its first append: a command that writes nothing (a
    bad trace) leaves no claim either; a CliError (exit 1) if it cannot be."""
    try:
        claim_store(store, lock, deferred=True)
    except StoreError as error:
        store.close()
        raise CliError(str(error)) from error


@contextmanager
def open_or_fail(url: str, *, writing: bool = False, read_only: bool = False) -> Iterator[EventStore]:
    """The store at `url`, open for the block and closed after it; with
    `writing`, under its writer lock (taken first, released last); with
    `read_only` (a command that only reads), opened so that nothing is
    created or changed (`open_store`). A StoreError opening it, locking it or
    in the block is a CliError (exit 1)."""
    assert not (writing and read_only)
    with writer_lock_or_fail(url) if writing else nullcontext() as lock:
        try:
            store = open_store(url, read_only=read_only)
        except StoreError as error:
            raise CliError(str(error)) from error
        if lock is not None:
            claim_or_fail(store, lock)
        try:
            yield store
        except StoreError as error:
            raise CliError(str(error)) from error
        finally:
            store.close()


# ----------------------------------------------------------------- options


def integer_at_least(text: str, minimum: int, what: str, too_small: str) -> int:
    """For argparse types: `text` as an integer of `minimum` or more; else
    "not WHAT: TEXT" or `too_small`."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(too_small)
    return value


def batch_size(text: str) -> int:
    """An argparse type: a batch of 1 or more."""
    return integer_at_least(text, 1, "a number", "the batch size is at least 1")


def positive_count(text: str) -> int:
    """An argparse type: a count of 1 or more (of clients, say)."""
    return integer_at_least(text, 1, "a number", "must be at least 1")


def positive_seconds(text: str) -> float:
    """An argparse type: more than 0 seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("must be more than 0 seconds")
    return value


# ------------------------------------------------------------------ traces


trace_name_chars_max = 1024  # a trace's identity in the store (the file's name by default)


def trace_name(text: str) -> str:
    """An argparse type for --name: the identity inputs are keyed by, so not
    empty, not only spaces, no control characters, at most 1,024 characters."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the name is empty: give the trace's identity, or leave --name out")
    if len(text) > trace_name_chars_max:
        raise argparse.ArgumentTypeError(f"the name is {len(text):,} characters, over {trace_name_chars_max:,}")
    bad = next((c for c in text if unicodedata.category(c) == "Cc"), None)
    if bad is not None:
        raise argparse.ArgumentTypeError(f"the name holds the control character U+{ord(bad):04X}")
    return text


def trace_options(parser: argparse.ArgumentParser) -> None:
    """--batch, --name and --allow-future, for the commands that apply traces."""
    parser.add_argument(
        "--allow-future",
        action="store_true",
        help=f"take an `at` more than {at_ahead_max_s} s ahead of this machine's clock; without it such a line is "
        "refused (exit 2, `line N: ...`, nothing written) when the store is not memory:, since every later input, "
        "live ones too, must come after it",
    )
    parser.add_argument(
        "--batch",
        type=batch_size,
        default=ingest_batch_inputs_max,
        metavar="N",
        help=f"inputs per transaction (group commit; default {ingest_batch_inputs_max}; 1 = one transaction per input)",
    )
    parser.add_argument(
        "--name",
        type=trace_name,
        metavar="NAME",
        help="the identity inputs are keyed by in the store (default: the file's name)",
    )


def horizon_of(args: argparse.Namespace, store_url: str) -> Horizon | None:
    """The latest `at` a trace appended to `store_url` may carry: this
    machine's clock plus `at_ahead_max_s` (as for a live input), unless
    --allow-future, or the store is memory: (private to the process, gone
    at its end: no live input will ever follow)."""
    if args.allow_future or parse_store_url(store_url).kind == "memory":
        return None
    return Horizon(utc_now(), at_ahead_max_s, "give --allow-future if it is meant")


def scan_traces(paths: list[str], name: str | None, horizon: Horizon | None = None) -> list[ScannedTrace]:
    """Check every trace at `paths` (pass 1: streaming, nothing kept) before
    anything is written, before even the store is opened or made: a bad line
    raises TraceInvalid (exit 2), a missing file CliError (exit 2).
    `horizon`: refuse a line whose `at` is after it."""
    if name is not None and len(paths) > 1:
        raise CliError("--name names one trace; give one TRACE with it", EXIT_USAGE)
    traces = []
    for path in paths:
        try:
            traces.append(scan_trace(path, name, horizon=horizon))
        except FileNotFoundError as error:
            raise CliError(str(error), EXIT_USAGE) from error
    return traces


def ingest_files(
    engine: Engine, traces: list[ScannedTrace], batch: int, quiet: bool, until_line: int | None = None,
    warn_leaps: bool = False, restamp: bool = False,
) -> None:  # fmt: skip
    """Apply the traces `scan_traces` checked, in order, all checked against
    the store before anything is written; `until_line` keeps only the inputs
    on lines 1..until_line; `warn_leaps` (tandem ingest): say which inputs
    leap more than a day ahead; `restamp` (tandem ingest --restamp): apply
    inputs behind the store at its last `at`."""
    with _ingest_errors():  # then each against the store and the traces before it
        check_traces(engine, traces, restamp=restamp, until_line=until_line)
    for trace in traces:
        if warn_leaps:
            warn_of_time_leaps(trace)
        with _ingest_errors():
            result = ingest(engine, trace, batch_inputs=batch, until_line=until_line, restamp=restamp)
        if not quiet:
            restamped = f", {result.restamped} restamped" if restamp else ""
            print(
                f"{printable(trace.name)}: {result.applied} input(s) applied ({result.rejected} rejected"
                f"{restamped}), {result.skipped} already in the store",
                file=sys.stderr,
            )


@contextmanager
def _ingest_errors() -> Iterator[None]:
    """What `ingest` raises besides a bad trace, as the CLI's errors."""
    try:
        yield
    except TraceMismatch as error:
        raise CliError(str(error), EXIT_USAGE) from error
    except TraceChanged as error:
        raise CliError(f"{error}; every committed batch is whole: run again to resume") from error
    except ConcurrencyError as error:
        raise CliError(f"another writer appended to the store meanwhile; run again to resume ({error})") from error


time_leaps_shown_max = 5


def warn_of_time_leaps(trace: ScannedTrace) -> None:
    """Say (on stderr, even with --quiet) which inputs are more than a day
    after the one before them: accepted, but every later real-time input must
    come after them, so a typo in a year stops the live paths."""
    for line, previous, at in trace.leaps[:time_leaps_shown_max]:
        days = (at - previous).total_seconds() / 86_400
        print(
            f"tandem: warning: {printable(trace.name)} line {line}: `at` {format_at(at)} is {days:,.1f} days after "
            f"the input before it ({format_at(previous)}); later inputs, live ones too, must come after it",
            file=sys.stderr,
        )
    if trace.leaps_total > time_leaps_shown_max:
        print(f"tandem: warning: {printable(trace.name)}: {trace.leaps_total - time_leaps_shown_max} more such input(s)", file=sys.stderr)


# ------------------------------------------------------------------- views


def view_name(text: str) -> str:
    """An argparse type: one of the views of contract section 7."""
    if text not in VIEW_NAMES:
        raise argparse.ArgumentTypeError(f"unknown view {text!r}{did_you_mean(text, VIEW_NAMES)}; views: {', '.join(VIEW_NAMES)}")
    return text


def column_names(text: str) -> tuple[str, ...]:
    """An argparse type for --columns: `a,b` as ("a", "b"), none empty or named twice."""
    names = tuple(name.strip() for name in text.split(","))
    if not all(names):
        raise argparse.ArgumentTypeError(f"an empty column name in {text!r}: give NAME,NAME,...")
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise argparse.ArgumentTypeError(f"column(s) named twice: {', '.join(twice)}")
    return names


def table_options(parser: argparse.ArgumentParser, json_help: str) -> None:
    """--json, --wide and --columns (one of them at most), for the commands that print views."""
    shape = parser.add_mutually_exclusive_group()
    shape.add_argument("--json", action="store_true", help=json_help)
    shape.add_argument(
        "--wide",
        action="store_true",
        help="tables with every column, however wide (without it they fit the terminal: COLUMNS, its width, or 100 "
        "cells when stdout is not one, showing each view's first columns)",
    )
    shape.add_argument(
        "--columns",
        type=column_names,
        metavar="NAME,...",
        help="the one view printed with these columns, in this order (each a key of its rows)",
    )


def layout_of(args: argparse.Namespace, view: str | None) -> Layout:
    """How the tables are laid out: every column with --wide (or --json), the
    columns named with --columns (each checked against `view`'s: a
    CliError, exit 2, before anything is written), else the view's default
    columns that fit the terminal."""
    if args.json or args.wide:
        return WIDE
    if args.columns is None:
        return Layout(terminal_width())
    if view is None:
        raise CliError("--columns names the columns of one view: name the view too (VIEW, or --view NAME)", EXIT_USAGE)
    known = known_columns(view)
    for name in args.columns:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise CliError(f"--columns: {view} has no column {name!r}{hint}; its columns: {', '.join(known)}", EXIT_USAGE)
    return Layout(terminal_width(), args.columns)


def print_views(views: Views, view: str | None, json_output: bool, layout: Layout = WIDE) -> None:
    """Every view, or the one named, as text laid out by `layout` or as JSON."""
    if json_output:
        value: Any = views.view(view) if view else views.document()
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(value), indent=2).decode() + "\n")
    elif view:
        sys.stdout.write(render_view(view, views.view(view), layout))
    else:
        sys.stdout.write(render_document(views.document(), layout))
