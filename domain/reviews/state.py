"""The reviews area's part of the decision state: its records, one mutable
dataclass per thing, and its part of the State (`state.<area>`: the records
and the indexes over them), written only by this area's code (domain/records.py
gathers every area's records; domain/state.py holds the parts). A record's
`state` starts where its lifecycle starts and moves only as its events say.
Records are pickled in snapshots: their module is part of the snapshot
fingerprint."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Batch:
    """A review batch (contract v1.2 section 7.1): its causes, each with the
    batch's revision when it joined, and its revision (+ 1 for each new
    update revision of one of its causes)."""

    batch_id: str
    revision: int = 0
    joined: dict[str, int] = field(default_factory=dict)  # cause_key -> the revision it joined at


@dataclass(slots=True)
class ReviewsState:
    """The reviews area's part of the decision state (`state.reviews`): written
    only by this area's evolvers, read by others through it."""

    # Contract v1.2 section 7: alias -> its canonical source; the batches; cause_key -> its batch.
    aliases: dict[str, str] = field(default_factory=dict)
    batches: dict[str, Batch] = field(default_factory=dict)
    batch_of: dict[str, str] = field(default_factory=dict)


__all__ = ['ReviewsState', 'Batch']  # re-exported by domain/records.py
