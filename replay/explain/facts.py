"""The facts a decision relied on, each with the event that established it
(the latest event with its key at or before the decision) and, for a thing
that can change, what it is now."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from operator import attrgetter
from typing import Any

import msgspec

from tandem.domain import events as ev
from tandem.domain.health.rules import beat_time
from tandem.domain.records import Config
from tandem.projections.base import rfc3339
from tandem.replay.explain.keys import Key
from tandem.replay.explain.log import Resolver, of_type, source
from tandem.replay.explain.model import Fact
from tandem.replay.explain.now import action_at, obligation_now, question_now

_revision = attrgetter("revision")
# Per key kind, the events that make a revision, and which revision each makes.
_REVISIONS: dict[str, dict[type, Callable[[Any], int]]] = {
    "task": {ev.TaskDelegated: lambda event: 1, ev.TaskRevised: _revision},
    "grant": {ev.GrantIssued: _revision, ev.GrantRevised: _revision},
    "policy": {ev.PolicySet: _revision},
}


def question_id(task_id: str, question_key: str) -> str:
    return f"{task_id}/{question_key}"


def revision_fact(resolver: Resolver, key: Key, revision: int | None, position: int) -> Fact | None:
    """A task/grant/policy revision, with the event that made it."""
    if revision is None:
        return None
    what, made = key[0], _REVISIONS[key[0]]
    source_ = None
    if revision or what != "policy":
        source_ = resolver.source(
            key, position, lambda event: (of := made.get(type(event))) is not None and of(event) == revision
        )
    if len(key) > 1:
        label = f"{what} {key[1]} revision {revision}"
    else:
        label = f"policy revision {revision}" if revision else "policy revision 0 (no policy.set yet)"
    value = {"id": key[1] if len(key) > 1 else None, "revision": revision}
    return Fact(name=f"{what}_revision", text=label, value=value, source=source_)


def revision_facts(resolver: Resolver, position: int, *wanted: tuple[Key, int | None] | None) -> list[Fact]:
    """The revision facts of the (key, revision) pairs given (None: not applicable)."""
    facts = (revision_fact(resolver, key, revision, position) for key, revision in filter(None, wanted))
    return [fact for fact in facts if fact is not None]


def intent_facts(
    resolver: Resolver, conversation_id: str | None, intent: int | None, synced: int | None, position: int
) -> list[Fact]:
    if conversation_id is None:
        return []
    key = ("intent", conversation_id)
    value = {"conversation_id": conversation_id}
    facts: list[Fact] = []
    if intent is not None:
        queued = resolver.source(
            key, position, lambda e: isinstance(e, (ev.MessageQueued, ev.QueueEdited)) and e.intent_revision == intent
        )
        text = f"{conversation_id} intent revision {intent}" + ("" if intent else " (no human message yet)")
        facts.append(Fact(name="intent_revision", text=text, value={**value, "revision": intent}, source=queued))
    if synced is not None:
        found = (
            resolver.source(key, position, lambda e: type(e) is ev.IntentSynced and e.synced_revision == synced)
            if synced
            else None
        )
        text = f"{conversation_id} intent " + (f"synced to revision {synced}" if synced else "never synced")
        facts.append(Fact(name="synced_intent_revision", text=text, value={**value, "revision": synced}, source=found))
    return facts


def synced_at(resolver: Resolver, conversation_id: str | None, position: int) -> int | None:
    """The intent revision synced when a claim was made: the latest
    `IntentSynced` before it (a claim is frequent: it does not repeat this)."""
    if conversation_id is None:
        return None
    entry = resolver.find(("intent", conversation_id), position, of_type(ev.IntentSynced))
    return entry[1].synced_revision if entry is not None else 0


def heartbeat_fact(
    resolver: Resolver,
    generation: int | None,
    at: datetime.datetime | None,
    max_age_s: int | None,
    position: int,
    fresh: bool,
    decided_at: str | None = None,
) -> Fact:
    """The last heartbeat a decision saw; its age at the decision's input, if known.
    Without a recorded max age, the latest EngineConfigured's (or the domain's default)."""
    if max_age_s is None:
        config = resolver.find(("config",), position)
        max_age_s = config[1].watchdog_max_age_s if config is not None else Config().watchdog_max_age_s
    value: dict[str, Any] = {"generation": generation, "at": rfc3339(at), "watchdog_max_age_s": max_age_s}
    if at is None:
        text = f"no watchdog heartbeat ever seen (fresh means within {max_age_s} s)"
        return Fact(name="heartbeat", text=text, value=value)
    # Its beat time (contract v1.2 section 4.1): `beat_at` when the row carried one.
    seen = resolver.source(("heartbeat",), position, lambda e: e.generation == generation and beat_time(e) == at)
    age = ""
    if decided_at:
        seconds = (datetime.datetime.fromisoformat(decided_at.replace("Z", "+00:00")) - at).total_seconds()
        value["age_s"] = seconds
        age = f" {seconds:g} s old,"
    verdict = "fresh" if fresh else "stale"
    text = f"watchdog heartbeat generation {generation} at {rfc3339(at)},{age} {verdict} (max age {max_age_s} s)"
    return Fact(name="heartbeat", text=text, value=value, source=seen)


def binding_fact(resolver: Resolver, conversation_id: str | None, generation: int | None, position: int) -> Fact | None:
    if conversation_id is None:
        return None
    bound = None
    if generation is not None:
        bound = resolver.source(("binding", conversation_id), position, lambda e: e.generation == generation)
    text = (
        f"{conversation_id} bound to its background at generation {generation}"
        if generation
        else f"{conversation_id} has no bound background"
    )
    value = {"conversation_id": conversation_id, "generation": generation}
    return Fact(name="binding_generation", text=text, value=value, source=bound)


def prerequisite_fact(resolver: Resolver, fact: ev.PrerequisiteFact, position: int) -> Fact:
    text = f"{fact.operation_id} {fact.state}"
    if fact.artifact_revision is not None:
        text += f" with {fact.artifact_revision}"
    if fact.required_artifact_revision is not None:
        text += f" (requires {fact.required_artifact_revision})"
    if fact.evidence_required is True:  # contract v1.2 section 2.5
        refs = ", ".join(fact.evidence_refs or ()) or "none yet"
        text += f"; evidence required, refs: {refs}"
    found = action_at(resolver, fact.operation_id, position)
    then = found.source if found is not None else None
    now = action_at(resolver, fact.operation_id)
    changed = now is not None and (found is None or now.source != then)
    return Fact(
        name="prerequisite", text=text, value=msgspec.to_builtins(fact), source=then, now=now if changed else None
    )


_VIA = {
    "operation": "lists this operation",
    "prerequisite": "lists its prerequisite {through}",
    "task": "is about its task",
    "depends_on": "is about {through}, a task its task depends on",
    "unknown": 'has affected "unknown"',
}


def question_fact(resolver: Resolver, question: ev.QuestionRef, position: int) -> Fact:
    named = question_id(question.task_id, question.question_key)
    how = _VIA[question.via].format(through=question.through) if question.via in _VIA else question.via
    return Fact(
        name="question",
        text=f"question {named} {how}",
        value=msgspec.to_builtins(question),
        source=resolver.source(("question", named), position, of_type(ev.QuestionRaised)),
        now=question_now(resolver, named),
    )


def obligation_fact(resolver: Resolver, operation_id: str, position: int) -> Fact:
    """The obligation a fallback_delivery alert is about (its id names it)."""
    opened = resolver.find(("obligation", operation_id), position, of_type(ev.ObligationOpened))
    text = f"obligation of {operation_id}"
    if opened is not None:
        text += f": tell {opened[1].conversation_id} about {opened[1].cause_key} by {rfc3339(opened[1].due_at)}"
    now = obligation_now(resolver, operation_id)
    return Fact(name="obligation", text=text, value=operation_id, source=source(opened), now=now)


def operation_fact(resolver: Resolver, operation_id: str, position: int) -> Fact:
    return Fact(
        name="operation",
        text=f"operation {operation_id}",
        value=operation_id,
        source=source(resolver.find(("action", operation_id), position)),
        now=action_at(resolver, operation_id),
    )


# Contract v1.2 section 8.1: how a foreground affects a maintenance action (a preemption's or an
# owner_active block's `via`), formatted with the foreground `f`, the resource `r` and its work `w`.
_AFFECTED_TEXT = {
    "task": "it is {f}'s work: its task was delegated from {f}",
    "session": "it serialises on {f}'s session (resource {r})",
    "resource": "it shares resource {r} with {f}'s work ({w}): the owner's work waits for it, or holds it",
}


def affected_fact(resolver: Resolver, conversation_id: str, via: str | None, resource: str | None,
                  operations: list[str] | None, position: int) -> Fact | None:  # fmt: skip
    """Why the foreground's owner concerns the maintenance action: its session, or the resource it shares
    with the foreground's work (with the proposal of the first action of that work); None in a log
    written before the rule was scoped (no `via`)."""
    if via is None:
        return None
    named = list(operations or ())
    template = _AFFECTED_TEXT.get(via, "{f} affects it (" + via + ")")
    text = template.format(f=conversation_id, r=resource, w=", ".join(named))
    value = {"conversation_id": conversation_id, "via": via, "resource": resource, "operations": operations}
    where = resolver.source(("action", named[0]), position, of_type(ev.ActionProposed)) if named else None
    return Fact(name="affected_by", text=text, value=value, source=where)
