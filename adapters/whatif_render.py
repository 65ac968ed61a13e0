"""A what-if as text for a terminal (docs/whatif.md): what differs, decision
by decision, then view by view; `-` what only the original has, `+` what
only the fork has. Every text from an input is escaped (never a control
sequence), and every line fits the width it is given (cut with `…`)."""

from __future__ import annotations

import json
from typing import Any

from tandem.adapters.terminal import cut, printable
from tandem.replay.whatif.model import Side, Step, Thing, ViewDiff, WhatIf, Where

value_chars_max = 80  # a field's value shown in a change, before the line's own cut
rows_shown_max = 20  # rows of one view listed as added, removed or changed
steps_shown_max = 20  # steps of one side of one thing


def _value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True) if not isinstance(value, str) else value
    return text if len(text) <= value_chars_max else text[: value_chars_max - 1] + "…"


def _where(where: Where | None, unit: str) -> str:
    return where.text(unit) if where is not None else "(no input)"


def _step(mark: str, step: Step, unit: str) -> str:
    state = f" -> {step.state}" if step.state else ""
    return f"      {mark} {_where(step.where, unit)}  {step.event}{state}: {step.summary}"


def _side_lines(mark: str, side: Side | None, unit: str) -> list[str]:
    if side is None:
        return []
    lines = [_step(mark, step, unit) for step in side.only_here[:steps_shown_max]]
    lines += [f"      {mark} {_where(r.where, unit)}  {r.event} {_value(r.facts)}" for r in side.records[:steps_shown_max]]
    hidden = len(side.only_here) + len(side.records) - len(lines)
    return lines + ([f"      {mark} … {hidden} more (--json lists every one)"] if hidden > 0 else [])


def _state(side: Side | None) -> str:
    if side is None:
        return "(absent)"
    return side.state + (f" (waiting: {', '.join(side.waiting)})" if side.waiting else "")


def _thing(thing: Thing, unit: str) -> list[str]:
    before, after = _state(thing.original), _state(thing.fork)
    states = f"{before} -> {after}" if before != after else f"{before} on both sides"
    return [
        f"  {thing.kind} {thing.id}: {states}",
        *_side_lines("-", thing.original, unit),
        *_side_lines("+", thing.fork, unit),
    ]


def row_name(row: dict[str, Any], unit: str) -> str:
    if "where" in row and isinstance(row["where"], dict):
        where = Where(line=row["where"].get("line"), inserted_after=row["where"].get("inserted_after"), inserted=row["where"].get("inserted"))
        return f"{where.text(unit)} {row.get('type', '')} {row.get('reason', '')}".strip()
    for name in ("operation_id", "task_id", "cause_key", "alert_id", "conversation_id", "consumer_id", "card_id",
                 "runtime_id", "investigation_id", "question_key"):  # fmt: skip
        if name in row:
            return str(row[name])
    return _value(row)


def _view(diff: ViewDiff, unit: str) -> list[str]:
    counts = [f"{len(items)} {word}" for items, word in ((diff.added, "added"), (diff.removed, "removed"), (diff.changed, "changed")) if items]
    lines = [f"  {diff.view}: {', '.join(counts)}"]
    lines += [f"      + {row_name(row, unit)}" for row in diff.added[:rows_shown_max]]
    lines += [f"      - {row_name(row, unit)}" for row in diff.removed[:rows_shown_max]]
    for change in diff.changed[:rows_shown_max]:
        fields = "; ".join(f"{c.field} {_value(c.original)} -> {_value(c.fork)}" for c in change.fields)
        lines.append(f"      ~ {change.key or diff.view}: {fields}")
    hidden = len(diff.added) + len(diff.removed) + len(diff.changed) - (len(lines) - 1)
    return lines + ([f"      … {hidden} more row(s) (--json lists every one)"] if hidden > 0 else [])


def render(result: WhatIf, width: int) -> str:
    """The what-if as lines of at most `width` cells."""
    unit = result.unit
    edits = " ".join(result.edits) or "(no edit)"
    until = f", until {unit} {result.until}" if result.until is not None else ""
    lines = [f"what if {result.source}: {edits}{until}"]
    if not result.different:
        lines.append("no difference: every decision and every view is the same")
    first = result.first_divergence
    if first is not None:
        lines.append(f"first divergence: {first.where.text(unit)} (original: {first.original}; fork: {first.fork})")
    if result.decisions:
        lines += ["", f"decisions: {len(result.decisions)} thing(s) differ (- only the original, + only the fork)"]
        for thing in result.decisions:
            lines += _thing(thing, unit)
    if result.views:
        lines += ["", f"views: {len(result.views)} differ (+ added, - removed, ~ changed: original -> fork)"]
        for diff in result.views:
            lines += _view(diff, unit)
    return "".join(cut(printable(line), width) + "\n" for line in lines)
