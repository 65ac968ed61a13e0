"""Which ids each event of the investigations area concerns (domain/keys.py says how a
`"kind: path"` is read, and merges every area's `KEYS`)."""

from __future__ import annotations

from tandem.domain import events as ev

KEYS: dict[type[ev.Event], tuple[str, ...]] = {
    ev.InvestigationOpened: ("investigation: investigation_id", "task: task_id", "investigations"),
    ev.InvestigationExhausted: ("investigation: investigation_id",),
    ev.InvestigationClosed: ("investigation: investigation_id", "action: operation_id"),
    ev.BackgroundCheckpointed: ("checkpoint: checkpoint_id", "investigation: investigations[]"),
}
