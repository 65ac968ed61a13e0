"""Which ids each event concerns, declared once: `KEYS`, one entry per event
type (asserted complete at import), read by `tandem explain` to find the
events of a thing and the events a fact names.

A key is `(kind, id)` (`("action", "op-1")`), or `(kind,)` for a singleton
(`("policy",)`). Each entry lists its keys as `"kind: path"` strings, where
the path says where the id is in the event:

- `grant_id`: a field; a value that is None (or empty) gives no key;
- `task_id/question_key`: several fields joined by `/` (the id as it is written);
- `fenced[]`: each item of a list field; `included[].0`: the first part of each item;
- `facts[].questions[].task_id/question_key`: down through nested Structs and lists;
- `scope unless *`: no key when the value is `*`;
- no path at all (`"config"`): the singleton key.

`event_keys(event)` gives an event's keys, in declaration order, each once;
`KINDS` and `event_types_with(kind)` read the declaration the other way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from tandem.domain import events as ev

KEYS: dict[type[ev.Event], tuple[str, ...]] = {
    ev.InputAccepted: (),
    ev.InputRejected: (),
    ev.SourceProgressed: (),
    ev.EngineConfigured: ("config",),
    ev.PolicySet: ("policy", "action: fenced[]", "action: restamped[]"),
    ev.GrantIssued: ("grant: grant_id", "task: task_id"),
    ev.GrantRevised: ("grant: grant_id", "action: fenced[]", "action: restamped[]"),
    ev.GrantRevoked: ("grant: grant_id",),
    ev.RuleSet: (),
    ev.TaskDelegated: ("task: task_id",),
    ev.TaskRevised: ("task: task_id", "action: fenced[]"),
    ev.TaskCompleted: ("task: task_id",),
    ev.TaskCancelled: ("task: task_id",),
    ev.QuestionRaised: ("question: task_id/question_key", "task: task_id"),
    ev.QuestionAnswered: ("question: task_id/question_key", "task: task_id"),
    ev.QuestionResurfaced: ("question: task_id/question_key",),
    ev.TaskHoldsChanged: ("task: task_id", "holds: facts[].questions[].task_id/question_key"),
    ev.ActionProposed: ("action: operation_id", "update: cause_key", "task_action: task_id"),
    ev.ActionRevalidated: ("action: operation_id",),
    ev.ActionCancelled: ("action: operation_id",),
    ev.ActionCancelRequested: ("action: operation_id",),
    ev.ActionClaimed: ("action: operation_id", "attempt: attempt_id"),
    ev.AttemptUpdated: ("action: operation_id", "attempt: attempt_id"),
    ev.ActionOutcomeReported: ("action: operation_id", "attempt: attempt_id"),
    ev.ActionBlocked: ("action: operation_id", "holds: facts[].questions[].task_id/question_key"),
    ev.SourceRuleApplied: ("action: operation_id",),
    ev.EvidenceAttached: ("action: operation_id",),
    ev.HeartbeatRecorded: ("heartbeat",),
    ev.ScopePaused: ("scope: scope", "task: scope unless *"),
    ev.ScopeResumed: ("scope: scope", "task: scope unless *"),
    ev.UsageReported: (),
    ev.BudgetExhausted: ("grant: grant_id",),
    ev.ConversationOpened: (),
    ev.BackgroundBound: ("binding: foreground_id",),
    ev.MessageQueued: ("intent: conversation_id",),
    ev.QueueEdited: ("intent: conversation_id",),
    ev.IntentSynced: ("intent: conversation_id",),
    ev.ObservationRecorded: ("update: cause_key",),
    ev.ObservationRepeated: ("update: cause_key",),
    ev.UpdateRevised: ("update: cause_key",),
    ev.UpdateTriaged: ("update: cause_key",),
    ev.ConsumerCreated: (),
    ev.CursorMoved: (),
    ev.EntriesSkipped: (),
    ev.WatermarkRaised: (),
    ev.ReconciliationStarted: ("reconciliation: reconciliation_id",),
    ev.ReconciliationCommitted: ("reconciliation: reconciliation_id",),
    ev.CardProposed: ("update: cause_key",),
    ev.TurnStarted: ("turn: turn_id",),
    ev.DeliveryCreated: ("delivery: delivery_id", "turn: turn_id", "update: included[].0", "checkpoint: checkpoint"),
    ev.DeliveryReceipted: ("delivery: delivery_id",),
    ev.TurnEnded: ("turn: turn_id", "delivery: released[]", "delivery: delivery_id"),
    ev.ContextReset: ("conversation: conversation_id",),
    ev.RecoveryChanged: ("conversation: conversation_id",),
    ev.ApprovalOpened: ("approval: conversation_id/request_id",),
    ev.ApprovalResolved: ("approval: conversation_id/request_id",),
    ev.FailureHoldChanged: (),
    ev.DeadlineExceeded: ("action: operation_id",),
    ev.DeliveryDeferred: (
        "conversation: conversation_id", "delivery: facts.delivery_id", "update: facts.cause_key", "incident: facts.incident_id",
        "update: facts.urgent",
    ),  # fmt: skip
    ev.AlertRaised: (
        "alert: alert_id", "delivery: facts.delivery_id", "update: cause_key", "investigation: facts.investigation_id",
    ),  # fmt: skip
    ev.AlertSeen: ("alert: alert_id",),
    ev.AlertResolved: ("alert: alert_id", "delivery: facts.delivery_id"),
    ev.IncidentOpened: ("incident: incident_id",),
    ev.IncidentRecovered: ("incident: incident_id",),
    ev.DaemonStopped: (),
    ev.DaemonStarted: (),
    ev.ObligationOpened: ("obligation: operation_id",),
    ev.ObligationMet: ("obligation: operation_id", "turn: turn_id", "delivery: delivery_id"),
    ev.ObligationDue: ("obligation: operation_id", "turn: turn_id", "delivery: delivery_id"),
    ev.ToolPolicySet: ("tool_policy", "runtime: revoked[]", "runtime: restamped[]"),
    ev.RuntimeAdmitted: ("runtime: runtime_id", "runtimes"),
    ev.RuntimeRefused: ("runtime: runtime_id", "runtimes"),
    ev.RuntimeFenced: ("runtime: runtime_id",),
    ev.ToolCallAllowed: ("runtime: runtime_id", "action: operation_id", "investigation: investigation_id"),
    ev.ToolCallDenied: ("runtime: runtime_id", "action: operation_id", "investigation: investigation_id"),
    ev.ProviderReadinessRecorded: ("provider: provider",),
    ev.HostSuspended: ("host",),
    ev.HostResumed: ("host",),
    ev.TaskStalled: ("task: task_id",),
    ev.DeliveryComposed: ("delivery: delivery_id",),
    ev.InvestigationOpened: ("investigation: investigation_id", "task: task_id", "investigations"),
    ev.InvestigationExhausted: ("investigation: investigation_id",),
    ev.InvestigationClosed: ("investigation: investigation_id", "action: operation_id"),
    ev.BackgroundCheckpointed: ("checkpoint: checkpoint_id", "investigation: investigations[]"),
    ev.SourceAliased: ("source: source_id", "source: alias_of"),
    ev.BatchJoined: ("update: cause_key", "batch: batch_id"),
    ev.BatchRevised: ("update: cause_key", "batch: batch_id"),
    ev.BatchFixSuperseded: ("action: operation_id",),
}
assert set(KEYS) == set(ev.EVENT_TYPES.values()), "every event type declares its keys (() for none)"


class KeySpec(NamedTuple):
    """One parsed `"kind: path"`: `steps` down to the id's parts (`fields`)."""

    kind: str
    steps: tuple[str, ...]  # attribute names; "name[]" iterates a list, a digit indexes a tuple
    fields: tuple[str, ...]  # the last step's fields, joined by "/"
    unless: str | None


def parse(text: str) -> KeySpec:
    kind, _, path = (part.strip() for part in text.partition(":"))
    path, _, unless = (part.strip() for part in path.partition(" unless "))
    if not path:
        return KeySpec(kind, (), (), None)
    *steps, last = path.split(".")
    return KeySpec(kind, tuple(steps), tuple(last.split("/")), unless or None)


SPECS: dict[type[ev.Event], tuple[KeySpec, ...]] = {
    event_type: tuple(parse(text) for text in texts) for event_type, texts in KEYS.items()
}
KINDS: tuple[str, ...] = tuple(dict.fromkeys(spec.kind for specs in SPECS.values() for spec in specs))


def event_types_with(kind: str) -> frozenset[type[ev.Event]]:
    """The event types that can have a key of `kind`."""
    return frozenset(event_type for event_type, specs in SPECS.items() if any(s.kind == kind for s in specs))


def _values(value: Any, steps: tuple[str, ...]) -> Iterator[Any]:
    """What `steps` reach from `value` (None and empty lists reach nothing)."""
    if value is None:
        return
    if not steps:
        yield value
        return
    step, rest = steps[0], steps[1:]
    if step.isdigit():
        yield from _values(value[int(step)], rest)
    elif step.endswith("[]"):
        for item in getattr(value, step[:-2]) or ():
            yield from _values(item, rest)
    else:
        yield from _values(getattr(value, step), rest)


def _keys(event: Any, spec: KeySpec) -> Iterator[tuple[str, ...]]:
    if not spec.fields:
        yield (spec.kind,)
        return
    if len(spec.fields) == 1:
        # One field: the value itself (or, for `fenced[]`, `.0`, each item) is the id.
        identifiers: Iterator[Any] = _values(event, (*spec.steps, spec.fields[0]))
    else:
        identifiers = ("/".join(getattr(v, f) for f in spec.fields) for v in _values(event, spec.steps))
    for identifier in identifiers:
        if identifier and identifier != spec.unless:
            yield (spec.kind, identifier)


def _extractor(specs: tuple[KeySpec, ...]) -> Callable[[Any], list[tuple[str, ...]]]:
    def keys_of(event: Any) -> list[tuple[str, ...]]:
        return list(dict.fromkeys(key for spec in specs for key in _keys(event, spec)))

    return keys_of


# Per event type, the function giving an event's keys (what explain reads by).
KEY_EXTRACTORS: dict[type[ev.Event], Callable[[Any], list[tuple[str, ...]]]] = {
    event_type: _extractor(specs) for event_type, specs in SPECS.items()
}


def event_keys(event: ev.Event) -> list[tuple[str, ...]]:
    """What an event concerns, as lookup keys (`("action", op)`, …), each once."""
    return KEY_EXTRACTORS[type(event)](event)
