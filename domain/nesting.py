"""Bounded nesting: free-form JSON (`dict[str, Any]`, an input's `constraints`)
is the only place a line can nest without a schema's bound. msgspec decodes
and pickle encodes recursively: ~1,000 levels crash the decoder, ~500 the
snapshot writer. So a line nested deeper than `nesting_depth_max` is a schema
error at the edge, naming where, and never a RecursionError. Everything here
is iterative, and most lines pass a C-speed count of their brackets.

domain/inputs.py applies it to trace lines (`decode_input`), `tandem import`
(adapters/commands/import_log.py) to imported events (`decode_foreign_event`).
"""

from __future__ import annotations

import re
from typing import Any, Union

import msgspec
from msgspec import Struct

# Levels count containers from the input object itself (level 1).
nesting_depth_max = 64
nesting_path_levels_shown = 4  # a refusal names this much of the path, then "…"

PathPart = Union[str, int, None]  # a key, an index, or a key not worth showing
_path_key_chars_shown_max = 32  # a longer key is shown as msgspec shows dict keys: `[...]`


def too_deep_error(path: list[PathPart], limit: int = nesting_depth_max) -> msgspec.ValidationError:
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
    return msgspec.ValidationError(f"nested deeper than {limit} levels - at `{text}`")


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
