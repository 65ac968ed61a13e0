"""The trace parser: trace bytes in, typed inputs out, the whole text checked first.

The one function that turns trace text into inputs (`parse_trace`, and
`parse_single` for one HTTP body): trace files, spool files, HTTP bodies
and the console's forms all come through it. A live input (HTTP, the
console, the spool) brings the live edge's rules as data (`LiveEdge`,
replay/edge.py), which the parser applies itself: it calls only down, never
back into the adapters. The adapters read the files (adapters/trace.py);
the proving tools replay the traces they wrote (replay/proving/traces.py).

Spec section 1: blank lines and `//` lines are ignored but counted; a bad
line (invalid UTF-8, bad JSON, unknown type, missing/mistyped/unknown field,
`at` going backwards, over 1 MiB) is a schema error. The whole trace is
validated before anything is applied, so a bad trace writes nothing.
"""

from __future__ import annotations

import datetime
import hashlib
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterator

import msgspec

from tandem.domain.inputs import Input, decode_input, format_at
from tandem.replay.edge import LiveEdge, decode_live
from tandem.replay.engine import Located
from tandem.replay.input_errors import schema_message

line_bytes_max = 1_048_576  # 1 MiB, contract section 1
schema_errors_shown_max = 20


@dataclass(frozen=True, slots=True)
class SchemaError:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


class TraceInvalid(Exception):
    def __init__(self, path: str, errors: list[SchemaError], total: int) -> None:
        self.path = path
        self.errors = errors
        self.total = total
        super().__init__(f"{path}: {total} bad line(s)")


@dataclass(frozen=True, slots=True)
class TraceLine:
    item: Located
    end_offset: int  # byte offset just past this line


@dataclass(frozen=True, slots=True)
class Trace:
    path: str
    name: str  # the file identity inputs are keyed by in a store
    data: bytes
    lines: list[TraceLine]

    @property
    def items(self) -> list[Located]:
        """The inputs, each with its file name and line."""
        return [line.item for line in self.lines]

    @property
    def last_at(self) -> datetime.datetime | None:
        """The `at` of its last input (None if it has none)."""
        return self.lines[-1].item.input.at if self.lines else None

    def digest_until(self, offset: int) -> str:
        return hashlib.sha256(self.data[:offset]).hexdigest()

    def read(self) -> Iterator[tuple[TraceLine, bytes]]:
        """Each input line, with the file's bytes since the previous one's
        end (its own line included, and the blank and comment lines before
        it): what ingest hashes."""
        start = 0
        for line in self.lines:
            yield line, self.data[start : line.end_offset]
            start = line.end_offset


time_leap_warning_s = 86_400  # an input more than a day after the one before it is worth a word


Leap = tuple[int, datetime.datetime, datetime.datetime]  # (line, previous `at`, its `at`)


class TimeLeaps:
    """The inputs more than `gap_s` after the input before them: valid (the
    contract allows any later `at`), but one typo (9999-12-31) moves the
    engine's clock past every real time to come. Counts them all, keeps the
    first `kept_max` (None: all)."""

    def __init__(self, gap_s: int = time_leap_warning_s, kept_max: int | None = None) -> None:
        self.gap_s = gap_s
        self.kept_max = kept_max
        self.found: list[Leap] = []
        self.total = 0
        self._previous: datetime.datetime | None = None

    def see(self, line: int, at: datetime.datetime) -> None:
        previous, self._previous = self._previous, at
        if previous is not None and (at - previous).total_seconds() > self.gap_s:
            self.total += 1
            if self.kept_max is None or len(self.found) < self.kept_max:
                self.found.append((line, previous, at))


@dataclass(frozen=True, slots=True)
class Horizon:
    """The latest `at` a trace may carry: `now`, the wall clock (read by the
    adapter: this layer reads none), plus `ahead_s`. A later `at` would stamp
    every input after it, live ones too, with its time, for good (one typo,
    9999-12-31, and the service's clock stops). `remedy`: how the caller
    takes such a trace anyway, said in the message."""

    now: datetime.datetime
    ahead_s: int
    remedy: str

    def problem(self, at: datetime.datetime) -> str | None:
        if (at - self.now).total_seconds() <= self.ahead_s:
            return None
        return (
            f"`at` {format_at(at)} is more than {self.ahead_s} s ahead of this machine's clock ({format_at(self.now)}): "
            f"every later input, live ones too, would have to come after it; {self.remedy}"
        )


def time_leaps(trace: Trace, gap_s: int = time_leap_warning_s) -> list[Leap]:
    """(line, previous `at`, its `at`) for each input more than `gap_s` after the input before it."""
    leaps = TimeLeaps(gap_s)
    for line in trace.lines:
        leaps.see(line.item.line or 0, line.item.input.at)
    return leaps.found


def parse_trace(
    data: bytes,
    path: str,
    name: str | None = None,
    not_before: datetime.datetime | None = None,
    live: LiveEdge | None = None,
) -> Trace:
    """Validate every line; raise TraceInvalid listing up to 20 bad lines.

    `not_before`: the time the first input must not precede. With `live`
    (the spool, HTTP), a line may leave `at` out (it is stamped) and the
    edge's rules apply (replay/edge.py): a refusal raises EdgeRefused."""
    name = name if name is not None else Path(path).name
    errors: list[SchemaError] = []
    total_errors = 0
    lines: list[TraceLine] = []
    # A live edge checks the first line against the store itself (at_before_head).
    previous_at = None if live is not None else not_before
    offset = 0
    number = 0
    size = len(data)
    while offset < size:
        newline = data.find(b"\n", offset)
        end = size if newline < 0 else newline + 1
        raw = data[offset : end if newline < 0 else newline]
        number += 1
        offset = end
        read = read_line(raw, number, previous_at, live)
        if read is None:
            continue
        if isinstance(read, str):
            total_errors += 1
            if len(errors) < schema_errors_shown_max:
                errors.append(SchemaError(number, read))
            continue
        previous_at = read.at
        lines.append(TraceLine(Located(read, name, number), end))
    if errors:
        raise TraceInvalid(path, errors, total_errors)
    return Trace(path=path, name=name, data=data, lines=lines)


def read_line(raw: bytes, number: int, previous_at: datetime.datetime | None, live: LiveEdge | None) -> Input | str | None:
    """One line: its input, what is wrong with it, or None (blank, comment)."""
    content = line_content(raw)
    if content is None or isinstance(content, str):
        return content
    return _decode(content, number, previous_at, live)


def line_content(raw: bytes) -> bytes | str | None:
    """A line (without its newline) as the decoder gets it (without a
    trailing CR), what is wrong with it as text, or None (blank, comment)."""
    if len(raw) > line_bytes_max:
        return over_the_limit(len(raw))
    raw = raw.rstrip(b"\r")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return f"invalid UTF-8 at byte {error.start}"
    stripped = text.strip()
    if not stripped or stripped.startswith("//"):
        return None
    return raw


def over_the_limit(length: int) -> str:
    return f"line is {length} bytes, over the {line_bytes_max}-byte limit"


def _decode(raw: bytes, number: int, previous_at: datetime.datetime | None, live: LiveEdge | None) -> Input | str:
    """Decode one input and check its time: the input, or what is wrong.
    `previous_at`: the previous line's `at` (for a trace, at the first line,
    the time it must not precede)."""
    try:
        if live is None:
            value, stamped = decode_input(raw), False
        else:
            value, stamped = decode_live(raw, live.credential.unnamed)
    except (msgspec.ValidationError, msgspec.DecodeError) as error:
        return schema_message(error, raw)
    if live is not None:
        value = live.admit(value, number)
    if not stamped and previous_at is not None and value.at < previous_at:
        return f"`at` {format_at(value.at)} is earlier than the previous input's ({format_at(previous_at)})"
    if live is not None:
        value = live.place(value, number, stamped, previous_at)
    return value


def parse_single(data: bytes, name: str, live: LiveEdge) -> Trace:
    """One live input, a body of its own (pretty-printed JSON is fine): line 1.
    Raises TraceInvalid or EdgeRefused."""
    if len(data) > line_bytes_max:
        problem: Input | str = f"input is {len(data)} bytes, over the {line_bytes_max}-byte limit"
    else:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as error:
            problem = f"invalid UTF-8 at byte {error.start}"
        else:
            problem = _decode(data, 1, None, live)
    if isinstance(problem, str):
        raise TraceInvalid(name, [SchemaError(1, problem)], 1)
    return Trace(path=name, name=name, data=data, lines=[TraceLine(Located(problem, name, 1), len(data))])
