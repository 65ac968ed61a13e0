"""The investigations area's part of the decision state: its records, one mutable
dataclass per thing, and its part of the State (`state.<area>`: the records
and the indexes over them), written only by this area's code (domain/records.py
gathers every area's records; domain/state.py holds the parts). A record's
`state` starts where its lifecycle starts and moves only as its events say.
Records are pickled in snapshots: their module is part of the snapshot
fingerprint."""

from __future__ import annotations

from typing import TYPE_CHECKING

import datetime
from dataclasses import dataclass, field

from tandem.domain.indexes import Timers
from tandem.domain.lifecycles import (
    INVESTIGATION,
)

if TYPE_CHECKING:
    from tandem.domain.state import State



@dataclass(slots=True, frozen=True)
class Checkpoint:
    """A background's checkpoint (contract v1.2 section 5.2): what it wrote, and
    the investigations the engine added (its open and exhausted ones)."""

    checkpoint_id: str
    at: datetime.datetime
    generation: int
    epoch: int
    intent_revision: int
    sync_cursor: str
    investigations: tuple[str, ...]
    evidence_refs: tuple[str, ...]
    tokens: int  # as counted (section 5.2): at most summary_bytes + 10 per evidence ref
    summary_bytes: int = 0  # its summary's UTF-8 bytes: what bounds the model's `tokens`


@dataclass(slots=True)
class Investigation:
    """A background's bounded inquiry into a cause (contract v1.2 section 5.1)."""

    investigation_id: str
    conversation_id: str
    cause_key: str
    task_id: str | None
    opened_at: datetime.datetime
    due_at: datetime.datetime
    state: str = INVESTIGATION.initial
    calls: int = 0  # allowed tool calls naming it
    evidence_refs: list[str] = field(default_factory=list)
    operation_id: str | None = None  # the worker action it was delegated to


@dataclass(slots=True)
class InvestigationsState:
    """The investigations area's part of the decision state (`state.investigations.by_id`): written
    only by this area's evolvers, read by others through it."""

    # Contract v1.2 section 5.1: the investigations by id, and (due_at, investigation_id) of the open ones.
    by_id: dict[str, Investigation] = field(default_factory=dict)
    timers: Timers = field(default_factory=Timers)


# ----------------------------------- what other areas ask of an investigation


def charge_investigation_call(state: State, investigation_id: str) -> None:
    """One allowed tool call made for the investigation."""
    state.investigations.by_id[investigation_id].calls += 1


__all__ = ['charge_investigation_call', 'InvestigationsState', 'Checkpoint', 'Investigation']  # re-exported by domain/records.py
