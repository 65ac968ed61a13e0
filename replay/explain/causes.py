"""Cause keys (the inbox updates they make) and change-log reconciliations."""

from __future__ import annotations

import datetime
from typing import Any

import msgspec
from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain.lifecycles import UPDATE
from tandem.replay.explain.chain import Chain, Rendered, said
from tandem.replay.explain.deferrals import urgent_held
from tandem.replay.explain.log import Entry, of_type
from tandem.projections.base import rfc3339
from tandem.replay.explain.model import Fact, Source, Waiting


def observation_facts(event: ev.ObservationRecorded) -> list[Fact]:
    """What an observation said beyond its state: subject, source time,
    evidence, and whether its writer cut its text (contract v1.1)."""
    facts = []
    if event.subject is not UNSET:
        facts.append(Fact(name="subject", text=f"subject {event.subject}", value=event.subject))
    if event.source_time is not UNSET:
        at = rfc3339(event.source_time)  # type: ignore[arg-type]
        facts.append(Fact(name="source_time", text=f"source time {at}", value=at))
    if event.evidence_ref is not None:
        facts.append(Fact(name="evidence", text=f"evidence {event.evidence_ref}", value=event.evidence_ref))
    if event.truncated is True:
        facts.append(Fact(name="truncated", text="its text was cut by the source's writer (truncated)", value=True))
    if event.batch_id is not UNSET:  # contract v1.2 section 7.1
        facts.append(Fact(name="batch_named", text=f"names batch {event.batch_id}", value=event.batch_id))
    if event.judged_as is not UNSET:  # section 7.2
        facts.append(alias_fact(event.source_id, event.judged_as))  # type: ignore[arg-type]
    return facts


def alias_fact(source_id: str, judged_as: str) -> Fact:
    """An alias's observation, judged as its canonical source's (contract v1.2 section 7.2)."""
    text = (
        f"{source_id} is an alias of {judged_as}: judged as {judged_as}'s (its local revision, repeats "
        "by version or fingerprint, order, and without a cause_key its latest cause)"
    )
    return Fact(name="alias", text=text, value={"source_id": source_id, "judged_as": judged_as})


def batch_fact(resolver: Any, batch_id: str, revision: int, position: int) -> Fact:
    """A batch at a revision (contract v1.2 section 7), and the event that gave it that revision."""
    return Fact(
        name="batch",
        text=f"batch {batch_id} at revision {revision}",
        value={"batch_id": batch_id, "revision": revision},
        source=resolver.source(("batch", batch_id), position, of_type(ev.BatchRevised, ev.BatchJoined)),
    )


class Cause(Chain):
    kind, key = "cause", "update"
    # Observed, revised, proposed for or carded: a cause (with an inbox update or not).
    defined_by = (ev.ObservationRecorded, ev.ObservationRepeated, ev.UpdateRevised, ev.ActionProposed, ev.CardProposed)
    revision = 0
    triage = "none"  # the update's lifecycle state (untriaged, triaged), once it has one
    disposition: str | None = None
    ignored = 0  # observations recorded as ignored (extension, docs/sources.md)

    def __init__(self, resolver: Any, identifier: str) -> None:
        super().__init__(resolver, identifier)
        self.state = "no inbox update"
        self.related_ids: list[str] = []
        self.times: dict[str, tuple[datetime.datetime | None, datetime.datetime | None]] = {}
        self.statuses: dict[str, str | None] = {}  # the latest in-order observation's status, per source

    def _update(self, event: Any, revision: int, disposition: str | None = None) -> None:
        self.revision, self.disposition = revision, disposition
        self.triage = UPDATE.after[type(event)]
        if revision:
            self.state = f"revision {revision}, {self.triage}" + (f" {disposition}" if disposition else "")

    def observed(self, entry: Entry, event: ev.ObservationRecorded) -> Rendered:
        if event.out_of_order is True:
            summary = f"observed by {event.source_id} via {event.via}, out of order ({self._behind(event)}): no revision, not the latest"
        elif event.ignored is True:
            self.ignored += 1
            if not self.revision:
                self.state = f"no inbox update ({self.ignored} ignored)"
            summary = f"observed by {event.source_id} via {event.via}, ignored (recorded for audit, never acted on): no revision"
        elif event.update_revision is None:
            summary = f"observed by {event.source_id} via {event.via}, from a background's own activity: no revision"
        else:
            self._update(event, event.update_revision)
            self._note_times(event)
            partial = " (partial)" if not event.complete else ""
            summary = f"observed by {event.source_id} via {event.via}: revision {self.revision}{partial}"
        summary += (f", status {event.status}" if event.status else "") + (", deleted" if event.deleted else "")
        return summary, observation_facts(event)

    def _note_times(self, event: ev.ObservationRecorded) -> None:
        """The latest in-order source_time of each source of this cause, and its deletion's."""
        if event.source_time is UNSET:
            return
        _, deleted = self.times.get(event.source_id, (None, None))
        self.times[event.source_id] = (event.source_time, event.source_time if event.deleted else deleted)  # type: ignore[assignment]
        self.statuses[event.source_id] = "completed" if event.complete else event.status or "partial"

    def _behind(self, event: ev.ObservationRecorded) -> str:
        """Why it was out of order, from the cause's earlier observations."""
        latest, deleted = self.times.get(event.source_id, (None, None))
        at = rfc3339(event.source_time)  # type: ignore[arg-type]
        if latest is not None and event.source_time < latest:  # type: ignore[operator]
            return f"source time {at} is before the latest, {rfc3339(latest)}"
        if latest is not None and event.source_time == latest and (deleted is None or latest > deleted):
            status = "completed" if event.complete else event.status or "partial"
            return f"source time {at} is the latest's, and {status} comes before its {self.statuses.get(event.source_id)}"
        return f"source time {at} is not after its deletion's, {rfc3339(deleted)}"

    def repeated(self, entry: Entry, event: ev.ObservationRepeated) -> Rendered:
        previous = self.links[-1] if self.links else None
        if previous is not None and previous.event == "ObservationRepeated":  # fold consecutive repeats
            summary = f"repeats from {event.source_id}"
            self.links[-1] = msgspec.structs.replace(previous, count=previous.count + 1, summary=summary)
            return None
        summary = f"repeat from {event.source_id} via {event.via}" + ("" if event.counted else " (not counted)")
        if event.judged_as is not UNSET:  # contract v1.2 section 7.2
            return summary, [alias_fact(event.source_id, event.judged_as)]  # type: ignore[arg-type]
        return summary, []

    def batch_revised(self, entry: Entry, event: ev.BatchRevised) -> Rendered:
        """Contract v1.2 section 7.1: the cause joined a batch, or moved its batch."""
        if event.joined:
            summary = f"joined batch {event.batch_id} (its first observation naming one): batch revision {event.revision}"
        else:
            summary = f"batch {event.batch_id} moved to revision {event.revision} (a new revision of this cause)"
        return summary, [batch_fact(self.resolver, event.batch_id, event.revision, entry[0])]

    def batch_joined(self, entry: Entry, event: ev.BatchJoined) -> Rendered:
        """Section 7.2: an alias observed before it was one brings its causes into a batch."""
        summary = (
            f"joined batch {event.batch_id} at its revision {event.revision}: {event.source_id}, which revised it "
            "or its canonical source's latest cause, became an alias"
        )
        return summary, [batch_fact(self.resolver, event.batch_id, event.revision, entry[0])]

    def revised(self, entry: Entry, event: ev.UpdateRevised) -> Rendered:
        self._update(event, event.revision)
        return f"revision {self.revision} made by the engine ({event.kind})", []

    def triaged(self, entry: Entry, event: ev.UpdateTriaged) -> Rendered:
        self._update(event, self.revision, event.disposition)
        by = "the engine" if event.by == "engine" else f"{event.by} (generation {event.generation})"
        return f"revision {event.revision} triaged {event.disposition} by {by}; belongs to {event.foreground_id}", []

    def delivered(self, entry: Entry, event: ev.DeliveryCreated) -> Rendered:
        held = [revision for cause_key, revision in event.included if cause_key == self.identifier]
        self.related_ids.append(f"delivery {event.delivery_id}")
        return f"revision {held[0] if held else '?'} put into {event.kind} delivery {event.delivery_id}", []

    def alerted(self, entry: Entry, event: ev.AlertRaised) -> Rendered:
        self.related_ids.append(f"alert {event.alert_id}")
        return f"alert {event.alert_id} raised: {event.detail}", []

    def proposed(self, entry: Entry, event: ev.ActionProposed) -> Rendered:
        self.related_ids.append(f"operation {event.operation_id}")
        return f"action {event.operation_id} proposed for this cause (at update revision {event.cause_revision})", []

    def deferred(self, entry: Entry, event: ev.DeliveryDeferred) -> Rendered:
        """A wake deferred by its batch wait, this cause being the oldest
        deliverable; or this urgent cause held back from an idle foreground,
        by what (contract v1.2 section 3.7)."""
        facts = event.facts
        if facts is not None and facts.urgent == self.identifier:
            return urgent_held(event, self.revision)
        if facts is None or event.reason != "batch_wait":
            return None
        summary = f"the wake of {event.conversation_id} waits for its batch until {rfc3339(event.until)}"
        text = (
            f"deliverable since {rfc3339(facts.deliverable_since)}, the oldest of {facts.waiting} waiting "
            f"(wake_batch_wait_s {facts.wake_batch_wait_s})"
        )
        return summary, [Fact(name="batch_wait", text=text, value=msgspec.to_builtins(facts))]

    renderers = {
        ev.DeliveryDeferred: deferred,
        ev.ObservationRecorded: observed,
        ev.ObservationRepeated: repeated,
        ev.BatchRevised: batch_revised,
        ev.BatchJoined: batch_joined,
        ev.UpdateRevised: revised,
        ev.UpdateTriaged: triaged,
        ev.DeliveryCreated: delivered,
        ev.AlertRaised: alerted,
        ev.ActionProposed: proposed,
        ev.CardProposed: said("card {e.card_id} proposed: {e.summary}"),
    }

    def summary(self) -> str:
        return f"cause {self.identifier}"

    def waiting(self) -> list[Waiting]:
        if self.triage != "untriaged":
            return []
        text = f"revision {self.revision} is untriaged: waits for triage.classify from the background"
        return [Waiting(code="triage.classify", text=text)]

    def related(self) -> list[str]:
        return list(dict.fromkeys(self.related_ids))


class Reconciliation(Chain):
    kind, key = "reconciliation", "reconciliation"
    defined_by = (ev.ReconciliationStarted,)
    states = {ev.ReconciliationStarted: "open", ev.ReconciliationCommitted: "committed"}
    started: ev.ReconciliationStarted

    def state_after(self, event: Any) -> str | None:
        return self.states.get(type(event))

    def start(self, entry: Entry, event: ev.ReconciliationStarted) -> Rendered:
        self.started = event
        if event.reason == "epoch_changed":
            why = f"the log is in epoch {event.epoch_seen}, the cursor was in {event.cursor_epoch}"
        else:
            why = f"history deleted beyond the cursor: max_deleted_seq {event.max_deleted_seq} > seq {event.cursor_seq}"
        return f"started ({event.reason}): {why}", []

    renderers = {
        ev.ReconciliationStarted: start,
        ev.ReconciliationCommitted: said(
            "committed: cursor at epoch {e.epoch}, seq {e.seq} = max(retained_head {e.retained_head}, "
            "watermark {e.watermark}, where it had reached); gaps {e.gaps}"
        ),
    }

    def summary(self) -> str:
        return f"reconciliation of {self.started.consumer_id}"

    waits = {"open": ("log.reconcile", "every batch is refused until log.reconcile names {c.identifier}")}

    def since(self) -> Source | None:
        return None

    def related(self) -> list[str]:
        return [f"alert reconciliation_required:{self.started.consumer_id}"]
