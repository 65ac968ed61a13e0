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

from dataclasses import dataclass
from typing import Any

import msgspec

from tandem.adapters.terminal import cells, cut, detached, fold, pad, printable
from tandem.projections.rows import VIEW_ROWS, UsageTotals

free_text_cells_max = 60
column_gap = "  "
# When a table fits a width: a column of free text is cut to no fewer cells
# than this (or its head), one of other values folded to no fewer than that.
free_text_cells_least = 16
folded_cells_least = 24
_ROW_OF_VALUE = {"usage": UsageTotals}  # a value view whose table's rows are its roles


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


@dataclass(frozen=True)
class Layout:
    """How the tables are laid out. `width`: the cells a line may take (None:
    as many as it needs); `columns`: the columns of the one view printed, in
    that order (None: every column when `width` is None, else the view's
    `DEFAULT_COLUMNS` that fit)."""

    width: int | None = None
    columns: tuple[str, ...] | None = None


WIDE = Layout()  # every column, as wide as it needs: the tables as they were before they fitted


def known_columns(view: str) -> tuple[str, ...]:
    """The columns `view`'s table may show: its row's keys (for `health`,
    the keys it lists one a line; for `usage`, a role's totals)."""
    return tuple(field.name for field in msgspec.structs.fields(_ROW_OF_VALUE.get(view, VIEW_ROWS[view])))


def _chosen(view: str, present: list[str], layout: Layout) -> tuple[list[str], bool]:
    """The columns to try, in order, and whether the last may be left out to fit."""
    if layout.columns is not None:
        return list(layout.columns), False
    if layout.width is None:
        return present, False
    return [column for column in DEFAULT_COLUMNS.get(view, present) if column in present], True


def _total(widths: list[int]) -> int:
    return sum(widths) + len(column_gap) * (len(widths) - 1)


def _fit(heads: list[int], natural: list[int], free: list[bool], width: int, kept: int, droppable: bool) -> list[int]:
    """Each column's width in cells, to fit `width`: each at least its head,
    its natural width or `free_text_cells_least`/`folded_cells_least` cells;
    then the room left goes to the columns in order, free text last. With
    `droppable`, the last columns (past the first `kept`) are left out (the
    list is shorter) while the least widths do not fit; if they still do
    not, the last columns are narrower, down to their heads' widths (wider
    than `width` only when the heads are)."""
    least = [min(n, max(h, free_text_cells_least if f else folded_cells_least)) for h, n, f in zip(heads, natural, free)]
    while droppable and len(least) > max(kept, 1) and _total(least) > width:
        least.pop()
    excess = _total(least) - width
    for i in reversed(range(len(least))):  # still too wide: the last columns narrower, down to their heads
        taken = max(0, min(least[i] - max(heads[i], 1), excess))
        least[i] -= taken
        excess -= taken
    widths, room = list(least), width - _total(least)
    for i in sorted(range(len(widths)), key=lambda i: free[i]):
        given = max(0, min(natural[i] - widths[i], room))
        widths[i] += given
        room -= given
    return widths


def _row_lines(texts: list[str], widths: list[int], free: list[bool]) -> list[str]:
    """One row: free text cut to its column, every other value folded over
    as many lines as it needs (never cut)."""
    pieces = [[cut(text, width)] if is_free else fold(text, width) for text, width, is_free in zip(texts, widths, free)]
    return [
        _line(_measured([piece[n] if n < len(piece) else "" for piece in pieces]), widths)
        for n in range(max(len(piece) for piece in pieces))
    ]


def _table(view: str, rows: list[dict[str, Any]], layout: Layout, kept: int = 0) -> tuple[str, int]:
    """The table of `rows` and how many of its columns were left out. The
    first `kept` columns (a mapping's key column) are always shown."""
    present = list(rows[0])
    chosen, droppable = _chosen(view, present[kept:], layout)
    columns = [*present[:kept], *chosen]
    heads = _measured([printable(column) for column in columns])
    lines = [[_cell(column, row.get(column)) for column in columns] for row in rows]
    natural = [max(own, *(cells(line[i]) for line in lines)) for i, (_, own) in enumerate(heads)]
    if layout.width is None:
        widths, free = natural, [False] * len(columns)
    else:
        free = [column in FREE_TEXT for column in columns]
        widths = _fit([own for _, own in heads], natural, free, layout.width, kept, droppable)
    out = [_line(heads[: len(widths)], widths), column_gap.join("-" * width for width in widths)]
    for line in lines:
        out.extend(_row_lines(line[: len(widths)], widths, free) if layout.width is not None else [_line(_measured(line), widths)])
    return "\n".join(out), len(present) - len(widths)


def _mapping(view: str, value: dict[str, Any], layout: Layout) -> tuple[str, int]:
    if value and all(isinstance(item, dict) for item in value.values()):
        return _table(view, [{"": key, **item} for key, item in value.items()], layout, kept=1)
    keys, droppable = _chosen(view, list(value), layout)
    names = {key: printable(key) for key in keys}
    width = max(cells(name) for name in names.values())
    room = None if layout.width is None else max(layout.width - width - len(column_gap), folded_cells_least)
    out = []
    for key in keys:
        text = _cell(key, value.get(key))
        pieces = [text] if room is None else [cut(text, room)] if key in FREE_TEXT else fold(text, room)
        out.extend((pad(names[key], width) if n == 0 else " " * width) + column_gap + piece for n, piece in enumerate(pieces))
    return "\n".join(line.rstrip() if layout.width is not None else line for line in out), len(value) - len(keys)


def render_view(name: str, value: Any, layout: Layout = WIDE) -> str:
    """One view as its title and its table (or `(none)`), laid out by `layout`."""
    left_out = 0
    if isinstance(value, dict) and value:
        body, left_out = _mapping(name, value, layout)
    elif value:
        body, left_out = _table(name, value, layout)
    else:
        body = "(none)"
    title = printable(name)
    note = f"{title}  ({left_out} more column(s): --wide, or --columns)"
    if left_out and layout.columns is None and layout.width is not None and cells(note) <= layout.width:
        title = note
    return f"{title}\n{body}\n"


def render_document(document: dict[str, Any], layout: Layout = WIDE) -> str:
    return "\n".join(render_view(name, value, layout) for name, value in document.items())


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


# The columns each view's table shows by default (`tandem replay`, `show`,
# `demo` without --wide or --columns), in order: what a row is (its id), its
# state, what holds or blocks it, its outcome, then what helps to read it.
# The last ones are left out while the table does not fit the terminal.
# `health` lists its keys one a line (every key); `usage`'s rows are the roles.
DEFAULT_COLUMNS: dict[str, tuple[str, ...]] = {
    "tasks":          ("task_id", "state", "goal", "open_questions", "holds", "depends_on", "actions", "progress_due_at"),
    "actions":        ("operation_id", "task_id", "operation", "state", "blocked_by", "prerequisites", "outcome",
                       "cause_key", "resource", "attempts", "reason", "priority"),
    "inbox":          ("cause_key", "kind", "triage_state", "disposition", "revision", "delivered_revision",
                       "last_seen_at", "partial", "repeats"),
    "questions":      ("task_id", "question_key", "state", "recipient", "blocking_reason", "affected", "answer"),
    "alerts":         ("alert_id", "kind", "state", "count", "last_raised_at", "first_raised_at"),
    "conversations":  ("conversation_id", "role", "state", "epoch", "generation", "queue", "context_tokens",
                       "provider", "stop_requested", "deferred", "refusals"),
    "consumers":      ("consumer_id", "state", "epoch", "seq", "gaps", "skipped", "max_deleted_seq"),
    "health":         ("watchdog_generation", "last_heartbeat_at", "watchdog_fresh", "unattended_dispatch",
                       "open_incidents", "backlog", "last_heartbeat_imported_at", "host", "last_resume_at",
                       "incidents", "providers", "tool_policy_revision", "isolation_unavailable", "degraded"),
    "usage":          ("input_tokens", "output_tokens", "reports", "cached_input_tokens", "cache_write_tokens"),
    "cards":          ("card_id", "cause_key", "summary"),
    "rejections":     ("line", "type", "reason", "file"),
    "runtimes":       ("runtime_id", "role", "conversation_id", "state", "reason", "adapter", "generation",
                       "calls_allowed", "calls_denied", "tools"),
    "investigations": ("investigation_id", "state", "conversation_id", "task_id", "cause_key", "due_at", "calls",
                       "operation_id"),
}  # fmt: skip
