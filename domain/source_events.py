"""The events of contract v1.2 section 2 (source revisions at dispatch),
frozen msgspec Structs like every other; domain/events.py re-exports them
(`ev.SourceRuleApplied`) and lists them in its union. Kept in a module of
their own only so that domain/events.py stays under the file limit.
"""

from __future__ import annotations

from tandem.domain.event_base import Decision
from tandem.domain.facts import SourceFacts


class SourceRuleApplied(Decision, frozen=True, kw_only=True):  # contract v1.2 section 2.2: its cause moved on
    # "superseded" (reason source_resolved or target_moved), "fenced" (a task's:
    # reason source_moved) or "restamped" (a rule's: it answers `source_revision` now).
    operation_id: str
    outcome: str
    reason: str | None
    source_revision: int
    facts: SourceFacts


class EvidenceAttached(Decision, frozen=True, kw_only=True):  # contract v1.2 section 2.5
    operation_id: str
    evidence_ref: str
    artifact_revision: str | None  # set when it sets the action's (which had none)
