"""Bounded nesting (and bounded integers, unique keys and lone surrogates named, below): free-form JSON (`dict[str, Any]`, an input's `constraints`)
is the only place a line can nest without a schema's bound. msgspec decodes
and pickle encodes recursively: ~1,000 levels crash the decoder, ~500 the
snapshot writer. So a line nested deeper than `nesting_depth_max` is a schema
error at the edge, naming where, and never a RecursionError. Everything here
is iterative, and most lines pass a C-speed count of their brackets.

domain/inputs.py applies it to trace lines (`decode_input`), `tandem import`
(adapters/commands/import_log.py) to imported events (`decode_foreign_event`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, Union

import msgspec
from msgspec import Struct

# Levels count containers from the input object itself (level 1).
nesting_depth_max = 64
nesting_path_levels_shown = 4  # a refusal names this much of the path, then "…"

PathPart = Union[str, int, None]  # a key, an index, or a key not worth showing
_path_key_chars_shown_max = 32  # a longer key is shown as msgspec shows dict keys: `[...]`


def path_text(path: list[PathPart] | tuple[PathPart, ...]) -> str:
    """A path as msgspec writes one (`$.grant.allowed_operations[0]`), cut after a few levels."""
    text = "$"
    for part in path[:nesting_path_levels_shown]:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part is not None and part.isidentifier() and len(part) <= _path_key_chars_shown_max:
            text += f".{part}"
        else:
            text += "[...]"  # msgspec's mark for a dict key; a long or odd key would drown the message
    if len(path) > nesting_path_levels_shown:
        text += "…"
    return text


def too_deep_error(path: list[PathPart], limit: int = nesting_depth_max) -> msgspec.ValidationError:
    return msgspec.ValidationError(f"nested deeper than {limit} levels - at `{path_text(path)}`")


# Bounded integers: JSON has no integer limit, msgspec decodes any size, and a
# reader in another language (a UI in JavaScript) rounds past 2^53. So an
# integer anywhere in an input is at most 2^53 in magnitude. A line with no run
# of 16 digits (2^53 has 16) cannot hold one: most lines skip the walk. The
# run is found at C speed: every digit made "0", everything else a space, then
# a search for sixteen "0" (measured: a third of a regular expression's cost,
# about as much as msgspec's decode of the line).
integer_magnitude_max = 2**53
_digits_as_zeros = bytes(0x30 if 0x30 <= code <= 0x39 else 0x20 for code in range(256))
_sixteen_digits = b"0" * 16
_integer_digits_shown = 20


def unbounded_integer_error(line: bytes) -> msgspec.ValidationError | None:
    """The error for the first integer (in document order) over 2^53 in
    magnitude in a line that decodes as JSON, naming where; or None."""
    if _sixteen_digits not in line.translate(_digits_as_zeros):
        return None
    for node, path in _document_order(msgspec.json.decode(line)):
        if isinstance(node, int) and not isinstance(node, bool) and abs(node) > integer_magnitude_max:
            digits = str(node)
            shown = digits if len(digits) <= _integer_digits_shown else digits[:_integer_digits_shown] + "…"
            return msgspec.ValidationError(
                f"integer {shown} is out of range (at most 2^53 = {integer_magnitude_max:,} in magnitude) - at `{path_text(path)}`"
            )
    return None


def _document_order(value: Any) -> Iterator[tuple[Any, tuple[PathPart, ...]]]:
    """Every node of decoded JSON with its path, in document order
    (iterative: a line's nesting is bounded, but a walk never recurses)."""
    pending: list[tuple[Any, tuple[PathPart, ...]]] = [(value, ())]
    while pending:
        node, path = pending.pop()
        yield node, path
        children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        pending.extend(reversed([(child, (*path, key)) for key, child in children]))


# Unique keys: JSON leaves a repeated key to the reader ("last wins" in
# msgspec and Python, "first wins" or an error elsewhere), so a writer's tool
# and Tandem could read different values from one line: a parser
# differential. A key repeated in one object is a schema error. The check is
# exact and C-speed on every line: a line's colons are its pairs plus the
# colons inside its strings; a re-encoding of the decoded value (msgspec
# writes every colon of a string literally) has the same count unless pairs
# were lost to a repeated key. A colon written as an escape (`\u003a`) would
# break that count, so such a line takes the slow exact walk.
_escaped_colons = (b"\\u003a", b"\\u003A")


def repeated_key_error(line: bytes) -> msgspec.ValidationError | None:
    """The error for the first object (in document order) of a line that
    decodes as JSON in which a key appears twice, naming the key's path; or None."""
    if not (_escaped_colons[0] in line or _escaped_colons[1] in line):
        if line.count(b":") == msgspec.json.encode(msgspec.json.decode(line)).count(b":"):
            return None
    path = _first_repeated_key(line)
    return None if path is None else msgspec.ValidationError(f"duplicate key (JSON readers disagree on which value wins) - at `{path_text(path)}`")


class _Pairs(dict):  # type: ignore[type-arg]
    """A decoded object that remembers the first key it saw twice."""

    repeated: str | None = None


def _pairs(items: list[tuple[str, Any]]) -> _Pairs:
    found = _Pairs(items)
    if len(found) != len(items):
        seen: set[str] = set()
        for key, _ in items:
            if key in seen:
                found.repeated = key
                break
            seen.add(key)
    return found


def _first_repeated_key(line: bytes) -> list[PathPart] | None:
    """The path (object, then key) of the first repeated key, by the standard
    library's decoder, which shows every pair (the line's nesting is already
    bounded: its recursion is too)."""
    for node, path in _document_order(json.loads(line, object_pairs_hook=_pairs)):
        if isinstance(node, _Pairs) and node.repeated is not None:
            return [*path, node.repeated]
    return None


# Lone surrogates: `"\ud800"` is the JSON escape of half a UTF-16 pair, no
# character at all, which no store can encode. msgspec refuses it, but says
# "Input data was truncated" (a high half at a string's end) or "invalid
# utf-16 surrogate pair" (a low half), neither of which says why. The
# standard library's decoder takes it, so a line msgspec refused is read
# there (only then: most lines never come here) and the first one named,
# with where it is. Every door that reads JSON from outside uses this.
_surrogates = range(0xD800, 0xE000)


def lone_surrogate_error(raw: bytes) -> msgspec.DecodeError | None:
    """For JSON msgspec refused: the error naming its first lone surrogate
    escape (an object's keys before its values) and where; or None."""
    if b"\\u" not in raw:
        return None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    for node, path in _document_order(value):
        for text, where in _texts(node, path):
            code = next((ord(character) for character in text if ord(character) in _surrogates), None)
            if code is not None:
                return msgspec.DecodeError(
                    f"a lone surrogate escape (\\u{code:04x}) in a string: not a Unicode character - at `{path_text(where)}`"
                )
    return None


def _texts(node: Any, path: tuple[PathPart, ...]) -> list[tuple[str, tuple[PathPart, ...]]]:
    """The strings a node of decoded JSON holds itself, with their paths: an object's keys, or a string."""
    if isinstance(node, dict):
        return [(key, (*path, key)) for key in node]
    return [(node, path)] if isinstance(node, str) else []


def opening_brackets(line: bytes | str) -> int:
    if isinstance(line, str):
        return line.count("[") + line.count("{")
    return line.count(b"[") + line.count(b"{")


def too_deep_in_value(value: Any, name: str) -> list[PathPart] | None:
    """The path to the first container (in document order) nested deeper than
    the limit inside a decoded field value (level 2: the input object is level 1), or None.
    Iterative: the value may be as deep as the decoder allowed."""
    pending: list[tuple[Any, int, tuple[PathPart, ...]]] = [(value, 2, (name,))]
    while pending:
        node, level, path = pending.pop()
        if not isinstance(node, (dict, list, Struct)):
            continue
        if level > nesting_depth_max:
            return list(path)
        if isinstance(node, dict):
            children: list[tuple[PathPart, Any]] = list(node.items())
        elif isinstance(node, list):
            children = list(enumerate(node))
        else:
            children = [(f, getattr(node, f)) for f in node.__struct_fields__]
        # Only the shown part of a path is kept (+1 to know it was cut).
        short = len(path) > nesting_path_levels_shown
        for key, child in reversed(children):  # popped in document order: the first deep place is named
            if isinstance(child, (dict, list, Struct)):
                pending.append((child, level + 1, path if short else path + (key,)))
    return None


_JSON_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{},]')


def too_deep_in_json(raw: bytes, limit: int = nesting_depth_max) -> list[PathPart] | None:
    """The path to the first container nested deeper than `limit` in raw
    JSON, or None: a scan of its brackets, for input too deep to decode."""
    frames: list[list[Any]] = []  # per open container: [is_object, key or index, expecting a key]
    for match in _JSON_TOKEN.finditer(raw):
        token = match.group()
        if token in (b"{", b"["):
            if len(frames) >= limit:
                return [frame[1] for frame in frames]  # the new container's path
            frames.append([True, None, True] if token == b"{" else [False, 0, False])
        elif token in (b"}", b"]"):
            if frames:
                frames.pop()
        elif not frames:
            continue
        elif token == b",":
            top = frames[-1]
            if top[0]:
                top[2] = True
            else:
                top[1] += 1
        elif frames[-1][2]:  # a key
            frames[-1][1] = _json_key(token) if len(frames) <= nesting_path_levels_shown + 1 else None
            frames[-1][2] = False
    return None


def too_deep(raw: bytes, limit: int = nesting_depth_max) -> msgspec.ValidationError | None:
    """The schema error for raw JSON nested deeper than `limit` levels (where,
    as decode_input names it), or None. For JSON from outside that is not an
    input (an imported event): checked before decoding, so a decoder never
    answers with RecursionError. Iterative; most lines pass the count."""
    if opening_brackets(raw) <= limit:
        return None
    path = too_deep_in_json(raw, limit)
    return None if path is None else too_deep_error(path, limit)


def _json_key(token: bytes) -> str | None:
    try:
        key = msgspec.json.decode(token)
    except msgspec.DecodeError:
        return None
    return key if isinstance(key, str) else None
