"""Reviews: batches and aliases (contract v1.2 section 7).

`source.alias` says that one source (an SCM path's review) is the same
object as another (the internal run's): from then on the inbox judges an
observation naming the alias as one of its canonical source (domain/inbox/rules.py,
`_judged`). An alias observed before it was one (SCM first) brings the causes
it revised into the batch of its canonical source's latest cause, or, that
cause having none, both into batch `alias:{alias_of}`.

A cause joins a batch at its first observation naming one (domain/inbox/rules.py,
`BatchRevised`); `duplicate_batch` keeps a batch to one fix: no proposal for
a cause of a batch while an action for another of its causes is live, or
succeeded and the batch has not moved past the revision it counted as
proposed at. And membership is tracked after the proposals (section 7.3,
issue 23): when a cause joins a batch whose causes then have more than one
live fix (one the action lifecycle can still supersede or ask to stop), the
earliest proposed survives; a later pending or fenced one is superseded, a
later one out with the executor asked to stop (`cancel_requested`, its
attempt untouched), both `duplicate_batch` (a reaction to the join, in the
same transaction: `stop_duplicate_fixes`).
"""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain import inputs as inp
from tandem.domain.lifecycles import ACTION
from tandem.domain.reasons import Rejected
from tandem.domain.records import Action, Batch
from tandem.domain.actions.state import move_action
from tandem.domain.state import State


def canonical_source(state: State, source_id: str) -> str:
    """The source an observation naming `source_id` is judged as."""
    return state.reviews.aliases.get(source_id, source_id)


def decide_alias(state: State, value: inp.AliasSource, seq: int) -> list[ev.Event]:
    canonical = canonical_source(state, value.alias_of)
    if canonical not in state.inbox.sources:
        raise Rejected("unknown_source", f"{value.alias_of!r} was never observed")
    alias = value.source_id
    if state.reviews.aliases.get(alias) == canonical:
        return []  # the same alias again: accepted, changes nothing
    if alias == canonical:
        raise Rejected("already_exists", f"{alias!r} is the source {value.alias_of!r} is (an alias of)")
    if alias in state.reviews.aliases:
        raise Rejected("already_exists", f"{alias!r} is already an alias of {state.reviews.aliases[alias]!r}")
    if alias in state.reviews.aliases.values():
        raise Rejected("already_exists", f"{alias!r} has aliases of its own")
    return [ev.SourceAliased(cause=seq, source_id=alias, alias_of=canonical), *_joins(state, alias, canonical, seq)]


def _joins(state: State, alias: str, canonical: str, seq: int) -> list[ev.Event]:
    """SCM first: each cause the alias revised joins the batch of the canonical
    source's latest cause (that cause having none, both join `alias:{canonical}`)."""
    observed = state.inbox.sources.get(alias)
    revised = [key for key, cause in observed.causes.items() if cause.latest_fingerprint is not None] if observed else []
    if not revised:
        return []
    latest = state.inbox.sources[canonical].latest_cause
    batch_id = state.reviews.batch_of.get(latest) if latest is not None else None
    if batch_id is None:
        batch_id = f"alias:{canonical}"
        revised = [latest, *revised] if latest is not None else revised
    batch = state.reviews.batches.get(batch_id)
    revision = batch.revision if batch is not None else 0
    return [
        ev.BatchJoined(cause=seq, batch_id=batch_id, cause_key=cause_key, revision=revision, source_id=alias)
        for cause_key in dict.fromkeys(revised)
        if cause_key not in state.reviews.batch_of
    ]


def check_duplicate_batch(state: State, cause_key: str) -> None:
    """`duplicate_batch` (section 7.3): an action for another cause of the
    cause's batch is not terminal, or succeeded while the batch has not moved
    past the revision it was proposed at (before its cause joined: the joining one)."""
    batch_id = state.reviews.batch_of.get(cause_key)
    if batch_id is None:
        return
    batch = state.reviews.batches[batch_id]
    for other_cause, joined_at in batch.joined.items():
        if other_cause == cause_key:
            continue
        for operation_id in state.actions.by_cause.get(other_cause, ()):
            other = state.actions.by_id[operation_id]
            proposed_at = other.batch_revision if other.batch_id == batch_id else joined_at
            where = f"for {other_cause!r} of batch {batch_id!r} (proposed at its revision {proposed_at}, now {batch.revision})"
            if not other.terminal:
                raise Rejected("duplicate_batch", f"{operation_id!r} is {other.state} {where}")
            if other.state == "succeeded" and batch.revision <= proposed_at:
                raise Rejected("duplicate_batch", f"{operation_id!r} already succeeded {where}")


def proposal_batch(state: State, cause_key: str) -> tuple[Any, Any]:
    """What an accepted proposal records (section 7.3): its cause's batch and
    that batch's revision, or UNSET twice (a v1 event is unchanged)."""
    batch_id = state.reviews.batch_of.get(cause_key)
    if batch_id is None:
        return UNSET, UNSET
    return batch_id, state.reviews.batches[batch_id].revision


def live_fixes(state: State, batch_id: str) -> list[Action]:
    """Section 7.3: the actions for the causes in the batch now that the
    lifecycle can still supersede or ask to stop, in proposal order."""
    actions = (
        state.actions.by_id[operation_id]
        for cause_key in state.reviews.batches[batch_id].joined
        for operation_id in state.actions.by_cause.get(cause_key, ())
    )
    live = [action for action in actions if any(ACTION.allows(action.state, stop) for stop in _STOPS)]
    return sorted(live, key=lambda action: action.order)


def stop_duplicate_fixes(state: State, batch_id: str, joined: str, cause: int) -> list[ev.Event]:
    """Section 7.3: `joined` joined the batch; every live fix of it but the
    earliest is superseded (pending, fenced) or asked to stop (out with the
    executor), `duplicate_batch`."""
    live = live_fixes(state, batch_id)
    if len(live) < 2:
        return []
    kept = live[0]
    facts = ev.BatchFixFacts(
        batch_id=batch_id,
        revision=state.reviews.batches[batch_id].revision,
        joined=joined,
        kept=kept.operation_id,
        kept_cause=kept.cause_key,
    )
    return [
        ev.BatchFixSuperseded(cause=cause, operation_id=action.operation_id, facts=facts)
        if ACTION.allows(action.state, "supersede")
        else ev.ActionCancelRequested(
            cause=cause, operation_id=action.operation_id, reason="duplicate_batch", duplicate_batch=facts
        )
        for action in live[1:]
    ]


def _on_joined(state: State, event: ev.BatchRevised | ev.BatchJoined) -> list[ev.Event]:
    """A cause joined a batch (its first observation naming one, or an alias's
    join); a revision of a cause already in it changes no membership."""
    if type(event) is ev.BatchRevised and not event.joined:
        return []
    return stop_duplicate_fixes(state, event.batch_id, event.cause_key, event.cause)


# ----------------------------------------------------------------- evolvers


def _join(state: State, batch_id: str, cause_key: str, revision: int) -> Batch:
    batch = state.reviews.batches.get(batch_id)
    if batch is None:
        batch = state.reviews.batches[batch_id] = Batch(batch_id)
    batch.joined[cause_key] = revision
    state.reviews.batch_of[cause_key] = batch_id
    return batch


def _source_aliased(state: State, event: ev.SourceAliased) -> None:
    state.reviews.aliases[event.source_id] = event.alias_of


def _batch_joined(state: State, event: ev.BatchJoined) -> None:
    _join(state, event.batch_id, event.cause_key, event.revision)


def _batch_revised(state: State, event: ev.BatchRevised) -> None:
    if event.joined:
        _join(state, event.batch_id, event.cause_key, event.revision)
    state.reviews.batches[event.batch_id].revision = event.revision


def _fix_superseded(state: State, event: ev.BatchFixSuperseded) -> None:
    move_action(state, state.actions.by_id[event.operation_id], _SUPERSEDED)


_SUPERSEDED = ACTION.after[ev.BatchFixSuperseded]
_STOPS = ("supersede", "request_cancel")  # what stops a fix that is live (section 7.3)

DECIDERS = {inp.AliasSource: decide_alias}
EVOLVERS = {
    ev.SourceAliased: _source_aliased,
    ev.BatchJoined: _batch_joined,
    ev.BatchRevised: _batch_revised,
    ev.BatchFixSuperseded: _fix_superseded,
}
REACTIONS = {ev.BatchRevised: _on_joined, ev.BatchJoined: _on_joined}
