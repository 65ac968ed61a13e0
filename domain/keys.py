"""Which ids each event concerns, declared once, by its area
(`domain/<area>/keys.py`, for exactly that area's events) and merged here into
`KEYS`, one entry per event type (asserted complete at import), read by
`tandem explain` to find the events of a thing and the events a fact names.

A key is `(kind, id)` (`("action", "op-1")`), or `(kind,)` for a singleton
(`("policy",)`). Each entry lists its keys as `"kind: path"` strings, where
the path says where the id is in the event:

- `grant_id`: a field; a value that is None (or empty) gives no key;
- `task_id/question_key`: several fields joined by `/` (the id as it is written);
- `fenced[]`: each item of a list field; `included[].0`: the first part of each item;
- `facts[].questions[].task_id/question_key`: down through nested Structs and lists;
- `scope unless *`: no key when the value is `*`;
- no path at all (`"config"`): the singleton key.

`event_keys(event)` gives an event's keys, in declaration order, each once;
`KINDS` and `event_types_with(kind)` read the declaration the other way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from tandem.domain import events as ev
from tandem.domain.areas import area_modules, exported

KEYS: dict[type[ev.Event], tuple[str, ...]] = {
    ev.InputAccepted: (),
    ev.InputRejected: (),
    ev.SourceProgressed: (),
}
for _area, _events in zip(area_modules("keys"), area_modules("events"), strict=True):
    _own = set(exported((_events,), ev.Event))
    assert set(_area.KEYS) == _own, f"{_area.__name__} declares the keys of its own events, each: {set(_area.KEYS) ^ _own}"
    KEYS.update(_area.KEYS)
assert set(KEYS) == set(ev.EVENT_TYPES.values()), "every event type declares its keys (() for none)"


class KeySpec(NamedTuple):
    """One parsed `"kind: path"`: `steps` down to the id's parts (`fields`)."""

    kind: str
    steps: tuple[str, ...]  # attribute names; "name[]" iterates a list, a digit indexes a tuple
    fields: tuple[str, ...]  # the last step's fields, joined by "/"
    unless: str | None


def parse(text: str) -> KeySpec:
    kind, _, path = (part.strip() for part in text.partition(":"))
    path, _, unless = (part.strip() for part in path.partition(" unless "))
    if not path:
        return KeySpec(kind, (), (), None)
    *steps, last = path.split(".")
    return KeySpec(kind, tuple(steps), tuple(last.split("/")), unless or None)


SPECS: dict[type[ev.Event], tuple[KeySpec, ...]] = {
    event_type: tuple(parse(text) for text in texts) for event_type, texts in KEYS.items()
}
KINDS: tuple[str, ...] = tuple(dict.fromkeys(spec.kind for specs in SPECS.values() for spec in specs))


def event_types_with(kind: str) -> frozenset[type[ev.Event]]:
    """The event types that can have a key of `kind`."""
    return frozenset(event_type for event_type, specs in SPECS.items() if any(s.kind == kind for s in specs))


def _values(value: Any, steps: tuple[str, ...]) -> Iterator[Any]:
    """What `steps` reach from `value` (None and empty lists reach nothing)."""
    if value is None:
        return
    if not steps:
        yield value
        return
    step, rest = steps[0], steps[1:]
    if step.isdigit():
        yield from _values(value[int(step)], rest)
    elif step.endswith("[]"):
        for item in getattr(value, step[:-2]) or ():
            yield from _values(item, rest)
    else:
        yield from _values(getattr(value, step), rest)


def _keys(event: Any, spec: KeySpec) -> Iterator[tuple[str, ...]]:
    if not spec.fields:
        yield (spec.kind,)
        return
    if len(spec.fields) == 1:
        # One field: the value itself (or, for `fenced[]`, `.0`, each item) is the id.
        identifiers: Iterator[Any] = _values(event, (*spec.steps, spec.fields[0]))
    else:
        identifiers = ("/".join(getattr(v, f) for f in spec.fields) for v in _values(event, spec.steps))
    for identifier in identifiers:
        if identifier and identifier != spec.unless:
            yield (spec.kind, identifier)


def _extractor(specs: tuple[KeySpec, ...]) -> Callable[[Any], list[tuple[str, ...]]]:
    def keys_of(event: Any) -> list[tuple[str, ...]]:
        return list(dict.fromkeys(key for spec in specs for key in _keys(event, spec)))

    return keys_of


# Per event type, the function giving an event's keys (what explain reads by).
KEY_EXTRACTORS: dict[type[ev.Event], Callable[[Any], list[tuple[str, ...]]]] = {
    event_type: _extractor(specs) for event_type, specs in SPECS.items()
}


def event_keys(event: ev.Event) -> list[tuple[str, ...]]:
    """What an event concerns, as lookup keys (`("action", op)`, …), each once."""
    return KEY_EXTRACTORS[type(event)](event)
