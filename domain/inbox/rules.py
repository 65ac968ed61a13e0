"""The inbox (contract section 3.4, the outcome part of 3.3): observations, the pending
updates they revise, their triage by the bound background, and cards.

An observation is captured exactly: a source's repeat (same `source_version`
already recorded, or without one the source's latest fingerprint) is counted
and changes nothing else; anything else gets the source's next local revision
and its cause's next update revision, untriaged — partial ones too, so
fail → pass → fail is three revisions. An observation caused by a background
conversation's own activity is recorded but revises no update (no feedback loop).

Bounded work: an update is one row per cause holding only its latest
observation's text and tokens and counters, so a burst of observations costs
the inbox work and memory per cause, not per observation (the observations
themselves are events in the log). A source remembers its latest fingerprint
and the set of `source_version`s it has seen (needed to recognise a repeat on
any path: live, change log or reconciliation). The consumer area applies a
change-log batch's observations through `observation_events` and a `Draft`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from msgspec import UNSET

import datetime
from typing import Any

from tandem.domain import events as ev
from tandem.domain import inputs as inp
from tandem.domain.inputs import given
from tandem.domain.lifecycles import UPDATE
from tandem.domain.lookups import known_conversation
from tandem.domain.reasons import Rejected
from tandem.domain.records import Action, Conversation, LatestObservation, Source, SourceCause, Update
from tandem.domain.conversation.state import drop_candidate, refresh_candidate
from tandem.domain.state import State
from tandem.domain.tools.rules import check_background_gates


def default_cause_key(fields: inp.ObservationFields | inp.Observe) -> str:
    """`comment:{scope}:{source_id}` for a comment (two comments on one PR are
    two causes), else `{kind}:{scope}:{subject}` with a subject (two checks on
    one PR are two causes), else `{kind}:{scope}`."""
    if fields.cause_key is not UNSET:
        return fields.cause_key  # type: ignore[return-value]
    if fields.kind == "comment":
        return f"comment:{fields.scope}:{fields.source_id}"
    if fields.subject is not UNSET:
        return f"{fields.kind}:{fields.scope}:{fields.subject}"
    return f"{fields.kind}:{fields.scope}"


SourceKey = tuple[str, str]  # (source_id, cause_key): what repeats and order are judged by


@dataclass
class Draft:
    """What earlier observations of the same input changed and the state does
    not show yet (a change-log batch applies many): decide stays pure."""

    state: State
    source_counts: dict[str, int] = field(default_factory=dict)
    fingerprints: dict[SourceKey, str] = field(default_factory=dict)
    versions: dict[SourceKey, set[str]] = field(default_factory=dict)
    latest_times: dict[SourceKey, datetime.datetime] = field(default_factory=dict)
    deleted_times: dict[SourceKey, datetime.datetime] = field(default_factory=dict)
    deletions: dict[SourceKey, bool] = field(default_factory=dict)  # the latest is a deletion
    ranks: dict[SourceKey, int] = field(default_factory=dict)  # the latest's status_rank
    revisions: dict[str, int] = field(default_factory=dict)
    latest_causes: dict[str, str] = field(default_factory=dict)  # source -> its latest cause (section 7.2)
    batches: dict[str, str] = field(default_factory=dict)  # cause_key -> the batch it joined (section 7.1)
    batch_revisions: dict[str, int] = field(default_factory=dict)

    def latest_cause(self, source_id: str) -> str | None:
        if source_id in self.latest_causes:
            return self.latest_causes[source_id]
        source = self.state.inbox.sources.get(source_id)
        return source.latest_cause if source is not None else None

    def batch_of(self, cause_key: str) -> str | None:
        return self.batches.get(cause_key, self.state.reviews.batch_of.get(cause_key))

    def batch_revision(self, batch_id: str) -> int:
        if batch_id in self.batch_revisions:
            return self.batch_revisions[batch_id]
        batch = self.state.reviews.batches.get(batch_id)
        return batch.revision if batch is not None else 0

    def source_count(self, source_id: str) -> int:
        if source_id in self.source_counts:
            return self.source_counts[source_id]
        source = self.state.inbox.sources.get(source_id)
        return source.count if source is not None else 0

    def _recorded(self, key: SourceKey) -> SourceCause | None:
        source = self.state.inbox.sources.get(key[0])
        return source.causes.get(key[1]) if source is not None else None

    def latest_fingerprint(self, key: SourceKey) -> str | None:
        if key in self.fingerprints:
            return self.fingerprints[key]
        recorded = self._recorded(key)
        return recorded.latest_fingerprint if recorded is not None else None

    def version_seen(self, key: SourceKey, version: str) -> bool:
        recorded = self._recorded(key)
        return (recorded is not None and version in recorded.versions) or version in self.versions.get(key, ())

    def latest_time(self, key: SourceKey) -> datetime.datetime | None:
        recorded = self._recorded(key)
        return self.latest_times.get(key, recorded.latest_time if recorded is not None else None)

    def deleted_time(self, key: SourceKey) -> datetime.datetime | None:
        recorded = self._recorded(key)
        return self.deleted_times.get(key, recorded.deleted_time if recorded is not None else None)

    def latest_deleted(self, key: SourceKey) -> bool:
        recorded = self._recorded(key)
        return self.deletions.get(key, recorded.latest_deleted if recorded is not None else False)

    def latest_rank(self, key: SourceKey) -> int:
        recorded = self._recorded(key)
        return self.ranks.get(key, recorded.latest_rank if recorded is not None else 0)

    def update_revision(self, cause_key: str) -> int:
        if cause_key in self.revisions:
            return self.revisions[cause_key]
        return self.state.update_revision(cause_key)


def _repeat(draft: Draft, key: SourceKey, fields: inp.ObservationFields | inp.Observe, aliased: bool) -> bool:
    """Its source_version already recorded for the source and cause, or
    without one, the fingerprint the latest one had. A deletion is only when
    the latest is the same deletion (the same fingerprint): resent, not new.
    An alias's observation (contract v1.2 section 7.2): either, since two
    paths seldom share version schemes."""
    if fields.deleted:
        return draft.latest_deleted(key) and draft.latest_fingerprint(key) == fields.fingerprint
    version = given(fields.source_version)
    if version is not None and draft.version_seen(key, version):  # type: ignore[arg-type]
        return True
    return (version is None or aliased) and draft.latest_fingerprint(key) == fields.fingerprint


def _judged(draft: Draft, fields: inp.ObservationFields | inp.Observe) -> tuple[str | None, str]:
    """(the canonical source an alias is judged as, or None; the cause): an
    alias's observation without an explicit cause_key is of its canonical
    source's latest cause (contract v1.2 section 7.2)."""
    canonical = draft.state.reviews.aliases.get(fields.source_id)
    if canonical is None or fields.cause_key is not UNSET:
        return canonical, default_cause_key(fields)
    return canonical, draft.latest_cause(canonical) or default_cause_key(fields)


def _batch_events(draft: Draft, cause_key: str, named: str | None, seq: int) -> list[ev.Event]:
    """Contract v1.2 section 7.1: a revised cause joins the batch its first
    observation naming one names (and stays in it); its batch's revision + 1."""
    batch_id = draft.batch_of(cause_key)
    joined = batch_id is None
    if batch_id is None:
        if named is None:
            return []
        batch_id = draft.batches[cause_key] = named
    revision = draft.batch_revisions[batch_id] = draft.batch_revision(batch_id) + 1
    return [ev.BatchRevised(cause=seq, batch_id=batch_id, cause_key=cause_key, revision=revision, joined=joined)]


def status_rank(complete: bool, status: str | None) -> int:
    """An observation's status precedence, for equal source times: a
    complete one after any partial one, `in_progress` after `queued`."""
    return STATUS_RANK_COMPLETE if complete else STATUS_RANKS.get(status or "", 0)


def _out_of_order(draft: Draft, key: SourceKey, fields: inp.ObservationFields | inp.Observe) -> bool:
    """Before the latest source_time of its source and cause, or at the same
    time with a status of lower precedence (a queued check after its
    completion), or not after that source's deletion (so it never brings a
    deleted source back)."""
    source_time = given(fields.source_time)
    if source_time is None:
        return False
    latest, deleted = draft.latest_time(key), draft.deleted_time(key)
    if latest is not None and (
        source_time < latest  # type: ignore[operator]
        or (source_time == latest and status_rank(fields.complete, given(fields.status)) < draft.latest_rank(key))  # type: ignore[arg-type]
    ):
        return True
    return deleted is not None and source_time <= deleted  # type: ignore[operator]


def _note(draft: Draft, key: SourceKey, fields: inp.ObservationFields | inp.Observe, late: bool) -> None:
    """What the draft remembers of a recorded observation (not a background's own)."""
    version = given(fields.source_version)
    if version is not None:
        draft.versions.setdefault(key, set()).add(version)  # type: ignore[arg-type]
    if late:
        return  # not the latest: compared with nothing later
    draft.fingerprints[key] = fields.fingerprint
    draft.deletions[key] = fields.deleted
    draft.ranks[key] = status_rank(fields.complete, given(fields.status))  # type: ignore[arg-type]
    source_time = given(fields.source_time)
    if source_time is not None:
        draft.latest_times[key] = source_time  # type: ignore[assignment]
        if fields.deleted:
            draft.deleted_times[key] = source_time  # type: ignore[assignment]


def _from_background(state: State, fields: inp.ObservationFields | inp.Observe) -> bool:
    origin = given(fields.origin_conversation)
    conversation = state.conversation.by_id.get(origin) if isinstance(origin, str) else None
    return conversation is not None and conversation.role == "background"


def observation_events(
    state: State, draft: Draft, fields: inp.ObservationFields | inp.Observe, seq: int, at: datetime.datetime, via: str
) -> list[ev.Event]:
    """The event an observation causes (recorded, or a counted repeat), and
    its batch's revision (contract v1.2 section 7.1). An ignored one
    (extension) is always recorded and compared with nothing."""
    source_id = fields.source_id
    canonical, cause_key = _judged(draft, fields)
    judged_as, key = canonical if canonical is not None else UNSET, (canonical or source_id, cause_key)
    ignored = fields.ignored is True
    # A background's own activity and an ignored observation are set aside:
    # never a revision, and not what later observations are compared with
    # (the update never saw them, so the same state reported otherwise is news).
    aside = ignored or _from_background(state, fields)
    if not ignored and _repeat(draft, key, fields, canonical is not None):
        counted = not aside and draft.update_revision(cause_key) > 0
        return [ev.ObservationRepeated(
            cause=seq, via=via, source_id=source_id, cause_key=cause_key, counted=counted, at=at, judged_as=judged_as
        )]  # fmt: skip
    late = not aside and _out_of_order(draft, key, fields)
    local_revision = draft.source_count(key[0]) + 1
    draft.source_counts[key[0]] = local_revision
    if not ignored:
        draft.latest_causes[key[0]] = cause_key
    update_revision = None
    if not aside:
        _note(draft, key, fields, late)
        if not late:
            update_revision = draft.update_revision(cause_key) + 1
            draft.revisions[cause_key] = update_revision
    recorded = _recorded_event(fields, seq, at, via, cause_key, local_revision, update_revision, late, judged_as)
    if update_revision is None:
        return [recorded]  # revises nothing, so joins and moves no batch
    return [recorded, *_batch_events(draft, cause_key, given(fields.batch_id), seq)]


def _recorded_event(
    fields: inp.ObservationFields | inp.Observe,
    seq: int,
    at: datetime.datetime,
    via: str,
    cause_key: str,
    local_revision: int,
    update_revision: int | None,
    late: bool,
    judged_as: Any,
) -> ev.ObservationRecorded:
    return ev.ObservationRecorded(
        cause=seq,
        via=via,
        source_id=fields.source_id,
        local_revision=local_revision,
        cause_key=cause_key,
        kind=fields.kind,
        scope=fields.scope,
        fingerprint=fields.fingerprint,
        complete=fields.complete,
        source_version=given(fields.source_version),  # type: ignore[arg-type]
        status=given(fields.status),  # type: ignore[arg-type]
        commit_sha=given(fields.commit_sha),  # type: ignore[arg-type]
        text=given(fields.text),  # type: ignore[arg-type]
        evidence_ref=given(fields.evidence_ref),  # type: ignore[arg-type]
        tokens=given(fields.tokens),  # type: ignore[arg-type]
        deleted=fields.deleted,
        origin_conversation=given(fields.origin_conversation),  # type: ignore[arg-type]
        update_revision=update_revision,
        at=at,
        subject=fields.subject,
        source_time=fields.source_time,
        truncated=fields.truncated,
        out_of_order=True if late else UNSET,
        batch_id=fields.batch_id,
        judged_as=judged_as,
        ignored=True if fields.ignored is True else UNSET,
    )


def decide_observe(state: State, value: inp.Observe, seq: int) -> list[ev.Event]:
    return observation_events(state, Draft(state), value, seq, value.at, "live")


def outcome_update_events(state: State, action: Action, outcome: str, seq: int, at: datetime.datetime) -> list[ev.Event]:
    """An executor outcome creates or revises `outcome:{operation_id}`, triaged
    by the engine: actionable for a task's action (it belongs to the task's
    conversation), routine for a rule's."""
    cause_key = f"outcome:{action.operation_id}"
    revision = state.update_revision(cause_key) + 1
    task = state.tasks.by_id.get(action.task_id) if action.task_id is not None else None
    return [
        ev.UpdateRevised(
            # No observation behind it: no text, so it costs 0 tokens (contract section 5.2).
            cause=seq, cause_key=cause_key, kind="outcome", revision=revision, text=None, at=at
        ),
        ev.UpdateTriaged(
            cause=seq,
            cause_key=cause_key,
            revision=revision,
            disposition="actionable" if task is not None else "routine",
            action_priority=None,
            notification_priority=None,
            by="engine",
            generation=None,
            foreground_id=task.conversation_id if task is not None else None,
        ),
        *_batch_events(Draft(state), cause_key, None, seq),  # only if an observation put it in a batch
    ]


def _bound_foreground(state: State, background_id: str, generation: int) -> Conversation:
    """The foreground a background is bound to at `generation`, or fenced."""
    background = known_conversation(state, background_id, "background")
    foreground = state.conversation.by_id.get(background.foreground_id or "")
    if foreground is None or foreground.background_id != background_id or foreground.generation != generation:
        bound = foreground.generation if foreground is not None and foreground.background_id == background_id else None
        raise Rejected("generation_fenced", f"generation {generation} is not {background_id!r}'s binding ({bound})")
    return foreground


def decide_triage(state: State, value: inp.ClassifyTriage, seq: int) -> list[ev.Event]:
    foreground = _bound_foreground(state, value.conversation_id, value.generation)
    check_background_gates(state, value, [value.conversation_id])
    if state.conversation.by_id[value.conversation_id].approvals:
        raise Rejected("triage_blocked", f"{value.conversation_id!r} waits on an approval: never answered for it")
    update = state.inbox.updates.get(value.cause_key)
    if update is None or update.revision != value.update_revision or not UPDATE.allows(update.triage_state, "classify"):
        current = update.revision if update is not None else 0
        raise Rejected(
            "stale_revision", f"update {value.cause_key!r} is at revision {current}, not {value.update_revision}"
        )
    return [
        ev.UpdateTriaged(
            cause=seq,
            cause_key=value.cause_key,
            revision=update.revision,
            disposition=value.disposition,
            action_priority=value.action_priority,
            notification_priority=value.notification_priority,
            by=value.conversation_id,
            generation=value.generation,
            foreground_id=foreground.conversation_id,
        )
    ]


def decide_card(state: State, value: inp.ProposeCard, seq: int) -> list[ev.Event]:
    """A suggestion for the human: never a task, never a grant."""
    bound = [
        conversation.background_id
        for conversation in state.conversation.by_id.values()
        if conversation.role == "foreground" and conversation.generation == value.generation
    ]
    if not bound:
        raise Rejected("generation_fenced", f"no foreground is bound at generation {value.generation}")
    check_background_gates(state, value, bound)
    if value.card_id in state.inbox.cards:
        raise Rejected("already_exists", f"card {value.card_id!r} already exists")
    return [ev.CardProposed(cause=seq, card_id=value.card_id, cause_key=value.cause_key, summary=value.summary)]



# ----------------------------------------------------------------- evolvers

_RECORDED = UPDATE.after[ev.ObservationRecorded]
_REVISED = UPDATE.after[ev.UpdateRevised]
_TRIAGED = UPDATE.after[ev.UpdateTriaged]


def _observation_recorded(state: State, event: ev.ObservationRecorded) -> None:
    judged_as = event.judged_as if event.judged_as is not UNSET else event.source_id  # section 7.2
    source = state.inbox.sources.get(judged_as)  # type: ignore[call-overload]
    if source is None:
        source = state.inbox.sources[judged_as] = Source()  # type: ignore[index]
    source.count = event.local_revision
    if event.ignored is True:
        return  # recorded for audit: counted by the inbox view, nothing else
    source.latest_cause = event.cause_key
    late = event.out_of_order is True
    if event.update_revision is None and not late:
        # A background's own activity: recorded, no update (no feedback loop),
        # and not what later observations of the source are compared with.
        return
    cause = source.causes.get(event.cause_key)
    if cause is None:
        cause = source.causes[event.cause_key] = SourceCause()
    if event.source_version is not None:
        cause.versions.add(event.source_version)
    if late:
        return  # counted by the inbox view; neither the revision nor the latest
    cause.latest_fingerprint = event.fingerprint
    if event.source_time is not UNSET:
        cause.latest_time = event.source_time  # type: ignore[assignment]
        if event.deleted:
            cause.deleted_time = event.source_time  # type: ignore[assignment]
    cause.latest_deleted = event.deleted
    cause.latest_rank = status_rank(event.complete, event.status)
    assert event.update_revision is not None
    _revise_update(state, event, event.update_revision, not event.complete, event.tokens, _RECORDED)


def _revise_update(
    state: State,
    event: ev.ObservationRecorded | ev.UpdateRevised,
    revision: int,
    partial: bool,
    tokens: int | None,
    triage_state: str,
) -> None:
    """A cause's update gets a new revision, untriaged (created on its first)."""
    cause_key, at = event.cause_key, event.at
    update = state.inbox.updates.get(cause_key)
    if update is None:
        update = state.inbox.updates[cause_key] = Update(cause_key, event.kind, revision, at, at, at)
    drop_candidate(state, update)
    update.held_by = None  # holds are per revision
    update.partial = partial
    update.text = event.text
    update.tokens = tokens
    update.kind = event.kind
    update.revision = revision
    update.revised_at = at
    update.last_seen_at = at
    update.triage_state = triage_state
    update.disposition = None
    update.action_priority = None
    update.notification_priority = None
    if type(event) is ev.ObservationRecorded:
        update.latest = LatestObservation(
            scope=event.scope,
            status=event.status,
            commit_sha=event.commit_sha,
            deleted=event.deleted,
            complete=event.complete,
            observed_by=event.cause,
        )
    state.touch_cause(cause_key)


def _observation_repeated(state: State, event: ev.ObservationRepeated) -> None:
    if event.counted:
        update = state.inbox.updates[event.cause_key]
        update.repeats += 1
        update.last_seen_at = event.at


def _update_revised(state: State, event: ev.UpdateRevised) -> None:
    _revise_update(state, event, event.revision, False, None, _REVISED)


def _update_triaged(state: State, event: ev.UpdateTriaged) -> None:
    update = state.inbox.updates[event.cause_key]
    update.triage_state = _TRIAGED
    update.disposition = event.disposition
    update.action_priority = event.action_priority
    update.notification_priority = event.notification_priority
    update.triaged_at = state.last_at  # deliverable since (contract v1.2 section 3.7)
    drop_candidate(state, update)
    update.foreground_id = event.foreground_id
    refresh_candidate(state, update)


def _card_proposed(state: State, event: ev.CardProposed) -> None:
    state.inbox.cards[event.card_id] = event.cause_key


DECIDERS = {
    inp.Observe: decide_observe,
    inp.ClassifyTriage: decide_triage,
    inp.ProposeCard: decide_card,
}
EVOLVERS = {
    ev.ObservationRecorded: _observation_recorded,
    ev.ObservationRepeated: _observation_repeated,
    ev.UpdateRevised: _update_revised,
    ev.UpdateTriaged: _update_triaged,
    ev.CardProposed: _card_proposed,
}
REACTIONS: dict[type, Any] = {}

# Status precedence at equal source times (docs/sources.md): partial
# statuses by how far along they are; any complete observation ranks last.
STATUS_RANKS = {"requested": 0, "waiting": 0, "pending": 0, "queued": 0, "in_progress": 1}
STATUS_RANK_COMPLETE = 2
