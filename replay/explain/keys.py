"""Keys, both ways, from the one declaration (domain/keys.py): an event's
keys (`event_keys`), and, per key kind, the event types that can have one —
the tags a read of the log lets through to decoding (`read_filter`)."""

from __future__ import annotations

import msgspec

from tandem.domain import events as ev
from tandem.domain.keys import KINDS as KEY_KINDS
from tandem.domain.keys import SPECS, event_keys, event_types_with

Key = tuple[str, ...]  # ("action", "op-1"), or ("policy",) for a singleton

# Per key kind, the stored tags (event type names) of the events that can have such a key.
KIND_TAGS: dict[str, frozenset[bytes]] = {
    kind: frozenset(event_type.__name__.encode() for event_type in event_types_with(kind)) for kind in KEY_KINDS
}
# The key kinds whose id joins several fields (`task_id/question_key`): stored apart.
JOINED: frozenset[str] = frozenset(spec.kind for specs in SPECS.values() for spec in specs if len(spec.fields) > 1)
# Every TaskDelegated is decoded, whatever is wanted: a read notes each task's conversation.
ALWAYS: dict[bytes, set[bytes]] = {ev.TaskDelegated.__name__.encode(): {b""}}


def needle(key: Key) -> bytes:
    """Bytes the stored event of a key must contain (b"": any event of its type)."""
    if len(key) == 1:
        return b""  # ("heartbeat",), ("policy",), ("config",): every event of the type
    identifier = key[1]
    if key[0] in JOINED:
        # Stored apart, the part after the last "/" is in the last field.
        identifier = identifier.rpartition("/")[2]
    return msgspec.json.encode(identifier)[1:-1]


def read_filter(wanted: set[Key]) -> dict[bytes, tuple[bytes, ...]]:
    """Per event type, the needles one of which its bytes must contain to be
    decoded (an empty needle lets every event of the type through)."""
    by_tag = {tag: set(needles) for tag, needles in ALWAYS.items()}
    for key in wanted:
        found = needle(key)
        for tag in KIND_TAGS[key[0]]:
            by_tag.setdefault(tag, set()).add(found)
    # A needle containing another is redundant: keep the shortest ones.
    return {
        tag: tuple(n for n in sorted(needles, key=len) if not any(m in n and m != n for m in needles))
        for tag, needles in by_tag.items()
    }


__all__ = ["KIND_TAGS", "Key", "event_keys", "needle", "read_filter"]
