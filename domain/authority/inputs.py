"""The input kinds of the authority area: one tagged msgspec Struct per kind, fields
of bounded types (domain/input_base.py); domain/inputs.py assembles every
area's into the one union a trace line is decoded into."""

from __future__ import annotations

from typing import Annotated, ClassVar

from msgspec import UNSET, Meta, Struct, UnsetType
from tandem.domain.input_base import (
    Actor,
    Count,
    Identifier,
    Input,
    Positive,
    Revision,
    Text,
    list_items_max,
    require_one_of,
)


class GrantRequest(Struct, frozen=True, forbid_unknown_fields=True):
    grant_id: Identifier
    allowed_operations: Annotated[list[Identifier], Meta(max_length=list_items_max)]
    write_roots: Annotated[list[Text], Meta(max_length=list_items_max)]
    max_attempts: Positive = 3
    token_limit: Positive | None = None
    # Contract v1.2 section 3.1: left out, they are not recorded at all.
    execution_deadline_s: Positive | UnsetType = UNSET
    retry_backoff_s: Count | UnsetType = UNSET
    call_limit: Positive | UnsetType = UNSET


class ConfigureEngine(Input, tag="engine.configure"):
    actors: ClassVar[tuple[Actor, ...]] = ("daemon",)
    watchdog_max_age_s: Count | UnsetType = UNSET
    fallback_after_s: Count | UnsetType = UNSET
    question_resurface_s: Positive | UnsetType = UNSET
    wake_batch_max: Positive | UnsetType = UNSET
    # Contract v1.2 section 3.2 (budgets).
    wake_min_interval_s: Count | UnsetType = UNSET
    wake_batch_wait_s: Count | UnsetType = UNSET
    delivery_backoff_s: Count | UnsetType = UNSET
    delivery_retries_max: Count | UnsetType = UNSET
    backlog_degraded_at: Positive | UnsetType = UNSET
    exhausted_alerts: bool | UnsetType = UNSET
    # Contract v1.2 (section 4.5): an input this long after the previous one is a resume.
    suspend_gap_s: Positive | UnsetType = UNSET
    payload_required: bool | UnsetType = UNSET  # contract v1.2 section 6
    investigation_max_s: Positive | UnsetType = UNSET  # contract v1.2 section 5.1
    investigation_calls_max: Positive | UnsetType = UNSET


class SetPolicy(Input, tag="policy.set"):
    actors: ClassVar[tuple[Actor, ...]] = ("daemon", "human")
    allowed_operations: Annotated[list[Identifier], Meta(max_length=list_items_max)]
    write_roots: Annotated[list[Text], Meta(max_length=list_items_max)]


class SetRule(Input, tag="rule.set"):
    rule_id: Identifier
    grant: GrantRequest
    # Contract v1.2 section 2.4: the scopes the rule is opted in for ("*": every one).
    scopes: Annotated[list[Text], Meta(max_length=list_items_max)] | UnsetType = UNSET


class ReviseGrant(Input, tag="grant.revise"):
    grant_id: Identifier
    expected_revision: Revision
    allowed_operations: Annotated[list[Identifier], Meta(max_length=list_items_max)] | UnsetType = UNSET
    write_roots: Annotated[list[Text], Meta(max_length=list_items_max)] | UnsetType = UNSET
    max_attempts: Positive | UnsetType = UNSET
    token_limit: Positive | UnsetType = UNSET
    execution_deadline_s: Positive | UnsetType = UNSET
    retry_backoff_s: Count | UnsetType = UNSET
    call_limit: Positive | UnsetType = UNSET

    def __post_init__(self) -> None:
        require_one_of(
            self,
            "allowed_operations", "write_roots", "max_attempts", "token_limit", "execution_deadline_s", "retry_backoff_s",
            "call_limit",
        )  # fmt: skip


__all__ = ['GrantRequest', 'ConfigureEngine', 'SetPolicy', 'SetRule', 'ReviseGrant']  # every name here is the registry's: `inp.Name`
