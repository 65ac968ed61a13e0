"""What is wrong with an input line, in words a writer can act on.

The parser (replay/traces.py) turns a decode failure into the message of a
schema error here, once, for every door: trace files, spool files, HTTP
bodies, the console's forms. msgspec's own text is kept where it is
already clear (its start is what tests and docs quote); what it leaves
out is added:

* "did you mean": an unknown `type` gets the closest input kinds, an
  unknown field the closest fields of its kind (or of the nested object it
  is in) (`did_you_mean`, which the CLI and HTTP use too, for view and
  command names);
* a JSON syntax error says what went wrong and where: the byte in the line
  (for a body of several lines, its line and column too), and what usually
  causes it (a line cut short, two inputs on one line, a lone backslash).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import Any

import msgspec
import msgspec.inspect

from tandem.domain.inputs import INPUT_KINDS, AnyInput

# How close a name must be to be offered (difflib's ratio), and how many are.
close_match_cutoff = 0.6
close_matches_max = 2

_kind_classes: dict[str, Any] = {cls.__struct_config__.tag: cls for cls in AnyInput.__args__}


def did_you_mean(word: str, names: Iterable[str]) -> str:
    """" (did you mean `x`?)" naming the known names closest to `word`
    (difflib), or "" when none is close."""
    close = difflib.get_close_matches(word, list(names), n=close_matches_max, cutoff=close_match_cutoff)
    if not close:
        return ""
    return f" (did you mean {' or '.join(f'`{name}`' for name in close)}?)"


# ----------------------------------------------------------- schema errors


_unknown_type = re.compile(r"^Invalid value '(?P<kind>.*)' - at `\$\.type`$", re.DOTALL)
_unknown_field = re.compile(r"^Object contains unknown field `(?P<field>.*?)`(?: - at `(?P<path>\$[^`]*)`)?$", re.DOTALL)
_byte = re.compile(r" \(byte (?P<byte>\d+)\)$")
_type_only = msgspec.json.Decoder(dict[str, Any])


def schema_message(error: msgspec.ValidationError | msgspec.DecodeError, raw: bytes) -> str:
    """The schema error's message for the line (or body) `raw` that failed."""
    text = str(error)
    if not isinstance(error, msgspec.ValidationError):  # a DecodeError that is not one: the JSON itself
        return json_message(text, raw)
    found = _unknown_type.match(text)
    if found is not None:
        kind = found["kind"]
        return f"unknown type {kind!r}" + did_you_mean(kind, INPUT_KINDS)
    found = _unknown_field.match(text)
    if found is not None:
        names = _field_names(_kind_of(raw), found["path"] or "$")
        return text + did_you_mean(found["field"], names)
    return text


def _kind_of(raw: bytes) -> Any:
    """The input kind's class `raw` names (it decoded far enough to say)."""
    try:
        kind = _type_only.decode(raw).get("type")
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return _kind_classes.get(kind) if isinstance(kind, str) else None


_step = re.compile(r"\.(?P<key>[A-Za-z_][A-Za-z0-9_]*)|\[(?P<index>[^\]]*)\]")


def _field_names(cls: Any, path: str) -> list[str]:
    """The field names of the object at `path` (msgspec's `$.a.b[0]`) in an
    input of kind `cls`: [] when it is not a struct (a free-form object)."""
    if cls is None:
        return []
    node: Any = msgspec.inspect.type_info(cls)
    for step in _step.finditer(path):
        node = _struct_in(node)
        if node is None:
            return []
        if step["key"] is not None:
            node = next((f.type for f in node.fields if f.encode_name == step["key"]), None)
        else:
            node = getattr(node, "item_type", None) or getattr(node, "value_type", None)
    node = _struct_in(node)
    return [] if node is None else [f.encode_name for f in node.fields]


def _struct_in(node: Any) -> Any:
    """`node` if it is a struct type, the struct among a union's types, or None
    (a list or dict stays itself: its items are stepped into next)."""
    while isinstance(node, msgspec.inspect.Metadata):  # Annotated[..., Meta(...)]
        node = node.type
    if isinstance(node, msgspec.inspect.UnionType):
        return next((found for t in node.types if (found := _struct_in(t)) is not None), None)
    if isinstance(node, (msgspec.inspect.StructType, msgspec.inspect.ListType, msgspec.inspect.DictType, msgspec.inspect.TupleType)):
        return node
    return None


# -------------------------------------------------------------- JSON syntax


def json_message(text: str, raw: bytes) -> str:
    """msgspec's DecodeError `text` for `raw`, in words: `bad JSON: ...`,
    with the byte it stopped at (and line and column when `raw` has several
    lines) and the likely cause."""
    if text == "Input data was truncated":
        return f"bad JSON: it ends too soon, {_where(raw, len(raw))}: a line cut short, or a closing `\"`, `}}` or `]` missing?"
    if not text.startswith("JSON is malformed: "):
        return text  # already in words (a lone surrogate escape, nesting too deep)
    detail = text.removeprefix("JSON is malformed: ")
    found = _byte.search(detail)
    if found is None:
        return "bad JSON: " + detail
    byte, what = int(found["byte"]), detail[: found.start()]
    cause = _causes.get(what)
    if cause is None:
        place = _line_column(raw, byte)
        return "bad JSON: " + detail if place is None else f"bad JSON: {what} (byte {byte}, {place})"
    return f"bad JSON: {cause(raw, byte)}"


def _where(raw: bytes, byte: int) -> str:
    """"at byte N" (from 0), and for a body of several lines, its line and column (from 1)."""
    place = _line_column(raw, byte)
    return f"at byte {byte}" if place is None else f"at byte {byte} ({place})"


def _line_column(raw: bytes, byte: int) -> str | None:
    """"line L, column C" of `byte` in a body of several lines; None for one line."""
    if b"\n" not in raw:
        return None
    line = raw.count(b"\n", 0, byte) + 1
    column = byte - raw.rfind(b"\n", 0, byte)
    return f"line {line}, column {column}"


def _trailing(raw: bytes, byte: int) -> str:
    return f"more follows the input's end, {_where(raw, byte)}: one input per line (two on one line, or a `}}` too many?)"


def _escape(raw: bytes, byte: int) -> str:
    shown = raw[max(byte - 2, 0) : byte].decode("utf-8", "replace")  # msgspec points just past it
    return (
        f"invalid escape `{shown}` in a string, {_where(raw, byte)}: after a backslash JSON allows only "
        '" \\ / b f n r t or uXXXX (write `\\\\` for a backslash itself)'
    )


def _character(raw: bytes, byte: int) -> str:
    code = raw[byte] if byte < len(raw) else None
    if code is not None and code < 0x20:
        return f"a control character (U+{code:04X}) in a string, {_where(raw, byte)}: write it escaped (`\\n`, `\\t`, `\\u00XX`)"
    return f"invalid character, {_where(raw, byte)}"


_causes = {
    "trailing characters": _trailing,
    "invalid escape character in string": _escape,
    "invalid character": _character,
}
