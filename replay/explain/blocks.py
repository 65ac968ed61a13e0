"""Blocking codes (an action's `blocked_by`, a task's holds): the facts the
engine recorded for each (a `BlockFact`), and since when each code holds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from tandem.domain import events as ev
from tandem.projections.base import rfc3339
from tandem.replay.explain.log import Entry, Resolver, at_of, of_type, source
from tandem.replay.explain.model import Fact, Waiting
from tandem.replay.explain.facts import affected_fact, heartbeat_fact, intent_facts, prerequisite_fact, question_fact
from tandem.replay.explain.now import action_at, switch_now, task_now

WAITING_TEXT = {
    "prerequisite_pending": "a prerequisite has no outcome yet",
    "prerequisite_failed": "a prerequisite failed, was cancelled or exhausted, or lacks the required artifact",
    "question_hold": "an open question holds it",
    "wider_hold": 'an open question with affected "unknown" holds everything',
    "scope_paused": "its scope is paused",
    "task_held": "a task its task depends on is not completed",
    "intent_unsynced": "the conversation's intent is ahead of what the background synced",
    "watchdog_unavailable": "unattended, and the watchdog is not fresh",
    "resource_busy": "another action holds its resource",
    "approval_pending": "an approval is open on its conversation or background",
    "budget_exhausted": "its grant's usage reached token_limit",
    "rule_opted_out": "its rule is not opted in for the scope of its cause's latest observation",
    "runtime_not_admitted": "the worker runtime it names is not admitted (contract v1.2 section 1.4)",
    "retry_backoff": "refused, it waits for its grant's retry back-off",
    "owner_active": (
        "maintenance work waits while the owner of a session it concerns is active: its own session's, or one "
        "whose work names its resource (contract v1.2 section 8.1)"
    ),
}

# A budget_exhausted block by its call limit (contract v1.2 section 3.4): without, with the token limit reached too.
_BUDGET_CALLS_TEXT = {
    False: "its grant's calls reached call_limit",
    True: "its grant's usage reached token_limit and its calls reached call_limit",
}

BlockFacts = Callable[[Resolver, ev.BlockFact, int, "str | None"], list[Fact]]


def _prerequisites(resolver: Resolver, fact: ev.BlockFact, position: int, decided_at: str | None) -> list[Fact]:
    return [prerequisite_fact(resolver, p, position) for p in fact.prerequisites or ()]


def _questions(resolver: Resolver, fact: ev.BlockFact, position: int, decided_at: str | None) -> list[Fact]:
    return [question_fact(resolver, q, position) for q in fact.questions or ()]


def _scope(resolver: Resolver, fact: ev.BlockFact, position: int, decided_at: str | None) -> list[Fact]:
    scope = fact.scope or "*"
    key = ("scope", scope)
    paused = resolver.source(key, position, of_type(ev.ScopePaused))
    now = switch_now(resolver, key)
    return [Fact(name="scope", text=f"scope {scope} paused", value={"scope": scope}, source=paused, now=now)]


def _tasks(resolver: Resolver, fact: ev.BlockFact, position: int, decided_at: str | None) -> list[Fact]:
    return [
        Fact(
            name="depends_on",
            text=f"task {task.task_id} is {task.state}, not completed",
            value=msgspec.to_builtins(task),
            source=resolver.source(("task", task.task_id), position, of_type(ev.TaskDelegated)),
            now=task_now(resolver, task.task_id),
        )
        for task in fact.tasks or ()
    ]


def _intent(resolver: Resolver, fact: ev.BlockFact, position: int, decided_at: str | None) -> list[Fact]:
    return intent_facts(resolver, fact.conversation_id, fact.intent_revision, fact.synced_intent_revision, position)


def _watchdog(resolver: Resolver, fact: ev.BlockFact, position: int, decided_at: str | None) -> list[Fact]:
    generation, at, max_age = fact.heartbeat_generation, fact.heartbeat_at, fact.watchdog_max_age_s
    facts = [heartbeat_fact(resolver, generation, at, max_age, position, False, decided_at)]
    if fact.host is not None:  # contract v1.2 section 4.5: not fresh while the host sleeps or wakes
        since = f" since {rfc3339(fact.last_resume_at)}, no heartbeat written since" if fact.last_resume_at else ""
        text = f"the host is {fact.host}{since}"
        source = resolver.source(("host",), position)
        facts.append(Fact(name="host", text=text, value={"host": fact.host, "last_resume_at": rfc3339(fact.last_resume_at)}, source=source))
    return facts


def _resource(resolver: Resolver, fact: ev.BlockFact, position: int, decided_at: str | None) -> list[Fact]:
    return [
        Fact(
            name="resource_holder",
            text=f"{operation_id} holds resource {fact.resource}",
            value={"resource": fact.resource, "operation_id": operation_id},
            source=resolver.source(("action", operation_id), position, of_type(ev.ActionClaimed)),
            now=action_at(resolver, operation_id),
        )
        for operation_id in fact.operations or ()
    ]


def _approvals(resolver: Resolver, fact: ev.BlockFact, position: int, decided_at: str | None) -> list[Fact]:
    facts = []
    for approval in fact.approvals or ():
        key = ("approval", f"{approval.conversation_id}/{approval.request_id}")
        now = switch_now(resolver, key)
        facts.append(
            Fact(
                name="approval",
                text=f"approval {approval.request_id} open on {approval.conversation_id}",
                value=msgspec.to_builtins(approval),
                source=resolver.source(key, position, of_type(ev.ApprovalOpened)),
                now=now,
            )
        )
    return facts


def _limits_reached(fact: ev.BlockFact) -> tuple[bool, bool]:
    """Which of its grant's limits a budget_exhausted block records as reached:
    (token_limit, call_limit) (contract v1.2 section 3.4)."""
    tokens = fact.token_limit is not None and fact.usage is not None and fact.usage >= fact.token_limit
    calls = fact.call_limit is not None and fact.calls is not None and fact.calls >= fact.call_limit
    return tokens, calls


def _budget(resolver: Resolver, fact: ev.BlockFact, position: int, decided_at: str | None) -> list[Fact]:
    tokens, calls = _limits_reached(fact)
    value: dict[str, object] = {"grant_id": fact.grant_id, "usage": fact.usage, "token_limit": fact.token_limit}
    if fact.call_limit is not None:  # contract v1.2 section 3.4
        value |= {"calls": fact.calls, "call_limit": fact.call_limit}
    if calls and not tokens:  # the call limit alone: what the call that reached it raised
        text = f"grant {fact.grant_id} made {fact.calls} of its call_limit {fact.call_limit} calls"
        if fact.token_limit is not None:
            text += f" (used {fact.usage} of its token_limit {fact.token_limit})"
        made = resolver.source(("alert", f"budget_exhausted:{fact.grant_id}"), position, of_type(ev.AlertRaised))
        return [Fact(name="grant_budget", text=text, value=value, source=made)]
    text = f"grant {fact.grant_id} used {fact.usage} of its token_limit {fact.token_limit}"
    if fact.call_limit is not None:
        text += f" and made {fact.calls} of its call_limit {fact.call_limit} calls"
    return [
        Fact(
            name="grant_budget",
            text=text,
            value=value,
            source=resolver.source(("grant", fact.grant_id or ""), position, of_type(ev.BudgetExhausted)),
        )
    ]


def waiting_text(code: str, fact: ev.BlockFact | None) -> str:
    """What a blocking code waits for in words; budget_exhausted names the
    limit its grant reached: token_limit, call_limit or both."""
    if code == "budget_exhausted" and fact is not None:
        tokens, calls = _limits_reached(fact)
        if calls:
            return _BUDGET_CALLS_TEXT[tokens]
    return WAITING_TEXT.get(code, code)


def _opted_out(resolver: Resolver, fact: ev.BlockFact, position: int, decided_at: str | None) -> list[Fact]:
    scope = fact.scope if fact.scope is not None else "no scope (no observation yet)"
    return [
        Fact(
            name="rule_scopes",
            text=f"rule {fact.rule_id} is opted in for {', '.join(fact.scopes or ())}, not {scope}",
            value={"rule_id": fact.rule_id, "scopes": fact.scopes, "scope": fact.scope},
        )
    ]


def _retry(resolver: Resolver, fact: ev.BlockFact, position: int, decided_at: str | None) -> list[Fact]:
    retry_at = fact.retry_at.isoformat().replace("+00:00", "Z") if fact.retry_at is not None else None
    return [
        Fact(
            name="retry_backoff",
            text=f"{fact.attempts} refused or not received attempt(s): not claimed before {retry_at}",
            value={"retry_at": retry_at, "attempts": fact.attempts},
        )
    ]


def _runtime(resolver: Resolver, fact: ev.BlockFact, position: int, decided_at: str | None) -> list[Fact]:
    state = fact.runtime_state or "never admitted"
    return [
        Fact(
            name="runtime",
            text=f"runtime {fact.runtime_id} is {state}",
            value={"runtime_id": fact.runtime_id, "state": fact.runtime_state},
            source=resolver.source(("runtime", fact.runtime_id or ""), position),
        )
    ]


def _owner(resolver: Resolver, fact: ev.BlockFact, position: int, decided_at: str | None) -> list[Fact]:
    """Contract v1.2 section 8.1: the queued messages or the running human turn that make the
    foreground's owner active, and why that owner concerns the action (its session, or the resource
    it shares with the foreground's work)."""
    conversation_id = fact.conversation_id or ""
    if fact.messages:
        what = f"human message(s) {', '.join(fact.messages)} queued on {conversation_id}"
        first = fact.messages[0]
        queued = lambda event: isinstance(event, ev.MessageQueued) and event.message_id == first  # noqa: E731
        where = resolver.source(("intent", conversation_id), position, queued)
    else:
        what = f"human turn {fact.turn_id} running on {conversation_id}"
        where = resolver.source(("turn", fact.turn_id or ""), position, of_type(ev.TurnStarted))
    if fact.messages and fact.turn_id:
        what += f", human turn {fact.turn_id} running"
    value = {"conversation_id": fact.conversation_id, "messages": fact.messages, "turn_id": fact.turn_id}
    owner = f"{conversation_id}'s owner is active" if fact.via is not None else "the owner is active"
    facts = [Fact(name="owner_active", text=f"{owner}: {what}", value=value, source=where)]
    affected = affected_fact(resolver, conversation_id, fact.via, fact.resource, fact.operations, position)
    return facts if affected is None else [*facts, affected]


# Per blocking code, the facts its BlockFact names (any other code: the BlockFact itself).
BLOCK_FACTS: dict[str, BlockFacts] = {
    "prerequisite_pending": _prerequisites,
    "prerequisite_failed": _prerequisites,
    "question_hold": _questions,
    "wider_hold": _questions,
    "scope_paused": _scope,
    "task_held": _tasks,
    "intent_unsynced": _intent,
    "watchdog_unavailable": _watchdog,
    "resource_busy": _resource,
    "approval_pending": _approvals,
    "budget_exhausted": _budget,
    "rule_opted_out": _opted_out,
    "runtime_not_admitted": _runtime,
    "retry_backoff": _retry,
    "owner_active": _owner,
}


def block_fact_facts(
    resolver: Resolver, fact: ev.BlockFact, position: int, decided_at: str | None = None
) -> list[Fact]:
    """The facts behind one blocking code (or task hold), with their sources."""
    facts = BLOCK_FACTS.get(fact.code)
    if facts is None:
        return [Fact(name=fact.code, text=fact.code, value=msgspec.to_builtins(fact))]
    return facts(resolver, fact, position, decided_at)


def coded_facts(resolver: Resolver, entry: Entry, facts: list[ev.BlockFact]) -> list[Fact]:
    """Every code's facts, each prefixed with its code (the lines of a blocking link)."""
    return [
        msgspec.structs.replace(detail, text=f"{fact.code}: {detail.text}")
        for fact in facts
        for detail in block_fact_facts(resolver, fact, entry[0], at_of(entry))
    ]


def block_summary(codes: list[str]) -> str:
    return f"blocked_by [{', '.join(codes)}]" if codes else "blocked_by [] (nothing blocks it)"


# code -> (the entry since which it holds for the same things, its latest facts, their entry)
Runs = dict[str, tuple[Entry, "ev.BlockFact | None", Entry]]


def _identity(fact: ev.BlockFact | None) -> Any:
    """What a code's facts name (a prerequisite moving from submitting to
    accepted is still the same prerequisite pending: no change)."""
    if fact is None:
        return None
    if fact.prerequisites is not None:
        return (fact.code, tuple(p.operation_id for p in fact.prerequisites))
    if fact.tasks is not None:
        return (fact.code, tuple(t.task_id for t in fact.tasks))
    return fact


def track_runs(runs: Runs, entry: Entry, codes: list[str], facts: list[ev.BlockFact]) -> None:
    """Since when each code holds for the same things (the event, and so the
    input, that last changed it); the facts kept are the latest recorded."""
    by_code = {fact.code: fact for fact in facts}
    for code in list(runs):
        if code not in codes:
            del runs[code]
    for code in codes:
        fact = by_code.get(code)
        previous = runs.get(code)
        if previous is None or _identity(previous[1]) != _identity(fact):
            runs[code] = (entry, fact, entry)
        else:
            runs[code] = (previous[0], fact, entry)


def waiting_from_blocks(resolver: Resolver, runs: Runs, codes: list[str]) -> list[Waiting]:
    waiting = []
    for code in codes:
        since, fact, recorded = runs[code]
        facts = block_fact_facts(resolver, fact, recorded[0], at_of(recorded)) if fact is not None else []
        waiting.append(Waiting(code=code, text=waiting_text(code, fact), facts=facts, since=source(since)))
    return waiting
