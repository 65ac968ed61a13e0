"""The events of the inbox area: immutable facts, in the past tense, one frozen
msgspec Struct each (domain/events.py assembles every area's into the one
union the log is written in)."""

from __future__ import annotations

import datetime

from msgspec import UNSET, UnsetType
from tandem.domain.event_base import (  # the bases, re-exported: `ev.Decision`
    Decision,
)


class ObservationRecorded(Decision, frozen=True, kw_only=True):
    """A new observation (not a repeat): its source's next local revision and,
    unless its origin is a background conversation or it is `out_of_order`,
    its cause's next update revision (`update_revision`, else None). Contract
    v1.1's fields are UNSET (not stored) unless given: v1's bytes are kept."""

    via: str  # "live", "log" or "reconcile"
    source_id: str
    local_revision: int
    cause_key: str
    kind: str
    scope: str
    fingerprint: str
    complete: bool
    source_version: str | None
    status: str | None
    commit_sha: str | None
    text: str | None
    evidence_ref: str | None
    tokens: int | None
    deleted: bool
    origin_conversation: str | None
    update_revision: int | None
    at: datetime.datetime
    subject: str | UnsetType = UNSET
    source_time: datetime.datetime | UnsetType = UNSET
    truncated: bool | UnsetType = UNSET
    out_of_order: bool | UnsetType = UNSET  # True: counted, no revision, not the latest
    batch_id: str | UnsetType = UNSET  # contract v1.2 section 7.1, as given
    judged_as: str | UnsetType = UNSET  # section 7.2: `source_id` is an alias of this source
    ignored: bool | UnsetType = UNSET  # extension: recorded for audit, no revision (docs/sources.md)


class ObservationRepeated(Decision, frozen=True, kw_only=True):
    """A repeat: counted on its cause (unless from a background's own
    activity), nothing else changes."""

    via: str
    source_id: str
    cause_key: str
    counted: bool
    at: datetime.datetime
    judged_as: str | UnsetType = UNSET  # contract v1.2 section 7.2, as ObservationRecorded's


class UpdateRevised(Decision, frozen=True, kw_only=True):
    """An update the engine creates itself (an executor outcome)."""

    cause_key: str
    kind: str
    revision: int
    text: str | None
    at: datetime.datetime


class UpdateTriaged(Decision, frozen=True, kw_only=True):
    cause_key: str
    revision: int
    disposition: str
    action_priority: int | None
    notification_priority: int | None
    by: str  # the background conversation, or "engine"
    generation: int | None
    foreground_id: str | None  # the conversation the update belongs to


class CardProposed(Decision, frozen=True, kw_only=True):
    card_id: str
    cause_key: str
    summary: str


__all__ = ['ObservationRecorded', 'ObservationRepeated', 'UpdateRevised', 'UpdateTriaged', 'CardProposed']  # every name here is the registry's: `ev.Name`
