"""Reviews: batches and aliases (contract v1.2 section 7).

`source.alias` says that one source (an SCM path's review) is the same
object as another (the internal run's): from then on the inbox judges an
observation naming the alias as one of its canonical source (domain/inbox.py,
`_judged`). An alias observed before it was one (SCM first) brings the causes
it revised into the batch of its canonical source's latest cause, or, that
cause having none, both into batch `alias:{alias_of}`.

A cause joins a batch at its first observation naming one (domain/inbox.py,
`BatchRevised`); `duplicate_batch` keeps a batch to one fix: no proposal for
a cause of a batch while an action for another of its causes is live, or
succeeded and the batch has not moved past the revision it counted as
proposed at.
"""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain import inputs as inp
from tandem.domain.reasons import Rejected
from tandem.domain.records import Batch
from tandem.domain.state import State


def canonical_source(state: State, source_id: str) -> str:
    """The source an observation naming `source_id` is judged as."""
    return state.aliases.get(source_id, source_id)


def decide_alias(state: State, value: inp.AliasSource, seq: int) -> list[ev.Event]:
    canonical = canonical_source(state, value.alias_of)
    if canonical not in state.sources:
        raise Rejected("unknown_source", f"{value.alias_of!r} was never observed")
    alias = value.source_id
    if state.aliases.get(alias) == canonical:
        return []  # the same alias again: accepted, changes nothing
    if alias == canonical:
        raise Rejected("already_exists", f"{alias!r} is the source {value.alias_of!r} is (an alias of)")
    if alias in state.aliases:
        raise Rejected("already_exists", f"{alias!r} is already an alias of {state.aliases[alias]!r}")
    if alias in state.aliases.values():
        raise Rejected("already_exists", f"{alias!r} has aliases of its own")
    return [ev.SourceAliased(cause=seq, source_id=alias, alias_of=canonical), *_joins(state, alias, canonical, seq)]


def _joins(state: State, alias: str, canonical: str, seq: int) -> list[ev.Event]:
    """SCM first: each cause the alias revised joins the batch of the canonical
    source's latest cause (that cause having none, both join `alias:{canonical}`)."""
    observed = state.sources.get(alias)
    revised = [key for key, cause in observed.causes.items() if cause.latest_fingerprint is not None] if observed else []
    if not revised:
        return []
    latest = state.sources[canonical].latest_cause
    batch_id = state.batch_of.get(latest) if latest is not None else None
    if batch_id is None:
        batch_id = f"alias:{canonical}"
        revised = [latest, *revised] if latest is not None else revised
    batch = state.batches.get(batch_id)
    revision = batch.revision if batch is not None else 0
    return [
        ev.BatchJoined(cause=seq, batch_id=batch_id, cause_key=cause_key, revision=revision, source_id=alias)
        for cause_key in dict.fromkeys(revised)
        if cause_key not in state.batch_of
    ]


def check_duplicate_batch(state: State, cause_key: str) -> None:
    """`duplicate_batch` (section 7.3): an action for another cause of the
    cause's batch is not terminal, or succeeded while the batch has not moved
    past the revision it was proposed at (before its cause joined: the joining one)."""
    batch_id = state.batch_of.get(cause_key)
    if batch_id is None:
        return
    batch = state.batches[batch_id]
    for other_cause, joined_at in batch.joined.items():
        if other_cause == cause_key:
            continue
        for operation_id in state.actions_by_cause.get(other_cause, ()):
            other = state.actions[operation_id]
            proposed_at = other.batch_revision if other.batch_id == batch_id else joined_at
            where = f"for {other_cause!r} of batch {batch_id!r} (proposed at its revision {proposed_at}, now {batch.revision})"
            if not other.terminal:
                raise Rejected("duplicate_batch", f"{operation_id!r} is {other.state} {where}")
            if other.state == "succeeded" and batch.revision <= proposed_at:
                raise Rejected("duplicate_batch", f"{operation_id!r} already succeeded {where}")


def proposal_batch(state: State, cause_key: str) -> tuple[Any, Any]:
    """What an accepted proposal records (section 7.3): its cause's batch and
    that batch's revision, or UNSET twice (a v1 event is unchanged)."""
    batch_id = state.batch_of.get(cause_key)
    if batch_id is None:
        return UNSET, UNSET
    return batch_id, state.batches[batch_id].revision


# ----------------------------------------------------------------- evolvers


def _join(state: State, batch_id: str, cause_key: str, revision: int) -> Batch:
    batch = state.batches.get(batch_id)
    if batch is None:
        batch = state.batches[batch_id] = Batch(batch_id)
    batch.joined[cause_key] = revision
    state.batch_of[cause_key] = batch_id
    return batch


def _source_aliased(state: State, event: ev.SourceAliased) -> None:
    state.aliases[event.source_id] = event.alias_of


def _batch_joined(state: State, event: ev.BatchJoined) -> None:
    _join(state, event.batch_id, event.cause_key, event.revision)


def _batch_revised(state: State, event: ev.BatchRevised) -> None:
    if event.joined:
        _join(state, event.batch_id, event.cause_key, event.revision)
    state.batches[event.batch_id].revision = event.revision


DECIDERS = {inp.AliasSource: decide_alias}
EVOLVERS = {
    ev.SourceAliased: _source_aliased,
    ev.BatchJoined: _batch_joined,
    ev.BatchRevised: _batch_revised,
}
REACTIONS: dict[type, Any] = {}
