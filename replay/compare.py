"""Comparing two folds: where a stored state or view first differs from a
re-derived one (`tandem verify`; a snapshot's check of itself before it is
written, replay/engine.py)."""

from __future__ import annotations

import datetime
from dataclasses import fields, is_dataclass
from typing import Any

import msgspec


def short(value: Any) -> str:
    """A value as a report shows it: its repr, cut at 200 characters."""
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."


def first_difference(
    stored: Any, derived: Any, path: str, ignore: frozenset[str] | set[str] = frozenset()
) -> tuple[str | None, str | None, list[str]] | None:
    """The first place two folded values differ: None, or (stored, derived,
    [path]) for a report. Dicts are compared in order (insertion order is part
    of a deterministic state), sets as sets."""
    found = _first(stored, derived, path, ignore)
    if found is None:
        return None
    where, left, right = found
    return short(left), short(right), [f"{where}: snapshot {short(left)}, re-derived {short(right)}"]


class _Text(str):
    """A description, shown as is (not quoted)."""

    def __repr__(self) -> str:
        return str(self)


def _first(left: Any, right: Any, path: str, ignore: frozenset[str] | set[str] = frozenset()) -> tuple[str, Any, Any] | None:
    if type(left) is not type(right):
        return path, left, right
    if is_dataclass(left) and not isinstance(left, type):
        for item in fields(left):
            if item.name in ignore:
                continue
            found = _first(getattr(left, item.name), getattr(right, item.name), f"{path}.{item.name}")
            if found is not None:
                return found
        return None
    if isinstance(left, msgspec.Struct):
        if left == right:
            return None
        for name in left.__struct_fields__:
            found = _first(getattr(left, name), getattr(right, name), f"{path}.{name}")
            if found is not None:
                return found
        return path, left, right
    if isinstance(left, dict):
        for key in left:
            if key not in right:
                return f"{path}[{key!r}]", left[key], "(absent)"
        for key in right:
            if key not in left:
                return f"{path}[{key!r}]", "(absent)", right[key]
        for key, value in left.items():
            found = _first(value, right[key], f"{path}[{key!r}]")
            if found is not None:
                return found
        if list(left) != list(right):
            return f"{path} (key order)", list(left)[:20], list(right)[:20]
        return None
    if isinstance(left, (list, tuple)):
        if len(left) != len(right):
            return f"{path} (length)", len(left), len(right)
        for index, (a, b) in enumerate(zip(left, right)):
            found = _first(a, b, f"{path}[{index}]")
            if found is not None:
                return found
        return None
    if isinstance(left, (set, frozenset)) or hasattr(left, "_set"):  # SortedSet too
        if left == right:
            return None
        only_left = sorted(map(repr, set(left) - set(right)))[:5]
        only_right = sorted(map(repr, set(right) - set(left)))[:5]
        return (
            path,
            _Text(f"has {', '.join(only_left) or 'nothing more'}"),
            _Text(f"has {', '.join(only_right) or 'nothing more'}"),
        )
    if isinstance(left, datetime.datetime):
        return None if left == right and left.utcoffset() == right.utcoffset() else (path, left, right)
    return None if left == right else (path, left, right)

