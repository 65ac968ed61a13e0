"""Alerts, and the delivery obligations whose fallback alert they raise."""

from __future__ import annotations

from collections.abc import Iterator

import msgspec

from tandem.domain import events as ev
from tandem.domain.lifecycles import ALERT, OBLIGATION
from tandem.projections.base import rfc3339
from tandem.replay.explain.chain import Chain, Rendered, said
from tandem.replay.explain.facts import heartbeat_fact, obligation_fact, operation_fact, question_id
from tandem.replay.explain.keys import Key
from tandem.replay.explain.log import Entry, Resolver, at_of, of_type, source
from tandem.replay.explain.model import Fact, Source
from tandem.replay.explain.now import question_now
from tandem.replay.explain.operations import outcome_summary

FALLBACK = "fallback_delivery"  # the alert of an obligation not met in time: `fallback_delivery:{operation_id}`
INCIDENT_ALERT = "incident:"  # the alert of an open incident: `incident:{incident_id}`


def _watched(resolver: Resolver, f: ev.AlertFacts, position: int, decided_at: str | None) -> Iterator[Fact]:
    """What the alert is about: its operation (or obligation), heartbeat, question or approval."""
    if f.operation_id is not None:
        about = obligation_fact if f.reason == "obligation_met" else operation_fact
        yield about(resolver, f.operation_id, position)
    if f.heartbeat_at is not None or f.watchdog_max_age_s is not None:
        generation, fresh = f.heartbeat_generation, f.reason == "fresh_heartbeat"
        yield heartbeat_fact(resolver, generation, f.heartbeat_at, f.watchdog_max_age_s, position, fresh, decided_at)
    if f.task_id is not None and f.question_key is not None:
        named = question_id(f.task_id, f.question_key)
        text = f"question {named}" + (f" open since {rfc3339(f.first_seen_at)}, k = {f.k}" if f.k else "")
        raised = resolver.source(("question", named), position, of_type(ev.QuestionRaised))
        yield Fact(name="question", text=text, value=named, source=raised, now=question_now(resolver, named))
    if f.runtime_id is not None:  # contract v1.2 section 1: isolation_unavailable, tool_denied
        latest = resolver.source(("runtime", f.runtime_id), position)
        text = f"runtime {f.runtime_id}" + (f": {f.reason}" if f.reason else "")
        yield Fact(name="runtime", text=text, value=f.runtime_id, source=latest)
    if f.request_id is not None and f.conversation_id is not None:
        key = ("approval", f"{f.conversation_id}/{f.request_id}")
        opened = resolver.source(key, position, of_type(ev.ApprovalOpened))
        value = {"conversation_id": f.conversation_id, "request_id": f.request_id}
        yield Fact(name="approval", text=f"approval {f.request_id} on {f.conversation_id}", value=value, source=opened)


def _measured(resolver: Resolver, f: ev.AlertFacts, position: int) -> Iterator[Fact]:
    """What it measured: a grant's usage, an incident, a reconciliation, room, a delivery or turn, a due time."""
    if f.grant_id is not None:
        text = f"grant {f.grant_id}: usage {f.usage}, token_limit {f.token_limit}"
        value = {"grant_id": f.grant_id, "usage": f.usage, "token_limit": f.token_limit}
        if f.call_limit is not None:  # contract v1.2 section 3.4
            text = f"grant {f.grant_id}: calls {f.calls}, call_limit {f.call_limit}" + (
                f", usage {f.usage}, token_limit {f.token_limit}" if f.usage is not None else ""
            )
            value = {"grant_id": f.grant_id, "calls": f.calls, "call_limit": f.call_limit} | (
                {"usage": f.usage, "token_limit": f.token_limit} if f.usage is not None else {}
            )
        yield Fact(name="grant_budget", text=text, value=value, source=resolver.source(("grant", f.grant_id), position))
    if f.incident_id is not None:
        opened = resolver.source(("incident", f.incident_id), position)
        yield Fact(name="incident", text=f"incident {f.incident_id}", value=f.incident_id, source=opened)
    if f.reconciliation_id is not None:
        text = f"reconciliation {f.reconciliation_id} of {f.consumer_id}"
        started = resolver.source(("reconciliation", f.reconciliation_id), position)
        yield Fact(name="reconciliation", text=text, value=f.reconciliation_id, source=started)
    if f.room is not None:
        smallest = f", smallest candidate {f.smallest_tokens} tokens of {f.candidates}"
        smallest = smallest if f.smallest_tokens is not None else ""
        yield Fact(name="room", text=f"room {f.room} tokens{smallest}", value=f.room)
    if f.delivery_id is not None:
        text = f"delivery {f.delivery_id}" + (f" of turn {f.turn_id}" if f.turn_id else "")
        created = resolver.source(("delivery", f.delivery_id), position, of_type(ev.DeliveryCreated))
        yield Fact(name="delivery", text=text, value=f.delivery_id, source=created)
    elif f.turn_id is not None:
        started = resolver.source(("turn", f.turn_id), position)
        yield Fact(name="turn", text=f"turn {f.turn_id}", value=f.turn_id, source=started)
    if f.due_at is not None:
        yield Fact(name="due_at", text=f"due at {rfc3339(f.due_at)}", value=rfc3339(f.due_at))
    yield from _probed(resolver, f, position)


def _probed(resolver: Resolver, f: ev.AlertFacts, position: int) -> Iterator[Fact]:
    """Contract v1.2 section 10: a no_progress alert's last progress and deadline;
    a provider incident's readiness report, or its recorded expiry."""
    if f.progress_deadline_s is not None and f.task_id is not None:
        text = (
            f"last progress of {f.task_id}: {f.last_progress_event} at {rfc3339(f.last_progress_at)}"
            f" (progress_deadline_s {f.progress_deadline_s})"
        )
        value = {"task_id": f.task_id, "last_progress_event": f.last_progress_event,
                 "last_progress_at": rfc3339(f.last_progress_at), "progress_deadline_s": f.progress_deadline_s}  # fmt: skip
        stalled = resolver.source(("task", f.task_id), position, of_type(ev.TaskStalled))
        yield Fact(name="task_progress", text=text, value=value, source=stalled)
    if f.provider is not None:
        expiry = f", credential expires at {rfc3339(f.auth_expires_at)}" if f.auth_expires_at is not None else ""
        if f.observed_at is None:  # no report: the recorded expiry passed
            text = f"provider {f.provider}: the recorded credential expiry {rfc3339(f.auth_expires_at)} passed"
        else:
            text = f"provider {f.provider}: {f.reason}, observed at {rfc3339(f.observed_at)}{expiry}"
        value = {"provider": f.provider, "reason": f.reason, "observed_at": rfc3339(f.observed_at),
                 "auth_expires_at": rfc3339(f.auth_expires_at)}  # fmt: skip
        reported = resolver.source(("provider", f.provider), position, of_type(ev.ProviderReadinessRecorded))
        yield Fact(name="provider_readiness", text=text, value=value, source=reported)
    if f.investigation_id is not None:  # contract v1.2 section 5.1
        bound = f"calls {f.calls} of investigation_calls_max {f.investigation_calls_max}" if f.calls is not None else ""
        text = f"investigation {f.investigation_id}" + (f": {bound}" if bound else "")
        value = {"investigation_id": f.investigation_id, "calls": f.calls, "investigation_calls_max": f.investigation_calls_max}
        opened = resolver.source(("investigation", f.investigation_id), position, of_type(ev.InvestigationOpened))
        yield Fact(name="investigation", text=text, value=value, source=opened)


def alert_facts(resolver: Resolver, facts: ev.AlertFacts | None, entry: Entry) -> list[Fact]:
    """The facts an alert's AlertFacts name, in the order they are shown."""
    if facts is None:
        return []
    return [*_watched(resolver, facts, entry[0], at_of(entry)), *_measured(resolver, facts, entry[0])]


class Alert(Chain):
    kind, key, lifecycle = "alert", "alert", ALERT
    defined_by = (ev.AlertRaised,)  # its first occurrence makes it
    raised: ev.AlertRaised  # the latest occurrence
    last_raised: Entry | None = None
    count = 0

    def occurred(self, entry: Entry, event: ev.AlertRaised) -> Rendered:
        self.raised, self.last_raised = event, entry
        self.count += 1
        about = ""
        if event.cause_key:
            about = f" about {event.cause_key}" + (f" revision {event.revision}" if event.revision is not None else "")
        summary = f"raised (occurrence {self.count}){about}" + (f": {event.detail}" if event.detail else "")
        facts = alert_facts(self.resolver, event.facts, entry)
        if event.kind == FALLBACK:
            facts.insert(0, obligation_fact(self.resolver, self.identifier.partition(":")[2], entry[0]))
        return summary, facts

    def resolved(self, entry: Entry, event: ev.AlertResolved) -> Rendered:
        if event.by != "engine":
            return "resolved by the human (the condition may go on; raised again only on a new occurrence)", []
        summary = "resolved by the engine" + (f": {event.detail}" if event.detail else "")
        return summary, alert_facts(self.resolver, event.facts, entry)

    @classmethod
    def keys(cls, identifier: str) -> list[Key]:
        """A provider incident's alert also walks its incident's key: the
        deliveries it defers (contract v1.2 section 4.3)."""
        incident_id = identifier.removeprefix(INCIDENT_ALERT)
        if identifier.startswith(INCIDENT_ALERT) and incident_id.startswith("provider/"):
            return [(cls.key, identifier), ("incident", incident_id)]
        return [(cls.key, identifier)]

    def deferred(self, entry: Entry, event: ev.DeliveryDeferred) -> Rendered:
        """A conversation on the provider waits for it (v1.2 sections 3.10, 4.3)."""
        facts = event.facts
        if facts is None or event.reason != "provider_unready":
            return None
        summary = f"nothing is delivered to {event.conversation_id} while {facts.provider} is not ready: deferred provider_unready"
        if facts.urgent is not None:
            summary += f"; it holds back urgent {facts.urgent} (contract v1.2 section 3.7)"
        text = f"incident {facts.incident_id} open, observed at {rfc3339(facts.observed_at)}; its recovery ends it"
        return summary, [Fact(name="provider_unready", text=text, value=msgspec.to_builtins(facts))]

    renderers = {
        ev.AlertRaised: occurred,
        ev.AlertSeen: said("seen by the human"),
        ev.AlertResolved: resolved,
        ev.DeliveryDeferred: deferred,
    }

    def summary(self) -> str:
        return f"{self.raised.kind} alert, raised {self.count} time(s)"

    _resolves = (
        "the engine resolves it when it sees its condition end (contract section 6); "
        "alert.seen and alert.resolve are the human's"
    )
    waits = {"raised": ("alert.resolve", _resolves), "seen": ("alert.resolve", _resolves)}

    def since(self) -> Source | None:
        return source(self.last_raised)

    def related(self) -> list[str]:
        raised, facts = self.raised, self.raised.facts
        related = []
        if raised.kind == FALLBACK:
            related.append(f"obligation {raised.alert_id.partition(':')[2]}")
        elif facts is not None and facts.operation_id:
            related.append(f"operation {facts.operation_id}")
        if raised.cause_key:
            related.append(f"cause {raised.cause_key}")
        if facts is not None and facts.task_id and facts.question_key:
            related.append(f"question {facts.task_id}/{facts.question_key}")
        if facts is not None and facts.reconciliation_id:
            related.append(f"reconciliation {facts.reconciliation_id}")
        if facts is not None and facts.runtime_id:
            related.append(f"runtime {facts.runtime_id}")
        return related


class Obligation(Chain):
    kind, key, lifecycle = "obligation", "obligation", OBLIGATION
    opened: ev.ObligationOpened

    @classmethod
    def keys(cls, identifier: str) -> list[Key]:
        return [("obligation", identifier), ("alert", f"{FALLBACK}:{identifier}")]

    def opening(self, entry: Entry, event: ev.ObligationOpened) -> Rendered:
        self.opened = event
        summary = (
            f"opened: {event.conversation_id} must be told about {event.cause_key}; "
            f"due at {rfc3339(event.due_at)} (the outcome's time + fallback_after_s)"
        )
        outcome = self.resolver.find(("action", self.identifier), entry[0], of_type(ev.ActionOutcomeReported))
        if outcome is None:
            return summary, []
        text, value = outcome_summary(outcome[1]), outcome[1].outcome
        return summary, [Fact(name="outcome", text=text, value=value, source=source(outcome))]

    def due(self, entry: Entry, event: ev.ObligationDue) -> Rendered:
        if event.reason == "left_out":
            held = f"turn {event.turn_id} completed holding it ({event.delivery_id})"
            return f"due: {held} but did not list it in delivered", []
        opened = getattr(self, "opened", None)
        return f"due: fallback_after_s passed (due at {rfc3339(opened.due_at) if opened else '?'})", []

    renderers = {
        ev.ObligationOpened: opening,
        ev.ObligationMet: said(
            "met: turn {e.turn_id} completed with {e.delivery_id} accepted, holding {e.cause_key}"
        ),
        ev.ObligationDue: due,
        ev.AlertRaised: said("alert {e.alert_id} raised: {e.detail}"),
        ev.AlertResolved: said("alert {e.alert_id} resolved by {e.by}"),
    }

    def summary(self) -> str:
        return f"tell {self.opened.conversation_id} about {self.opened.cause_key}"

    _told = (
        "waits for a completed turn of {c.opened.conversation_id} whose accepted delivery holds "
        "{c.opened.cause_key} (and lists it in delivered, when given)"
    )
    waits = {"open": ("turn.ended", _told), "due": ("turn.ended", _told)}

    def related(self) -> list[str]:
        alerted = any(link.event == "AlertRaised" for link in self.links)
        return [f"operation {self.identifier}", f"cause {self.opened.cause_key}"] + (
            [f"alert {FALLBACK}:{self.identifier}"] if alerted else []
        )
