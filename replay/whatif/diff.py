"""The answer of a what-if: the difference between two runs, decision by
decision and view by view (docs/whatif.md). Pure: two runs in (their
events, views and ways to explain a thing), one `WhatIf` out.

An input is named by where it is in the original (`Where`), on both sides,
so that a fork whose inputs moved (one dropped before them, one inserted)
is compared input for input. An event's facts are its fields, with the
input numbers it holds (`cause`, `observed_by`) turned into `Where`s too.

- **Decisions**: the things (operations, attempts, tasks, questions, causes,
  alerts, … every kind `tandem explain` knows) whose events differ, each with
  its state on each side and the steps of its explanation only one side has;
  things no explanation covers (a grant, the policy, …) with their records.
- **Views**: per view, the rows added, removed, and changed field by field.
- **The first divergence**: the first input (in the original's order) that
  one side has and the other does not, or that the two decide differently.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from tandem.domain import events as ev
from tandem.domain.keys import event_keys
from tandem.projections import Views
from tandem.replay.explain.model import Explanation
from tandem.replay.explain.walk import CHAINS
from tandem.replay.whatif.model import (
    Divergence,
    FieldChange,
    Record,
    RowChange,
    Side,
    Step,
    Thing,
    ViewDiff,
    WhatIf,
    Where,
)

Key = tuple[str, ...]
Rec = tuple[str, tuple[int, int] | None, str]  # (event, where's order, facts as sorted JSON): comparable, hashable


@dataclass(frozen=True)
class Run:
    """One side: its events (position, event), its views (the document), and
    how to read it: `where` of an input's seq (None: not an input of the
    trace, as a runtime's own), `line_where` of a view row's `line`, and
    `explain` of a (kind, id), None when it names nothing there."""

    events: Sequence[tuple[int, ev.Event]]
    views: dict[str, Any]
    where: Callable[[int], Where | None]
    line_where: Callable[[int], Where | None] | None  # None: rows name their lines as recorded (a store's)
    explain: Callable[[str, str], Explanation | None]


@dataclass
class _Index:
    inputs: dict[tuple[int, int], tuple[Where, str, list[Rec]]]  # order -> (where, outcome, its decisions)
    by_key: dict[Key, list[Rec]]
    raw: dict[Rec, ev.Event]


def _facts(event: ev.Event, where: Callable[[int], Where | None]) -> dict[str, Any]:
    body = msgspec.to_builtins(event)
    body.pop("event", None)
    body.pop("cause", None)
    _map_inputs(body, where)
    return body


def _map_inputs(value: Any, where: Callable[[int], Where | None]) -> None:
    """Input numbers inside facts (the source rule's `observed_by`) as where the input is."""
    if isinstance(value, dict):
        for name, item in value.items():
            if name in INPUT_FIELDS and isinstance(item, int):
                found = where(item)
                value[name] = msgspec.to_builtins(found) if found is not None else item
            else:
                _map_inputs(item, where)
    elif isinstance(value, list):
        for item in value:
            _map_inputs(item, where)


def _order(where: Where | None) -> tuple[int, int] | None:
    return where.order() if where is not None else None


def index(run: Run) -> _Index:
    inputs: dict[tuple[int, int], tuple[Where, str, list[Rec]]] = {}
    by_key: dict[Key, list[Rec]] = {}
    raw: dict[Rec, ev.Event] = {}
    for _, event in run.events:
        kind = type(event)
        if kind is ev.InputAccepted or kind is ev.InputRejected:
            where = run.where(event.seq)  # type: ignore[union-attr]
            if where is not None:
                outcome = "accepted" if kind is ev.InputAccepted else f"rejected: {event.reason}"  # type: ignore[union-attr]
                inputs[where.order()] = (where, outcome, [])
            continue
        if not isinstance(event, ev.Decision):
            continue
        where = run.where(event.cause)
        rec: Rec = (kind.__name__, _order(where), json.dumps(_facts(event, run.where), sort_keys=True, ensure_ascii=False))
        raw.setdefault(rec, event)
        if where is not None and where.order() in inputs:
            inputs[where.order()][2].append(rec)
        for key in event_keys(event):
            by_key.setdefault(key, []).append(rec)
    return _Index(inputs, by_key, raw)


def first_divergence(a: _Index, b: _Index) -> Divergence | None:
    for order in sorted(set(a.inputs) | set(b.inputs)):
        left, right = a.inputs.get(order), b.inputs.get(order)
        if left is not None and right is not None and left[1:] == right[1:]:
            continue
        where = (left or right)[0]  # type: ignore[index]
        return Divergence(where=where, original=left[1] if left else "absent", fork=right[1] if right else "absent")
    return None


# ------------------------------------------------------------------ decisions


def _chain_kinds(key: Key) -> list[str]:
    return CHAIN_KINDS_BY_KEY.get(key[0], []) if len(key) > 1 else []


def _steps(explanation: Explanation, where: Callable[[int], Where | None]) -> list[Step]:
    return [
        Step(
            event=link.event,
            summary=link.summary,
            state=link.state,
            where=where(link.input.seq) if link.input is not None else None,
        )
        for link in explanation.steps
    ]


def _only(left: list[Any], right: list[Any]) -> tuple[list[Any], list[Any]]:
    """What each sequence has that the other does not, in order (a sequence diff)."""
    keyed_left = [msgspec.json.encode(item) for item in left]
    keyed_right = [msgspec.json.encode(item) for item in right]
    only_left: list[Any] = []
    only_right: list[Any] = []
    matcher = difflib.SequenceMatcher(a=keyed_left, b=keyed_right, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            only_left.extend(left[i1:i2])
            only_right.extend(right[j1:j2])
    return only_left, only_right


def _records(recs: Iterable[Rec], raw: dict[Rec, ev.Event], where: Callable[[int], Where | None]) -> list[Record]:
    return [
        Record(event=rec[0], where=where(raw[rec].cause) if isinstance(raw[rec], ev.Decision) else None, facts=json.loads(rec[2]))  # type: ignore[attr-defined]
        for rec in recs
    ]


def _side(explanation: Explanation | None, only: list[Step], records: list[Record]) -> Side | None:
    if explanation is None:
        return None
    return Side(state=explanation.state, waiting=[w.code for w in explanation.waiting], only_here=only, records=records)


def _explained(kind: str, ident: str, original: Run, fork: Run, a: _Index, b: _Index, key: Key) -> Thing | None:
    left, right = original.explain(kind, ident), fork.explain(kind, ident)
    if left is None and right is None:
        return None
    left_steps = _steps(left, original.where) if left is not None else []
    right_steps = _steps(right, fork.where) if right is not None else []
    only_left, only_right = _only(left_steps, right_steps)
    raw_left: list[Record] = []
    raw_right: list[Record] = []
    if not only_left and not only_right:  # the same story, other facts
        recs_left, recs_right = _only(a.by_key.get(key, []), b.by_key.get(key, []))
        raw_left = _records(recs_left, a.raw, original.where)
        raw_right = _records(recs_right, b.raw, fork.where)
        if not raw_left and not raw_right and (left is None) == (right is None):
            return None
    return Thing(
        kind=kind,
        id=ident,
        original=_side(left, only_left, raw_left),
        fork=_side(right, only_right, raw_right),
    )


def _not_explained(recs: list[Rec], raw: dict[Rec, ev.Event]) -> list[Rec]:
    """The records of events no explained thing shows (none of their keys is an explained kind's)."""
    return [rec for rec in recs if not any(_chain_kinds(key) for key in event_keys(raw[rec]))]


def _unexplained(key: Key, a: _Index, b: _Index, original: Run, fork: Run) -> Thing | None:
    """A thing no explanation covers: its records that differ and that no
    explained thing shows already."""
    recs_left, recs_right = _only(a.by_key.get(key, []), b.by_key.get(key, []))
    recs_left, recs_right = _not_explained(recs_left, a.raw), _not_explained(recs_right, b.raw)
    if not recs_left and not recs_right:
        return None
    ident = "/".join(key[1:])
    left = Side(state="recorded", records=_records(recs_left, a.raw, original.where)) if key in a.by_key else None
    right = Side(state="recorded", records=_records(recs_right, b.raw, fork.where)) if key in b.by_key else None
    return Thing(kind=key[0], id=ident, original=left, fork=right)


def _differing(a: _Index, b: _Index) -> list[Key]:
    return [key for key in dict.fromkeys([*a.by_key, *b.by_key]) if a.by_key.get(key) != b.by_key.get(key)]


def explained(original: Run, fork: Run) -> list[tuple[str, str]]:
    """The (kind, id) of each thing `compare` asks both sides to explain, in
    the order it asks (a caller may explain them all beforehand, together)."""
    a, b = index(original), index(fork)
    return list(dict.fromkeys((kind, key[1]) for key in _differing(a, b) for kind in _chain_kinds(key)))


def decisions(original: Run, fork: Run, a: _Index, b: _Index) -> list[Thing]:
    things: list[Thing] = []
    for key in _differing(a, b):
        kinds = _chain_kinds(key)
        found = [_explained(kind, key[1], original, fork, a, b, key) for kind in kinds] if kinds else [_unexplained(key, a, b, original, fork)]
        things.extend(thing for thing in found if thing is not None)
    unique = {(thing.kind, thing.id): thing for thing in reversed(things)}  # the first of each, kept
    return sorted(unique.values(), key=lambda t: (KIND_ORDER.get(t.kind, len(KIND_ORDER)), t.kind, t.id))


# ---------------------------------------------------------------------- views


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        flat: dict[str, Any] = {}
        for name, item in value.items():
            flat.update(_flat(item, f"{prefix}.{name}" if prefix else name))
        return flat
    return {prefix: value}


def _rows(name: str, rendered: Any, line_where: Callable[[int], Where | None] | None) -> dict[str, dict[str, Any]]:
    if isinstance(rendered, dict):
        return {"": rendered}
    rows: dict[str, dict[str, Any]] = {}
    fields = ROW_KEYS.get(name)
    for number, row in enumerate(rendered):
        if name == "rejections" and line_where is None:  # as recorded: the input's file and line
            key = json.dumps({"file": row.get("file"), "line": row.get("line")}, sort_keys=True)
        elif name == "rejections" and isinstance(row.get("line"), int):
            where = line_where(row["line"])
            row = {"where": msgspec.to_builtins(where), **{k: v for k, v in row.items() if k != "line"}}
            key = json.dumps(row["where"], sort_keys=True)
        else:
            key = "/".join(str(row.get(f)) for f in fields) if fields else str(number)
        rows[key] = row
    return rows


def views(original: Run, fork: Run) -> list[ViewDiff]:
    diffs: list[ViewDiff] = []
    for name in original.views:
        left = _rows(name, original.views[name], original.line_where)
        right = _rows(name, fork.views.get(name, []), fork.line_where)
        added = [row for key, row in right.items() if key not in left]
        removed = [row for key, row in left.items() if key not in right]
        changed = []
        for key in (key for key in left if key in right):
            flat_left, flat_right = _flat(left[key]), _flat(right[key])
            fields = [
                FieldChange(field=f, original=flat_left.get(f), fork=flat_right.get(f))
                for f in dict.fromkeys([*flat_left, *flat_right])
                if flat_left.get(f) != flat_right.get(f)
            ]
            if fields:
                changed.append(RowChange(key=key, fields=fields))
        if added or removed or changed:
            diffs.append(ViewDiff(view=name, added=added, removed=removed, changed=changed))
    return diffs


def compare(original: Run, fork: Run, *, source: str, unit: str, edits: list[str], until: int | None) -> WhatIf:
    a, b = index(original), index(fork)
    first = first_divergence(a, b)
    things = decisions(original, fork, a, b)
    view_diffs = views(original, fork)
    different = first is not None or bool(things) or bool(view_diffs)
    return WhatIf(
        source=source, unit=unit, edits=edits, until=until, different=different,
        first_divergence=first, decisions=things, views=view_diffs,
    )  # fmt: skip


# The fields of an event's facts that hold an input's number.
INPUT_FIELDS = frozenset({"observed_by"})
# Each key kind of domain/keys.py that an explanation covers, and its kinds (explain's CHAINS).
CHAIN_KINDS_BY_KEY: dict[str, list[str]] = {}
for _kind, _chain in CHAINS.items():
    CHAIN_KINDS_BY_KEY.setdefault(_chain.key, []).append(_kind)
KIND_ORDER = {kind: number for number, kind in enumerate(CHAINS)}
# How each list view's rows are keyed: the key each view declares (projections/),
# and `questions`' pair, which no one field names (the `rejections` view: by
# where its input is, above).
ROW_KEYS: dict[str, tuple[str, ...]] = {
    **{name: (view.key,) for name, view in Views().by_name.items() if view.key is not None},
    "questions": ("task_id", "question_key"),
}
