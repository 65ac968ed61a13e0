"""What holds an urgent update back from an idle foreground (contract v1.2
section 3.7), in words: the limit a `DeliveryDeferred` names, its facts, and
until when (a time, or the input that ends it). Shown on the cause's chain
(`tandem explain CAUSE_KEY`) for the update its facts name (`urgent`)."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from tandem.domain import events as ev
from tandem.projections.base import rfc3339
from tandem.replay.explain.model import Fact

Words = Callable[[ev.DeferralFacts], str]


def _backoff(facts: ev.DeferralFacts) -> str:
    return (
        f"a refusal's back-off: {facts.refusals} refused or not received deliveries since the last accepted one, "
        f"the latest {facts.delivery_id} at {rfc3339(facts.refused_at)} "
        f"(delivery_backoff_s {facts.delivery_backoff_s} x 2^{(facts.refusals or 1) - 1})"
    )


def _failure_hold(facts: ev.DeferralFacts) -> str:
    if facts.held_by == "engine":
        return (
            f"the engine's failure hold, the retry cap: {facts.refusals} refused deliveries in a row, "
            f"past delivery_retries_max {facts.delivery_retries_max}"
        )
    return "the human's failure hold (hold.failure)"


def _context_recovery(facts: ev.DeferralFacts) -> str:
    what = "a queued human message" if facts.recovery == "message" else "its reseed's control state"
    return f"context recovery: {what} does not fit (context_recovery_required)"


# reason -> (what holds the update back, what ends it when `until` is null)
HOLDS: dict[str, tuple[Words, str]] = {
    "provider_unready": (
        lambda f: f"its provider {f.provider} is not ready (incident {f.incident_id}, observed at {rfc3339(f.observed_at)})",
        "the provider's recovery",
    ),
    "backoff": (_backoff, "the back-off's end"),
    "approval": (lambda f: f"an open approval on the conversation ({', '.join(f.approvals or [])})", "approval.resolved"),
    "failure_hold": (_failure_hold, "the human's hold.release"),
    "context_recovery": (_context_recovery, "a context.reset that makes room (or the message edited or withdrawn)"),
    "reseed": (lambda f: f"this epoch's reseed {f.delivery_id or '(due)'} is not accepted yet", "the reseed's acceptance"),
    "paused": (lambda f: "every automation is paused (scope *)", "scope.resume of *"),
    "context_limit": (
        lambda f: f"no urgent update fits: the smallest needs {f.tokens} tokens, {f.room} are left",
        "a compaction or context.reset that makes room",
    ),
}


def urgent_held(event: ev.DeliveryDeferred, revision: int) -> tuple[str, list[Fact]] | None:
    """The step of an urgent update's chain for a deferral that holds it back."""
    facts = event.facts
    if facts is None or event.reason is None:
        return None
    words, ends = HOLDS.get(event.reason, (lambda f: f"deferred {event.reason}", "the deferral's end"))
    until = rfc3339(event.until) if event.until is not None else ends
    summary = f"urgent revision {revision} not woken in {event.conversation_id}: held back by {event.reason} until {until}"
    return summary, [Fact(name=event.reason, text=words(facts), value=msgspec.to_builtins(facts))]
