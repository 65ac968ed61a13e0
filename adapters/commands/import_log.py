"""`tandem import`: a JSON Lines event log (from `tandem export`) into a store.

Every line is checked first (it must decode as an event, nested no deeper
than `event_nesting_depth_max`: a line too deep to decode is a
`line N: ...` too, never a RecursionError); a bad file prints `line N: ...`
(at most 20) and exits 2 with nothing written. The events are
then appended as given, byte for byte, in transactions of `--batch` events.

Only an empty store is written to, or one whose events are exactly the file's
first lines (an interrupted import is continued from where it stopped); any
other non-empty store is refused (exit 1). An import into an empty store
removes leftover snapshots there (they belonged to another log). Snapshots
are not imported: engines write new ones.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from typing import BinaryIO

import msgspec

from tandem.adapters.commands.common import EXIT_USAGE, CliError, batch_size, claim_or_fail, open_or_fail, writer_lock_or_fail
from tandem.adapters.store import store_url_help
from tandem.adapters.terminal import printable
from tandem.domain.events import AnyEvent, decode_event
from tandem.replay.input_errors import json_message
from tandem.domain.nesting import lone_surrogate_error, nesting_depth_max, repeated_key_error, too_deep
from tandem.replay.port import ConcurrencyError, EventStore, StoreError

# An event holds its input one level down (`InputAccepted.input`), and the
# input's free-form values (`constraints`) no deeper than that: the events of
# inputs within `nesting_depth_max` nest at most one level more.
event_nesting_depth_max = nesting_depth_max + 1


def decode_foreign_event(data: bytes) -> AnyEvent:
    """Decode an event that comes from outside the store: nested no deeper
    than `event_nesting_depth_max` and no key repeated in an object, or a
    ValidationError naming where (as an input at the edge), never a RecursionError. Events read back from the
    store were checked when they came and are not."""
    refusal = too_deep(data, event_nesting_depth_max)
    if refusal is not None:
        raise refusal
    try:
        event = decode_event(data)
    except msgspec.DecodeError as error:
        raise lone_surrogate_error(data) or error from None
    # Stored byte for byte: a repeated key would be read one way here, another way elsewhere.
    refusal = repeated_key_error(data)
    if refusal is not None:
        raise refusal
    return event


NAME = "import"
ORDER = 61
HELP = "append an exported JSON Lines event log to an empty store, byte for byte"
DESCRIPTION = (
    "Append the events of FILE (JSON Lines, one event per line, as `tandem export` writes) to the store, "
    "each exactly as given, in transactions of --batch events. Every line is validated first: one that does "
    "not decode as an event prints `line N: ...` and nothing is written (exit 2). The store must be empty, "
    "or hold exactly the file's first events (an interrupted import continues); any other store is refused "
    "(exit 1). Snapshots are not part of an export. It takes the store's writer lock first: while another "
    "writer (serve, daemon, ingest, import) holds it, it exits 1 at once."
)
EPILOG = (
    "Exit codes: 0 done; 1 the store or FILE could not be used, or the store holds other events; 2 bad usage "
    "or a bad line."
)

import_batch_events_default = 10_000
line_bytes_max = 16 * 1024 * 1024  # a stored event is at most a 1 MiB input and what it caused
errors_shown_max = 20


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="a JSON Lines event log (tandem export)")
    parser.add_argument("--store", required=True, metavar="URL", help=store_url_help)
    parser.add_argument(
        "--batch",
        type=batch_size,
        default=import_batch_events_default,
        metavar="N",
        help=f"events per transaction (default {import_batch_events_default:,})",
    )


class LineError(Exception):
    pass


def lines_of(handle: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """(line number, line without its newline), bounded in length."""
    number = 0
    while True:
        line = handle.readline(line_bytes_max + 2)
        if not line:
            return
        number += 1
        if line.endswith(b"\n"):
            line = line[:-1]
        elif len(line) > line_bytes_max:
            raise LineError(f"line {number}: longer than {line_bytes_max:,} bytes")
        yield number, line


def check_line(number: int, line: bytes) -> str | None:
    """Why a line is not an event, or None."""
    if not line.strip():
        return f"line {number}: empty (an event log has one event on every line)"
    if line != line.strip():
        return f"line {number}: leading or trailing whitespace (a line is exactly a stored event's bytes)"
    try:
        decode_foreign_event(line)
    except msgspec.ValidationError as error:
        return f"line {number}: not an event: {error}"
    except msgspec.DecodeError as error:
        return f"line {number}: not JSON: " + json_message(str(error), line).removeprefix("bad JSON: ")
    return None


def validate(handle: BinaryIO) -> tuple[int, list[str], int]:
    """(lines, the first errors, how many errors)."""
    errors: list[str] = []
    total = 0
    count = 0
    try:
        for number, line in lines_of(handle):
            count = number
            problem = check_line(number, line)
            if problem is not None:
                total += 1
                if len(errors) < errors_shown_max:
                    errors.append(problem)
    except LineError as error:
        total += 1
        errors.append(str(error))
    return count, errors, total


def run(args: argparse.Namespace) -> None:
    with writer_lock_or_fail(args.store) as lock:  # before the (perhaps long) validation: a second writer is refused at once
        try:
            handle = open(args.file, "rb")  # noqa: SIM115 - read twice, closed below
        except OSError as error:
            raise CliError(f"cannot read {args.file!r}: {error.strerror or error}") from error
        with handle:
            count = _validated(handle, args.file)
            seen = _identity(handle)
            with open_or_fail(args.store) as store:
                claim_or_fail(store, lock)
                _append_all(store, handle, seen, count, args)
    print(f"imported {printable(args.file)}: the store holds its {count:,} event(s)", file=sys.stderr)


def _validated(handle: BinaryIO, path: str) -> int:
    """How many lines; CliError (exit 2) naming the first bad ones if any is bad."""
    count, errors, total = validate(handle)
    if errors:
        for error in errors:
            print(printable(str(error)), file=sys.stderr)
        if total > len(errors):
            print(f"... and {total - len(errors)} more bad line(s)", file=sys.stderr)
        raise CliError(f"{path} is not an event log; nothing was written", EXIT_USAGE)
    return count


def _append_all(store: EventStore, handle: BinaryIO, seen: tuple[int, int], count: int, args: argparse.Namespace) -> None:
    try:
        head = store.head()
        if head:
            _check_prefix(store, handle, head, count, args.file)
            print(f"the store already holds the first {head:,} event(s) of {printable(args.file)}: continuing", file=sys.stderr)
        else:
            for info in store.list_snapshots():  # leftovers of another log
                store.delete_snapshot(info.position, info.fingerprint)
        handle.seek(0)
        batch: list[bytes] = []
        for number, line in lines_of(handle):
            if number <= head:
                continue
            batch.append(line)
            if len(batch) >= args.batch:
                head = _append(store, handle, seen, batch, head, args.file)
        if batch:
            head = _append(store, handle, seen, batch, head, args.file)
    except ConcurrencyError as error:
        raise CliError(f"another writer appended to the store meanwhile; nothing more was imported ({error})") from error
    except (StoreError, ValueError, LineError) as error:
        raise CliError(f"import stopped: {error}; the store holds the file's first {store.head():,} event(s), "
                       "run the import again to continue") from error


def _identity(handle: BinaryIO) -> tuple[int, int]:
    status = os.fstat(handle.fileno())
    return status.st_size, status.st_mtime_ns


def _append(store: EventStore, handle: BinaryIO, seen: tuple[int, int], batch: list[bytes], head: int, path: str) -> int:
    if _identity(handle) != seen:
        raise ValueError(f"{path} changed while it was imported")
    head = store.append_encoded(batch, expected_head=head)
    batch.clear()
    return head


def _check_prefix(store: EventStore, handle: BinaryIO, head: int, count: int, path: str) -> None:
    def refuse(why: str) -> CliError:
        return CliError(
            f"the store is not empty: it holds {head:,} event(s), and {why}; "
            "import into an empty store (another database or file, or another ?table=NAME)"
        )

    if head > count:
        raise refuse(f"{path} has only {count:,}")
    handle.seek(0)
    lines = lines_of(handle)
    for position, data in store.read_encoded(until=head):
        number, line = next(lines)
        if line != data:
            raise refuse(f"its event at position {position} differs from line {number} of {path}")
