"""The catalog's invariant of contract v1.2 section 5 (background
continuity): "missing narrative never authorizes action replay" — no gated
background input is accepted while its background's reseed is not accepted
(contract v1.2 section 14). Restated from the state (the checkpoint's epoch,
the deliveries of the current epoch), not asked of domain/tools.py's gate,
so the check does not share the code it checks."""

from __future__ import annotations

from tandem.domain import events as ev
from tandem.domain import inputs as inp
from tandem.domain.events import Event
from tandem.domain.state import State
from tandem.replay.proving.model import Applying, event_invariant


def _bound_at(state: State, background_id: str) -> int | None:
    background = state.conversations.get(background_id)
    foreground = state.conversations.get(background.foreground_id or "") if background is not None else None
    if foreground is None or foreground.background_id != background_id:
        return None
    return foreground.generation


def _task_background(state: State, task_id: str | None) -> list[str]:
    task = state.tasks.get(task_id or "")
    conversation = state.conversations.get(task.conversation_id) if task is not None else None
    return [conversation.background_id] if conversation is not None and conversation.background_id else []


def acting_for(state: State, value: inp.Input) -> list[str]:
    """The backgrounds a background input acts for (contract v1.2 section 1.3's list)."""
    if isinstance(value, (inp.ClassifyTriage, inp.CheckpointBackground, inp.OpenInvestigation, inp.CloseInvestigation)):
        return [value.conversation_id]
    if isinstance(value, inp.SyncIntent):
        foreground = state.conversations.get(value.conversation_id)
        return [foreground.background_id] if foreground is not None and foreground.background_id else []
    if isinstance(value, (inp.ProposeAction, inp.RaiseQuestion, inp.CompleteTask)):
        return _task_background(state, value.task_id if isinstance(value.task_id, str) else None)
    if isinstance(value, inp.RevalidateAction):
        action = state.actions.get(value.operation_id)
        return _task_background(state, action.task_id if action is not None else None)
    if isinstance(value, inp.ProposeCard):
        return sorted(c for c, conversation in state.conversations.items()
                      if conversation.role == "background" and _bound_at(state, c) == value.generation)  # fmt: skip
    return []


def _admitted(state: State, background_id: str) -> bool:
    return any(
        runtime.role == "background" and runtime.conversation_id == background_id and runtime.state == "admitted"
        and runtime.generation == _bound_at(state, background_id)
        for runtime in state.runtimes.values()
    )  # fmt: skip


def not_reseeded(state: State, background_id: str) -> bool:
    """Its checkpoint was written before its latest reset (an earlier epoch),
    and no reseed of the current epoch was accepted."""
    background = state.conversations[background_id]
    checkpoint = background.checkpoint
    if checkpoint is None or checkpoint.epoch >= background.epoch:
        return False
    return not any(
        delivery.kind == "reseed" and delivery.epoch == background.epoch and delivery.attempt_state == "accepted"
        for delivery in background.deliveries.values()
    )


@event_invariant
def background_acts_only_reseeded(before: State, event: Event, applying: Applying) -> str | None:
    """"Missing narrative never authorizes action replay": after a context
    reset of a background that has a checkpoint, none of its gated inputs
    (triage, intent syncs, proposals, revalidations, questions, completions,
    cards, checkpoints, investigations) is accepted until that epoch's
    reseed is accepted (contract v1.2 section 5.4)."""
    if not isinstance(event, ev.InputAccepted) or event.input.sender != "background":
        return None
    value = event.input
    named = [b for b in acting_for(before, value) if b in before.conversations]
    if "background" in before.tool_policies:
        named = [b for b in named if _admitted(before, b)]
    if named and all(not_reseeded(before, b) for b in named):
        return f"{value.input_type} accepted for {', '.join(named)} before its epoch's reseed was accepted"
    return None
