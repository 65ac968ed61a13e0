"""The inbox area's part of the decision state: its records, one mutable
dataclass per thing, and its part of the State (`state.<area>`: the records
and the indexes over them), written only by this area's code (domain/records.py
gathers every area's records; domain/state.py holds the parts). A record's
`state` starts where its lifecycle starts and moves only as its events say.
Records are pickled in snapshots: their module is part of the snapshot
fingerprint."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from tandem.domain.lifecycles import (
    UPDATE,
)


@dataclass(slots=True)
class Source:
    """What the engine remembers of an observation source: its count (the
    last local revision), and per cause it concerns what repeats and order
    are judged by (contract v1.1: per source and cause)."""

    count: int = 0  # non-repeat observations: the last local revision
    causes: dict[str, SourceCause] = field(default_factory=dict)
    latest_cause: str | None = None  # the cause of its latest recorded observation (v1.2 section 7.2)


@dataclass(slots=True)
class SourceCause:
    """One source's observations of one cause."""

    latest_fingerprint: str | None = None
    versions: set[str] = field(default_factory=set)  # every source_version recorded, on any path
    latest_time: datetime.datetime | None = None  # the latest in-order source_time
    deleted_time: datetime.datetime | None = None  # source_time of its latest deletion
    latest_deleted: bool = False  # the latest in-order observation is a deletion
    latest_rank: int = 0  # its status's precedence (rules.status_rank): equal times are ordered by it


@dataclass(slots=True)
class Update:
    """A pending update of the inbox: one per cause, revised per new observation.

    Its size does not grow with the number of observations of its cause: it
    keeps the latest observation's text and tokens and counts the rest."""

    cause_key: str
    kind: str
    revision: int
    first_seen_at: datetime.datetime
    last_seen_at: datetime.datetime
    revised_at: datetime.datetime  # when it got its current revision
    triage_state: str = UPDATE.initial
    disposition: str | None = None
    action_priority: int | None = None
    notification_priority: int | None = None
    partial: bool = False
    repeats: int = 0
    text: str | None = None
    tokens: int | None = None
    foreground_id: str | None = None  # the conversation it belongs to, once triaged
    held_by: str | None = None  # the current-epoch delivery holding its current revision
    triaged_at: datetime.datetime | None = None  # when its current revision was triaged (deliverable since)
    latest: LatestObservation | None = None  # its latest in-order observation (contract v1.2 section 2)


@dataclass(slots=True, frozen=True)
class LatestObservation:
    """What the source rule reads of a cause's latest in-order observation
    (contract v1.2 section 2.1), and the input that recorded it."""

    scope: str
    status: str | None
    commit_sha: str | None
    deleted: bool
    complete: bool
    observed_by: int

    def moot(self, moot_statuses: tuple[str, ...]) -> bool:
        """Complete, and deleted or in one of `moot_statuses` (a partial one never is)."""
        return self.complete and (self.deleted or (self.status is not None and self.status in moot_statuses))

    def moved_from(self, target_sha: str | None) -> bool:
        """On another commit than `target_sha` (when both are known)."""
        return target_sha is not None and self.commit_sha is not None and self.commit_sha != target_sha


# The triage dispositions a foreground must be told about (the rest ride along
# in a human turn: "routine").
DELIVERABLE_DISPOSITIONS = frozenset({"actionable", "urgent", "needs_input"})


@dataclass(slots=True)
class InboxState:
    """The inbox area's part of the decision state (`state.inbox`): written
    only by this area's evolvers, read by others through it."""

    sources: dict[str, Source] = field(default_factory=dict)
    updates: dict[str, Update] = field(default_factory=dict)
    cards: dict[str, str] = field(default_factory=dict)  # card_id -> cause_key


# ------------------------------------------ what other areas ask of an update


def hold_update(update: Update, delivery_id: str | None) -> None:
    """The delivery that holds the update's revision now (None: none does)."""
    update.held_by = delivery_id


__all__ = ['hold_update', 'InboxState', 'Source', 'SourceCause', 'Update', 'LatestObservation', 'DELIVERABLE_DISPOSITIONS']  # re-exported by domain/records.py
