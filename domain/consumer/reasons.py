"""The reason codes of the consumer area, each with its words: the rejections its
deciders are the first to raise (contract Appendix A and v1.2 section 13:
when each is given) and the blocking codes it is the cause of (why a pending
action is not claimed). domain/reasons.py merges every area's and keeps the
codes several areas share."""

from __future__ import annotations

REJECTIONS: dict[str, str] = {
    "reconciliation_required": "the consumer is in reconciliation, or the batch is in another epoch (which enters it)",
    "stale_reconciliation": "it does not name the open reconciliation",
    "bad_sequence": "the entries' `seq` do not strictly increase (not implemented yet)",
}
BLOCKS: dict[str, str] = {
}
