"""The events every transaction starts with, and the bases of all events
(re-exported by domain/events.py, where the rest are: `ev.InputAccepted` is
this module's). Every other event is a `Decision`, naming its input's
sequence number in `cause`. A module of their own so that the events of an
area kept apart (domain/tools/events.py, domain/health/events.py, ...) share
them without importing domain/events.py.
"""

from __future__ import annotations

from msgspec import Struct

from tandem.domain.inputs import AnyInput


class Event(Struct, frozen=True, tag_field="event", kw_only=True, omit_defaults=False):
    pass


class Decision(Event, frozen=True, kw_only=True):
    """An event caused by an input; `cause` is that input's sequence number."""

    cause: int


# ----------------------------------------------------------------- inputs


class InputAccepted(Event, frozen=True, kw_only=True):
    seq: int
    file: str | None
    line: int | None
    input: AnyInput


class InputRejected(Event, frozen=True, kw_only=True):
    seq: int
    file: str | None
    line: int | None
    input: AnyInput
    reason: str
    detail: str = ""


class SourceProgressed(Event, frozen=True, kw_only=True):
    """How far a trace file has been ingested: its first `offset` bytes (whose
    SHA-256 is `digest`) up to line `line`. Written once per committed batch."""

    file: str
    line: int
    offset: int
    digest: str
