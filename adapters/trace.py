"""Trace reader: JSON Lines in, typed inputs out, the whole file checked first.

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

import msgspec

from domain.inputs import decode_input, format_at
from replay.engine import Located

line_bytes_max = 1_048_576  # 1 MiB, spec section 1
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

    def digest_until(self, offset: int) -> str:
        return hashlib.sha256(self.data[:offset]).hexdigest()


def _message(error: Exception) -> str:
    text = str(error)
    if isinstance(error, msgspec.DecodeError) and text.startswith("JSON is malformed"):
        return "bad JSON: " + text.removeprefix("JSON is malformed: ")
    if "Invalid value" in text and "$.type" in text:
        return "unknown type " + text.split("Invalid value ", 1)[1].split(" - at", 1)[0]
    return text


def parse_trace(
    data: bytes,
    path: str,
    name: str | None = None,
    not_before: datetime.datetime | None = None,
) -> Trace:
    """Validate every line; raise TraceInvalid listing up to 20 bad lines."""
    name = name if name is not None else Path(path).name
    errors: list[SchemaError] = []
    total_errors = 0
    lines: list[TraceLine] = []
    previous_at = not_before
    offset = 0
    number = 0
    size = len(data)
    while offset < size:
        newline = data.find(b"\n", offset)
        end = size if newline < 0 else newline + 1
        raw = data[offset : end if newline < 0 else newline]
        number += 1
        offset = end
        problem: str | None = None
        if len(raw) > line_bytes_max:
            problem = f"line is {len(raw)} bytes, over the {line_bytes_max}-byte limit"
        else:
            raw = raw.rstrip(b"\r")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                problem = f"invalid UTF-8 at byte {error.start}"
            else:
                stripped = text.strip()
                if not stripped or stripped.startswith("//"):
                    continue
                try:
                    value = decode_input(raw)
                except (msgspec.ValidationError, msgspec.DecodeError) as error:
                    problem = _message(error)
                else:
                    if previous_at is not None and value.at < previous_at:
                        problem = f"`at` {format_at(value.at)} is earlier than the previous input's ({format_at(previous_at)})"
                    else:
                        previous_at = value.at
                        lines.append(TraceLine(Located(value, name, number), end))
        if problem is not None:
            total_errors += 1
            if len(errors) < schema_errors_shown_max:
                errors.append(SchemaError(number, problem))
    if errors:
        raise TraceInvalid(path, errors, total_errors)
    return Trace(path=path, name=name, data=data, lines=lines)


def read_trace(path: str, name: str | None = None, not_before: datetime.datetime | None = None) -> Trace:
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise FileNotFoundError(f"cannot read trace {path}: {error.strerror}") from error
    return parse_trace(data, path, name, not_before)
