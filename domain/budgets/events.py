"""The events of the budgets area: immutable facts, in the past tense, one frozen
msgspec Struct each (domain/events.py assembles every area's into the one
union the log is written in)."""

from __future__ import annotations

import datetime

from tandem.domain.event_base import Decision
from tandem.domain.facts import DeadlineFacts, DeferralFacts


class DeadlineExceeded(Decision, frozen=True, kw_only=True):
    """Its execution deadline passed, not terminal (contract v1.2 section 3.3)."""

    operation_id: str
    deadline_at: datetime.datetime
    action_state: str
    facts: DeadlineFacts


class DeliveryDeferred(Decision, frozen=True, kw_only=True):
    """Why its next delivery waits changed (v1.2 sections 3.6, 3.7); None: no more."""

    conversation_id: str
    reason: str | None
    until: datetime.datetime | None
    facts: DeferralFacts | None = None


__all__ = ['DeadlineExceeded', 'DeliveryDeferred']  # every name here is the registry's: `ev.Name`
