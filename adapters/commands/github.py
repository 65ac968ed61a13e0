"""`tandem github convert FILE... [--out TRACE] [--event NAME]`: GitHub
webhook deliveries as a trace of `observe` inputs (the mapping is
adapters/github.py; docs/sources.md)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import textwrap
from pathlib import Path

from tandem.adapters.commands.common import CliError
from tandem.adapters.github import Conversion, convert
from tandem.adapters.terminal import printable

NAME = "github"
ORDER = 30
HELP = "turn GitHub webhook deliveries into a trace of observe inputs (tandem github convert)"
DESCRIPTION = "Turn GitHub webhook deliveries into a trace of observe inputs: `tandem github convert --help`."
CONVERT_DESCRIPTION = "\n\n".join(
    textwrap.fill(paragraph, 78)
    for paragraph in (
        "Each FILE is JSON Lines of webhook deliveries as GitHub's hook-deliveries API returns them (GET "
        "/repos/OWNER/REPO/hooks/ID/deliveries/DELIVERY: guid, event, delivered_at, request: {headers, payload}), "
        "or, with --event NAME, one bare payload of that event (its guid and delivered_at are then derived from "
        "its bytes and its times: docs/sources.md).",
        "Every delivery becomes the observe inputs it says (the mapping: docs/sources.md): pull requests, "
        "pushes, issues and their comments, review comments, reviews, review threads, check runs and suites, "
        "workflow runs and jobs, statuses, a check's requested action, installations. A check run or suite "
        "naming several pull requests becomes one input per pull request (ids GUID#1, GUID#2, ...).",
        "The trace lists them in delivered_at order (stable for equal times), on stdout or in TRACE (written "
        "whole, then renamed into place: never half-written). What nothing acts on (ping, an event or action "
        "not mapped, a check naming no pull request) is recorded as an ignored observation, never dropped; "
        "those and every bad delivery are listed on stderr, each naming the delivery; a bad delivery never "
        "stops the others.",
    )
)
EPILOG = (
    "Exit codes: 0 every delivery converted (those recorded as ignored listed on stderr); 1 a FILE could not be read "
    "or TRACE written (nothing written); 2 bad usage; 3 some deliveries were bad (listed on stderr): the others "
    "were converted and written."
)

EXIT_BAD_DELIVERIES = 3


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="github_command", metavar="convert", required=True)
    sub = actions.add_parser(
        "convert",
        help="deliveries (JSON Lines) or bare payloads to a trace",
        description=CONVERT_DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub.add_argument("files", nargs="+", metavar="FILE", help="JSON Lines of hook-deliveries objects (or, with --event, a bare payload)")
    sub.add_argument("--out", metavar="TRACE", help="write the trace to TRACE instead of stdout")
    sub.add_argument(
        "--event",
        metavar="NAME",
        help="each FILE is one bare payload of event NAME (what GitHub sends as X-GitHub-Event: issue_comment, "
        "check_run, ...), not JSON Lines of deliveries",
    )


def run(args: argparse.Namespace) -> None:
    files = [(name, _read(name)) for name in args.files]
    result = convert(files, args.event)
    data = b"".join(line + b"\n" for line in result.lines)
    if args.out is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        _write_atomically(args.out, data)
    _report(result, printable(args.out) if args.out else "stdout")
    if result.errors:
        raise CliError(
            f"{len(result.errors)} bad deliver{'y' if len(result.errors) == 1 else 'ies'} (listed above); "
            "the other deliveries were converted",
            EXIT_BAD_DELIVERIES,
        )


def _read(name: str) -> bytes:
    try:
        return Path(name).read_bytes()
    except OSError as error:
        raise CliError(f"cannot read {name!r}: {error.strerror or error}; nothing was written") from error


def _report(result: Conversion, where: str) -> None:
    for note in result.notes:
        print(f"tandem github: ignored: {printable(note)}", file=sys.stderr)
    for error in result.errors:
        print(f"tandem github: bad delivery: {printable(error)}", file=sys.stderr)
    print(
        f"tandem github: {result.deliveries} deliveries: {len(result.lines)} input(s) to {where}, "
        f"{len(result.notes)} of them ignored, {len(result.errors)} bad",
        file=sys.stderr,
    )


def _write_atomically(path: str, data: bytes) -> None:
    """`data` to a temporary file beside `path`, synced, then renamed onto
    it: a reader sees the old file or the whole new one, never a part."""
    if os.path.isdir(path):
        raise CliError(f"--out {path!r} is a directory; nothing was written")
    directory = os.path.dirname(os.path.abspath(path))
    try:
        handle, temporary = tempfile.mkstemp(prefix=".tandem-github-", suffix=".jsonl", dir=directory)
    except OSError as error:
        raise CliError(f"cannot write {path!r}: {error.strerror or error}; nothing was written") from error
    try:
        with os.fdopen(handle, "wb") as out:
            os.fchmod(out.fileno(), 0o644 & ~_umask())  # a trace, as a plain open() would make it
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except OSError as error:
        _remove(temporary)
        raise CliError(f"cannot write {path!r}: {error.strerror or error}; nothing was written") from error
    except BaseException:
        _remove(temporary)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
