"""`tandem export`: the event log as JSON Lines, exactly the stored bytes.

Each stored event is already JSON (`domain.events.encode_event`, no newline
inside), so a line is the stored bytes followed by `\\n`: `tandem import`
writes them back byte for byte. Snapshots are not exported: they are a cache,
rebuilt by the importing side's engines.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import BinaryIO

from tandem.adapters.commands.common import CliError, open_or_fail
from tandem.adapters.store import store_url_help
from tandem.adapters.terminal import printable

NAME = "export"
ORDER = 60
HELP = "write the event log as JSON Lines (one stored event per line, byte for byte)"
DESCRIPTION = (
    "Write the store's event log as JSON Lines: one stored event per line, exactly its stored bytes, from "
    "position 1 to the head at the start of the export. `tandem import FILE --store URL` writes it back "
    "byte for byte (to SQLite or PostgreSQL). Snapshots are not exported (a cache)."
)
EPILOG = "Exit codes: 0 done; 1 the store or the output file could not be used; 2 bad usage."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", required=True, metavar="URL", help=store_url_help)
    parser.add_argument(
        "--output", "-o", metavar="FILE", help="write to FILE (replaced atomically when complete) instead of stdout"
    )


def write_log(store, out: BinaryIO, until: int) -> int:  # type: ignore[no-untyped-def]
    """Write events 1..until as lines; return how many."""
    count = 0
    for position, data in store.read_encoded(until=until):
        if b"\n" in data:
            raise ValueError(f"the event at position {position} holds a raw newline: it cannot be one JSON line")
        count += 1
        if position != count:
            raise ValueError(f"the log skips from position {count - 1} to {position}")
        out.write(data)
        out.write(b"\n")
    if count != until:
        raise ValueError(f"the store returned {count} event(s), its head says {until}")
    return count


def run(args: argparse.Namespace) -> None:
    with open_or_fail(args.store, read_only=True) as store:
        try:
            head = store.head()
            if args.output is None:
                count = write_log(store, sys.stdout.buffer, head)
                sys.stdout.buffer.flush()
            else:
                count = _write_file(store, args.output, head)
        except ValueError as error:
            raise CliError(f"cannot export: {error}") from error
    where = printable(args.output) if args.output else "stdout"
    print(f"exported {count:,} event(s) (positions 1..{head:,}) to {where}", file=sys.stderr)


def _write_file(store, path: str, head: int) -> int:  # type: ignore[no-untyped-def]
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise CliError(f"--output {path!r} is a directory")
    try:
        handle, temporary = tempfile.mkstemp(prefix=".tandem-export-", dir=directory)
    except OSError as error:
        raise CliError(f"cannot write {path!r}: {error.strerror or error}") from error
    try:
        with os.fdopen(handle, "wb", buffering=1 << 20) as out:
            count = write_log(store, out, head)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise
    return count
