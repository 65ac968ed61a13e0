"""The work queue of `GET /v1/work` (docs/api.md, "The work queue"): every
attempt out with the executor, in claim order, with what to do (its frozen
envelope) and what to send back (the inputs the engine accepts for it now,
with the ids they must carry and the values they may choose).

It reads the `actions` view (projections/actions.py: its rows and `out`, the
actions with an attempt out, by claim), so it is exact at the view's
position; what an input may say is asked of the lifecycles and of the
actions area's tables (domain/actions/rules.py), never written here again.
"""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import Struct

from tandem.domain.actions.rules import OUTCOME_EVENTS, RECEIPT_EVENTS, RECONCILE_EVENTS
from tandem.domain.lifecycles import ACTION, ATTEMPT
from tandem.projections.actions import ActionsView
from tandem.projections.rows import ActionEnvelope, ActionState, AttemptState

InputKind = Literal["executor.receipt", "executor.reconcile", "executor.outcome"]

# The inputs that move an attempt, each with the field it chooses and its
# table (value -> (attempt transition, action transition)), in the order offered.
ATTEMPT_INPUTS: tuple[tuple[InputKind, str, dict[str, tuple[str, str]]], ...] = (
    ("executor.receipt", "result", RECEIPT_EVENTS),
    ("executor.reconcile", "observed", RECONCILE_EVENTS),
)
STOPPING = "cancel_requested"  # the action's state when its work is to stop


class Reply(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One input the engine accepts for the attempt now: `type`, with
    `operation_id` (and `attempt_id`, unless null: an outcome names no
    attempt) as given, and the field `choose` set to one of `values`."""

    type: InputKind
    operation_id: str
    attempt_id: str | None
    choose: Literal["result", "observed", "outcome"]
    values: list[str]


class WorkItem(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An attempt out with the executor: what to do and what to send back."""

    operation_id: str
    attempt_id: str
    action_state: ActionState
    attempt_state: AttemptState
    stop: bool  # the action is cancel_requested: stop the work, then report how it ended
    awaits: InputKind  # the first of `replies`: what the engine waits for
    task_id: str | None
    rule_id: str | None
    cause_key: str
    envelope: ActionEnvelope  # what to do, frozen at the claim
    replies: list[Reply]  # what it accepts now, the awaited one first


class WorkBody(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`GET /v1/work`: the queue at `position` (the engine's, when it answered)."""

    position: int
    items: list[WorkItem]


def replies(operation_id: str, attempt_id: str, action_state: str, attempt_state: str) -> list[Reply]:
    """The inputs the engine accepts now for the latest attempt `attempt_id`,
    as its deciders check them: a receipt or a reconcile by what the attempt's
    lifecycle allows from `attempt_state`, an outcome by what the action's
    allows from `action_state`."""
    found = [
        Reply(type=kind, operation_id=operation_id, attempt_id=attempt_id, choose=field, values=values)  # type: ignore[arg-type]
        for kind, field, table in ATTEMPT_INPUTS
        if (values := [value for value, (transition, _) in table.items() if ATTEMPT.allows(attempt_state, transition)])
    ]
    outcomes = [value for value, transition in OUTCOME_EVENTS.items() if ACTION.allows(action_state, transition)]
    found.append(Reply(type="executor.outcome", operation_id=operation_id, attempt_id=None, choose="outcome", values=outcomes))
    return found


def work_items(view: ActionsView, runtime_id: str | None = None) -> list[WorkItem]:
    """The attempts out with the executor, oldest claim first (a new claim,
    a retry's too, joins the end); only those of `runtime_id` when given."""
    items: list[WorkItem] = []
    for operation_id in sorted(view.out, key=view.out.__getitem__):
        row = view.rows[operation_id]
        envelope = row["envelope"]
        if runtime_id is not None and envelope["runtime_id"] != runtime_id:
            continue
        attempt = row["attempts"][-1]
        assert attempt["attempt_id"] == row["attempt_id"], operation_id
        answers = replies(operation_id, attempt["attempt_id"], row["state"], attempt["state"])
        items.append(
            WorkItem(
                operation_id=operation_id,
                attempt_id=attempt["attempt_id"],
                action_state=row["state"],
                attempt_state=attempt["state"],
                stop=row["state"] == STOPPING,
                awaits=answers[0].type,
                task_id=row["task_id"],
                rule_id=row["rule_id"],
                cause_key=row["cause_key"],
                envelope=msgspec.convert(envelope, ActionEnvelope),
                replies=answers,
            )
        )
    return items
