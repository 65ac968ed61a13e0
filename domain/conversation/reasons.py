"""The reason codes of the conversation area, each with its words: the rejections its
deciders are the first to raise (contract Appendix A and v1.2 section 13:
when each is given) and the blocking codes it is the cause of (why a pending
action is not claimed). domain/reasons.py merges every area's and keeps the
codes several areas share."""

from __future__ import annotations

REJECTIONS: dict[str, str] = {
    "already_dispatched": "the message is no longer queued",
    "payload_mismatch": "composed already with another digest",
    "payload_unrecorded": "with `payload_required`, acceptance of a delivery with no payload",
}
BLOCKS: dict[str, str] = {
    "intent_unsynced": "the background has not synced the latest intent",
    "approval_pending": "an approval is open on its conversation",
}
