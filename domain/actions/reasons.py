"""The reason codes of the actions area, each with its words: the rejections its
deciders are the first to raise (contract Appendix A and v1.2 section 13:
when each is given) and the blocking codes it is the cause of (why a pending
action is not claimed). domain/reasons.py merges every area's and keeps the
codes several areas share."""

from __future__ import annotations

REJECTIONS: dict[str, str] = {
    "grant_scope": "the grant does not serve this task, or this rule and actor",
    "duplicate_cause": "another live action for the cause, or a success the cause has not moved past",
    "not_fenced": "the action is not `fenced`",
    "not_cancellable": "the action is terminal or already `cancel_requested`",
    "target_moved": "the cause's latest is on another commit than `target_sha`",
    "source_resolved": "the cause's latest is moot",
    "rule_opted_out": "the rule is not opted in for the cause's scope",
    "not_succeeded": "the action has not succeeded",
    "artifact_mismatch": "another artifact revision than the action's",
    "limit_reached": "64 evidence refs already",
}
BLOCKS: dict[str, str] = {
    "prerequisite_pending": "waits for a prerequisite's outcome",
    "prerequisite_failed": "a prerequisite failed, was cancelled or lacks its artifact",
    "scope_paused": "its task (or everything) is paused",
    "resource_busy": "another action holds its resource",
    "rule_opted_out": "its rule is not opted in for its cause's scope",
    "owner_active": "maintenance: it waits while the owner of its session, or of work on its resource, is active",
}
