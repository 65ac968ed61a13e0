"""The events of the reviews area: immutable facts, in the past tense, one frozen
msgspec Struct each (domain/events.py assembles every area's into the one
union the log is written in)."""

from __future__ import annotations

from tandem.domain.event_base import Decision
from tandem.domain.facts import BatchFixFacts


class SourceAliased(Decision, frozen=True, kw_only=True):  # section 7.2
    source_id: str  # the alias
    alias_of: str  # its canonical source (an alias named as `alias_of` resolved)


class BatchJoined(Decision, frozen=True, kw_only=True):  # section 7.2: an alias observed before it was one
    """A cause joins a batch without a new revision of its own: `revision`
    is the batch's, unchanged (what an action proposed before counts as)."""

    batch_id: str
    cause_key: str
    revision: int
    source_id: str  # the alias whose observations revised the cause (or its canonical's latest cause)


class BatchRevised(Decision, frozen=True, kw_only=True):  # section 7.1
    """One of the batch's causes got a new update revision: the batch's
    revision is `revision` now. `joined`: with it the cause joined the batch
    (its first observation naming one)."""

    batch_id: str
    cause_key: str
    revision: int
    joined: bool = False


class BatchFixSuperseded(Decision, frozen=True, kw_only=True):  # section 7.3: one live fix per batch
    """A pending or fenced fix superseded (`duplicate_batch`) when a cause
    joined its batch and an earlier fix of the batch is live: `facts` names
    the batch, the cause that joined and the fix that survives. (One out with
    the executor is asked to stop instead: ActionCancelRequested.)"""

    operation_id: str
    facts: BatchFixFacts


__all__ = ['SourceAliased', 'BatchJoined', 'BatchRevised', 'BatchFixSuperseded']  # every name here is the registry's: `ev.Name`
