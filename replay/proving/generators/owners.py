"""Two owners (contract v1.2 section 8.1's scope): a second foreground `fg2`
opened once, tasks delegated from it, human messages on either foreground,
their turns' receipts and ends, and maintenance proposals of either's tasks
or of the rule, on the shared resources or on a session itself: what an
owner's input affects, and what it must leave alone."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tandem.replay.proving.generators.universe import Builder, Draw, grant_request, often
from tandem.replay.proving.generators.work import action_propose

SECOND = "fg2"
SECOND_TASKS = ("u1", "u2")
OWNERS = ("fg", SECOND)


def _owners(b: Builder) -> list[Any]:
    return [b.state.conversation.by_id[c] for c in OWNERS if c in b.state.conversation.by_id]


def second_foreground(draw: Draw, b: Builder) -> dict[str, Any]:
    """fg2 opened once; then a task delegated from it (mostly a new one)."""
    if SECOND not in b.state.conversation.by_id:
        return b.line(
            "conversation.open", "daemon", conversation_id=SECOND, role="foreground", context_limit=2000, reserve=200
        )
    free = [t for t in SECOND_TASKS if t not in b.state.tasks.by_id]
    task_id = draw(st.sampled_from(free)) if free and often(draw) else draw(st.sampled_from(SECOND_TASKS))
    return b.line(
        "task.delegate", task_id=task_id, conversation_id=SECOND, message_refs=[], goal=f"goal of {task_id}",
        done_when=["tests pass"], grant=grant_request(draw, f"g-{task_id}"),
    )  # fmt: skip


def owner_message(draw: Draw, b: Builder) -> dict[str, Any]:
    """A human message on fg or (once open) fg2."""
    conversation = SECOND if SECOND in b.state.conversation.by_id and draw(st.booleans()) else "fg"
    b.messages += 1
    return b.line("human.message", conversation_id=conversation, message_id=f"m{b.messages}", text="owner input")


def maintenance_proposal(draw: Draw, b: Builder) -> dict[str, Any]:
    """A proposal (any task's, or the rule's), mostly maintenance, now and
    then on a session itself (resource fg or fg2)."""
    line = action_propose(draw, b)
    if often(draw, 6):
        line["priority"] = "maintenance"
    if often(draw, 3):
        line["resource"] = draw(st.sampled_from(OWNERS))
    return line


def owner_receipt(draw: Draw, b: Builder) -> dict[str, Any]:
    """The provider accepting a submitting delivery of either foreground."""
    submitting = [
        delivery_id
        for conversation in _owners(b)
        for delivery_id, delivery in conversation.deliveries.items()
        if delivery.attempt_state == "submitting"
    ]
    delivery_id = draw(st.sampled_from(submitting)) if submitting else "fg/d1"
    return b.line("provider.receipt", "daemon", delivery_id=delivery_id, result="accepted")


def owner_turn_ended(draw: Draw, b: Builder) -> dict[str, Any]:
    """The end of either foreground's running turn (an owner going idle, or
    its message queued again)."""
    running = [c.running_turn.turn_id for c in _owners(b) if c.running_turn is not None]
    turn_id = draw(st.sampled_from(running)) if running else "fg/t1"
    outcome = draw(st.sampled_from(["completed", "completed", "interrupted"]))
    return b.line("turn.ended", "daemon", turn_id=turn_id, outcome=outcome)
