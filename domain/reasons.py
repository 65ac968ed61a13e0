"""Reason codes: exactly the contract's (docs/contract/README.md, Appendix A
and the reason codes added in v1.2), each with its words.

Each area declares the codes it is the first to raise and the blocking codes
it causes, with their words, in `domain/<area>/reasons.py`; this module keeps
the codes several areas share (`SHARED`), merges them all (`REJECTIONS`,
`BLOCK_WORDS`, `HOLD_WORDS`) and holds the contract's orders: blocking codes
name why a pending action is not claimed, in the order of the contract's
section 4 table (the pass reports them so).
"""

from __future__ import annotations

from typing import Any

from tandem.domain.areas import area_modules
from tandem.domain.tasks.reasons import HOLDS as HOLD_WORDS  # a task's own holds, in words

Reason = str  # one of REJECTIONS (`Rejected` asserts it)

# The rejections several areas raise (or the record itself, section 1), in words.
SHARED: dict[str, str] = {
    "duplicate_input": "an `id` already recorded, with the same body apart from `at`",
    "idempotency_conflict": "an `id` already recorded, with another body",
    "not_authorized": "an actor the kind does not accept",
    "unknown_task": "a task named (`task_id`, `depends_on`) does not exist",
    "unknown_grant": "a grant named does not exist",
    "unknown_operation": "an action named (`operation_id`, a prerequisite) does not exist",
    "unknown_conversation": "a conversation named does not exist",
    "unknown_alert": "`alert.seen` / `alert.resolve` of an alert that does not exist",
    "already_exists": "a used `task_id`, `grant_id` or `conversation_id` (*Tandem* also: `action.propose`'s `operation_id`, `card.propose`'s `card_id`, `human.message`'s `message_id`, `rule.set` with another grant)",
    "stale_revision": "the revision given is not the current one (or, for `question.raise`, not greater; for `intent.synced`, above the intent revision)",
    "task_not_active": "the task is `completed` or `cancelled`",
    "not_open": "it is not open",
    "generation_fenced": "a `background` input carrying a generation that is not the current binding's",
    "stale_attempt": "not the latest attempt, delivery or running turn, or not in the state the input answers",
    "stale_generation": "the generation does not exceed the binding's / is below the last heartbeat's",
}

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


def _merged(name: str, first: dict[str, str]) -> dict[str, str]:
    merged = dict(first)
    for area in area_modules("reasons"):
        twice = set(merged) & set(getattr(area, name))
        assert not twice, f"{area.__name__}.{name}: {sorted(twice)} declared twice"
        merged.update(getattr(area, name))
    return merged


REJECTIONS: dict[str, str] = _merged("REJECTIONS", SHARED)
_blocks = _merged("BLOCKS", {})
assert set(_blocks) == set(BLOCKING_CODES), f"every blocking code in words, by one area: {set(_blocks) ^ set(BLOCKING_CODES)}"
BLOCK_WORDS: dict[str, str] = {code: _blocks[code] for code in BLOCKING_CODES}  # in the contract's order
assert tuple(HOLD_WORDS) == TASK_HOLD_CODES, "every task hold in words, in the contract's order"


class Rejected(Exception):
    """A well-formed input the domain refuses; `reason` is a spec reason code.

    A rejection changes nothing, with one exception the contract makes: a change-log
    batch in another epoch is refused *and* enters reconciliation. Such
    `consequences` are recorded after the rejection, in the same transaction.
    """

    def __init__(self, reason: Reason, detail: str = "", consequences: list[Any] | None = None) -> None:
        assert reason in REJECTIONS, f"{reason!r} is no reason code (domain/<area>/reasons.py)"
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
        self.consequences = consequences or []
