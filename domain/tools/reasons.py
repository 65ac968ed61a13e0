"""The reason codes of the tools area, each with its words: the rejections its
deciders are the first to raise (contract Appendix A and v1.2 section 13:
when each is given) and the blocking codes it is the cause of (why a pending
action is not claimed). domain/reasons.py merges every area's and keeps the
codes several areas share."""

from __future__ import annotations

REJECTIONS: dict[str, str] = {
    "runtime_not_admitted": "no runtime admitted at the current generation; the runtime is refused or fenced; the action names another runtime",
    "tool_not_exact": "a wildcard, a server or a prefix instead of a tool",
    "context_not_reseeded": "the background's reseed of this epoch is not accepted; in context recovery, all of them but `background.checkpoint` and `investigation.close` (§5.4)",
    "unknown_runtime": "no such runtime, or (`action.propose`) not a worker one",
    "isolation_unavailable": "no isolation test evidence",
    "tools_inherited": "inherited provider/MCP tools",
    "tool_not_allowed": "a tool outside the allowlist (or the admission)",
    "read_outside_roots": "a read root or path outside the read roots",
    "budget_exhausted": "`tool.request` of an action whose grant's budget is used up (v1.2 section 13)",
}
BLOCKS: dict[str, str] = {
    "runtime_not_admitted": "the worker runtime it names is not admitted",
}
