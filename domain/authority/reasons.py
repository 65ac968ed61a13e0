"""The reason codes of the authority area, each with its words: the rejections its
deciders are the first to raise (contract Appendix A and v1.2 section 13:
when each is given) and the blocking codes it is the cause of (why a pending
action is not claimed). domain/reasons.py merges every area's and keeps the
codes several areas share."""

from __future__ import annotations

REJECTIONS: dict[str, str] = {
    "too_late": "after an input of another kind",
    "grant_outside_policy": "no operation or no write root survives narrowing",
    "operation_not_granted": "the grant does not allow the operation",
    "write_outside_roots": "a write path is outside the grant's roots",
}
BLOCKS: dict[str, str] = {
}
