"""`explain`: why something is in its current state, from the recorded links.

Every event the engine decides by itself names the input that caused it
(`cause`, the seq of the `InputAccepted`/`InputRejected` that opens its
transaction, which carries the trace file, line and input id) and the facts it
relied on (spec section 8; `domain/events.py`, `domain/provenance.py`). This
module walks those links over a store's log and re-decides nothing: it never
runs `decide`, `evolve` or the pass. A fact names what it relied on by key (a
task, grant or policy revision, an operation, a question, a heartbeat, a
binding generation...); the key leads to the event that established it (the
latest one with that key at or before the fact's position), and so to its
input; and, for a thing that can change, to its latest event in the log
("now").

    explanations = explain(store, "op-form")            # one per kind that matches
    explanations = explain(store, "op-form", kind="operation")
    print(render_text(explanations))                    # or to_json(...)

An id may be an operation, an attempt (`op/a1`), a delivery (`fg/d2`), a
turn (`fg/t2`), an alert (`urgent:…`), a question (`task_id/question_key`),
a task, an obligation (its operation id), a cause key or a reconciliation
(`consumer/r1`). An id that is several of these (an operation and its
obligation share an id) is explained once per kind, in `KINDS` order.

Cost: two or three reads of the log (the thing's own events, then the events
its facts name), holding only those events: explain is a diagnostic, off the
hot path.
"""

from __future__ import annotations

import datetime
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import msgspec
from msgspec import Struct

from tandem.domain import events as ev
from tandem.domain.keys import KEY_EXTRACTORS, event_keys  # event_keys: also explain's public name
from tandem.domain.lookups import numbered_owner
from tandem.projections.base import rfc3339
from tandem.replay.port import EventStore

# The kinds an id may name, in the order matches are reported.
KINDS = (
    "operation",
    "attempt",
    "delivery",
    "turn",
    "alert",
    "question",
    "task",
    "obligation",
    "cause",
    "reconciliation",
)

# Bounded output: a step's lines of facts, and the steps of one explanation.
facts_per_step_max = 64
steps_max = 2_000
# Reads of the log to resolve facts (the first finds the thing; each later one
# fetches the events its facts name, until nothing new is asked for).
resolve_rounds_max = 4
# Distinct trace files a read notes (to tell whether the store holds others).
files_seen_max = 64
# Refused inputs named when an id names nothing.
rejected_listed_max = 5

WATCHDOG_MAX_AGE_DEFAULT_S = 120


class ExplainError(Exception):
    """Nothing to explain: no such id (or not of the asked kind)."""


# ============================================================ the JSON shape


class InputRef(Struct, frozen=True, kw_only=True):
    """The input behind a decision: its seq, where it came from, what it was.
    `rejected` is the reason when the input was refused (its pass still ran)."""

    seq: int
    file: str | None
    line: int | None
    type: str
    id: str | None
    actor: str
    at: str
    rejected: str | None = None


class Source(Struct, frozen=True, kw_only=True):
    """The event (and its input) that established a fact."""

    position: int
    event: str
    input: InputRef | None


class Current(Struct, frozen=True, kw_only=True):
    """The state, at the end of the log, of something a fact names."""

    state: str
    source: Source | None


class Fact(Struct, frozen=True, kw_only=True):
    """One fact a decision relied on. `name` says what it is (see
    docs/explain.md), `value` is its recorded value (a JSON value), `text`
    says it for a human, `source` is where it came from and `now` what it is
    at the end of the log, for a thing that can change."""

    name: str
    text: str
    value: Any = None
    source: Source | None = None
    now: Current | None = None


class Step(Struct, frozen=True, kw_only=True):
    """One recorded event in the chain: where it is in the log, what it
    decided, the state it left the explained thing in, and why. `count` > 1
    folds that many consecutive repeats (observations seen again)."""

    position: int
    event: str
    summary: str
    state: str | None
    input: InputRef | None
    facts: list[Fact] = []
    count: int = 1


class Waiting(Struct, frozen=True, kw_only=True):
    """What the thing waits for now: a blocking code (or, outside `pending`,
    the input it expects), its facts, and `since`, the event (and input) that
    last changed it."""

    code: str
    text: str
    facts: list[Fact] = []
    since: Source | None = None


class Explanation(Struct, frozen=True, kw_only=True):
    kind: str
    id: str
    state: str
    summary: str
    steps: list[Step]
    waiting: list[Waiting]
    related: list[str]
    steps_omitted: int = 0


class Document(Struct, frozen=True, kw_only=True):
    """What `tandem explain --json` prints: the id, the store's last position
    when it was explained, the trace files the inputs it names came from
    (whether the store holds inputs of other files too), and one explanation
    per kind the id names."""

    id: str
    position: int
    files: list[str]  # the trace files of the inputs it names
    matches: list[Explanation]
    other_files: bool = False  # the store holds inputs of other files too


# ============================================================== log walking

Entry = tuple[int, Any, "InputRef | None"]  # (position, event, its input)


def _input_ref(record: ev.InputAccepted | ev.InputRejected) -> InputRef:
    value = record.input
    return InputRef(
        seq=record.seq,
        file=record.file,
        line=record.line,
        type=value.input_type,
        id=value.id,
        actor=value.sender,
        at=rfc3339(value.at) or "",
        rejected=record.reason if isinstance(record, ev.InputRejected) else None,
    )


def _question_id(task_id: str, question_key: str) -> str:
    return f"{task_id}/{question_key}"


# The keys of each event: what it concerns (declared once, in domain/keys.py).
# Explaining looks things up by key.
_KEYS = KEY_EXTRACTORS

# The events that can have a key of each kind (`_KEYS`, read the other way;
# tests check every key an event has is listed here). A read decodes only
# these events' of the wanted kinds.
_KIND_TAGS: dict[str, frozenset[bytes]] = {
    kind: frozenset(tag.encode() for tag in tags.split())
    for kind, tags in {
        "config": "EngineConfigured",
        "policy": "PolicySet",
        "grant": "GrantIssued GrantRevised GrantRevoked BudgetExhausted",
        "task": "GrantIssued TaskDelegated TaskRevised TaskCompleted TaskCancelled QuestionRaised QuestionAnswered "
        "TaskHoldsChanged ScopePaused ScopeResumed",
        "task_action": "ActionProposed",
        "question": "QuestionRaised QuestionAnswered QuestionResurfaced",
        "holds": "TaskHoldsChanged ActionBlocked",
        "action": "PolicySet GrantRevised TaskRevised ActionProposed ActionRevalidated ActionCancelled "
        "ActionCancelRequested ActionClaimed AttemptUpdated ActionOutcomeReported ActionBlocked",
        "attempt": "ActionClaimed AttemptUpdated ActionOutcomeReported",
        "heartbeat": "HeartbeatRecorded",
        "scope": "ScopePaused ScopeResumed",
        "binding": "BackgroundBound",
        "intent": "MessageQueued QueueEdited IntentSynced",
        "update": "ActionProposed ObservationRecorded ObservationRepeated UpdateRevised UpdateTriaged CardProposed "
        "DeliveryCreated AlertRaised",
        "reconciliation": "ReconciliationStarted ReconciliationCommitted",
        "turn": "TurnStarted DeliveryCreated TurnEnded ObligationMet ObligationDue",
        "delivery": "DeliveryCreated DeliveryReceipted TurnEnded AlertRaised AlertResolved ObligationMet ObligationDue",
        "conversation": "ContextReset",
        "approval": "ApprovalOpened ApprovalResolved",
        "alert": "AlertRaised AlertSeen AlertResolved",
        "incident": "IncidentOpened IncidentRecovered",
        "obligation": "ObligationOpened ObligationMet ObligationDue",
    }.items()
}

# The key of each kind, and the event whose existence makes an id that kind.
_KIND_KEYS = {
    "operation": "action",
    "attempt": "attempt",
    "delivery": "delivery",
    "turn": "turn",
    "alert": "alert",
    "question": "question",
    "task": "task",
    "obligation": "obligation",
    "cause": "update",
    "reconciliation": "reconciliation",
}
_DEFINED_BY = {
    "operation": (ev.ActionProposed,),
    "attempt": (ev.ActionClaimed,),
    "delivery": (ev.DeliveryCreated,),
    "turn": (ev.TurnStarted,),
    "alert": (ev.AlertRaised,),
    "question": (ev.QuestionRaised,),
    "task": (ev.TaskDelegated,),
    "obligation": (ev.ObligationOpened,),
    "cause": (ev.ObservationRecorded, ev.ObservationRepeated, ev.UpdateRevised, ev.ActionProposed, ev.CardProposed),
    "reconciliation": (ev.ReconciliationStarted,),
}


_RECORD_FILE = re.compile(rb'\{"event":"Input(?:Accepted|Rejected)","seq":\d+,"file":("(?:[^"\\]|\\.)*")')


# Filtering before decoding: most events concern nothing explain looks for,
# and decoding is most of a read's cost. An event is decoded only if its
# stored bytes contain a needle of a wanted key (a superset: a false match is
# only decoded for nothing). Inputs' records are decoded only for a kept event.
_RECORD_TAGS = frozenset({b"InputAccepted", b"InputRejected"})
_TAG_START = len(b'{"event":"')


def _strings(value: Any) -> Iterable[str]:
    """Every string in a JSON value (an input naming an id names it as a string)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _needle(key: tuple) -> bytes:
    if len(key) == 1:
        return b""  # ("heartbeat",), ("policy",), ("config",): every event of the type
    identifier = key[1]
    if key[0] in ("question", "holds", "approval"):
        # `task_id/question_key`, `conversation_id/request_id`: stored apart;
        # the part after the last "/" is in the second field.
        identifier = identifier.rpartition("/")[2]
    return msgspec.json.encode(identifier)[1:-1]


def _filter(wanted: set[tuple]) -> dict[bytes, tuple[bytes, ...]]:
    """Per event type, the needles one of which its bytes must contain to be
    decoded (an empty needle lets every event of the type through)."""
    by_tag: dict[bytes, set[bytes]] = {b"TaskDelegated": {b""}}  # every task's conversation is kept
    for key in wanted:
        needle = _needle(key)
        for tag in _KIND_TAGS[key[0]]:
            by_tag.setdefault(tag, set()).add(needle)
    # A needle containing another is redundant: keep the shortest ones.
    return {
        tag: tuple(n for n in sorted(needles, key=len) if not any(m in n and m != n for m in needles))
        for tag, needles in by_tag.items()
    }


class _Log:
    """One read of the log, keeping the events under the wanted keys (and the
    ones `grow` adds on the way) with their inputs."""

    def __init__(self) -> None:
        self.by_key: dict[tuple, list[Entry]] = defaultdict(list)
        self.task_conversation: dict[str, str] = {}
        self.head = 0
        # Up to `files_seen_max` of the store's trace files: enough to know
        # whether there are others than an explanation's (over HTTP every
        # request is one, `http@P`, so never all of them).
        self.files_seen: set[str] = set()
        self.rejected: list[InputRef] = []  # refused inputs that mention `mention` (at most rejected_listed_max)

    def read(
        self,
        store: EventStore,
        wanted: set[tuple],
        grow: Callable[[Any, set[tuple]], None] | None = None,
        prefilter: bool = True,
        mention: str | None = None,
    ) -> None:
        """`prefilter=False` decodes every event (the tests check it keeps the same)."""
        record_data: bytes | None = None
        reference: InputRef | None = None
        by_key = self.by_key
        needles_by_tag = _filter(wanted)
        position = 0
        mentioned = msgspec.json.encode(mention)[1:-1] if mention else None
        for position, data in store.read_encoded():
            tag = data[_TAG_START : data.find(b'"', _TAG_START)]
            if tag in _RECORD_TAGS:
                record_data, reference = data, None
                if len(self.files_seen) < files_seen_max:
                    named = _RECORD_FILE.match(data)
                    if named is not None:
                        self.files_seen.add(msgspec.json.decode(named.group(1)))
                if mentioned is not None and tag == b"InputRejected" and mentioned in data:
                    record = ev.decode_event(data)
                    if len(self.rejected) < rejected_listed_max and mention in _strings(
                        msgspec.to_builtins(record.input)
                    ):
                        self.rejected.append(_input_ref(record))
                continue
            if prefilter:
                needles = needles_by_tag.get(tag)
                if needles is None:
                    continue
                for needle in needles:
                    if needle in data:
                        break
                else:
                    continue
            event = ev.decode_event(data)
            kind = type(event)
            if kind is ev.TaskDelegated:
                self.task_conversation[event.task_id] = event.conversation_id
            keys_of = _KEYS.get(kind)
            if keys_of is None:
                continue
            keys = dict.fromkeys(keys_of(event))  # an event is kept once per key
            if not any(key in wanted for key in keys):
                continue
            if grow is not None:
                before = len(wanted)
                grow(event, wanted)  # keys it leads to apply to itself too
                if len(wanted) != before:
                    needles_by_tag = _filter(wanted)
            if reference is None and record_data is not None:
                reference = _input_ref(ev.decode_event(record_data))
            for key in keys:
                if key in wanted:
                    by_key[key].append((position, event, reference))
        self.head = position


class Resolver:
    """Finds the events facts name, by key; records what it was asked for
    (the keys the next read of the log must keep)."""

    def __init__(self, log: _Log) -> None:
        self.log = log
        self.asked: set[tuple] = set()

    def entries(self, key: tuple) -> list[Entry]:
        self.asked.add(key)
        return self.log.by_key.get(key, [])

    def find(self, key: tuple, before: int | None = None, where: Callable[[Any], bool] | None = None) -> Entry | None:
        """The latest event with `key` at or before `before` (any, if None)
        that satisfies `where`."""
        for entry in reversed(self.entries(key)):
            if before is not None and entry[0] > before:
                continue
            if where is None or where(entry[1]):
                return entry
        return None

    def source(
        self, key: tuple, before: int | None = None, where: Callable[[Any], bool] | None = None
    ) -> Source | None:
        return _source(self.find(key, before, where))

    def task_conversation(self, task_id: str | None) -> str | None:
        return self.log.task_conversation.get(task_id) if task_id is not None else None


def _source(entry: Entry | None) -> Source | None:
    if entry is None:
        return None
    position, event, reference = entry
    return Source(position=position, event=type(event).__name__, input=reference)


def _step(entry: Entry, summary: str, state: str | None, facts: Iterable[Fact] = ()) -> Step:
    position, event, reference = entry
    listed = list(facts)[:facts_per_step_max]
    return Step(
        position=position, event=type(event).__name__, summary=summary, state=state, input=reference, facts=listed
    )


def _at_of(entry: Entry) -> str | None:
    return entry[2].at if entry[2] is not None else None


def _is(*kinds: type) -> Callable[[Any], bool]:
    return lambda event: isinstance(event, kinds)


# ================================================================= the facts


def _action_state_after(event: Any, operation_id: str) -> str | None:
    """The state an event left an operation in (None: unchanged)."""
    kind = type(event)
    if kind is ev.ActionProposed or kind is ev.ActionRevalidated:
        return "pending"
    if kind is ev.ActionClaimed:
        return "submitting"
    if kind is ev.AttemptUpdated or kind is ev.ActionOutcomeReported:
        return event.action_state
    if kind is ev.ActionCancelled:
        return "cancelled"
    if kind is ev.ActionCancelRequested:
        return "cancel_requested"
    if kind in (ev.PolicySet, ev.GrantRevised, ev.TaskRevised) and operation_id in event.fenced:
        return "fenced"
    return None


def _action_state_at(
    resolver: Resolver, operation_id: str, before: int | None = None
) -> tuple[str, Source | None] | None:
    entry = resolver.find(("action", operation_id), before, lambda e: _action_state_after(e, operation_id) is not None)
    if entry is None:
        return None
    return _action_state_after(entry[1], operation_id) or "", _source(entry)


def _action_now(resolver: Resolver, operation_id: str) -> Current | None:
    found = _action_state_at(resolver, operation_id)
    return Current(state=found[0], source=found[1]) if found is not None else None


def _question_state(event: Any) -> str:
    return "answered" if isinstance(event, ev.QuestionAnswered) else "open"


def _question_now(resolver: Resolver, question_id: str) -> Current | None:
    entry = resolver.find(("question", question_id), where=_is(ev.QuestionRaised, ev.QuestionAnswered))
    return Current(state=_question_state(entry[1]), source=_source(entry)) if entry is not None else None


def _task_state(event: Any) -> str | None:
    return {ev.TaskDelegated: "active", ev.TaskCompleted: "completed", ev.TaskCancelled: "cancelled"}.get(type(event))


def _task_now(resolver: Resolver, task_id: str) -> Current | None:
    entry = resolver.find(("task", task_id), where=lambda e: _task_state(e) is not None)
    return Current(state=_task_state(entry[1]) or "", source=_source(entry)) if entry is not None else None


def _revision_fact(resolver: Resolver, what: str, key: tuple, revision: int | None, position: int) -> Fact | None:
    """A task/grant/policy revision, with the event that made it."""
    if revision is None:
        return None
    name = {"task": "task_revision", "grant": "grant_revision", "policy": "policy_revision"}[what]
    if what == "task":
        source = resolver.source(
            key,
            position,
            lambda e: (type(e) is ev.TaskDelegated and revision == 1)
            or (type(e) is ev.TaskRevised and e.revision == revision),
        )
        label = f"task {key[1]} revision {revision}"
    elif what == "grant":
        source = resolver.source(
            key, position, lambda e: type(e) in (ev.GrantIssued, ev.GrantRevised) and e.revision == revision
        )
        label = f"grant {key[1]} revision {revision}"
    else:
        source = resolver.source(key, position, lambda e: e.revision == revision) if revision else None
        label = f"policy revision {revision}" if revision else "policy revision 0 (no policy.set yet)"
    return Fact(
        name=name, text=label, value={"id": key[1] if len(key) > 1 else None, "revision": revision}, source=source
    )


def _intent_facts(
    resolver: Resolver, conversation_id: str | None, intent: int | None, synced: int | None, position: int
) -> list[Fact]:
    if conversation_id is None:
        return []
    key = ("intent", conversation_id)
    facts: list[Fact] = []
    if intent is not None:
        source = resolver.source(
            key, position, lambda e: type(e) in (ev.MessageQueued, ev.QueueEdited) and e.intent_revision == intent
        )
        facts.append(
            Fact(
                name="intent_revision",
                text=f"{conversation_id} intent revision {intent}" + ("" if intent else " (no human message yet)"),
                value={"conversation_id": conversation_id, "revision": intent},
                source=source,
            )
        )
    if synced is not None:
        source = (
            resolver.source(key, position, lambda e: type(e) is ev.IntentSynced and e.synced_revision == synced)
            if synced
            else None
        )
        facts.append(
            Fact(
                name="synced_intent_revision",
                text=(
                    f"{conversation_id} intent synced to revision {synced}"
                    if synced
                    else f"{conversation_id} intent never synced"
                ),
                value={"conversation_id": conversation_id, "revision": synced},
                source=source,
            )
        )
    return facts


def _max_age(resolver: Resolver, recorded: int | None, position: int) -> int:
    if recorded is not None:
        return recorded
    entry = resolver.find(("config",), position)
    return entry[1].watchdog_max_age_s if entry is not None else WATCHDOG_MAX_AGE_DEFAULT_S


def _heartbeat_fact(
    resolver: Resolver,
    generation: int | None,
    at: datetime.datetime | None,
    max_age_s: int | None,
    position: int,
    fresh: bool,
    decided_at: str | None = None,
) -> Fact:
    """The last heartbeat a decision saw; its age at the decision's input, if known."""
    max_age = _max_age(resolver, max_age_s, position)
    value: dict[str, Any] = {"generation": generation, "at": rfc3339(at), "watchdog_max_age_s": max_age}
    if at is None:
        return Fact(
            name="heartbeat", text=f"no watchdog heartbeat ever seen (fresh means within {max_age} s)", value=value
        )
    source = resolver.source(("heartbeat",), position, lambda e: e.generation == generation and e.at == at)
    age = ""
    if decided_at:
        seconds = (datetime.datetime.fromisoformat(decided_at.replace("Z", "+00:00")) - at).total_seconds()
        value["age_s"] = seconds
        age = f" {seconds:g} s old,"
    verdict = "fresh" if fresh else "stale"
    text = f"watchdog heartbeat generation {generation} at {rfc3339(at)},{age} {verdict} (max age {max_age} s)"
    return Fact(name="heartbeat", text=text, value=value, source=source)


def _binding_fact(
    resolver: Resolver, conversation_id: str | None, generation: int | None, position: int
) -> Fact | None:
    if conversation_id is None:
        return None
    source = None
    if generation is not None:
        source = resolver.source(("binding", conversation_id), position, lambda e: e.generation == generation)
    text = (
        f"{conversation_id} bound to its background at generation {generation}"
        if generation
        else f"{conversation_id} has no bound background"
    )
    return Fact(
        name="binding_generation",
        text=text,
        value={"conversation_id": conversation_id, "generation": generation},
        source=source,
    )


def _prerequisite_fact(
    resolver: Resolver, fact: ev.PrerequisiteFact, position: int, name: str = "prerequisite"
) -> Fact:
    text = f"{fact.operation_id} {fact.state}"
    if fact.artifact_revision is not None:
        text += f" with {fact.artifact_revision}"
    if fact.required_artifact_revision is not None:
        text += f" (requires {fact.required_artifact_revision})"
    found = _action_state_at(resolver, fact.operation_id, position)
    now = _action_now(resolver, fact.operation_id)
    return Fact(
        name=name,
        text=text,
        value=msgspec.to_builtins(fact),
        source=found[1] if found is not None else None,
        now=now if now is not None and (found is None or now.source != found[1]) else None,
    )


def _question_fact(resolver: Resolver, question: ev.QuestionRef, position: int) -> Fact:
    question_id = _question_id(question.task_id, question.question_key)
    how = {
        "operation": "lists this operation",
        "prerequisite": f"lists its prerequisite {question.through}",
        "task": "is about its task",
        "depends_on": f"is about {question.through}, a task its task depends on",
        "unknown": 'has affected "unknown"',
    }.get(question.via, question.via)
    return Fact(
        name="question",
        text=f"question {question_id} {how}",
        value=msgspec.to_builtins(question),
        source=resolver.source(("question", question_id), position, _is(ev.QuestionRaised)),
        now=_question_now(resolver, question_id),
    )


def block_fact_facts(
    resolver: Resolver, fact: ev.BlockFact, position: int, decided_at: str | None = None
) -> list[Fact]:
    """The facts behind one blocking code (or task hold), with their sources."""
    code = fact.code
    if code in ("prerequisite_pending", "prerequisite_failed"):
        return [_prerequisite_fact(resolver, p, position) for p in fact.prerequisites or ()]
    if code in ("question_hold", "wider_hold"):
        return [_question_fact(resolver, q, position) for q in fact.questions or ()]
    if code == "scope_paused":
        scope = fact.scope or "*"
        entry = resolver.find(("scope", scope), where=_is(ev.ScopePaused, ev.ScopeResumed))
        now = (
            Current(state="paused" if isinstance(entry[1], ev.ScopePaused) else "resumed", source=_source(entry))
            if entry
            else None
        )
        return [
            Fact(
                name="scope",
                text=f"scope {scope} paused",
                value={"scope": scope},
                source=resolver.source(("scope", scope), position, _is(ev.ScopePaused)),
                now=now,
            )
        ]
    if code == "task_held":
        return [
            Fact(
                name="depends_on",
                text=f"task {task.task_id} is {task.state}, not completed",
                value=msgspec.to_builtins(task),
                source=resolver.source(("task", task.task_id), position, _is(ev.TaskDelegated)),
                now=_task_now(resolver, task.task_id),
            )
            for task in fact.tasks or ()
        ]
    if code == "intent_unsynced":
        return _intent_facts(
            resolver, fact.conversation_id, fact.intent_revision, fact.synced_intent_revision, position
        )
    if code == "watchdog_unavailable":
        return [
            _heartbeat_fact(
                resolver,
                fact.heartbeat_generation,
                fact.heartbeat_at,
                fact.watchdog_max_age_s,
                position,
                False,
                decided_at,
            )
        ]
    if code == "resource_busy":
        return [
            Fact(
                name="resource_holder",
                text=f"{operation_id} holds resource {fact.resource}",
                value={"resource": fact.resource, "operation_id": operation_id},
                source=_source(resolver.find(("action", operation_id), position, _is(ev.ActionClaimed))),
                now=_action_now(resolver, operation_id),
            )
            for operation_id in fact.operations or ()
        ]
    if code == "approval_pending":
        facts = []
        for approval in fact.approvals or ():
            key = ("approval", f"{approval.conversation_id}/{approval.request_id}")
            entry = resolver.find(key)
            now = (
                Current(state="open" if isinstance(entry[1], ev.ApprovalOpened) else "resolved", source=_source(entry))
                if entry
                else None
            )
            facts.append(
                Fact(
                    name="approval",
                    text=f"approval {approval.request_id} open on {approval.conversation_id}",
                    value=msgspec.to_builtins(approval),
                    source=resolver.source(key, position, _is(ev.ApprovalOpened)),
                    now=now,
                )
            )
        return facts
    if code == "budget_exhausted":
        return [
            Fact(
                name="grant_budget",
                text=f"grant {fact.grant_id} used {fact.usage} of its token_limit {fact.token_limit}",
                value={"grant_id": fact.grant_id, "usage": fact.usage, "token_limit": fact.token_limit},
                source=resolver.source(("grant", fact.grant_id or ""), position, _is(ev.BudgetExhausted)),
            )
        ]
    return [Fact(name=code, text=code, value=msgspec.to_builtins(fact))]


_WAITING_TEXT = {
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
}


def _waiting_from_blocks(resolver: Resolver, runs: Runs, codes: list[str]) -> list[Waiting]:
    waiting = []
    for code in codes:
        since, fact, recorded = runs[code]
        facts = block_fact_facts(resolver, fact, recorded[0], _at_of(recorded)) if fact is not None else []
        waiting.append(Waiting(code=code, text=_WAITING_TEXT.get(code, code), facts=facts, since=_source(since)))
    return waiting


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


def _track_runs(runs: Runs, entry: Entry, codes: list[str], facts: list[ev.BlockFact]) -> None:
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


def _block_summary(codes: list[str]) -> str:
    return f"blocked_by [{', '.join(codes)}]" if codes else "blocked_by [] (nothing blocks it)"


# ============================================================ the explainers


def _explain_operation(resolver: Resolver, operation_id: str) -> Explanation:
    steps: list[Step] = []
    state = "unknown"
    runs: Runs = {}
    codes: list[str] = []
    last_change: Entry | None = None
    proposal: ev.ActionProposed | None = None
    attempts: list[str] = []
    fence: tuple[Entry, str] | None = None
    for entry in resolver.entries(("action", operation_id)):
        position, event, _ = entry
        kind = type(event)
        after = _action_state_after(event, operation_id)
        if after is not None:
            state, last_change = after, entry
            runs, codes = {}, []
        facts: list[Fact] = []
        if kind is ev.ActionProposed:
            proposal = event
            conversation_id = resolver.task_conversation(event.task_id)
            generation = f" generation {event.generation}" if event.generation is not None else ""
            owner = f"task {event.task_id}" if event.task_id else f"rule {event.rule_id}"
            summary = (
                f"proposed by {event.proposed_by}{generation} for {owner}: {event.operation} {event.target} "
                f"on {event.resource}, cause {event.cause_key}"
            )
            if event.cause_revision:
                summary += f" (at its update revision {event.cause_revision})"
            if not event.unattended:
                summary += "; attended"
            revisions = event.input_revisions
            facts.extend(
                fact
                for fact in (
                    (
                        _revision_fact(resolver, "task", ("task", event.task_id), revisions.task, position)
                        if event.task_id
                        else None
                    ),
                    _revision_fact(resolver, "grant", ("grant", event.grant_id), revisions.grant, position),
                )
                if fact is not None
            )
            facts.extend(_intent_facts(resolver, conversation_id, revisions.intent, None, position))
            for prerequisite in event.prerequisites:
                required = f" with {prerequisite.artifact_revision}" if prerequisite.artifact_revision else ""
                facts.append(
                    Fact(
                        name="requires",
                        text=f"requires {prerequisite.operation_id} {prerequisite.outcome}{required}",
                        value=msgspec.to_builtins(prerequisite),
                        source=_source(
                            resolver.find(("action", prerequisite.operation_id), position, _is(ev.ActionProposed))
                        ),
                        now=_action_now(resolver, prerequisite.operation_id),
                    )
                )
        elif kind is ev.ActionBlocked:
            codes = list(event.blocked_by)
            _track_runs(runs, entry, codes, event.facts)
            summary = _block_summary(codes)
            for fact in event.facts:
                for detail in block_fact_facts(resolver, fact, position, _at_of(entry)):
                    facts.append(msgspec.structs.replace(detail, text=f"{fact.code}: {detail.text}"))
        elif kind is ev.ActionClaimed:
            attempts.append(event.attempt_id)
            summary, facts = _claim_facts(resolver, event, position, proposal, _at_of(entry))
        elif kind is ev.AttemptUpdated:
            summary, facts = _attempt_update(event)
        elif kind is ev.ActionOutcomeReported:
            summary = _outcome_summary(event)
        elif kind is ev.ActionCancelled:
            summary = "cancelled"
        elif kind is ev.ActionCancelRequested:
            summary = f"cancel requested ({event.reason})"
        elif kind is ev.ActionRevalidated:
            revisions = event.input_revisions
            summary = "revalidated: pending again under current authority"
            task_id = proposal.task_id if proposal else None
            facts = [
                fact
                for fact in (
                    _revision_fact(resolver, "task", ("task", task_id), revisions.task, position) if task_id else None,
                    (
                        _revision_fact(resolver, "grant", ("grant", proposal.grant_id), revisions.grant, position)
                        if proposal
                        else None
                    ),
                )
                if fact is not None
            ]
        else:  # a fence or a re-stamp: PolicySet, GrantRevised, TaskRevised
            summary, facts = _fence_step(event, operation_id)
            if after == "fenced":
                fence = (entry, summary)
        steps.append(_step(entry, summary, state, facts))

    if proposal is None:
        raise ExplainError(f"no operation {operation_id!r}")
    waiting = _operation_waiting(resolver, state, codes, runs, last_change, attempts, fence)
    owner = f"task {proposal.task_id}" if proposal.task_id else f"rule {proposal.rule_id}"
    summary = f"{owner}, cause {proposal.cause_key}: {proposal.operation} {proposal.target} on {proposal.resource}"
    if state == "pending":
        summary += f"; {_block_summary(codes)}"
    related = [f"attempt {attempt}" for attempt in attempts]
    if any(step.event == "ActionOutcomeReported" for step in steps):
        related.append(f"cause outcome:{operation_id}")
        if proposal.task_id is not None:
            related.append(f"obligation {operation_id}")
    return Explanation(
        kind="operation", id=operation_id, state=state, summary=summary, steps=steps, waiting=waiting, related=related
    )


def _claim_facts(
    resolver: Resolver,
    event: ev.ActionClaimed,
    position: int,
    proposal: ev.ActionProposed | None,
    decided_at: str | None = None,
) -> tuple[str, list[Fact]]:
    envelope, claim = event.envelope, event.facts
    writes = f", writes {', '.join(envelope.write_paths)}" if envelope.write_paths else ""
    summary = (
        f"claimed as attempt {event.attempt_id}: {envelope.operation} {envelope.target} on {envelope.resource}{writes}"
    )
    task_id = proposal.task_id if proposal is not None else None
    grant_id = proposal.grant_id if proposal is not None else ""
    conversation_id = resolver.task_conversation(task_id)
    facts = [
        fact
        for fact in (
            _revision_fact(resolver, "task", ("task", task_id), envelope.task_revision, position) if task_id else None,
            _revision_fact(resolver, "grant", ("grant", grant_id), envelope.grant_revision, position),
            _revision_fact(resolver, "policy", ("policy",), envelope.policy_revision, position),
        )
        if fact is not None
    ]
    facts.extend(
        _intent_facts(
            resolver,
            conversation_id,
            envelope.intent_revision,
            _synced_at(resolver, conversation_id, position),
            position,
        )
    )
    binding = _binding_fact(resolver, conversation_id, claim.binding_generation, position)
    if binding is not None:
        facts.append(binding)
    unattended = proposal.unattended if proposal is not None else True
    if unattended or claim.heartbeat_at is not None:
        facts.append(
            _heartbeat_fact(resolver, claim.heartbeat_generation, claim.heartbeat_at, None, position, True, decided_at)
        )
    facts.extend(_prerequisite_fact(resolver, p, position) for p in claim.prerequisites)
    return summary, facts


def _synced_at(resolver: Resolver, conversation_id: str | None, position: int) -> int | None:
    """The intent revision synced when a claim was made: the latest
    `IntentSynced` before it (a claim is frequent: it does not repeat this)."""
    if conversation_id is None:
        return None
    entry = resolver.find(("intent", conversation_id), position, _is(ev.IntentSynced))
    return entry[1].synced_revision if entry is not None else 0


def _attempt_update(event: ev.AttemptUpdated) -> tuple[str, list[Fact]]:
    summary = f"attempt {event.attempt_id} {event.attempt_state}; action {event.action_state}"
    facts: list[Fact] = []
    refusal = event.refusal
    if refusal is not None:
        why = {
            "retry": (
                f"back to pending: attempt {refusal.attempts} of at most {refusal.max_attempts}, "
                "under current authority"
            ),
            "max_attempts": f"exhausted: {refusal.attempts} attempts reached max_attempts {refusal.max_attempts}",
            "task_revised": (
                f"fenced: the task moved to revision {refusal.task_revision} "
                f"(validated under {refusal.validated_task_revision}) while the attempt was out"
            ),
            "authority_narrowed": "fenced: the grant or the policy no longer allows it",
        }.get(refusal.reason, refusal.reason)
        facts.append(Fact(name="refusal", text=why, value=msgspec.to_builtins(refusal)))
    if event.restamped is not None:
        facts.append(
            Fact(
                name="restamped",
                text=f"re-stamped with grant revision {event.restamped.grant}",
                value=msgspec.to_builtins(event.restamped),
            )
        )
    return summary, facts


def _outcome_summary(event: ev.ActionOutcomeReported) -> str:
    summary = f"outcome {event.outcome}"
    if event.artifact_revision:
        summary += f", artifact {event.artifact_revision}"
    if event.evidence_ref:
        summary += f", evidence {event.evidence_ref}"
    if event.attempt_id:
        summary += f"; attempt {event.attempt_id} {event.attempt_state}"
    return summary


def _fence_step(event: Any, operation_id: str) -> tuple[str, list[Fact]]:
    kind = type(event)
    if kind is ev.PolicySet:
        what = f"policy revision {event.revision}"
    elif kind is ev.GrantRevised:
        what = f"grant {event.grant_id} revision {event.revision}"
    else:
        what = f"task {event.task_id} revision {event.revision}"
    if operation_id in event.fenced:
        because = getattr(event, "fenced_because", {}).get(operation_id)
        if kind is ev.TaskRevised:
            because = "the task was revised: pending actions are fenced (action.revalidate to go on)"
        summary = f"fenced by {what}"
        facts = [Fact(name="fenced_because", text=because or "no longer allowed", value=because)]
        return summary, facts
    return f"re-stamped: {what} still allows it", []


def _operation_waiting(
    resolver: Resolver,
    state: str,
    codes: list[str],
    runs: Runs,
    last_change: Entry | None,
    attempts: list[str],
    fence: tuple[Entry, str] | None,
) -> list[Waiting]:
    attempt = attempts[-1] if attempts else None
    since = _source(last_change)
    if state == "pending":
        if not codes:
            return [Waiting(code="claim", text="nothing blocks it: the next pass claims it", since=since)]
        return _waiting_from_blocks(resolver, runs, codes)
    if state == "fenced":
        text = "fenced: waits for action.revalidate under current authority (or action.cancel)"
        facts = [Fact(name="fence", text=fence[1])] if fence is not None else []
        return [Waiting(code="action.revalidate", text=text, facts=facts, since=_source(fence[0]) if fence else since)]
    expects = {
        "submitting": (
            "executor.receipt",
            f"attempt {attempt} was handed over: waits for executor.receipt (or an outcome)",
        ),
        "queued": (
            "executor.receipt",
            f"attempt {attempt} is queued: waits for executor.receipt accepted (or an outcome)",
        ),
        "accepted": ("executor.outcome", f"attempt {attempt} was accepted: waits for executor.outcome"),
        "unknown": (
            "executor.reconcile",
            f"attempt {attempt} is unknown: never retried blindly, waits for executor.reconcile",
        ),
        "cancel_requested": (
            "executor.outcome",
            "cancel requested: waits for the executor's outcome (cancelled) or a refusal",
        ),
    }
    if state in expects:
        code, text = expects[state]
        return [Waiting(code=code, text=text, since=since)]
    return []


def _explain_attempt(resolver: Resolver, attempt_id: str) -> Explanation:
    steps: list[Step] = []
    state = "unknown"
    claim: ev.ActionClaimed | None = None
    last: Entry | None = None
    for entry in resolver.entries(("attempt", attempt_id)):
        position, event, _ = entry
        last = entry
        if isinstance(event, ev.ActionClaimed):
            claim, state = event, "submitting"
            proposal_entry = resolver.find(("action", event.operation_id), position, _is(ev.ActionProposed))
            summary, facts = _claim_facts(
                resolver, event, position, proposal_entry[1] if proposal_entry else None, _at_of(entry)
            )
        elif isinstance(event, ev.AttemptUpdated):
            state = event.attempt_state
            summary, facts = _attempt_update(event)
        else:
            state = event.attempt_state or state
            summary, facts = _outcome_summary(event), []
        steps.append(_step(entry, summary, state, facts))
    if claim is None:
        raise ExplainError(f"no attempt {attempt_id!r}")
    action_now = _action_now(resolver, claim.operation_id)
    waiting: list[Waiting] = []
    if attempt_id == _latest_attempt(resolver, claim.operation_id):
        expects = {
            "submitting": ("executor.receipt", "waits for executor.receipt (or an outcome)"),
            "queued": ("executor.receipt", "waits for executor.receipt accepted (or an outcome)"),
            "unknown": ("executor.reconcile", "unknown: never retried blindly, waits for executor.reconcile"),
        }
        if state in expects and (
            action_now is None or action_now.state not in ("succeeded", "failed", "cancelled", "exhausted")
        ):
            code, text = expects[state]
            waiting.append(Waiting(code=code, text=text, since=_source(last)))
    summary = f"attempt of {claim.operation_id}"
    if action_now is not None:
        summary += f" (now {action_now.state})"
    return Explanation(
        kind="attempt",
        id=attempt_id,
        state=state,
        summary=summary,
        steps=steps,
        waiting=waiting,
        related=[f"operation {claim.operation_id}"],
    )


def _latest_attempt(resolver: Resolver, operation_id: str) -> str | None:
    entry = resolver.find(("action", operation_id), where=_is(ev.ActionClaimed))
    return entry[1].attempt_id if entry is not None else None


def _delivery_facts(resolver: Resolver, event: ev.DeliveryCreated, position: int) -> list[Fact]:
    facts: list[Fact] = []
    rule_text = {
        "human_turn": "spec 5.3 rule 3: idle with a human message queued: a human turn",
        "wake": "spec 5.3 rule 4: idle, something deliverable, no * pause: one coalesced wake",
        "steer": "spec 5.3 rule 2: running with steer: true: urgent updates steered into the turn",
        "reseed": "spec 5.3 epochs: a context reset's bounded reseed of the control state",
    }
    if event.rule:
        facts.append(Fact(name="rule", text=rule_text.get(event.rule, event.rule), value=event.rule))
    budget = event.budget
    if budget is not None:
        text = (
            f"budget: context {budget.context_tokens} + tokens {event.tokens} + reserve {budget.reserve} "
            f"<= limit {budget.context_limit} (room {budget.room}: messages {budget.message_tokens}, "
            f"control {budget.control_tokens}, updates {budget.update_tokens})"
        )
        facts.append(Fact(name="budget", text=text, value=msgspec.to_builtins(budget)))
    if event.messages:
        facts.append(Fact(name="messages", text=f"messages {', '.join(event.messages)}", value=list(event.messages)))
    for candidate in event.candidates:
        key = ("update", candidate.cause_key)
        revision = candidate.revision
        triaged = resolver.find(key, position, lambda e, r=revision: type(e) is ev.UpdateTriaged and e.revision == r)
        priority = (
            f", notification_priority {candidate.notification_priority}"
            if candidate.notification_priority is not None
            else ""
        )
        optional = " (routine, optional)" if candidate.optional else ""
        verdict = {
            "included": "included",
            "does_not_fit": "skipped: does not fit",
            "over_wake_batch_max": "left: the wake was full (wake_batch_max)",
        }
        facts.append(
            Fact(
                name="candidate",
                text=(
                    f"{candidate.cause_key} revision {revision} ({candidate.disposition}{priority}, "
                    f"{candidate.tokens} tokens){optional}: {verdict.get(candidate.verdict, candidate.verdict)}"
                ),
                value=msgspec.to_builtins(candidate),
                source=_source(triaged),
            )
        )
    if event.candidates_total > len(event.candidates):
        facts.append(
            Fact(
                name="candidates_not_recorded",
                text=f"{event.candidates_total - len(event.candidates)} more ranked candidates (not recorded)",
                value=event.candidates_total - len(event.candidates),
            )
        )
    return facts


def _delivery_summary(event: ev.DeliveryCreated) -> str:
    what = []
    if event.messages:
        what.append(f"messages [{', '.join(event.messages)}]")
    if event.included:
        what.append("updates [" + ", ".join(f"{cause_key} r{revision}" for cause_key, revision in event.included) + "]")
    turn = f" of turn {event.turn_id}" if event.turn_id else ""
    return f"{event.kind} delivery {event.delivery_id}{turn}, epoch {event.epoch}, {event.tokens} tokens: " + (
        "; ".join(what) or "nothing but its control state"
    )


def _explain_delivery(resolver: Resolver, delivery_id: str) -> Explanation:
    steps: list[Step] = []
    state = "unknown"
    created: ev.DeliveryCreated | None = None
    last: Entry | None = None
    conversation_id = numbered_owner(delivery_id, "d") or ""
    entries = sorted(
        resolver.entries(("delivery", delivery_id)) + resolver.entries(("conversation", conversation_id)),
        key=lambda e: e[0],
    )
    seen: set[int] = set()
    settled = False  # released, or its epoch is over: nothing it waits for matters now
    for entry in entries:
        position, event, _ = entry
        if position in seen:
            continue
        seen.add(position)
        kind = type(event)
        facts: list[Fact] = []
        if kind is ev.DeliveryCreated:
            created, state, last = event, "submitting", entry
            summary, facts = _delivery_summary(event), _delivery_facts(resolver, event, position)
        elif created is None:
            continue
        elif kind is ev.DeliveryReceipted:
            state, last = event.attempt_state, entry
            summary = f"provider says {event.attempt_state}; context now {event.context_tokens} tokens"
            if event.releases:
                summary += "; it holds its revisions no more"
                settled = True
        elif kind is ev.TurnEnded:
            if delivery_id in event.released:
                summary = f"turn {event.turn_id} ended {event.outcome}: its revisions are released"
                settled = True
            else:
                summary = f"turn {event.turn_id} ended {event.outcome} because this delivery was {state}"
        elif kind is ev.ContextReset:
            if event.epoch <= created.epoch:
                continue
            summary = f"context reset ({event.reason}): epoch {event.epoch}; this delivery counts for nothing now"
            settled = True
        elif kind is ev.ObligationMet:
            summary = f"met the obligation of {event.operation_id} (turn {event.turn_id} completed)"
        elif kind is ev.ObligationDue:
            summary = f"turn {event.turn_id} completed without listing {event.operation_id}: its obligation is due"
        elif kind is ev.AlertResolved:
            summary = f"resolved {event.alert_id}: {event.detail}"
        else:
            continue
        steps.append(_step(entry, summary, state, facts))
    if created is None:
        raise ExplainError(f"no delivery {delivery_id!r}")
    waiting = []
    if settled:
        pass
    elif state == "submitting":
        waiting.append(
            Waiting(code="provider.receipt", text="sent for delivery: waits for provider.receipt", since=_source(last))
        )
    elif state == "unknown":
        waiting.append(
            Waiting(
                code="provider.reconcile",
                text="unknown: holds its revisions until provider.reconcile (no blind resend)",
                since=_source(last),
            )
        )
    related = [f"turn {created.turn_id}"] if created.turn_id else []
    related.extend(f"cause {cause_key}" for cause_key, _ in created.included)
    return Explanation(
        kind="delivery",
        id=delivery_id,
        state=state,
        summary=_delivery_summary(created),
        steps=steps,
        waiting=waiting,
        related=related,
    )


def _explain_turn(resolver: Resolver, turn_id: str) -> Explanation:
    steps: list[Step] = []
    state = "unknown"
    started: ev.TurnStarted | None = None
    deliveries: list[str] = []
    last: Entry | None = None
    for entry in resolver.entries(("turn", turn_id)):
        position, event, _ = entry
        kind = type(event)
        facts: list[Fact] = []
        if kind is ev.TurnStarted:
            started, state, last = event, "running", entry
            rule = {
                "human_turn": "spec 5.3 rule 3 (a human message queued)",
                "wake": "spec 5.3 rule 4 (a coalesced wake)",
            }
            summary = (
                f"{event.kind} turn started in epoch {event.epoch}: {rule.get(event.rule, event.rule or event.kind)}"
            )
        elif kind is ev.DeliveryCreated:
            deliveries.append(event.delivery_id)
            summary, facts = _delivery_summary(event), _delivery_facts(resolver, event, position)
        elif kind is ev.TurnEnded:
            state, last = event.outcome, entry
            summary = f"ended {event.outcome}"
            if event.delivery_id:
                summary += f" because {event.delivery_id} was refused or not received"
            if event.requeued:
                summary += f"; messages back at the front of the queue: {', '.join(event.requeued)}"
            if event.delivered is not None:
                facts.append(
                    Fact(
                        name="delivered",
                        text=f"delivered listed: [{', '.join(event.delivered)}]",
                        value=event.delivered,
                    )
                )
        elif kind is ev.ObligationMet:
            summary = f"met the obligation of {event.operation_id} ({event.delivery_id})"
        elif kind is ev.ObligationDue:
            summary = f"left {event.operation_id} out of delivered: its obligation is due"
        else:
            continue
        steps.append(_step(entry, summary, state, facts))
    if started is None:
        raise ExplainError(f"no turn {turn_id!r}")
    for delivery_id in deliveries:
        for entry in resolver.entries(("delivery", delivery_id)):
            if isinstance(entry[1], ev.DeliveryReceipted):
                steps.append(
                    _step(
                        entry,
                        f"{delivery_id}: provider says {entry[1].attempt_state}",
                        _state_at(steps, entry[0]) or state,
                    )
                )
    steps.sort(key=lambda step: step.position)
    waiting = []
    if state == "running":
        waiting.append(Waiting(code="turn.ended", text="running: waits for turn.ended", since=_source(last)))
    related = [f"delivery {d}" for d in deliveries]
    return Explanation(
        kind="turn",
        id=turn_id,
        state=state,
        summary=f"{started.kind} turn of {started.conversation_id}",
        steps=steps,
        waiting=waiting,
        related=related,
    )


def _state_at(steps: list[Step], position: int) -> str | None:
    """The state the steps before `position` left (for steps folded in later)."""
    current = None
    for step in sorted(steps, key=lambda s: s.position):
        if step.position > position:
            break
        current = step.state
    return current


def _obligation_fact(resolver: Resolver, operation_id: str, position: int) -> Fact:
    """The obligation a fallback_delivery alert is about (its id names it)."""
    opened = resolver.find(("obligation", operation_id), position, _is(ev.ObligationOpened))
    latest = resolver.find(("obligation", operation_id))
    now = None
    if latest is not None:
        state = {ev.ObligationOpened: "open", ev.ObligationDue: "due", ev.ObligationMet: "met"}[type(latest[1])]
        now = Current(state=state, source=_source(latest))
    text = f"obligation of {operation_id}"
    if opened is not None:
        text += f": tell {opened[1].conversation_id} about {opened[1].cause_key} by {rfc3339(opened[1].due_at)}"
    return Fact(name="obligation", text=text, value=operation_id, source=_source(opened), now=now)


def _alert_facts(
    resolver: Resolver, facts: ev.AlertFacts | None, position: int, decided_at: str | None = None
) -> list[Fact]:
    if facts is None:
        return []
    result: list[Fact] = []
    if facts.operation_id is not None and facts.reason == "obligation_met":
        result.append(_obligation_fact(resolver, facts.operation_id, position))
    elif facts.operation_id is not None:
        result.append(
            Fact(
                name="operation",
                text=f"operation {facts.operation_id}",
                value=facts.operation_id,
                source=_source(resolver.find(("action", facts.operation_id), position)),
                now=_action_now(resolver, facts.operation_id),
            )
        )
    if facts.heartbeat_at is not None or facts.watchdog_max_age_s is not None:
        result.append(
            _heartbeat_fact(
                resolver,
                facts.heartbeat_generation,
                facts.heartbeat_at,
                facts.watchdog_max_age_s,
                position,
                facts.reason == "fresh_heartbeat",
                decided_at,
            )
        )
    if facts.task_id is not None and facts.question_key is not None:
        question_id = _question_id(facts.task_id, facts.question_key)
        result.append(
            Fact(
                name="question",
                text=f"question {question_id}"
                + (f" open since {rfc3339(facts.first_seen_at)}, k = {facts.k}" if facts.k else ""),
                value=question_id,
                source=resolver.source(("question", question_id), position, _is(ev.QuestionRaised)),
                now=_question_now(resolver, question_id),
            )
        )
    if facts.request_id is not None and facts.conversation_id is not None:
        key = ("approval", f"{facts.conversation_id}/{facts.request_id}")
        result.append(
            Fact(
                name="approval",
                text=f"approval {facts.request_id} on {facts.conversation_id}",
                value={"conversation_id": facts.conversation_id, "request_id": facts.request_id},
                source=resolver.source(key, position, _is(ev.ApprovalOpened)),
            )
        )
    if facts.grant_id is not None:
        result.append(
            Fact(
                name="grant_budget",
                text=f"grant {facts.grant_id}: usage {facts.usage}, token_limit {facts.token_limit}",
                value={"grant_id": facts.grant_id, "usage": facts.usage, "token_limit": facts.token_limit},
                source=resolver.source(("grant", facts.grant_id), position),
            )
        )
    if facts.incident_id is not None:
        result.append(
            Fact(
                name="incident",
                text=f"incident {facts.incident_id}",
                value=facts.incident_id,
                source=resolver.source(("incident", facts.incident_id), position),
            )
        )
    if facts.reconciliation_id is not None:
        result.append(
            Fact(
                name="reconciliation",
                text=f"reconciliation {facts.reconciliation_id} of {facts.consumer_id}",
                value=facts.reconciliation_id,
                source=resolver.source(("reconciliation", facts.reconciliation_id), position),
            )
        )
    if facts.room is not None:
        extra = (
            f", smallest candidate {facts.smallest_tokens} tokens of {facts.candidates}"
            if facts.smallest_tokens is not None
            else ""
        )
        result.append(Fact(name="room", text=f"room {facts.room} tokens{extra}", value=facts.room))
    if facts.delivery_id is not None:
        result.append(
            Fact(
                name="delivery",
                text=f"delivery {facts.delivery_id}" + (f" of turn {facts.turn_id}" if facts.turn_id else ""),
                value=facts.delivery_id,
                source=resolver.source(("delivery", facts.delivery_id), position, _is(ev.DeliveryCreated)),
            )
        )
    elif facts.turn_id is not None:
        result.append(
            Fact(
                name="turn",
                text=f"turn {facts.turn_id}",
                value=facts.turn_id,
                source=resolver.source(("turn", facts.turn_id), position),
            )
        )
    if facts.due_at is not None:
        result.append(Fact(name="due_at", text=f"due at {rfc3339(facts.due_at)}", value=rfc3339(facts.due_at)))
    return result


def _explain_alert(resolver: Resolver, alert_id: str) -> Explanation:
    steps: list[Step] = []
    state = "unknown"
    count = 0
    raised: ev.AlertRaised | None = None
    last_raised: Entry | None = None
    for entry in resolver.entries(("alert", alert_id)):
        position, event, _ = entry
        kind = type(event)
        facts: list[Fact] = []
        if kind is ev.AlertRaised:
            raised, state, last_raised = event, "raised", entry
            count += 1
            about = (
                f" about {event.cause_key}" + (f" revision {event.revision}" if event.revision is not None else "")
                if event.cause_key
                else ""
            )
            summary = (
                f"raised (occurrence {count}){about}: {event.detail}"
                if event.detail
                else f"raised (occurrence {count}){about}"
            )
            facts = _alert_facts(resolver, event.facts, position, _at_of(entry))
            if event.kind == "fallback_delivery":
                facts = [_obligation_fact(resolver, alert_id.partition(":")[2], position), *facts]
        elif kind is ev.AlertSeen:
            state, summary = "seen", "seen by the human"
        elif kind is ev.AlertResolved:
            state = "resolved"
            if event.by == "engine":
                summary = "resolved by the engine" + (f": {event.detail}" if event.detail else "")
                facts = _alert_facts(resolver, event.facts, position, _at_of(entry))
            else:
                summary = "resolved by the human (the condition may go on; raised again only on a new occurrence)"
        else:
            continue
        steps.append(_step(entry, summary, state, facts))
    if raised is None:
        raise ExplainError(f"no alert {alert_id!r}")
    waiting = []
    if state in ("raised", "seen"):
        text = (
            "the engine resolves it when it sees its condition end (spec 6); "
            "alert.seen and alert.resolve are the human's"
        )
        waiting.append(Waiting(code="alert.resolve", text=text, since=_source(last_raised)))
    return Explanation(
        kind="alert",
        id=alert_id,
        state=state,
        summary=f"{raised.kind} alert, raised {count} time(s)",
        steps=steps,
        waiting=waiting,
        related=_alert_related(raised),
    )


def _alert_related(raised: ev.AlertRaised) -> list[str]:
    facts = raised.facts
    related = []
    if raised.kind == "fallback_delivery":
        related.append(f"obligation {raised.alert_id.partition(':')[2]}")
    elif facts is not None and facts.operation_id:
        related.append(f"operation {facts.operation_id}")
    if raised.cause_key:
        related.append(f"cause {raised.cause_key}")
    if facts is not None and facts.task_id and facts.question_key:
        related.append(f"question {facts.task_id}/{facts.question_key}")
    if facts is not None and facts.reconciliation_id:
        related.append(f"reconciliation {facts.reconciliation_id}")
    return related


def _explain_question(resolver: Resolver, question_id: str) -> Explanation:
    steps: list[Step] = []
    state = "unknown"
    raised: ev.QuestionRaised | None = None
    held: dict[str, int] = {}
    entries = sorted(
        resolver.entries(("question", question_id)) + resolver.entries(("holds", question_id)), key=lambda e: e[0]
    )
    seen: set[int] = set()
    for entry in entries:
        position, event, _ = entry
        if position in seen:
            continue
        seen.add(position)
        kind = type(event)
        facts: list[Fact] = []
        if kind is ev.QuestionRaised:
            raised, state = event, "open"
            affected = event.affected if isinstance(event.affected, str) else "[" + ", ".join(event.affected) + "]"
            again = "reopened" if event.reopened else ("raised again" if event.times_raised > 1 else "raised")
            summary = (
                f"{again} (times_raised {event.times_raised}) for {event.recipient}: {event.blocking_reason}; "
                f"affected {affected}, evidence revision {event.evidence_revision}"
            )
        elif kind is ev.QuestionResurfaced:
            summary = f"resurfaced: still open {event.k} x question_resurface_s after it was first seen"
        elif kind is ev.QuestionAnswered:
            state = "answered"
            summary = f"answered: {event.answer!r} (folded into the task's fallback_decisions; the task is revised)"
        elif kind is ev.ActionBlocked:
            names = [
                q
                for f in event.facts
                for q in f.questions or ()
                if _question_id(q.task_id, q.question_key) == question_id
            ]
            code = next(
                f.code
                for f in event.facts
                if any(_question_id(q.task_id, q.question_key) == question_id for q in f.questions or ())
            )
            held[event.operation_id] = position
            summary = f"holds {event.operation_id} ({code}); its {_block_summary(list(event.blocked_by))}"
            facts = [_question_fact(resolver, names[0], position)] if names else []
        elif kind is ev.TaskHoldsChanged:
            summary = f"holds task {event.task_id}; its holds [{', '.join(event.holds)}]"
        else:
            continue
        steps.append(_step(entry, summary, state, facts))
    if raised is None:
        raise ExplainError(f"no question {question_id!r}")
    waiting = []
    if state == "open":
        facts = []
        for operation_id, position in held.items():
            now = resolver.find(("action", operation_id))
            if now is not None and now[0] == position:
                facts.append(
                    Fact(name="holds", text=f"holds {operation_id} now", value=operation_id, source=_source(now))
                )
        waiting.append(
            Waiting(
                code="question.answer",
                text=f"open: waits for question.answer (asked of {raised.recipient})",
                facts=facts,
                since=_source(resolver.find(("question", question_id), where=_is(ev.QuestionRaised))),
            )
        )
    return Explanation(
        kind="question",
        id=question_id,
        state=state,
        summary=f"question on task {raised.task_id}: {raised.blocking_reason}",
        steps=steps,
        waiting=waiting,
        related=[f"task {raised.task_id}", *(f"operation {op}" for op in held)],
    )


def _authority(operations: list[str], roots: list[str]) -> str:
    return f"operations [{', '.join(operations)}], write roots [{', '.join(roots)}]"


def _explain_task(resolver: Resolver, task_id: str) -> Explanation:
    steps: list[Step] = []
    state = "unknown"
    revision = 0
    holds: list[str] = []
    runs: Runs = {}
    delegated: ev.TaskDelegated | None = None
    actions: list[str] = []
    questions: list[str] = []
    entries = sorted(
        resolver.entries(("task", task_id)) + resolver.entries(("task_action", task_id)), key=lambda e: e[0]
    )
    for entry in entries:
        position, event, _ = entry
        kind = type(event)
        facts: list[Fact] = []
        if kind is ev.GrantIssued:
            summary = (
                f"grant {event.grant_id} revision 1 issued under policy revision {event.policy_revision}: "
                f"{_authority(event.allowed_operations, event.write_roots)}"
            )
            if event.dropped_operations or event.dropped_roots:
                summary += f"; narrowed away: [{', '.join(event.dropped_operations + event.dropped_roots)}]"
            policy = _revision_fact(resolver, "policy", ("policy",), event.policy_revision, position)
            facts = [policy] if policy is not None else []
        elif kind is ev.TaskDelegated:
            delegated, state, revision = event, "active", 1
            depends = f", depends on [{', '.join(event.depends_on)}]" if event.depends_on else ""
            summary = f"delegated from {event.conversation_id} (revision 1): {event.goal}{depends}"
        elif kind is ev.TaskRevised:
            revision = event.revision
            summary = f"revised to revision {event.revision}" + (
                f"; fenced [{', '.join(event.fenced)}]" if event.fenced else ""
            )
        elif kind is ev.TaskHoldsChanged:
            holds = list(event.holds)
            _track_runs(runs, entry, holds, event.facts)
            summary = f"holds [{', '.join(holds)}]"
            for fact in event.facts:
                for detail in block_fact_facts(resolver, fact, position, _at_of(entry)):
                    facts.append(msgspec.structs.replace(detail, text=f"{fact.code}: {detail.text}"))
        elif kind is ev.TaskCompleted:
            state, summary = "completed", f"completed with evidence [{', '.join(event.evidence_refs)}]"
        elif kind is ev.TaskCancelled:
            state, summary = "cancelled", "cancelled: grant revoked, live actions cancelled"
        elif kind is ev.QuestionRaised:
            question_id = _question_id(event.task_id, event.question_key)
            if question_id not in questions:
                questions.append(question_id)
            summary = f"question {question_id} raised: {event.blocking_reason}"
        elif kind is ev.QuestionAnswered:
            summary = f"question {_question_id(event.task_id, event.question_key)} answered"
        elif kind is ev.ActionProposed:
            actions.append(event.operation_id)
            summary = f"action {event.operation_id} proposed ({event.operation} {event.target})"
        elif kind in (ev.ScopePaused, ev.ScopeResumed):
            summary = "paused" if kind is ev.ScopePaused else "resumed"
        else:
            continue
        label = f"{state}, revision {revision}" if state != "unknown" else None
        steps.append(_step(entry, summary, label, facts))
    if delegated is None:
        raise ExplainError(f"no task {task_id!r}")
    for entry in resolver.entries(("grant", delegated.grant_id)):
        position, event, _ = entry
        if isinstance(event, ev.GrantRevised):
            summary = (
                f"grant {event.grant_id} revised to revision {event.revision}: "
                f"{_authority(event.allowed_operations, event.write_roots)}"
            )
            facts = [
                Fact(name="fenced_because", text=f"{op}: {why}", value={op: why})
                for op, why in event.fenced_because.items()
            ]
            steps.append(_step(entry, summary, _state_at(steps, position), facts))
        elif isinstance(event, ev.GrantRevoked):
            steps.append(_step(entry, f"grant {event.grant_id} revoked", _state_at(steps, position)))
        elif isinstance(event, ev.BudgetExhausted):
            steps.append(
                _step(
                    entry,
                    f"grant {event.grant_id} budget exhausted: usage {event.usage} >= token_limit {event.token_limit}",
                    _state_at(steps, position),
                )
            )
    steps.sort(key=lambda step: step.position)
    waiting = _waiting_from_blocks(resolver, runs, holds) if state == "active" and holds else []
    summary = f"{state}, revision {revision}, holds [{', '.join(holds)}]: {delegated.goal}"
    related = [f"operation {op}" for op in actions] + [f"question {q}" for q in questions]
    return Explanation(
        kind="task", id=task_id, state=state, summary=summary, steps=steps, waiting=waiting, related=related
    )


def _explain_obligation(resolver: Resolver, operation_id: str) -> Explanation:
    steps: list[Step] = []
    state = "unknown"
    opened: ev.ObligationOpened | None = None
    alert_id = f"fallback_delivery:{operation_id}"
    entries = sorted(
        resolver.entries(("obligation", operation_id)) + resolver.entries(("alert", alert_id)), key=lambda e: e[0]
    )
    last: Entry | None = None
    for entry in entries:
        position, event, _ = entry
        kind = type(event)
        facts: list[Fact] = []
        if kind is ev.ObligationOpened:
            opened, state, last = event, "open", entry
            summary = (
                f"opened: {event.conversation_id} must be told about {event.cause_key}; "
                f"due at {rfc3339(event.due_at)} "
                "(the outcome's time + fallback_after_s)"
            )
            outcome = resolver.find(("action", operation_id), position, _is(ev.ActionOutcomeReported))
            if outcome is not None:
                facts.append(
                    Fact(
                        name="outcome",
                        text=_outcome_summary(outcome[1]),
                        value=outcome[1].outcome,
                        source=_source(outcome),
                    )
                )
        elif kind is ev.ObligationMet:
            state, last = "met", entry
            summary = (
                f"met: turn {event.turn_id} completed with {event.delivery_id} accepted, holding {event.cause_key}"
            )
        elif kind is ev.ObligationDue:
            state, last = "due", entry
            if event.reason == "left_out":
                summary = (
                    f"due: turn {event.turn_id} completed holding it ({event.delivery_id}) "
                    "but did not list it in delivered"
                )
            else:
                summary = f"due: fallback_after_s passed (due at {rfc3339(opened.due_at) if opened else '?'})"
        elif kind is ev.AlertRaised:
            summary = f"alert {alert_id} raised: {event.detail}"
        elif kind is ev.AlertResolved:
            summary = f"alert {alert_id} resolved by {event.by}"
        else:
            continue
        steps.append(_step(entry, summary, state, facts))
    if opened is None:
        raise ExplainError(f"no obligation {operation_id!r}")
    waiting = []
    if state in ("open", "due"):
        text = (
            f"waits for a completed turn of {opened.conversation_id} whose accepted delivery holds {opened.cause_key} "
            f"(and lists it in delivered, when given)"
        )
        waiting.append(Waiting(code="turn.ended", text=text, since=_source(last)))
    return Explanation(
        kind="obligation",
        id=operation_id,
        state=state,
        summary=f"tell {opened.conversation_id} about {opened.cause_key}",
        steps=steps,
        waiting=waiting,
        related=[
            f"operation {operation_id}",
            f"cause {opened.cause_key}",
            *([f"alert {alert_id}"] if any(s.event == "AlertRaised" for s in steps) else []),
        ],
    )


def _explain_cause(resolver: Resolver, cause_key: str) -> Explanation:
    steps: list[Step] = []
    revision = 0
    triage = "none"
    disposition: str | None = None
    found = False
    related: list[str] = []
    for entry in resolver.entries(("update", cause_key)):
        position, event, _ = entry
        kind = type(event)
        facts: list[Fact] = []
        if kind is ev.ObservationRecorded:
            found = True
            if event.update_revision is not None:
                revision, triage, disposition = event.update_revision, "untriaged", None
                summary = f"observed by {event.source_id} via {event.via}: revision {revision}" + (
                    " (partial)" if not event.complete else ""
                )
            else:
                summary = (
                    f"observed by {event.source_id} via {event.via}, from a background's own activity: no revision"
                )
            if event.status:
                summary += f", status {event.status}"
            if event.deleted:
                summary += ", deleted"
        elif kind is ev.ObservationRepeated:
            found = True
            summary = f"repeat from {event.source_id} via {event.via}" + ("" if event.counted else " (not counted)")
            if steps and steps[-1].event == "ObservationRepeated":
                previous = steps[-1]
                steps[-1] = msgspec.structs.replace(
                    previous, count=previous.count + 1, summary=f"repeats from {event.source_id}"
                )
                continue
        elif kind is ev.UpdateRevised:
            found = True
            revision, triage, disposition = event.revision, "untriaged", None
            summary = f"revision {revision} made by the engine ({event.kind})"
        elif kind is ev.UpdateTriaged:
            triage, disposition = "triaged", event.disposition
            by = "the engine" if event.by == "engine" else f"{event.by} (generation {event.generation})"
            summary = f"revision {event.revision} triaged {event.disposition} by {by}; belongs to {event.foreground_id}"
        elif kind is ev.DeliveryCreated:
            held = [r for c, r in event.included if c == cause_key]
            summary = f"revision {held[0] if held else '?'} put into {event.kind} delivery {event.delivery_id}"
            related.append(f"delivery {event.delivery_id}")
        elif kind is ev.AlertRaised:
            summary = f"alert {event.alert_id} raised: {event.detail}"
            related.append(f"alert {event.alert_id}")
        elif kind is ev.ActionProposed:
            found = True
            summary = f"action {event.operation_id} proposed for this cause (at update revision {event.cause_revision})"
            related.append(f"operation {event.operation_id}")
        elif kind is ev.CardProposed:
            found = True
            summary = f"card {event.card_id} proposed: {event.summary}"
        else:
            continue
        steps.append(_step(entry, summary, _cause_state(revision, triage, disposition), facts))
    if not found:
        raise ExplainError(f"no cause {cause_key!r}")
    state = _cause_state(revision, triage, disposition)
    waiting = []
    if triage == "untriaged":
        waiting.append(
            Waiting(
                code="triage.classify",
                text=f"revision {revision} is untriaged: waits for triage.classify from the background",
            )
        )
    return Explanation(
        kind="cause",
        id=cause_key,
        state=state,
        summary=f"cause {cause_key}",
        steps=steps,
        waiting=waiting,
        related=list(dict.fromkeys(related)),
    )


def _cause_state(revision: int, triage: str, disposition: str | None) -> str:
    if not revision:
        return "no inbox update"
    return f"revision {revision}, {triage}" + (f" {disposition}" if disposition else "")


def _explain_reconciliation(resolver: Resolver, reconciliation_id: str) -> Explanation:
    steps: list[Step] = []
    state = "unknown"
    started: ev.ReconciliationStarted | None = None
    for entry in resolver.entries(("reconciliation", reconciliation_id)):
        event = entry[1]
        if isinstance(event, ev.ReconciliationStarted):
            started, state = event, "open"
            why = (
                f"the log is in epoch {event.epoch_seen}, the cursor was in {event.cursor_epoch}"
                if event.reason == "epoch_changed"
                else (
                    f"history deleted beyond the cursor: max_deleted_seq {event.max_deleted_seq} "
                    f"> seq {event.cursor_seq}"
                )
            )
            summary = f"started ({event.reason}): {why}"
        else:
            state = "committed"
            summary = (
                f"committed: cursor at epoch {event.epoch}, seq {event.seq} = max(retained_head {event.retained_head}, "
                f"watermark {event.watermark}, where it had reached); gaps {event.gaps}"
            )
        steps.append(_step(entry, summary, state))
    if started is None:
        raise ExplainError(f"no reconciliation {reconciliation_id!r}")
    waiting = []
    if state == "open":
        waiting.append(
            Waiting(code="log.reconcile", text=f"every batch is refused until log.reconcile names {reconciliation_id}")
        )
    return Explanation(
        kind="reconciliation",
        id=reconciliation_id,
        state=state,
        summary=f"reconciliation of {started.consumer_id}",
        steps=steps,
        waiting=waiting,
        related=[f"alert reconciliation_required:{started.consumer_id}"],
    )


_EXPLAINERS: dict[str, Callable[[Resolver, str], Explanation]] = {
    "operation": _explain_operation,
    "attempt": _explain_attempt,
    "delivery": _explain_delivery,
    "turn": _explain_turn,
    "alert": _explain_alert,
    "question": _explain_question,
    "task": _explain_task,
    "obligation": _explain_obligation,
    "cause": _explain_cause,
    "reconciliation": _explain_reconciliation,
}


# ================================================================= the walk


def _grow(identifier: str) -> Callable[[Any, set[tuple]], None]:
    """Keys a thing's own events lead to: its task's grant, its turn's deliveries."""

    def grow(event: Any, wanted: set[tuple]) -> None:
        kind = type(event)
        if kind is ev.TaskDelegated and event.task_id == identifier:
            wanted.add(("grant", event.grant_id))
        elif kind is ev.DeliveryCreated and event.turn_id == identifier:
            wanted.add(("delivery", event.delivery_id))

    return grow


def matching_kinds(log: _Log, identifier: str) -> list[str]:
    kinds = []
    for kind in KINDS:
        entries = log.by_key.get((_KIND_KEYS[kind], identifier), ())
        if any(isinstance(entry[1], _DEFINED_BY[kind]) for entry in entries):
            kinds.append(kind)
    return kinds


def explain(store: EventStore, identifier: str, *, kind: str | None = None) -> list[Explanation]:
    """Explain `identifier` from the store's log: one Explanation per kind it
    names (only `kind`, if given). Raises ExplainError if it names nothing."""
    return document(store, identifier, kind=kind).matches


def document(store: EventStore, identifier: str, *, kind: str | None = None, prefilter: bool = True) -> Document:
    """`explain`, with the id, the store's head and trace files (the JSON document)."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
    wanted: set[tuple] = {(_KIND_KEYS[k], identifier) for k in KINDS}
    delivery_conversation = numbered_owner(identifier, "d")
    if delivery_conversation is not None:
        wanted.add(("conversation", delivery_conversation))
    wanted.add(("alert", f"fallback_delivery:{identifier}"))
    wanted.add(("holds", identifier))
    wanted.add(("task_action", identifier))
    log = _Log()
    log.read(store, wanted, _grow(identifier), prefilter, mention=identifier)
    if log.head == 0:
        raise ExplainError(f"the store is empty: nothing is named {identifier!r}")
    kinds = matching_kinds(log, identifier)
    if not kinds:
        refused = "; ".join(
            (
                f"input {r.seq} ({r.file}:{r.line} {r.type}) was rejected {r.rejected}"
                if r.line
                else f"input {r.seq} ({r.type}) was rejected {r.rejected}"
            )
            for r in log.rejected
        )
        hint = f"; it is named by refused inputs only: {refused}" if refused else ""
        raise ExplainError(f"nothing in the store is named {identifier!r} (kinds: {', '.join(KINDS)}){hint}")
    if kind is not None:
        if kind not in kinds:
            raise ExplainError(f"{identifier!r} is no {kind} (it is: {', '.join(kinds)})")
        kinds = [kind]
    for _ in range(resolve_rounds_max):
        resolver = Resolver(log)
        explanations = [_bounded(_EXPLAINERS[k](resolver, identifier)) for k in kinds]
        missing = resolver.asked - wanted
        if not missing:
            break
        wanted |= missing
        log = _reread(store, wanted, identifier, prefilter)
    files = _files_named(explanations)
    other = bool(log.files_seen - set(files))
    return Document(id=identifier, position=log.head, files=files, matches=explanations, other_files=other)


def _files_named(explanations: list[Explanation]) -> list[str]:
    """The trace files the explanations' inputs came from (not every file of
    the store: over HTTP every request is one, `http@P`)."""
    found: set[str] = set()
    pending: list[Any] = [msgspec.to_builtins(explanations)]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            if "seq" in value and isinstance(value.get("file"), str):
                found.add(value["file"])
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return sorted(found)


def _reread(store: EventStore, wanted: set[tuple], identifier: str, prefilter: bool) -> _Log:
    log = _Log()
    log.read(store, wanted, _grow(identifier), prefilter)
    return log


def _bounded(explanation: Explanation) -> Explanation:
    if len(explanation.steps) <= steps_max:
        return explanation
    omitted = len(explanation.steps) - steps_max
    return msgspec.structs.replace(explanation, steps=explanation.steps[-steps_max:], steps_omitted=omitted)


def to_json(value: Document | Explanation | list[Explanation]) -> bytes:
    return msgspec.json.format(msgspec.json.encode(value), indent=2)


# ================================================================== as text


def _where(reference: InputRef | None, files: int) -> str:
    if reference is None:
        return "no input"
    if reference.line is not None:
        place = f"{reference.file}:{reference.line}" if files > 1 and reference.file else f"line {reference.line}"
    else:
        place = f"input {reference.seq}"
    text = f"{place} {reference.type}"
    if reference.id is not None:
        text += f" id={reference.id}"
    if reference.rejected is not None:
        text += f" (rejected {reference.rejected})"
    return text


def _source_text(source: Source | None, files: int) -> str:
    if source is None:
        return ""
    return f"{source.event} #{source.position}, {_where(source.input, files)}"


def _fact_text(fact: Fact, files: int) -> str:
    text = fact.text
    if fact.source is not None:
        text += f" [{_source_text(fact.source, files)}]"
    if fact.now is not None:
        now = f"now {fact.now.state}"
        if fact.now.source is not None and (fact.source is None or fact.now.source.position != fact.source.position):
            now += f" since {_where(fact.now.source.input, files)}"
        text += f"; {now}"
    return text


def render_text(explained: Document) -> str:
    """Readable text: a header per match, one line per step (with its input)
    and its facts below it, then what it waits for. When the store holds
    several traces, each input's file is named beside its line."""
    files = len(explained.files) + (1 if explained.other_files else 0)  # > 1: name each input's file
    out: list[str] = []
    for number, explanation in enumerate(explained.matches):
        if number:
            out.append("")
        out.append(f"{explanation.kind} {explanation.id}: {explanation.state}")
        out.append(f"  {explanation.summary}")
        if explanation.steps_omitted:
            out.append(f"  ({explanation.steps_omitted} earlier steps omitted)")
        for step in explanation.steps:
            state = f" -> {step.state}" if step.state else ""
            times = f" x{step.count}" if step.count > 1 else ""
            cause = f"input {step.input.seq}, {_where(step.input, files)}" if step.input is not None else "no input"
            out.append(f"  #{step.position} {step.event}{times}{state}   ({cause})")
            out.append(f"      {step.summary}")
            for fact in step.facts:
                out.append(f"      - {_fact_text(fact, files)}")
        if explanation.waiting:
            out.append("  waiting for:")
            for waiting in explanation.waiting:
                since = f" [since {_source_text(waiting.since, files)}]" if waiting.since is not None else ""
                out.append(f"    {waiting.code}: {waiting.text}{since}")
                for fact in waiting.facts:
                    out.append(f"      - {_fact_text(fact, files)}")
        if explanation.related:
            out.append(f"  see also: {', '.join(explanation.related)}")
    return "\n".join(out) + "\n"


__all__ = [
    "KINDS",
    "Current",
    "Document",
    "ExplainError",
    "Explanation",
    "Fact",
    "InputRef",
    "Source",
    "Step",
    "Waiting",
    "block_fact_facts",
    "document",
    "explain",
    "render_text",
    "to_json",
]
