"""The catalog's invariants of contract v1.2 section 5 (background
continuity): "missing narrative never authorizes action replay" — no gated
background input is accepted while its background's reseed is not accepted,
but its way out of context recovery (contract v1.2 sections 5.4, 14); and
context recovery is a hold a background can leave (sections 5.2, 5.3, issue
23). Restated from the state (the checkpoint's epoch, summary bytes and
refs, the deliveries of the current epoch, the foreground's tasks, grants,
questions and actions), not asked of domain/tools/rules.py's gate or
domain/background_pass.py's costs, so the checks do not share the code they
check."""

from __future__ import annotations

from tandem.domain import events as ev
from tandem.domain import inputs as inp
from tandem.domain.events import Event
from tandem.domain.records import Conversation
from tandem.domain.state import State
from tandem.replay.proving.model import Applying, World, event_invariant, state_invariant
from tandem.replay.proving.restated import TERMINAL

# What a reseed's required part counts (contract section 5.2; v1.2 sections 5.2, 5.3), restated.
TASK_TOKENS, GRANT_TOKENS, QUESTION_TOKENS, ACTION_TOKENS = 40, 20, 30, 30
INVESTIGATION_TOKENS, REF_TOKENS = 30, 10
UNRESOLVED = frozenset({"open", "exhausted"})
# A background's way out of context recovery: admitted while it is in it (section 5.4).
WAY_OUT = (inp.CheckpointBackground, inp.CloseInvestigation)


def _bound_at(state: State, background_id: str) -> int | None:
    background = state.conversation.by_id.get(background_id)
    foreground = state.conversation.by_id.get(background.foreground_id or "") if background is not None else None
    if foreground is None or foreground.background_id != background_id:
        return None
    return foreground.generation


def _task_background(state: State, task_id: str | None) -> list[str]:
    task = state.tasks.by_id.get(task_id or "")
    conversation = state.conversation.by_id.get(task.conversation_id) if task is not None else None
    return [conversation.background_id] if conversation is not None and conversation.background_id else []


def acting_for(state: State, value: inp.Input) -> list[str]:
    """The backgrounds a background input acts for (contract v1.2 section 1.3's list)."""
    if isinstance(value, (inp.ClassifyTriage, inp.CheckpointBackground, inp.OpenInvestigation, inp.CloseInvestigation)):
        return [value.conversation_id]
    if isinstance(value, inp.SyncIntent):
        foreground = state.conversation.by_id.get(value.conversation_id)
        return [foreground.background_id] if foreground is not None and foreground.background_id else []
    if isinstance(value, (inp.ProposeAction, inp.RaiseQuestion, inp.CompleteTask)):
        return _task_background(state, value.task_id if isinstance(value.task_id, str) else None)
    if isinstance(value, inp.RevalidateAction):
        action = state.actions.by_id.get(value.operation_id)
        return _task_background(state, action.task_id if action is not None else None)
    if isinstance(value, inp.ProposeCard):
        return sorted(c for c, conversation in state.conversation.by_id.items()
                      if conversation.role == "background" and _bound_at(state, c) == value.generation)  # fmt: skip
    return []


def _admitted(state: State, background_id: str) -> bool:
    return any(
        runtime.role == "background" and runtime.conversation_id == background_id and runtime.state == "admitted"
        and runtime.generation == _bound_at(state, background_id)
        for runtime in state.tools.runtimes.values()
    )  # fmt: skip


def not_reseeded(state: State, background_id: str) -> bool:
    """It has a checkpoint, no reseed of the current epoch was accepted, and
    one is owed: its checkpoint was written before its latest reset (an
    earlier epoch), or it is in context recovery, or a reseed of this epoch
    was made (a checkpoint written in recovery is of the current epoch)."""
    background = state.conversation.by_id[background_id]
    if background.checkpoint is None:
        return False
    reseeds = [d for d in background.deliveries.values() if d.kind == "reseed" and d.epoch == background.epoch]
    if any(delivery.attempt_state == "accepted" for delivery in reseeds):
        return False
    return background.checkpoint.epoch < background.epoch or background.recovery == "reseed" or bool(reseeds)


@event_invariant
def background_acts_only_reseeded(before: State, event: Event, applying: Applying) -> str | None:
    """"Missing narrative never authorizes action replay": after a context
    reset of a background that has a checkpoint, none of its gated inputs
    (triage, intent syncs, proposals, revalidations, questions, completions,
    cards, checkpoints, investigations) is accepted until that epoch's
    reseed is accepted (contract v1.2 section 5.4) — but, while it is in
    context recovery, its checkpoint and its investigation close: its way out."""
    if not isinstance(event, ev.InputAccepted) or event.input.sender != "background":
        return None
    value = event.input
    named = [b for b in acting_for(before, value) if b in before.conversation.by_id]
    if "background" in before.tools.policies:
        named = [b for b in named if _admitted(before, b)]
    if isinstance(value, WAY_OUT):
        named = [b for b in named if before.conversation.by_id[b].recovery != "reseed"]
    if named and all(not_reseeded(before, b) for b in named):
        return f"{value.input_type} accepted for {', '.join(named)} before its epoch's reseed was accepted"
    return None


def required_part(state: State, background: Conversation) -> int:
    """The reseed's required part, restated: its foreground's active tasks (40
    each, 20 for a live grant, 30 per open question, 30 per action not
    terminal), 30 per unresolved investigation of the background, and its
    latest checkpoint counted at most at its bound (its summary's UTF-8 bytes
    + 10 per evidence ref), whatever it was counted at."""
    total = 0
    foreground = state.conversation.by_id.get(background.foreground_id or "")
    for task_id in foreground.tasks if foreground is not None else ():
        task = state.tasks.by_id[task_id]
        if task.state != "active":
            continue
        questions = sum(1 for q in state.tasks.questions.values() if q.task_id == task_id and q.state == "open")
        actions = sum(1 for op in task.actions if state.actions.by_id[op].state not in TERMINAL)
        live = state.authority.grants[task.grant_id].state == "live"
        total += TASK_TOKENS + GRANT_TOKENS * live + QUESTION_TOKENS * questions + ACTION_TOKENS * actions
    investigations = state.investigations.by_id.values()
    total += INVESTIGATION_TOKENS * sum(
        1 for i in investigations if i.conversation_id == background.conversation_id and i.state in UNRESOLVED
    )
    checkpoint = background.checkpoint
    if checkpoint is not None:
        total += min(checkpoint.tokens, checkpoint.summary_bytes + REF_TOKENS * len(checkpoint.evidence_refs))
    return total


@state_invariant
def recovery_has_a_way_out(world: World) -> str | None:
    """Context recovery is a hold a background can leave, never a trap: "If
    required control state cannot fit, use the visible context-recovery hold;
    do not mark the reseed complete", and "rebuild a bounded context from
    durable state". After every input, a background in context recovery is
    one whose reseed's required part, restated from durable state (its
    checkpoint at most at its summary's bytes + 10 per ref, whatever the
    model claimed), does not fit its room: once it fits, the pass has left
    recovery (contract v1.2 sections 5.2, 5.3)."""
    state = world.state
    for background_id in sorted(state.conversation.by_id):
        background = state.conversation.by_id[background_id]
        if background.role != "background" or background.recovery != "reseed":
            continue
        required = required_part(state, background)
        room = background.context_limit - background.reserve - background.context_tokens
        if required <= room:
            return f"{background_id} is in context recovery, but its reseed's required part {required} fits its room {room}"
    return None
