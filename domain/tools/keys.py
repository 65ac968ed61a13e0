"""Which ids each event of the tools area concerns (domain/keys.py says how a
`"kind: path"` is read, and merges every area's `KEYS`)."""

from __future__ import annotations

from tandem.domain import events as ev

KEYS: dict[type[ev.Event], tuple[str, ...]] = {
    ev.ToolPolicySet: ("tool_policy", "runtime: revoked[]", "runtime: restamped[]"),
    ev.RuntimeAdmitted: ("runtime: runtime_id", "runtimes"),
    ev.RuntimeRefused: ("runtime: runtime_id", "runtimes"),
    ev.RuntimeFenced: ("runtime: runtime_id",),
    ev.ToolCallAllowed: ("runtime: runtime_id", "action: operation_id", "investigation: investigation_id"),
    ev.ToolCallDenied: ("runtime: runtime_id", "action: operation_id", "investigation: investigation_id"),
}
