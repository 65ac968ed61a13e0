"""Background continuity (contract v1.2 sections 5.1, 5.2): a background's
investigations and its checkpoints.

An investigation is a background's bounded inquiry into a cause: open from
`investigation.open` for `investigation_max_s` and `investigation_calls_max`
tool calls (the calls that name it, counted by domain/tools/rules.py); whichever
runs out first makes it `exhausted` and raises
`investigation_exhausted:{investigation_id}` (its later calls are denied
`budget_exhausted`); `investigation.close` concludes, abandons or delegates
it and resolves the alert. The duration is a timer of the time rules
(`exhaustion_rule`, called by the alerts area in contract v1.2 section 9's
tie order, after execution deadlines); the engine cannot stop a model's
thought, only its tools.

A checkpoint (`background.checkpoint`) is what a background writes of its
own position: the sync cursor, the intent revision it holds, the evidence it
relies on and a bounded summary (a claim, not evidence); the engine adds its
open and exhausted investigations and counts its tokens (the model's figure
capped at the summary's bytes: `checkpoint_tokens`). A context reset of a
background with a checkpoint makes a reseed due (domain/background_pass.py).
Every input of this module is gated by section 1.3 and 5.4
(`check_background_gates`); in context recovery, a checkpoint and a close
are admitted (they can only shrink what the reseed must carry).
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable

from tandem.domain import events as ev
from tandem.domain import inputs as inp
from tandem.domain.alerts.rules import raise_alert, resolve_alert
from tandem.domain.inputs import given
from tandem.domain.lifecycles import INVESTIGATION
from tandem.domain.lookups import known_action, known_conversation, known_task
from tandem.domain.reasons import Rejected
from tandem.domain.records import Checkpoint, Conversation, Investigation
from tandem.domain.conversation.state import record_checkpoint
from tandem.domain.state import State
from tandem.domain.tools.rules import binding_generation, check_background_gates

EXHAUSTED_ALERT = "investigation_exhausted"
# Tokens a checkpoint costs per evidence ref it names (contract v1.2 section 5.2).
checkpoint_ref_tokens = 10


def unresolved_investigations(state: State, conversation_id: str) -> list[str]:
    """The background's open and exhausted investigations, by id: its "unresolved investigations"."""
    return sorted(
        investigation_id
        for investigation_id, investigation in state.investigations.by_id.items()
        if investigation.conversation_id == conversation_id and investigation.state not in INVESTIGATION.terminal
    )


BackgroundInput = inp.OpenInvestigation | inp.CloseInvestigation | inp.CheckpointBackground


def _acting_background(state: State, value: BackgroundInput) -> Conversation:
    """unknown_conversation, generation_fenced, then the gates of sections 1.3 and 5.4."""
    conversation = known_conversation(state, value.conversation_id, "background")
    bound = binding_generation(state, value.conversation_id)
    if bound is None or value.generation != bound:
        raise Rejected("generation_fenced", f"generation {value.generation} is not {value.conversation_id!r}'s binding ({bound})")
    check_background_gates(state, value, [value.conversation_id])
    return conversation


# ----------------------------------------------------------------- deciders


def decide_open(state: State, value: inp.OpenInvestigation, seq: int) -> list[ev.Event]:
    _acting_background(state, value)
    task_id = given(value.task_id)
    if task_id is not None:
        task = known_task(state, task_id)
        if task.state != "active":
            raise Rejected("task_not_active", f"task {task_id!r} is {task.state}")
    if value.investigation_id in state.investigations.by_id:
        raise Rejected("already_exists", f"investigation {value.investigation_id!r} already exists")
    return [
        ev.InvestigationOpened(
            cause=seq,
            investigation_id=value.investigation_id,
            conversation_id=value.conversation_id,
            cause_key=value.cause_key,
            task_id=task_id,
            opened_at=value.at,
            due_at=value.at + datetime.timedelta(seconds=state.authority.config.investigation_max_s),
        )
    ]


def decide_close(state: State, value: inp.CloseInvestigation, seq: int) -> list[ev.Event]:
    _acting_background(state, value)
    investigation = state.investigations.by_id.get(value.investigation_id)
    if investigation is None or investigation.conversation_id != value.conversation_id:
        raise Rejected("unknown_investigation", f"{value.conversation_id!r} has no investigation {value.investigation_id!r}")
    operation_id = given(value.operation_id)
    if operation_id is not None:
        known_action(state, operation_id)
    if not INVESTIGATION.allows(investigation.state, CLOSING[value.outcome]):
        raise Rejected("not_open", f"investigation {value.investigation_id!r} is {investigation.state}")
    return [
        ev.InvestigationClosed(
            cause=seq,
            investigation_id=value.investigation_id,
            conversation_id=value.conversation_id,
            outcome=value.outcome,
            was=investigation.state,
            evidence_refs=list(dict.fromkeys(value.evidence_refs)),
            operation_id=operation_id,
        )
    ]


def checkpoint_tokens(value: inp.CheckpointBackground, evidence_refs: list[str]) -> int:
    """What the reseed counts for a checkpoint (contract v1.2 section 5.2):
    `tokens`, the model's figure, but never more than the summary's UTF-8
    bytes (no tokenizer makes more tokens than bytes), else ceil(bytes / 4);
    + 10 per evidence ref. An inflated figure cannot lock the background out."""
    summary_bytes = len(value.summary.encode("utf-8"))
    tokens = given(value.tokens)
    counted = math.ceil(summary_bytes / 4) if tokens is None else min(tokens, summary_bytes)
    return counted + checkpoint_ref_tokens * len(evidence_refs)


def decide_checkpoint(state: State, value: inp.CheckpointBackground, seq: int) -> list[ev.Event]:
    conversation = _acting_background(state, value)
    if value.epoch != conversation.epoch:
        raise Rejected("stale_revision", f"{value.conversation_id!r} is in epoch {conversation.epoch}, not {value.epoch}")
    foreground = state.conversation.by_id.get(conversation.foreground_id or "")
    intent = foreground.intent_revision if foreground is not None else 0
    if value.intent_revision > intent:
        raise Rejected("stale_revision", f"the foreground's intent is at revision {intent}, not {value.intent_revision}")
    evidence_refs = list(dict.fromkeys(value.evidence_refs))
    return [
        ev.BackgroundCheckpointed(
            cause=seq,
            conversation_id=value.conversation_id,
            checkpoint_id=f"{value.conversation_id}/c{conversation.checkpoints + 1}",
            at=value.at,
            generation=value.generation,
            epoch=value.epoch,
            intent_revision=value.intent_revision,
            sync_cursor=value.sync_cursor,
            investigations=unresolved_investigations(state, value.conversation_id),
            evidence_refs=evidence_refs,
            summary=value.summary,
            tokens=checkpoint_tokens(value, evidence_refs),
        )
    ]


# ------------------------------------------------------------- the time rule


def exhaustion_rule(state: State, cause: int) -> Callable[[], ev.InvestigationExhausted]:
    """The time rules' step for investigations (`alerts.run_time_rules` calls
    it while the first open one, by due time then id, is due): the event that
    exhausts it (its evolver removes the timer)."""

    def exhaust_first() -> ev.InvestigationExhausted:
        due_at, investigation_id = state.investigations.timers.entries[0]
        investigation = state.investigations.by_id[investigation_id]
        return ev.InvestigationExhausted(
            cause=cause,
            investigation_id=investigation_id,
            conversation_id=investigation.conversation_id,
            by="time",
            due_at=due_at,
            calls=investigation.calls,
            calls_max=state.authority.config.investigation_calls_max,
        )

    return exhaust_first


# ----------------------------------------------------------------- reactions


def _on_exhausted(state: State, event: ev.InvestigationExhausted) -> list[ev.Event]:
    assert state.last_at is not None
    if event.by == "time":
        detail = f"open since {_time(state.investigations.by_id[event.investigation_id].opened_at)}, due {_time(event.due_at)}"
    else:
        detail = f"calls {event.calls} reached investigation_calls_max {event.calls_max}"
    facts = ev.AlertFacts(
        reason=event.by, investigation_id=event.investigation_id, conversation_id=event.conversation_id,
        due_at=event.due_at, calls=event.calls, investigation_calls_max=event.calls_max,
    )  # fmt: skip
    alert_id = f"{EXHAUSTED_ALERT}:{event.investigation_id}"
    return raise_alert(state, event.cause, alert_id, state.last_at, detail=detail, facts=facts)


def _on_closed(state: State, event: ev.InvestigationClosed) -> list[ev.Event]:
    detail = f"{event.investigation_id} {event.outcome}"
    facts = ev.AlertFacts(reason=event.outcome, investigation_id=event.investigation_id, operation_id=event.operation_id)
    return resolve_alert(state, event.cause, f"{EXHAUSTED_ALERT}:{event.investigation_id}", detail=detail, facts=facts)


def _time(value: datetime.datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


# ----------------------------------------------------------------- evolvers


def _opened(state: State, event: ev.InvestigationOpened) -> None:
    state.investigations.by_id[event.investigation_id] = Investigation(
        event.investigation_id, event.conversation_id, event.cause_key, event.task_id, event.opened_at, event.due_at,
        state=INVESTIGATION.after[ev.InvestigationOpened],
    )  # fmt: skip
    state.investigations.timers.add((event.due_at, event.investigation_id))


def _exhausted(state: State, event: ev.InvestigationExhausted) -> None:
    investigation = state.investigations.by_id[event.investigation_id]
    investigation.state = INVESTIGATION.after[ev.InvestigationExhausted]
    state.investigations.timers.discard((investigation.due_at, event.investigation_id))


def _closed(state: State, event: ev.InvestigationClosed) -> None:
    investigation = state.investigations.by_id[event.investigation_id]
    investigation.state = INVESTIGATION.state_after(event)  # type: ignore[assignment]
    investigation.evidence_refs = list(event.evidence_refs)
    investigation.operation_id = event.operation_id
    state.investigations.timers.discard((investigation.due_at, event.investigation_id))


def _checkpointed(state: State, event: ev.BackgroundCheckpointed) -> None:
    checkpoint = Checkpoint(
        event.checkpoint_id, event.at, event.generation, event.epoch, event.intent_revision, event.sync_cursor,
        tuple(event.investigations), tuple(event.evidence_refs), event.tokens, len(event.summary.encode("utf-8")),
    )  # fmt: skip
    record_checkpoint(state, event.conversation_id, checkpoint)


# An outcome of `investigation.close` and the transition it takes.
CLOSING = {"concluded": "conclude", "abandoned": "abandon", "delegated": "delegate"}

DECIDERS = {
    inp.OpenInvestigation: decide_open,
    inp.CloseInvestigation: decide_close,
    inp.CheckpointBackground: decide_checkpoint,
}
EVOLVERS = {
    ev.InvestigationOpened: _opened,
    ev.InvestigationExhausted: _exhausted,
    ev.InvestigationClosed: _closed,
    ev.BackgroundCheckpointed: _checkpointed,
}
REACTIONS = {
    ev.InvestigationExhausted: _on_exhausted,
    ev.InvestigationClosed: _on_closed,
}
