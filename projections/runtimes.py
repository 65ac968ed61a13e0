"""The `runtimes` view (contract v1.2 section 1.6): each runtime, its
admission, and its allowed and denied tool calls, by `runtime_id`.

The states each event leaves a runtime in are the lifecycle's (`RUNTIME.after`)."""

from __future__ import annotations

from typing import Any

from tandem.domain import events as ev
from tandem.domain.lifecycles import RUNTIME
from tandem.projections.base import View, sorted_rows


class RuntimesView(View):
    name = "runtimes"
    key = "runtime_id"  # each handler returns the runtimes it touched

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, Any]] = {}

    def _profile(self, event: ev.RuntimeAdmitted | ev.RuntimeRefused, reason: str | None) -> None:
        row = self.rows.setdefault(
            event.runtime_id,
            {
                "runtime_id": event.runtime_id,
                "role": event.role,
                "conversation_id": event.conversation_id,
                "generation": None,
                "adapter": None,
                "state": None,
                "reason": None,
                "tool_policy_revision": 0,
                "tools": [],
                "calls_allowed": 0,
                "calls_denied": 0,
            },
        )
        row["generation"] = event.generation
        row["adapter"] = event.adapter
        row["state"] = RUNTIME.after[type(event)]
        row["reason"] = reason
        row["tool_policy_revision"] = event.tool_policy_revision
        row["tools"] = list(event.tools)

    def _admitted(self, event: ev.RuntimeAdmitted) -> str:
        self._profile(event, None)
        return event.runtime_id

    def _refused(self, event: ev.RuntimeRefused) -> str:
        self._profile(event, event.reason)
        return event.runtime_id

    def _policy(self, event: ev.ToolPolicySet) -> list[str] | bool:
        for runtime_id in event.revoked:
            row = self.rows[runtime_id]
            row["state"] = RUNTIME.after[ev.ToolPolicySet]
            row["reason"] = event.revoked_because[runtime_id].check
        for runtime_id in event.restamped:
            self.rows[runtime_id]["tool_policy_revision"] = event.revision
        return [*event.revoked, *event.restamped] or False

    def _fenced(self, event: ev.RuntimeFenced) -> str:
        self.rows[event.runtime_id]["state"] = RUNTIME.after[ev.RuntimeFenced]
        return event.runtime_id

    def _allowed(self, event: ev.ToolCallAllowed) -> str:
        self.rows[event.runtime_id]["calls_allowed"] += 1
        return event.runtime_id

    def _denied(self, event: ev.ToolCallDenied) -> str:
        self.rows[event.runtime_id]["calls_denied"] += 1
        return event.runtime_id

    handlers = {
        ev.RuntimeAdmitted: _admitted,
        ev.RuntimeRefused: _refused,
        ev.ToolPolicySet: _policy,
        ev.RuntimeFenced: _fenced,
        ev.ToolCallAllowed: _allowed,
        ev.ToolCallDenied: _denied,
    }

    def render(self) -> list[dict[str, Any]]:
        return sorted_rows(self.rows)
