"""Reason codes: exactly the contract's (docs/contract.md sections 1, 3, 5, 6).

Rejection reasons name why an input was refused; blocking codes name why a
pending action is not claimed, in the order of the contract's section 4 table.
"""

from __future__ import annotations

from typing import Any, Literal

Reason = Literal[
    # section 1
    "duplicate_input",
    "idempotency_conflict",
    "not_authorized",
    # 3, by the ids an input names
    "unknown_task",
    "unknown_grant",
    "unknown_operation",
    "unknown_conversation",
    "unknown_question",
    "unknown_alert",
    # 3.1 - 3.3
    "too_late",
    "grant_outside_policy",
    "already_exists",
    "stale_revision",
    "task_not_active",
    "work_outstanding",
    "unverified",
    "not_open",
    "grant_scope",
    "generation_fenced",
    "operation_not_granted",
    "write_outside_roots",
    "duplicate_cause",
    "not_fenced",
    "not_cancellable",
    "stale_attempt",
    # 3.4, 5, 6
    "reconciliation_required",
    "stale_reconciliation",
    "triage_blocked",
    "stale_generation",
    "already_dispatched",
    # 10 (contract v1.1)
    "bad_sequence",
    # contract v1.2 section 2
    "target_moved",
    "source_resolved",
    "rule_opted_out",
    "not_succeeded",
    "artifact_mismatch",
    "limit_reached",
    # contract v1.2 section 1 (tool policy and runtime admission)
    "unknown_runtime",
    "runtime_not_admitted",
    "isolation_unavailable",
    "tools_inherited",
    "tool_not_exact",
    "tool_not_allowed",
    "read_outside_roots",
    # contract v1.2 section 6 (delivery composition)
    "payload_mismatch",
    "payload_unrecorded",
    # contract v1.2 section 5 (background continuity)
    "unknown_investigation",
    "context_not_reseeded",
    # contract v1.2 section 7 (reviews: batches and aliases)
    "unknown_source",
    "duplicate_batch",
]

BLOCKING_CODES: tuple[str, ...] = (
    "prerequisite_pending",
    "prerequisite_failed",
    "question_hold",
    "wider_hold",
    "scope_paused",
    "task_held",
    "intent_unsynced",
    "watchdog_unavailable",
    "resource_busy",
    "approval_pending",
    "budget_exhausted",
    # contract v1.2, appended in its section 9 order: sections 2.4, 1.4, 3.5, 8.1
    "rule_opted_out",
    "runtime_not_admitted",
    "retry_backoff",
    "owner_active",
)

# Task-level holds, in the section 4 table's order.
TASK_HOLD_CODES: tuple[str, ...] = ("question_hold", "wider_hold", "scope_paused", "task_held")


class Rejected(Exception):
    """A well-formed input the domain refuses; `reason` is a spec reason code.

    A rejection changes nothing, with one exception the contract makes: a change-log
    batch in another epoch is refused *and* enters reconciliation. Such
    `consequences` are recorded after the rejection, in the same transaction.
    """

    def __init__(self, reason: Reason, detail: str = "", consequences: list[Any] | None = None) -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
        self.consequences = consequences or []
