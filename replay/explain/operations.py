"""Operations (actions) and their attempts."""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain.lifecycles import ACTION, ATTEMPT
from tandem.replay.explain.blocks import Runs, block_summary, coded_facts, track_runs, waiting_from_blocks
from tandem.replay.explain.chain import Chain, Rendered, said
from tandem.replay.explain.facts import (
    affected_fact,
    binding_fact,
    heartbeat_fact,
    intent_facts,
    prerequisite_fact,
    revision_facts,
    synced_at,
)
from tandem.replay.explain.causes import batch_fact
from tandem.replay.explain.log import Entry, Resolver, at_of, of_type, source
from tandem.replay.explain.model import Fact, Source, Waiting
from tandem.replay.explain.now import FENCES, action_at

_REFUSALS = {
    "retry": "back to pending: attempt {r.attempts} of at most {r.max_attempts}, under current authority",
    "max_attempts": "exhausted: {r.attempts} attempts reached max_attempts {r.max_attempts}",
    "task_revised": (
        "fenced: the task moved to revision {r.task_revision} "
        "(validated under {r.validated_task_revision}) while the attempt was out"
    ),
    "authority_narrowed": "fenced: the grant or the policy no longer allows it",
}
# What an action waits for outside `pending` and `fenced`, by state (`c.attempt`: its latest attempt).
_EXPECTS = {
    "submitting": (
        "executor.receipt",
        "attempt {c.attempt} was handed over: waits for executor.receipt (or an outcome)",
    ),
    "queued": (
        "executor.receipt",
        "attempt {c.attempt} is queued: waits for executor.receipt accepted (or an outcome)",
    ),
    "accepted": ("executor.outcome", "attempt {c.attempt} was accepted: waits for executor.outcome"),
    "unknown": (
        "executor.reconcile",
        "attempt {c.attempt} is unknown: never retried blindly, waits for executor.reconcile",
    ),
    "cancel_requested": (
        "executor.outcome",
        "cancel requested: waits for the executor's outcome (cancelled) or a refusal",
    ),
}


def claimed(resolver: Resolver, entry: Entry, event: ev.ActionClaimed, proposal: ev.ActionProposed | None) -> Rendered:
    """A claim: its envelope, and every fact the claim relied on."""
    position = entry[0]
    envelope, claim = event.envelope, event.facts
    writes = f", writes {', '.join(envelope.write_paths)}" if envelope.write_paths else ""
    what = f"{envelope.operation} {envelope.target} on {envelope.resource}{writes}"
    summary = f"claimed as attempt {event.attempt_id}: {what}"
    task_id = proposal.task_id if proposal is not None else None
    grant_id = proposal.grant_id if proposal is not None else ""
    conversation_id = resolver.task_conversation(task_id)
    facts = revision_facts(
        resolver,
        position,
        (("task", task_id), envelope.task_revision) if task_id else None,
        (("grant", grant_id), envelope.grant_revision),
        (("policy",), envelope.policy_revision),
    )
    synced = synced_at(resolver, conversation_id, position)
    facts.extend(intent_facts(resolver, conversation_id, envelope.intent_revision, synced, position))
    binding = binding_fact(resolver, conversation_id, claim.binding_generation, position)
    facts.extend([binding] if binding is not None else [])
    if (proposal.unattended if proposal is not None else True) or claim.heartbeat_at is not None:
        heartbeat = heartbeat_fact(
            resolver, claim.heartbeat_generation, claim.heartbeat_at, None, position, True, at_of(entry)
        )
        facts.append(heartbeat)
    facts.extend(prerequisite_fact(resolver, p, position) for p in claim.prerequisites)
    if envelope.source_revision is not UNSET:  # contract v1.2 section 2.2: the cause's current revision
        target = f", for commit {envelope.target_sha}" if envelope.target_sha is not UNSET else ""
        text = f"answers source revision {envelope.source_revision} of its cause{target}, its current one"
        facts.append(Fact(name="source_revision", text=text, value=envelope.source_revision))
    if envelope.deadline_at is not msgspec.UNSET:
        deadline = _time(envelope.deadline_at)
        facts.append(Fact(name="deadline_at", text=f"execution deadline {deadline} (set at its first claim)", value=deadline))
    return summary, facts


def _time(value: Any) -> str:
    return value.isoformat().replace("+00:00", "Z")


def deadline_exceeded(chain: Chain, entry: Entry, event: ev.DeadlineExceeded) -> Rendered:
    """A deadline stop (contract v1.2 section 3.3): the first claim, the deadline, the grant revision."""
    facts = event.facts
    summary = f"execution deadline {_time(event.deadline_at)} passed while {facts.state}: {event.action_state}"
    text = (
        f"first claimed as {facts.attempt_id} at {_time(facts.claimed_at)} under grant revision "
        f"{facts.grant_revision} (execution_deadline_s {facts.execution_deadline_s})"
    )
    return summary, [Fact(name="deadline", text=text, value=msgspec.to_builtins(facts))]


def batch_fix_facts(chain: Chain, entry: Entry, facts: ev.BatchFixFacts) -> list[Fact]:
    """Contract v1.2 section 7.3: the join that put a second live fix in the
    batch (with its event), and the fix that survives (with its proposal and
    where it is now)."""
    resolver, position = chain.resolver, entry[0]
    joined = Fact(
        name="duplicate_batch",
        text=(
            f"{facts.joined} joined batch {facts.batch_id} (revision {facts.revision}), whose causes then had "
            "more than one live fix: one fix per batch"
        ),
        value=msgspec.to_builtins(facts),
        source=resolver.source(("batch", facts.batch_id), position, of_type(ev.BatchRevised, ev.BatchJoined)),
    )
    kept = Fact(
        name="kept",
        text=f"the batch's earlier live fix {facts.kept}, for {facts.kept_cause}, survives",
        value=facts.kept,
        source=resolver.source(("action", facts.kept), position, of_type(ev.ActionProposed)),
        now=action_at(resolver, facts.kept),
    )
    return [joined, kept]


def fix_superseded(chain: Chain, entry: Entry, event: ev.BatchFixSuperseded) -> Rendered:
    """A pending or fenced fix superseded when its cause's batch had an earlier live fix (section 7.3)."""
    facts = event.facts
    summary = f"superseded (duplicate_batch): batch {facts.batch_id} keeps its earlier live fix {facts.kept}"
    return summary, batch_fix_facts(chain, entry, facts)


def cancel_requested(chain: Chain, entry: Entry, event: ev.ActionCancelRequested) -> Rendered:
    """A stop asked; a preemption (contract v1.2 section 8.1) names the foreground whose owner made
    it, the human message (or the proposal of its work made while its owner was active), and why
    that owner concerns the action: its session, or the resource it shares with the owner's work;
    a duplicate fix (section 7.3) its batch and the fix that survives."""
    summary = f"cancel requested ({event.reason})"
    if event.duplicate_batch is not UNSET:
        facts = event.duplicate_batch
        summary += (
            f": batch {facts.batch_id} keeps its earlier live fix {facts.kept}; "
            "its attempt stands, it ends on the executor's word"
        )
        return summary, batch_fix_facts(chain, entry, facts)
    preempted = event.preempted_by
    if preempted is UNSET:
        return summary, []
    summary += ": maintenance work yields to the owner it concerns; it ends on the executor's word"
    conversation_id, position = preempted.conversation_id, entry[0]
    owner = f"{conversation_id}'s owner is active" if preempted.via is not None else "the owner is active"
    if preempted.message_id is not None:
        queued = lambda e: isinstance(e, ev.MessageQueued) and e.message_id == preempted.message_id  # noqa: E731
        where = chain.resolver.source(("intent", conversation_id), position, queued)
        text = f"human message {preempted.message_id} on {conversation_id}: {owner}"
    else:
        where = chain.resolver.source(("action", preempted.operation_id or ""), position, of_type(ev.ActionProposed))
        text = f"{preempted.operation_id} proposed for {conversation_id}'s work while {owner}"
    facts = [Fact(name="preempted_by", text=text, value=msgspec.to_builtins(preempted), source=where)]
    affected = affected_fact(chain.resolver, conversation_id, preempted.via, preempted.resource, preempted.operations, position)
    return summary, facts if affected is None else [*facts, affected]


def attempt_updated(chain: Chain, entry: Entry, event: ev.AttemptUpdated) -> Rendered:
    summary = f"attempt {event.attempt_id} {event.attempt_state}; action {event.action_state}"
    facts: list[Fact] = []
    refusal = event.refusal
    if refusal is not None:
        why = _REFUSALS[refusal.reason].format(r=refusal) if refusal.reason in _REFUSALS else refusal.reason
        facts.append(Fact(name="refusal", text=why, value=msgspec.to_builtins(refusal)))
    if event.restamped is not None:
        text = f"re-stamped with grant revision {event.restamped.grant}"
        facts.append(Fact(name="restamped", text=text, value=msgspec.to_builtins(event.restamped)))
    if event.retry_at is not msgspec.UNSET:
        retry = _time(event.retry_at)
        facts.append(Fact(name="retry_at", text=f"retry back-off: not claimed before {retry}", value=retry))
    return summary, facts


def outcome(chain: Chain, entry: Entry, event: ev.ActionOutcomeReported) -> Rendered:
    return outcome_summary(event), []


_SOURCE_RULE = {
    ("superseded", "source_resolved"): "superseded: its cause is moot now (source_resolved)",
    ("superseded", "target_moved"): "superseded: its cause is on another commit now (target_moved)",
    ("fenced", "source_moved"): "fenced: its cause moved on (source_moved); action.revalidate at the new revision to go on",
    ("restamped", None): "re-stamped: its cause moved on, not moot; the rule's action answers revision {e.source_revision} now",
}


def source_rule_applied(chain: Chain, entry: Entry, event: ev.SourceRuleApplied) -> Rendered:
    """The source rule (contract v1.2 section 2.2), and what it relied on."""
    facts, position = event.facts, entry[0]
    summary = _SOURCE_RULE[(event.outcome, event.reason)].format(e=event)
    target = f", for commit {facts.target_sha}" if facts.target_sha else ""
    answered = Fact(
        name="source_revision",
        text=f"it answers revision {facts.source_revision} of its cause{target}; the cause is at revision {facts.cause_revision}",
        value={"source_revision": facts.source_revision, "target_sha": facts.target_sha, "cause_revision": facts.cause_revision},
    )
    result = [answered]
    if facts.observed_by is not None:
        seen = {"status": facts.status, "commit_sha": facts.commit_sha, "deleted": facts.deleted, "complete": facts.complete}
        moot = f" (moot statuses {', '.join(facts.moot_statuses)})" if facts.moot_statuses else ""
        text = (
            f"its latest observation: status {facts.status}, commit {facts.commit_sha}, "
            f"{'deleted' if facts.deleted else 'not deleted'}, {'complete' if facts.complete else 'partial'}{moot}"
        )
        where = chain.resolver.source(("update", chain.proposal.cause_key), position, of_type(ev.ObservationRecorded)) if chain.proposal else None
        result.append(Fact(name="latest_observation", text=text, value=seen, source=where))
    return summary, result


def evidence_attached(chain: Chain, entry: Entry, event: ev.EvidenceAttached) -> Rendered:
    summary = f"evidence {event.evidence_ref} attached"
    if event.artifact_revision is not None:
        summary += f"; its artifact revision is {event.artifact_revision} now"
    return summary, []


def outcome_summary(event: ev.ActionOutcomeReported) -> str:
    summary = f"outcome {event.outcome}"
    if event.artifact_revision:
        summary += f", artifact {event.artifact_revision}"
    if event.evidence_ref:
        summary += f", evidence {event.evidence_ref}"
    if event.attempt_id:
        summary += f"; attempt {event.attempt_id} {event.attempt_state}"
    return summary


# What a fencing (or re-stamping) event changed, and why it fences when the event does not say.
_CHANGED = {
    ev.PolicySet: "policy revision {e.revision}",
    ev.GrantRevised: "grant {e.grant_id} revision {e.revision}",
    ev.TaskRevised: "task {e.task_id} revision {e.revision}",
}
assert set(_CHANGED) == FENCES, "every event that fences says what it changed"
_FENCED_BECAUSE = {ev.TaskRevised: "the task was revised: pending actions are fenced (action.revalidate to go on)"}


class Operation(Chain):
    kind, key, lifecycle = "operation", "action", ACTION

    def __init__(self, resolver: Resolver, identifier: str) -> None:
        super().__init__(resolver, identifier)
        self.runs: Runs = {}
        self.codes: list[str] = []
        self.proposal: ev.ActionProposed | None = None
        self.attempts: list[str] = []
        self.fence: tuple[Entry, str] | None = None

    def changed(self, entry: Entry) -> None:
        self.runs, self.codes = {}, []  # a new state: its codes start again

    def proposed(self, entry: Entry, event: ev.ActionProposed) -> Rendered:
        self.proposal = event
        position = entry[0]
        generation = f" generation {event.generation}" if event.generation is not None else ""
        owner = f"task {event.task_id}" if event.task_id else f"rule {event.rule_id}"
        summary = (
            f"proposed by {event.proposed_by}{generation} for {owner}: {event.operation} {event.target} "
            f"on {event.resource}, cause {event.cause_key}"
        )
        if event.priority is not UNSET and event.priority != "normal":  # contract v1.2 section 8.1
            summary += f" ({event.priority})"
        if event.cause_revision:
            summary += f" (at its update revision {event.cause_revision})"
        if event.source_revision is not UNSET:  # contract v1.2 section 2.1
            summary += f"; answers source revision {event.source_revision}"
            summary += f" for commit {event.target_sha}" if event.target_sha is not UNSET else ""
            summary += f", moot when {', '.join(event.moot_statuses)}" if event.moot_statuses else ""
        if not event.unattended:
            summary += "; attended"
        revisions = event.input_revisions
        facts = revision_facts(
            self.resolver,
            position,
            (("task", event.task_id), revisions.task) if event.task_id else None,
            (("grant", event.grant_id), revisions.grant),
        )
        conversation_id = self.resolver.task_conversation(event.task_id)
        facts.extend(intent_facts(self.resolver, conversation_id, revisions.intent, None, position))
        facts.extend(self._requires(prerequisite, position) for prerequisite in event.prerequisites)
        if event.batch_id is not UNSET:  # contract v1.2 section 7.3
            facts.append(batch_fact(self.resolver, event.batch_id, event.batch_revision, position))  # type: ignore[arg-type]
        return summary, facts

    def _requires(self, prerequisite: ev.PrerequisiteSpec, position: int) -> Fact:
        required = f" with {prerequisite.artifact_revision}" if prerequisite.artifact_revision else ""
        key = ("action", prerequisite.operation_id)
        return Fact(
            name="requires",
            text=f"requires {prerequisite.operation_id} {prerequisite.outcome}{required}",
            value=msgspec.to_builtins(prerequisite),
            source=self.resolver.source(key, position, of_type(ev.ActionProposed)),
            now=action_at(self.resolver, prerequisite.operation_id),
        )

    def blocked(self, entry: Entry, event: ev.ActionBlocked) -> Rendered:
        self.codes = list(event.blocked_by)
        track_runs(self.runs, entry, self.codes, event.facts)
        return block_summary(self.codes), coded_facts(self.resolver, entry, event.facts)

    def claimed(self, entry: Entry, event: ev.ActionClaimed) -> Rendered:
        self.attempts.append(event.attempt_id)
        return claimed(self.resolver, entry, event, self.proposal)

    def source_rule_applied(self, entry: Entry, event: ev.SourceRuleApplied) -> Rendered:
        rendered = source_rule_applied(self, entry, event)
        if event.outcome == "fenced" and rendered is not None:
            self.fence = (entry, rendered[0])
        return rendered

    def revalidated(self, entry: Entry, event: ev.ActionRevalidated) -> Rendered:
        revisions, proposal = event.input_revisions, self.proposal
        task_id = proposal.task_id if proposal else None
        facts = revision_facts(
            self.resolver,
            entry[0],
            (("task", task_id), revisions.task) if task_id else None,
            (("grant", proposal.grant_id), revisions.grant) if proposal else None,
        )
        if event.source_revision is not UNSET:  # contract v1.2 section 2.3
            text = f"it answers source revision {event.source_revision} of its cause now"
            facts.append(Fact(name="source_revision", text=text, value=event.source_revision))
        return "revalidated: pending again under current authority", facts

    def fenced(self, entry: Entry, event: ev.PolicySet | ev.GrantRevised | ev.TaskRevised) -> Rendered:
        what = _CHANGED[type(event)].format(e=event)
        if self.identifier not in event.fenced:
            return f"re-stamped: {what} still allows it", []
        because = _FENCED_BECAUSE.get(type(event)) or getattr(event, "fenced_because", {}).get(self.identifier)
        summary = f"fenced by {what}"
        self.fence = (entry, summary)
        return summary, [Fact(name="fenced_because", text=because or "no longer allowed", value=because)]

    renderers = {
        ev.ActionProposed: proposed,
        ev.ActionBlocked: blocked,
        ev.ActionClaimed: claimed,
        ev.AttemptUpdated: attempt_updated,
        ev.ActionOutcomeReported: outcome,
        ev.ActionCancelled: said("cancelled"),
        ev.ActionCancelRequested: cancel_requested,
        ev.DeadlineExceeded: deadline_exceeded,
        ev.ActionRevalidated: revalidated,
        ev.SourceRuleApplied: source_rule_applied,
        ev.BatchFixSuperseded: fix_superseded,
        ev.EvidenceAttached: evidence_attached,
        **dict.fromkeys(FENCES, fenced),
    }

    def summary(self) -> str:
        proposal = self.proposal
        assert proposal is not None
        owner = f"task {proposal.task_id}" if proposal.task_id else f"rule {proposal.rule_id}"
        summary = f"{owner}, cause {proposal.cause_key}: {proposal.operation} {proposal.target} on {proposal.resource}"
        return summary + (f"; {block_summary(self.codes)}" if self.state == "pending" else "")

    waits = _EXPECTS

    @property
    def attempt(self) -> str | None:
        return self.attempts[-1] if self.attempts else None

    def waiting(self) -> list[Waiting]:
        if self.state == "pending" and self.codes:
            return waiting_from_blocks(self.resolver, self.runs, self.codes)
        if self.state == "pending":
            return [Waiting(code="claim", text="nothing blocks it: the next pass claims it", since=self.since())]
        if self.state == "fenced":
            text = "fenced: waits for action.revalidate under current authority (or action.cancel)"
            if self.fence is not None and type(self.fence[0][1]) is ev.SourceRuleApplied:
                text = "fenced: its cause moved on: waits for action.revalidate at the cause's current revision (or action.cancel)"
            facts = [Fact(name="fence", text=self.fence[1])] if self.fence is not None else []
            since = source(self.fence[0]) if self.fence is not None else self.since()
            return [Waiting(code="action.revalidate", text=text, facts=facts, since=since)]
        return super().waiting()

    def related(self) -> list[str]:
        related = [f"attempt {attempt}" for attempt in self.attempts]
        if any(link.event == "ActionOutcomeReported" for link in self.links):
            related.append(f"cause outcome:{self.identifier}")
            if self.proposal is not None and self.proposal.task_id is not None:
                related.append(f"obligation {self.identifier}")
        return related


class Attempt(Chain):
    kind, key, lifecycle = "attempt", "attempt", ATTEMPT
    claim: ev.ActionClaimed

    def claimed(self, entry: Entry, event: ev.ActionClaimed) -> Rendered:
        self.claim = event
        proposal = self.resolver.find(("action", event.operation_id), entry[0], of_type(ev.ActionProposed))
        return claimed(self.resolver, entry, event, proposal[1] if proposal else None)

    renderers = {
        ev.ActionClaimed: claimed,
        ev.AttemptUpdated: attempt_updated,
        ev.ActionOutcomeReported: outcome,
    }

    def summary(self) -> str:
        action_now = action_at(self.resolver, self.claim.operation_id)
        return f"attempt of {self.claim.operation_id}" + (f" (now {action_now.state})" if action_now else "")

    waits = {
        "submitting": ("executor.receipt", "waits for executor.receipt (or an outcome)"),
        "queued": ("executor.receipt", "waits for executor.receipt accepted (or an outcome)"),
        "unknown": ("executor.reconcile", "unknown: never retried blindly, waits for executor.reconcile"),
    }

    def waiting(self) -> list[Waiting]:
        """Only the latest attempt waits, and only while its action is not over."""
        operation_id = self.claim.operation_id
        latest = self.resolver.find(("action", operation_id), where=of_type(ev.ActionClaimed))
        if latest is None or latest[1].attempt_id != self.identifier or self.state not in self.waits:
            return []
        action_now = action_at(self.resolver, operation_id)
        return [] if action_now is not None and action_now.state in ACTION.terminal else super().waiting()

    def since(self) -> Source | None:
        return source(self.latest)

    def related(self) -> list[str]:
        return [f"operation {self.claim.operation_id}"]
