"""A trace file in two streaming passes, so memory stays flat with its size.

`scan_trace` (pass 1) reads the file a line at a time and checks every line
exactly as `parse_trace` does (replay/traces.py), keeping no input: only the
errors (the first `schema_errors_shown_max`), the time leaps (the first
`time_leaps_kept_max`, all counted) and one SHA-256 per group of lines.
`ScannedTrace.read` (pass 2) reads the file again a group at a time and
yields a group's inputs only once its bytes are the bytes pass 1 checked. So
a bad line anywhere still writes nothing, and a file changed between the two
passes raises TraceChanged before any changed line is applied (the inputs
already committed were checked ones, and ingest resumes after them). Lines
appended after pass 1 are not read: they were not checked.

Pass 2 decodes each line with the plain typed decoder (`INPUT_DECODER`):
its bytes are the ones `decode_input` accepted, whose edge checks would
pass again.
"""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from tandem.domain.inputs import INPUT_DECODER
from tandem.replay.engine import Located
from tandem.replay.traces import (
    Horizon,
    Leap,
    SchemaError,
    TimeLeaps,
    TraceInvalid,
    TraceLine,
    read_line,
    line_bytes_max,
    line_content,
    over_the_limit,
    schema_errors_shown_max,
)

# A group of lines ends at the first line end past `scan_group_bytes_min`
# bytes, or after `scan_group_lines_max` lines: what pass 2 holds at once
# (a line is at most 1 MiB, so a group at most about 2 MiB).
scan_group_bytes_min = 1_048_576
scan_group_lines_max = 1_000
time_leaps_kept_max = 20
_overlong_read_bytes = 65_536  # how an over-long line is skipped: this much at a time


class TraceChanged(Exception):
    """The file's bytes are no longer the ones its scan checked."""


@dataclass(frozen=True, slots=True)
class _Group:
    end_offset: int  # byte offset just past its last line
    digest: bytes  # SHA-256 of its bytes


@dataclass(frozen=True, slots=True)
class ScannedTrace:
    """A trace file checked by pass 1; `read` is pass 2."""

    path: str
    name: str  # the file identity inputs are keyed by in a store
    inputs: int
    groups: tuple[_Group, ...]
    leaps: tuple[Leap, ...]  # the first `time_leaps_kept_max`
    leaps_total: int
    last_at: datetime.datetime | None = None  # the `at` of its last input

    def read(self) -> Iterator[tuple[TraceLine, bytes]]:
        """Each input line, with the file's bytes since the previous one's
        end (what ingest hashes), as `Trace.read`. Raises TraceChanged."""
        number = 0
        offset = 0  # of the group's first byte
        carried = b""  # bytes after a group's last input: the next input's prefix
        with _open(self.path) as stream:
            for group in self.groups:
                data = stream.read(group.end_offset - offset)
                if len(data) != group.end_offset - offset or hashlib.sha256(data).digest() != group.digest:
                    raise TraceChanged(f"{self.path} changed after it was checked (bytes {offset}..{group.end_offset})")
                start = 0  # of the bytes since the previous input, within `data`
                position = 0
                while position < len(data):
                    newline = data.find(b"\n", position)
                    end = len(data) if newline < 0 else newline + 1
                    number += 1
                    content = line_content(data[position : end if newline < 0 else newline])
                    position = end
                    if content is None:
                        continue
                    assert isinstance(content, bytes), (self.path, number)  # pass 1 found no error
                    located = Located(INPUT_DECODER.decode(content), self.name, number)
                    yield TraceLine(located, offset + end), carried + data[start:end]
                    carried, start = b"", end
                carried += data[start:]
                offset = group.end_offset


def scan_trace(
    path: str, name: str | None = None, not_before: datetime.datetime | None = None, horizon: Horizon | None = None
) -> ScannedTrace:
    """Pass 1: check every line of the file at `path` as `parse_trace` does;
    raise TraceInvalid listing up to 20 bad lines, FileNotFoundError if it
    cannot be read. `not_before`: the time the first input must not precede;
    `horizon`: the latest time any may carry (tandem ingest)."""
    errors: list[SchemaError] = []
    errors_total = 0
    groups: list[_Group] = []
    leaps = TimeLeaps(kept_max=time_leaps_kept_max)
    inputs = 0
    previous_at = not_before
    group, group_lines, group_bytes = hashlib.sha256(), 0, 0
    with _open(path) as stream:
        for number, line, end_offset, whole in _file_lines(stream):
            read = over_the_limit(line) if isinstance(line, int) else read_line(line, number, previous_at, None)
            if horizon is not None and read is not None and not isinstance(read, str):
                read = horizon.problem(read.at) or read
            if isinstance(read, str):
                errors_total += 1
                if len(errors) < schema_errors_shown_max:
                    errors.append(SchemaError(number, read))
            elif read is not None:
                inputs += 1
                leaps.see(number, read.at)
                previous_at = read.at
            if errors_total:
                continue  # nothing will be read again: no more digests
            group.update(whole)
            group_lines, group_bytes = group_lines + 1, group_bytes + len(whole)
            if group_lines >= scan_group_lines_max or group_bytes >= scan_group_bytes_min:
                groups.append(_Group(end_offset, group.digest()))
                group, group_lines, group_bytes = hashlib.sha256(), 0, 0
    if errors:
        raise TraceInvalid(path, errors, errors_total)
    if group_lines:
        groups.append(_Group(end_offset, group.digest()))
    name = name if name is not None else Path(path).name
    last_at = previous_at if inputs else None
    return ScannedTrace(path, name, inputs, tuple(groups), tuple(leaps.found), leaps.total, last_at)


def _open(path: str) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as error:
        raise FileNotFoundError(f"cannot read trace {path}: {error.strerror}") from error


def _file_lines(stream: BinaryIO) -> Iterator[tuple[int, bytes | int, int, bytes]]:
    """(number, line, end offset, its bytes) for each line of the file: the
    line without its newline, with its bytes as read; or, for a line over
    `line_bytes_max`, its length, and no bytes (its trace is bad: never read again)."""
    number = 0
    offset = 0
    while True:
        whole = stream.readline(line_bytes_max + 2)  # the newline, and one byte to see a line is over
        if not whole:
            return
        number += 1
        line = whole[:-1] if whole.endswith(b"\n") else whole
        if len(line) <= line_bytes_max:
            offset += len(whole)
            yield number, line, offset, whole
            continue
        length = len(whole)
        while not whole.endswith(b"\n"):
            whole = stream.readline(_overlong_read_bytes)
            if not whole:
                break
            length += len(whole)
        offset += length
        yield number, length - (1 if whole.endswith(b"\n") else 0), offset, b""
