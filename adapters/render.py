"""Readable tables for the views (what `tandem replay` prints without --json)."""

from __future__ import annotations

from typing import Any

import msgspec

cell_chars_max = 60


def _cell(value: Any) -> str:
    if value is None:
        text = "-"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, list) and all(isinstance(item, str) for item in value):
        text = ", ".join(value) if value else "-"
    elif isinstance(value, list) and all(isinstance(item, dict) and "state" in item for item in value):
        text = ", ".join(f"{next(iter(item.values()))} {item['state']}" for item in value)
    elif isinstance(value, (list, dict)):
        text = msgspec.json.encode(value).decode() if value else "-"
    else:
        text = str(value)
    text = text.replace("\n", " ")
    return text if len(text) <= cell_chars_max else text[: cell_chars_max - 1] + "…"


def _table(rows: list[dict[str, Any]]) -> str:
    columns = list(rows[0])
    cells = [[_cell(row.get(column)) for column in columns] for row in rows]
    widths = [max(len(column), *(len(line[i]) for line in cells)) for i, column in enumerate(columns)]
    lines = ["  ".join(column.ljust(widths[i]) for i, column in enumerate(columns)).rstrip()]
    lines.append("  ".join("-" * width for width in widths))
    lines.extend("  ".join(line[i].ljust(widths[i]) for i in range(len(columns))).rstrip() for line in cells)
    return "\n".join(lines)


def _mapping(value: dict[str, Any]) -> str:
    if value and all(isinstance(item, dict) for item in value.values()):
        return _table([{"": key, **item} for key, item in value.items()])
    width = max(len(key) for key in value)
    return "\n".join(f"{key.ljust(width)}  {_cell(item)}" for key, item in value.items())


def render_view(name: str, value: Any) -> str:
    if isinstance(value, dict):
        body = _mapping(value)
    elif value:
        body = _table(value)
    else:
        body = "(none)"
    return f"{name}\n{body}\n"


def render_document(document: dict[str, Any]) -> str:
    return "\n".join(render_view(name, value) for name, value in document.items())
