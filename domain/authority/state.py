"""The authority area's part of the decision state: its records, one mutable
dataclass per thing, and its part of the State (`state.<area>`: the records
and the indexes over them), written only by this area's code (domain/records.py
gathers every area's records; domain/state.py holds the parts). A record's
`state` starts where its lifecycle starts and moves only as its events say.
Records are pickled in snapshots: their module is part of the snapshot
fingerprint."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dataclasses import dataclass, field
from tandem.domain.lifecycles import (
    GRANT,
)


Seconds = int

if TYPE_CHECKING:
    from tandem.domain.state import State



@dataclass(slots=True)
class Config:
    watchdog_max_age_s: Seconds = 120
    fallback_after_s: Seconds = 600
    question_resurface_s: Seconds = 86_400
    wake_batch_max: int = 20
    # Contract v1.2 section 3.2: the defaults change nothing.
    wake_min_interval_s: Seconds = 0
    wake_batch_wait_s: Seconds = 0
    delivery_backoff_s: Seconds = 0
    delivery_retries_max: int | None = None  # unbounded
    backlog_degraded_at: int | None = None
    exhausted_alerts: bool = False
    suspend_gap_s: Seconds = 0  # contract v1.2 section 4.5: 0, no unannounced suspend
    payload_required: bool = False  # contract v1.2 section 6: acceptance needs the exact payload
    # Contract v1.2 section 5.1: they bound only investigations, which v1 has none of.
    investigation_max_s: Seconds = 3600
    investigation_calls_max: int = 100


@dataclass(slots=True)
class Policy:
    revision: int = 0
    operations: frozenset[str] = frozenset()
    roots: tuple[str, ...] = ()


@dataclass(slots=True)
class Grant:
    grant_id: str
    revision: int
    task_id: str | None
    rule_id: str | None
    operations: tuple[str, ...]  # its own authority, as narrowed (in request order)
    roots: tuple[str, ...]
    max_attempts: int
    token_limit: int | None
    state: str = GRANT.initial
    usage: int = 0
    execution_deadline_s: Seconds | None = None  # contract v1.2 section 3.3
    retry_backoff_s: Seconds = 0  # contract v1.2 section 3.5
    call_limit: int | None = None  # contract v1.2 section 3.4
    calls: int = 0  # the allowed tool calls of its actions (section 3.4)
    actions: list[str] = field(default_factory=list)

    @property
    def budget_exhausted(self) -> bool:
        return (self.token_limit is not None and self.usage >= self.token_limit) or self.calls_reached

    @property
    def calls_reached(self) -> bool:
        """Contract v1.2 section 3.4: its actions made `call_limit` calls."""
        return self.call_limit is not None and self.calls >= self.call_limit


@dataclass(slots=True)
class AuthorityState:
    """The authority area's part of the decision state (`state.authority`): written
    only by this area's evolvers, read by others through it."""

    config: Config = field(default_factory=Config)
    policy: Policy = field(default_factory=Policy)
    grants: dict[str, Grant] = field(default_factory=dict)
    rules: dict[str, str] = field(default_factory=dict)  # rule_id -> grant_id
    rule_scopes: dict[str, tuple[str, ...]] = field(default_factory=dict)  # rule_id -> scopes (v1.2 section 2.4)



# ------------------------------------------ what other areas ask of a grant


def add_grant_action(state: State, grant_id: str, operation_id: str) -> None:
    """An action proposed under the grant (the actions area's ActionProposed)."""
    state.authority.grants[grant_id].actions.append(operation_id)


def set_grant_usage(state: State, grant_id: str, usage: Any) -> bool:
    """The grant's usage as reported (usage.report); whether that changed
    its budget's exhaustion."""
    grant = state.authority.grants[grant_id]
    was_exhausted = grant.budget_exhausted
    grant.usage = usage
    return grant.budget_exhausted != was_exhausted


def charge_grant_call(state: State, grant_id: str) -> bool:
    """One allowed tool call charged to the grant (contract v1.2 section
    3.4); whether that changed its budget's exhaustion."""
    grant = state.authority.grants[grant_id]
    was_exhausted = grant.budget_exhausted
    grant.calls += 1
    return grant.budget_exhausted != was_exhausted


__all__ = ['add_grant_action', 'set_grant_usage', 'charge_grant_call', 'AuthorityState', 'Config', 'Policy', 'Grant', 'Seconds']  # re-exported by domain/records.py
