"""The reason codes of the budgets area, each with its words: the rejections its
deciders are the first to raise (contract Appendix A and v1.2 section 13:
when each is given) and the blocking codes it is the cause of (why a pending
action is not claimed). domain/reasons.py merges every area's and keeps the
codes several areas share."""

from __future__ import annotations

REJECTIONS: dict[str, str] = {
}
BLOCKS: dict[str, str] = {
    "budget_exhausted": "its grant's budget is used up (token_limit or call_limit reached)",
    "retry_backoff": "refused: it waits for its retry back-off",
}
