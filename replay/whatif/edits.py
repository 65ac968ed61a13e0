"""What-if edits (docs/whatif.md): what may be changed in the past, parsed
from the command line's words and applied to a trace's lines.

A trace is a list of lines, each numbered as the file numbers it (`--until`
and explain's `file:line` name the same numbers). Every edit names lines by
the ORIGINAL numbering, however many edits came before it, so edits compose
in any order; an inserted line is named by the line it follows. Applying
edits never reads or writes a file: bytes in, bytes out, with the map from
each new line back to the original one (or to "inserted after N").

An edit that cannot be applied (no such line, not an input, a line an
earlier edit dropped, a value that is not JSON) is an `EditInvalid` naming
the edit and why; the edited trace is then checked whole by the one trace
parser, and what it refuses is named by the original line too.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from tandem.domain.inputs import format_at
from tandem.replay.traces import TraceInvalid
from tandem.replay.whatif.model import Where

edits_max = 100  # edits in one what-if
errors_shown_max = 5  # of an edited trace the parser refuses, named in the message
edit_value_bytes_max = 1_048_576  # a --replace / --insert-after / --set value: one trace line at most
shift_seconds_max = 10 * 365 * 86_400  # ten years either way


class EditInvalid(ValueError):
    """An edit that cannot be applied; the message names it and why."""


@dataclass(frozen=True, slots=True)
class Edit:
    """One edit as given: `op` (drop, replace, insert_after, shift, set), the
    original `line` it names, and its argument (a JSON line, seconds, or a
    field path with its value). `text` is how it was written, for messages."""

    op: str
    line: int
    text: str
    value: bytes | None = None  # replace, insert_after: one JSON object
    seconds: float | None = None  # shift
    path: tuple[str, ...] = ()  # set: the field, dotted
    field_value: Any = None  # set


@dataclass(slots=True)
class Entry:
    """One line of the edited trace: its bytes and where it came from
    (`origin`: the original line, or None for an inserted one, then `after`)."""

    data: bytes
    origin: int | None
    after: int = 0
    edited: list[str] = field(default_factory=list)  # the edits that changed it
    unit: str = "line"
    nth: int = 0  # an inserted line: which of those inserted after `after` (from 1)

    def where(self) -> Where:
        """Where it is in the original: its line, or the line it was inserted after."""
        if self.origin is not None:
            return Where(line=self.origin)
        return Where(line=None, inserted_after=self.after, inserted=self.nth)

    @property
    def label(self) -> str:
        """How messages name it: `line 12`, or `line 12+1` (the first inserted after line 12)."""
        unit = self.unit
        return f"{unit} {self.origin}" if self.origin is not None else f"{unit} {self.after}+{self.nth}"


# ------------------------------------------------------------------ parsing


def _line_and_rest(text: str, separator: str, what: str) -> tuple[int, str]:
    head, found, rest = text.partition(separator)
    if not found:
        raise EditInvalid(f"{what} {text!r}: expected LINE{separator}...")
    if not head.strip().isdigit() or int(head) < 0:
        raise EditInvalid(f"{what} {text!r}: {head!r} is not a line number (lines count from 1)")
    return int(head), rest


def _json_object(text: str, what: str) -> bytes:
    """`text` (or the file `@PATH` names) as one compact JSON line."""
    if text.startswith("@"):
        try:
            raw = Path(text[1:]).read_bytes()
        except OSError as error:
            raise EditInvalid(f"{what}: cannot read {text[1:]!r}: {error.strerror or error}") from None
    else:
        raw = text.encode()
    if len(raw) > edit_value_bytes_max:
        raise EditInvalid(f"{what}: {len(raw)} bytes, over the {edit_value_bytes_max}-byte limit of a trace line")
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise EditInvalid(f"{what}: not JSON ({getattr(error, 'msg', error)} at byte {getattr(error, 'pos', 0)})") from None
    if not isinstance(value, dict):
        raise EditInvalid(f"{what}: an input is a JSON object, not {type(value).__name__}")
    return msgspec.json.encode(value)


def parse_drop(text: str) -> Edit:
    if not text.strip().isdigit() or int(text) < 1:
        raise EditInvalid(f"--drop {text!r}: not a line number (lines count from 1)")
    return Edit("drop", int(text), f"--drop {text}")


def parse_replace(text: str) -> Edit:
    line, rest = _line_and_rest(text, "=", "--replace")
    return Edit("replace", line, f"--replace {text}", value=_json_object(rest, f"--replace {line}"))


def parse_insert_after(text: str) -> Edit:
    line, rest = _line_and_rest(text, "=", "--insert-after")
    return Edit("insert_after", line, f"--insert-after {text}", value=_json_object(rest, f"--insert-after {line}"))


def parse_shift(text: str) -> Edit:
    line, rest = _line_and_rest(text, "=", "--shift")
    try:
        seconds = float(rest)
    except ValueError:
        raise EditInvalid(f"--shift {text!r}: {rest!r} is not a number of seconds (say 3600 or -90)") from None
    if not abs(seconds) <= shift_seconds_max:  # also NaN
        raise EditInvalid(f"--shift {text!r}: at most {shift_seconds_max} seconds either way")
    return Edit("shift", line, f"--shift {text}", seconds=seconds)


def parse_set(text: str) -> Edit:
    target, found, raw = text.partition("=")
    line_text, dot, path = target.partition(".")
    if not found or not dot or not path:
        raise EditInvalid(f"--set {text!r}: expected LINE.FIELD=VALUE (say 12.push=true)")
    if not line_text.isdigit() or int(line_text) < 1:
        raise EditInvalid(f"--set {text!r}: {line_text!r} is not a line number (lines count from 1)")
    value = text_value(raw)  # a JSON value: true, 3, "x", ["a"], {"k": 1}; else the text itself
    parts = tuple(path.split("."))
    if any(not part for part in parts):
        raise EditInvalid(f"--set {text!r}: {path!r} is not a field path (names joined by '.')")
    return Edit("set", int(line_text), f"--set {text}", path=parts, field_value=value)


PARSERS = {"drop": parse_drop, "replace": parse_replace, "insert_after": parse_insert_after, "shift": parse_shift, "set": parse_set}


# ------------------------------------------------------------ from values
#
# The same edits from values already read (POST /v1/whatif's body, the
# console's forms), each with its `text` in the command line's words (the
# value as compact JSON), so that an answer names them as `tandem whatif`
# would: `--drop 12`, `--set 12.goal="x"`. The parser of that text makes the
# same edit.


def _numbered(line: int, text: str, first: int = 1) -> int:
    if isinstance(line, bool) or not isinstance(line, int) or line < first:
        raise EditInvalid(f"{text}: {line!r} is not an input's number (they count from 1{', 0: before the first' if first == 0 else ''})")
    return line


def _compact(value: Any, what: str) -> bytes:
    encoded = msgspec.json.encode(value)
    if len(encoded) > edit_value_bytes_max:
        raise EditInvalid(f"{what}: {len(encoded)} bytes, over the {edit_value_bytes_max}-byte limit of a trace line")
    return encoded


def drop(line: int) -> Edit:
    return Edit("drop", _numbered(line, f"--drop {line}"), f"--drop {line}")


def _input_value(op: str, line: int, value: dict[str, Any], first: int) -> Edit:
    option = f"--{op.replace('_', '-')} {line}"
    if not isinstance(value, dict):
        raise EditInvalid(f"{option}: an input is a JSON object, not {type(value).__name__}")
    encoded = _compact(value, option)
    return Edit(op, _numbered(line, option, first), f"{option}={encoded.decode()}", value=encoded)


def replace(line: int, value: dict[str, Any]) -> Edit:
    return _input_value("replace", line, value, 1)


def insert_after(line: int, value: dict[str, Any]) -> Edit:
    return _input_value("insert_after", line, value, 0)


def shift(line: int, seconds: int | float) -> Edit:
    text = f"--shift {line}={seconds!r}"
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not abs(seconds) <= shift_seconds_max:
        raise EditInvalid(f"{text}: a number of seconds, at most {shift_seconds_max} either way")
    return Edit("shift", _numbered(line, text), text, seconds=float(seconds))


def set_field(line: int, field: str, value: Any) -> Edit:
    """`field` dotted into objects (`grant.allowed_operations`); `value` any JSON value."""
    encoded = _compact(value, f"--set {line}.{field}")
    text = f"--set {line}.{field}={encoded.decode()}"
    parts = tuple(field.split("."))
    if not field or any(not part for part in parts) or "=" in field:
        raise EditInvalid(f"--set {line}.{field}: {field!r} is not a field path (names joined by '.', no '=')")
    return Edit("set", _numbered(line, text), text, path=parts, field_value=msgspec.json.decode(encoded))


def text_value(raw: str) -> Any:
    """A value as `--set` reads it: JSON if it reads as JSON, else the text itself."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


# ----------------------------------------------------------------- applying


def _is_input(data: bytes) -> bool:
    stripped = data.strip()
    return bool(stripped) and not stripped.startswith(b"//")


def _object(entry: Entry, edit: Edit) -> dict[str, Any]:
    try:
        value = json.loads(entry.data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise EditInvalid(f"{edit.text}: {entry.label} is not a JSON object, so no field of it can be changed") from None
    if not isinstance(value, dict):
        raise EditInvalid(f"{edit.text}: {entry.label} is not a JSON object, so no field of it can be changed")
    return value


def _at(value: dict[str, Any]) -> datetime.datetime | None:
    text = value.get("at")
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def _line_at(data: bytes) -> datetime.datetime | None:
    """The `at` of an input line, None for any other line (or one that is not JSON)."""
    if not _is_input(data):
        return None
    try:
        value = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return _at(value) if isinstance(value, dict) else None


class _Lines:
    """The trace's lines as entries, edited in place, found by original line."""

    def __init__(self, data: bytes, first: int, unit: str) -> None:
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        self.first, self.unit, self.count = first, unit, len(lines)
        self.entries = [Entry(line, number, unit=unit) for number, line in enumerate(lines, start=first)]
        self.dropped: dict[int, str] = {}

    def find(self, edit: Edit, need_input: bool = True) -> int:
        """The index of the entry of `edit.line`, or EditInvalid why not."""
        unit = self.unit
        if edit.line in self.dropped:
            raise EditInvalid(f"{edit.text}: {unit} {edit.line} was dropped by an earlier edit ({self.dropped[edit.line]})")
        for index, entry in enumerate(self.entries):
            if entry.origin == edit.line:
                if need_input and not _is_input(entry.data):
                    raise EditInvalid(f"{edit.text}: {unit} {edit.line} is {'blank' if not entry.data.strip() else 'a comment'}, not an input")
                return index
        last = self.first + self.count - 1
        if unit == "line":
            raise EditInvalid(f"{edit.text}: no line {edit.line} (the trace has {self.count} line(s))")
        raise EditInvalid(f"{edit.text}: no input {edit.line} (the store's inputs are numbered up to {last})")

    def drop(self, edit: Edit) -> None:
        del self.entries[self.find(edit)]
        self.dropped[edit.line] = edit.text

    def replace(self, edit: Edit) -> None:
        entry = self.entries[self.find(edit)]
        entry.data, entry.edited = edit.value or b"", [*entry.edited, edit.text]

    def insert_after(self, edit: Edit) -> None:
        place = 0 if edit.line == self.first - 1 else self.find(edit, need_input=False) + 1
        nth = 1
        while place < len(self.entries) and self.entries[place].origin is None and self.entries[place].after == edit.line:
            place, nth = place + 1, nth + 1  # after what was inserted there before, in the order given
        self.entries.insert(place, Entry(edit.value or b"", None, edit.line, [edit.text], self.unit, nth))

    def set(self, edit: Edit) -> None:
        entry = self.entries[self.find(edit)]
        value = _object(entry, edit)
        target = value
        for part in edit.path[:-1]:
            target = target.setdefault(part, {})
            if not isinstance(target, dict):
                raise EditInvalid(f"{edit.text}: {part!r} of {entry.label} is not an object")
        target[edit.path[-1]] = edit.field_value
        entry.data, entry.edited = msgspec.json.encode(value), [*entry.edited, edit.text]

    def shift(self, edit: Edit) -> None:
        """Moves the input's `at` by the seconds given, and the line with it:
        after the last other input whose `at` is not later (so `at`s stay in order)."""
        index = self.find(edit)
        entry = self.entries[index]
        value = _object(entry, edit)
        moment = _at(value)
        if moment is None:
            raise EditInvalid(f"{edit.text}: {entry.label} has no `at` to move (an RFC 3339 time with a zone)")
        moved = moment + datetime.timedelta(seconds=edit.seconds or 0.0)
        value["at"] = format_at(moved.astimezone(datetime.timezone.utc))
        entry.data, entry.edited = msgspec.json.encode(value), [*entry.edited, edit.text]
        del self.entries[index]
        place = next((i for i, other in enumerate(self.entries) if _is_input(other.data)), len(self.entries))
        for i, other in enumerate(self.entries):
            other_at = _line_at(other.data)
            if other_at is not None and other_at <= moved:
                place = i + 1
        self.entries.insert(place, entry)


def apply(data: bytes, edits: list[Edit], first: int = 1, unit: str = "line") -> tuple[bytes, list[Entry]]:
    """The trace `data` with `edits` applied in order (none: the trace as it
    is): its bytes, and its entries (line k of the result is entries[k - 1]).
    `first`: the number of data's first line (a store's tail: its first
    input's); `unit`: what a number names in messages (`line`, `input`)."""
    if len(edits) > edits_max:
        raise EditInvalid(f"{len(edits)} edits, over the limit of {edits_max}")
    lines = _Lines(data, first, unit)
    for edit in edits:
        APPLY[edit.op](lines, edit)
    body = b"\n".join(entry.data for entry in lines.entries)
    return (body + b"\n" if lines.entries else b""), lines.entries


def refused(invalid: TraceInvalid, entries: list[Entry], what: str) -> EditInvalid:
    """The parser's refusal of an edited trace, each bad line named by where
    it is in the original and the edits that touched it."""
    shown = []
    for error in invalid.errors[:errors_shown_max]:
        entry = entries[error.line - 1] if 1 <= error.line <= len(entries) else None
        label = entry.label if entry is not None else f"{entries[0].unit if entries else 'line'} {error.line}"
        edited = f" (after {', '.join(entry.edited)})" if entry is not None and entry.edited else ""
        shown.append(f"{label}{edited}: {error.message}")
    more = f" (and {invalid.total - len(shown)} more)" if invalid.total > len(shown) else ""
    return EditInvalid(f"the edited {what} not valid: " + "; ".join(shown) + more)


APPLY = {
    "drop": _Lines.drop,
    "replace": _Lines.replace,
    "insert_after": _Lines.insert_after,
    "shift": _Lines.shift,
    "set": _Lines.set,
}
