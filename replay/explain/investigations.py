"""Investigations (contract v1.2 section 5.1): why a background's
investigation is open, exhausted or closed: when it opened and falls due,
each tool call counted on it or denied for it, what exhausted it (its due
time, or the call that reached investigation_calls_max), the checkpoints
that listed it, and how it was closed."""

from __future__ import annotations

from tandem.domain import events as ev
from tandem.domain.lifecycles import INVESTIGATION
from tandem.projections.base import rfc3339
from tandem.replay.explain.chain import Chain, Rendered
from tandem.replay.explain.log import Entry
from tandem.replay.explain.model import Fact
from tandem.replay.explain.runtimes import tool_facts, tool_named


class Investigation(Chain):
    kind, key, lifecycle = "investigation", "investigation", INVESTIGATION
    opened: ev.InvestigationOpened
    calls = 0

    def opening(self, entry: Entry, event: ev.InvestigationOpened) -> Rendered:
        self.opened = event
        task = f" for task {event.task_id}" if event.task_id else ""
        summary = f"opened by {event.conversation_id} into {event.cause_key}{task}, due at {rfc3339(event.due_at)}"
        fact = Fact(name="due_at", text=f"due at {rfc3339(event.due_at)} (opened_at + investigation_max_s)", value=rfc3339(event.due_at))
        return summary, [fact]

    def allowed(self, entry: Entry, event: ev.ToolCallAllowed) -> Rendered:
        self.calls += 1
        return f"call {event.call_id} {event.tool} by {event.runtime_id} allowed: counted ({self.calls})", []

    def denied(self, entry: Entry, event: ev.ToolCallDenied) -> Rendered:
        summary = f"call {event.call_id} {tool_named(event.tool)} by {event.runtime_id} denied {event.reason} before execution"
        return summary, tool_facts(self.resolver, event.facts, entry[0], event.runtime_id)

    def exhausted(self, entry: Entry, event: ev.InvestigationExhausted) -> Rendered:
        if event.by == "time":
            summary = f"exhausted: its due time {rfc3339(event.due_at)} passed (calls {event.calls})"
        else:
            summary = f"exhausted: calls {event.calls} reached investigation_calls_max {event.calls_max}"
        value = {"by": event.by, "due_at": rfc3339(event.due_at), "calls": event.calls, "investigation_calls_max": event.calls_max}
        return summary, [Fact(name="bound", text=f"ran out by {event.by}", value=value)]

    def checkpointed(self, entry: Entry, event: ev.BackgroundCheckpointed) -> Rendered:
        return f"listed as unresolved by checkpoint {event.checkpoint_id} (sync cursor {event.sync_cursor})", []

    def closed(self, entry: Entry, event: ev.InvestigationClosed) -> Rendered:
        summary = f"{event.outcome} (was {event.was})" + (f", handed to {event.operation_id}" if event.operation_id else "")
        facts = [Fact(name="evidence_refs", text=f"evidence [{', '.join(event.evidence_refs)}]", value=list(event.evidence_refs))]
        return summary, facts if event.evidence_refs else []

    renderers = {
        ev.InvestigationOpened: opening,
        ev.ToolCallAllowed: allowed,
        ev.ToolCallDenied: denied,
        ev.InvestigationExhausted: exhausted,
        ev.BackgroundCheckpointed: checkpointed,
        ev.InvestigationClosed: closed,
    }

    def summary(self) -> str:
        opened = self.opened
        return f"investigation of {opened.conversation_id} into {opened.cause_key}, {self.calls} call(s) counted"

    waits = {
        "open": ("investigation.close", "waits for investigation.close, or its due time or calls to run out"),
        "exhausted": ("investigation.close", "exhausted: its calls are denied until investigation.close"),
    }

    def related(self) -> list[str]:
        return [f"alert investigation_exhausted:{self.identifier}"]
