"""The events of the investigations area: immutable facts, in the past tense, one frozen
msgspec Struct each (domain/events.py assembles every area's into the one
union the log is written in)."""

from __future__ import annotations

import datetime

from tandem.domain.event_base import Decision


class InvestigationOpened(Decision, frozen=True, kw_only=True):
    """`investigation.open`: open from `opened_at` until `due_at` (+ investigation_max_s)."""

    investigation_id: str
    conversation_id: str
    cause_key: str
    task_id: str | None
    opened_at: datetime.datetime
    due_at: datetime.datetime


class InvestigationExhausted(Decision, frozen=True, kw_only=True):
    """An open investigation ran out (`investigation_exhausted:{investigation_id}`):
    `by` "time" (an input's `at` reached `due_at`) or "calls" (an allowed call
    brought its calls to `calls_max`, the investigation_calls_max in force)."""

    investigation_id: str
    conversation_id: str
    by: str
    due_at: datetime.datetime
    calls: int
    calls_max: int


class InvestigationClosed(Decision, frozen=True, kw_only=True):
    """`investigation.close`: `outcome` concluded, abandoned or delegated (to
    the worker action `operation_id`); `was` the state it left (open or exhausted)."""

    investigation_id: str
    conversation_id: str
    outcome: str
    was: str
    evidence_refs: list[str]
    operation_id: str | None = None


class BackgroundCheckpointed(Decision, frozen=True, kw_only=True):
    """`background.checkpoint`: the background's latest checkpoint, with the
    investigations the engine added (its open and exhausted ones, by id) and
    its tokens (given but at most the summary's bytes, else ceil(summary
    bytes / 4); + 10 per evidence ref)."""

    conversation_id: str
    checkpoint_id: str
    at: datetime.datetime
    generation: int
    epoch: int
    intent_revision: int
    sync_cursor: str
    investigations: list[str]
    evidence_refs: list[str]
    summary: str
    tokens: int


__all__ = ['InvestigationOpened', 'InvestigationExhausted', 'InvestigationClosed', 'BackgroundCheckpointed']  # every name here is the registry's: `ev.Name`
