"""The events of the authority area: immutable facts, in the past tense, one frozen
msgspec Struct each (domain/events.py assembles every area's into the one
union the log is written in)."""

from __future__ import annotations

from msgspec import UNSET, UnsetType
from tandem.domain.event_base import (  # the bases, re-exported: `ev.Decision`
    Decision,
)


class EngineConfigured(Decision, frozen=True, kw_only=True):
    watchdog_max_age_s: int
    fallback_after_s: int
    question_resurface_s: int
    wake_batch_max: int
    # Contract v1.2 section 3.2: only when given (left out, the setting in force stays).
    wake_min_interval_s: int | UnsetType = UNSET
    wake_batch_wait_s: int | UnsetType = UNSET
    delivery_backoff_s: int | UnsetType = UNSET
    delivery_retries_max: int | UnsetType = UNSET
    backlog_degraded_at: int | UnsetType = UNSET
    exhausted_alerts: bool | UnsetType = UNSET
    suspend_gap_s: int | UnsetType = UNSET  # contract v1.2 section 4.5, only when given
    payload_required: bool | UnsetType = UNSET  # contract v1.2 section 6, only when given
    investigation_max_s: int | UnsetType = UNSET  # contract v1.2 section 5.1, only when given
    investigation_calls_max: int | UnsetType = UNSET


class PolicySet(Decision, frozen=True, kw_only=True):
    revision: int
    allowed_operations: list[str]
    write_roots: list[str]
    fenced: list[str]
    restamped: list[str]
    # Why each fenced action is no longer allowed (operation or a write path).
    fenced_because: dict[str, str] = {}


class GrantIssued(Decision, frozen=True, kw_only=True):
    grant_id: str
    revision: int
    task_id: str | None
    rule_id: str | None
    allowed_operations: list[str]
    write_roots: list[str]
    max_attempts: int
    token_limit: int | None
    policy_revision: int
    dropped_operations: list[str]
    dropped_roots: list[str]
    # Contract v1.2 section 3.1: only when set (unset: none, and 0).
    execution_deadline_s: int | UnsetType = UNSET
    retry_backoff_s: int | UnsetType = UNSET
    call_limit: int | UnsetType = UNSET  # contract v1.2 section 3.4


class GrantRevised(Decision, frozen=True, kw_only=True):
    grant_id: str
    revision: int
    allowed_operations: list[str]
    write_roots: list[str]
    max_attempts: int
    token_limit: int | None
    policy_revision: int
    dropped_operations: list[str]
    dropped_roots: list[str]
    fenced: list[str]
    restamped: list[str]
    # Why each fenced action is no longer allowed (operation or a write path).
    fenced_because: dict[str, str] = {}
    # Contract v1.2 section 3.1: only when set (unset: none, and 0).
    execution_deadline_s: int | UnsetType = UNSET
    retry_backoff_s: int | UnsetType = UNSET
    call_limit: int | UnsetType = UNSET  # contract v1.2 section 3.4


class GrantRevoked(Decision, frozen=True, kw_only=True):
    grant_id: str


class RuleSet(Decision, frozen=True, kw_only=True):
    rule_id: str
    grant_id: str
    scopes: list[str] | UnsetType = UNSET  # contract v1.2 section 2.4 (UNSET: a new rule's is ["*"])


__all__ = ['EngineConfigured', 'PolicySet', 'GrantIssued', 'GrantRevised', 'GrantRevoked', 'RuleSet']  # every name here is the registry's: `ev.Name`
