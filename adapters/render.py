"""Readable tables for the views (what `tandem replay` and `tandem show`
print without --json).

Every cell is text from the views made safe for a terminal (contract section
10, "Text on a terminal"): a newline becomes a space, then every other
control character and bidi override is escaped (`printable`). Columns are
measured and padded in display cells (adapters/terminal.py), so a wide
character or an emoji does not push the columns after it out of line.
Identifiers (ids, cause keys, states, codes, source ids, URLs, scopes,
times) are never cut, however long; only the free text of `FREE_TEXT` is,
to `free_text_cells_max` cells ending in `…`.

A nested value reads as `key=value` pairs (`latest`, `backlog`), lists as
`a, b` (in a dict, `[a, b]`), a list of things with a `state` as
`id state, …` (an action's attempts).
"""

from __future__ import annotations

from typing import Any

from tandem.adapters.terminal import cells, cut, detached, pad, printable

free_text_cells_max = 60
column_gap = "  "


def _scalar(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = printable(str(value).replace("\n", " "))
    return cut(text, free_text_cells_max) if key in FREE_TEXT else text


def _nested(key: str, value: Any) -> str:
    """A value inside a dict or a list: brackets keep its parts apart."""
    if isinstance(value, dict):
        return "{" + _pairs(value) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_nested(key, item) for item in value) + "]"
    text = _scalar(key, value)
    return f'"{text}"' if key in FREE_TEXT else text


def _pairs(value: dict[str, Any]) -> str:
    return ", ".join(f"{printable(name)}={_nested(name, item)}" for name, item in value.items())


def _stated(value: list[Any]) -> bool:
    return all(isinstance(item, dict) and "state" in item and len(item) > 1 for item in value)


def _cell(key: str, value: Any) -> str:
    """One value as a table cell: escaped, its free text cut, and nothing at
    its start that would join the column gap before it."""
    return detached(_scalar(key, value) if isinstance(value, str) else _text(key, value))


def _text(key: str, value: Any) -> str:
    if isinstance(value, (list, dict)) and not value:
        return "-"
    if isinstance(value, dict):
        return _pairs(value)
    if isinstance(value, list) and _stated(value):
        return ", ".join(f"{_scalar(key, next(iter(item.values())))} {_scalar('state', item['state'])}" for item in value)
    if isinstance(value, list):
        return ", ".join(_nested(key, item) if isinstance(item, (list, dict)) else _scalar(key, item) for item in value)
    return _scalar(key, value)


def _measured(texts: list[str]) -> list[tuple[str, int]]:
    return [(text, cells(text)) for text in texts]


def _line(texts: list[tuple[str, int]], widths: list[int]) -> str:
    """One line of a table: each text and the spaces that pad it to its column's width in cells."""
    return column_gap.join(text + " " * (widths[i] - own) for i, (text, own) in enumerate(texts)).rstrip()


def _table(rows: list[dict[str, Any]]) -> str:
    columns = list(rows[0])
    heads = _measured([printable(column) for column in columns])
    lines = [_measured([_cell(column, row.get(column)) for column in columns]) for row in rows]
    widths = [max(own, *(line[i][1] for line in lines)) for i, (_, own) in enumerate(heads)]
    out = [_line(heads, widths), column_gap.join("-" * width for width in widths)]
    out.extend(_line(line, widths) for line in lines)
    return "\n".join(out)


def _mapping(value: dict[str, Any]) -> str:
    if value and all(isinstance(item, dict) for item in value.values()):
        return _table([{"": key, **item} for key, item in value.items()])
    names = {key: printable(key) for key in value}
    width = max(cells(name) for name in names.values())
    return "\n".join(pad(names[key], width) + column_gap + _cell(key, item) for key, item in value.items())


def render_view(name: str, value: Any) -> str:
    if isinstance(value, dict) and value:
        body = _mapping(value)
    elif value:
        body = _table(value)
    else:
        body = "(none)"
    return f"{printable(name)}\n{body}\n"


def render_document(document: dict[str, Any]) -> str:
    return "\n".join(render_view(name, value) for name, value in document.items())


# The view keys (contract section 7 and 10) whose values are prose an input
# wrote: a task's goal, a question's blocking reason, a card's summary, the
# excerpt of an inbox row's latest observation (`latest.excerpt`). Cut with
# `…` past `free_text_cells_max` cells. Every other key holds identifiers,
# codes, states, times or numbers, and is never cut.
FREE_TEXT = frozenset({
    "goal",             # tasks
    "blocking_reason",  # questions
    "summary",          # cards
    "excerpt",          # inbox: latest.excerpt
})  # fmt: skip
