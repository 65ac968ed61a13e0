"""Background continuity (contract v1.2 section 5): `investigation.open`,
`investigation.close` and `background.checkpoint` for the bound background,
and the background's context resets that make its reseed due; mostly what
would be accepted (its generation, its epoch, an intent its foreground has,
a summary that fits its context), sometimes what must not (an earlier epoch,
a closed or unknown investigation, a checkpoint too big to reseed). A
checkpoint may claim far more tokens than its summary holds (counted at its
bytes: contract v1.2 section 5.2), or have a summary long enough that,
counted whole, its reseed does not fit: context recovery, which a smaller
checkpoint or a close lets it leave (section 5.3)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tandem.replay.proving.generators.universe import CAUSES, TASKS, Builder, Draw, often, revision_near

INVESTIGATION_IDS = ("inv1", "inv2", "inv3")
SYNC_CURSORS = ("scm:1", "scm:2", "scm:3")
# A checkpoint's summary: none, short, or about 1,900 bytes (the machine's background room is 1,800).
SUMMARIES = ("", "bounded summary of the background's position", "long notes of the background's inquiries. " * 45)


def _generation(draw: Draw, b: Builder) -> int:
    return b.generation() if often(draw) else b.generation() - 1


def investigation_open(draw: Draw, b: Builder) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "conversation_id": "bg",
        "generation": _generation(draw, b),
        "investigation_id": draw(st.sampled_from(INVESTIGATION_IDS)),
        "cause_key": draw(st.sampled_from(CAUSES)),
    }
    if often(draw, 5):
        fields["task_id"] = draw(st.sampled_from(TASKS))
    return b.line("investigation.open", "background", **fields)


def investigation_close(draw: Draw, b: Builder) -> dict[str, Any]:
    known = sorted(b.state.investigations.by_id)
    outcome = draw(st.sampled_from(["concluded", "abandoned", "delegated"]))
    fields: dict[str, Any] = {
        "conversation_id": "bg",
        "generation": _generation(draw, b),
        "investigation_id": draw(st.sampled_from(known)) if known and often(draw) else draw(st.sampled_from(INVESTIGATION_IDS)),
        "outcome": outcome,
    }
    if outcome == "delegated":
        actions = sorted(b.state.actions.by_id)
        fields["operation_id"] = draw(st.sampled_from(actions)) if actions and often(draw) else "op-none"
    if often(draw, 4):
        fields["evidence_refs"] = ["ev/inv"]
    return b.line("investigation.close", "background", **fields)


def background_checkpoint(draw: Draw, b: Builder) -> dict[str, Any]:
    background = b.state.conversation.by_id["bg"]
    fields: dict[str, Any] = {
        "conversation_id": "bg",
        "generation": _generation(draw, b),
        "epoch": background.epoch if often(draw) else max(background.epoch - 1, 1),
        "intent_revision": revision_near(draw, b.intent()),
        "sync_cursor": draw(st.sampled_from(SYNC_CURSORS)),
    }
    if often(draw, 5):
        fields["evidence_refs"] = ["ev/ck"]
    summary = draw(st.sampled_from(SUMMARIES))
    if summary:
        fields["summary"] = summary
    if not often(draw, 6):
        # 5000 (half the figures): a claim past any summary's bytes and the machine's context
        fields["tokens"] = draw(st.sampled_from([5, 100, 5000, 5000]))
    return b.line("background.checkpoint", "background", **fields)


def background_reset(draw: Draw, b: Builder) -> dict[str, Any]:
    """A provider-session loss of the background (its reseed is due once it has a checkpoint)."""
    return b.line("context.reset", "daemon", conversation_id="bg", reason=draw(st.sampled_from(["provider_loss", "compaction"])))


def reseed_receipt(draw: Draw, b: Builder) -> dict[str, Any]:
    """The provider's receipt of the background's latest delivery (its reseed), mostly accepted."""
    background = b.state.conversation.by_id["bg"]
    delivery_id = max(background.deliveries, key=lambda d: int(d.rsplit("d", 1)[1]), default="bg/d1")
    result = "accepted" if often(draw, 6) else draw(st.sampled_from(["refused", "unknown"]))
    return b.line("provider.receipt", "daemon", delivery_id=delivery_id, result=result)
