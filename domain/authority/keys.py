"""Which ids each event of the authority area concerns (domain/keys.py says how a
`"kind: path"` is read, and merges every area's `KEYS`)."""

from __future__ import annotations

from tandem.domain import events as ev

KEYS: dict[type[ev.Event], tuple[str, ...]] = {
    ev.EngineConfigured: ("config",),
    ev.PolicySet: ("policy", "action: fenced[]", "action: restamped[]"),
    ev.GrantIssued: ("grant: grant_id", "task: task_id"),
    ev.GrantRevised: ("grant: grant_id", "action: fenced[]", "action: restamped[]"),
    ev.GrantRevoked: ("grant: grant_id",),
    ev.RuleSet: (),
}
