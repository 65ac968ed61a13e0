"""Alerts (contract section 6): alerts, delivery obligations, health (heartbeats,
incidents, daemon starts and stops) and the time rules.

An alert has an identity per cause (`{kind}:{key}`) and its condition is
either on (`open`) or off. It is raised when its condition starts, never
again while it goes on, and once more (count + 1) for each new occurrence: a
new update revision, a new incident, a new k of a stale question, or the
condition starting again after the engine saw it end. `alert.seen` and
`alert.resolve` are the human's; the engine resolves what it can observe.

Most alerts are *reactions*: a fact the engine recorded (a reconciliation
started or a sequence reset seen: domain/alerts/consumers.py; an approval opened, a budget reached, an incident, an obligation
falling due) raises or resolves an alert in the same transaction, with the
same cause. `REACTIONS` maps each such event type to its rule (the only
area with reactions; a task action's outcome opening its delivery obligation,
and a completed turn meeting it, are reactions too); `rules.reacting` runs
them after every event is applied, so a rule reads the state that event made.
The rest are decided by the pass: the time rules (`run_time_rules`, first in
every pass), the urgent rule (domain/conversation/delivery.py's `urgent_rule`, after each foreground) and
compaction (the delivery area's wake).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable

from tandem.domain import events as ev
from tandem.domain import inputs as inp
from tandem.domain.health.rules import expiry_due, provider_incident_opened, unannounced_resume
from tandem.domain.tasks.progress import progress_due
from tandem.domain.lifecycles import ALERT, OBLIGATION
from tandem.domain.lookups import known_alert
from tandem.domain.reasons import Rejected
from tandem.domain.records import Alert, Obligation
from tandem.domain.state import State

Emit = Callable[[ev.Event], None]
Step = Callable[[], ev.Event]  # a timer's step: the event the first due one makes

WATCHDOG_ALERT = "watchdog_unavailable:engine"


def alert_kind(alert_id: str) -> str:
    return alert_id.partition(":")[0]


def raise_alert(
    state: State,
    cause: int,
    alert_id: str,
    at: datetime.datetime,
    *,
    new_occurrence: bool = False,
    cause_key: str | None = None,
    revision: int | None = None,
    detail: str = "",
    facts: ev.AlertFacts | None = None,
) -> list[ev.Event]:
    """Raise `alert_id` unless its condition is already on (a continuing
    condition raises nothing); `new_occurrence` raises it regardless.
    `detail` is for a human, `facts` for tools (contract section 8)."""
    alert = state.alerts.by_id.get(alert_id)
    if alert is not None and alert.open and not new_occurrence:
        return []
    return [
        ev.AlertRaised(
            cause=cause,
            alert_id=alert_id,
            kind=alert_kind(alert_id),
            at=at,
            cause_key=cause_key,
            revision=revision,
            detail=detail,
            facts=facts,
        )
    ]


def resolve_alert(
    state: State, cause: int, alert_id: str, *, detail: str = "", facts: ev.AlertFacts | None = None
) -> list[ev.Event]:
    """The engine saw the condition end: resolve it, if it is on. `detail`
    and `facts` say what it observed."""
    alert = state.alerts.by_id.get(alert_id)
    if alert is None or not alert.open:
        return []
    return [ev.AlertResolved(cause=cause, alert_id=alert_id, by="engine", detail=detail, facts=facts)]


# ================================================================ reactions


def _at(state: State) -> datetime.datetime:
    assert state.last_at is not None  # a reaction always follows an input's record
    return state.last_at


def _on_card(state: State, event: ev.CardProposed) -> list[ev.Event]:
    return raise_alert(
        state,
        event.cause,
        f"card:{event.card_id}",
        _at(state),
        cause_key=event.cause_key,
        detail=event.summary,
        facts=ev.AlertFacts(card_id=event.card_id),
    )


def _approval_alert(state: State, conversation_id: str, request_id: str) -> str:
    if state.conversation.by_id[conversation_id].role == "background":
        return f"triage_blocked:{conversation_id}"
    return f"approval_required:{conversation_id}/{request_id}"


def _on_approval_opened(state: State, event: ev.ApprovalOpened) -> list[ev.Event]:
    alert_id = _approval_alert(state, event.conversation_id, event.request_id)
    return raise_alert(
        state,
        event.cause,
        alert_id,
        _at(state),
        detail=f"{event.request_id}: {event.detail}",
        facts=ev.AlertFacts(conversation_id=event.conversation_id, request_id=event.request_id),
    )


def _on_approval_resolved(state: State, event: ev.ApprovalResolved) -> list[ev.Event]:
    conversation = state.conversation.by_id[event.conversation_id]
    if conversation.role == "background" and conversation.approvals:
        return []  # triage stays blocked while another approval is open
    return resolve_alert(
        state,
        event.cause,
        _approval_alert(state, event.conversation_id, event.request_id),
        detail=f"approval {event.request_id} on {event.conversation_id} resolved",
        facts=ev.AlertFacts(
            reason="approval_resolved", conversation_id=event.conversation_id, request_id=event.request_id
        ),
    )


def _on_budget_exhausted(state: State, event: ev.BudgetExhausted) -> list[ev.Event]:
    return raise_alert(
        state,
        event.cause,
        f"budget_exhausted:{event.grant_id}",
        _at(state),
        detail=f"usage {event.usage} reached token_limit {event.token_limit}",
        facts=ev.AlertFacts(
            grant_id=event.grant_id, usage=event.usage, token_limit=event.token_limit, operation_id=event.operation_id
        ),
    )


def _on_grant_revised(state: State, event: ev.GrantRevised) -> list[ev.Event]:
    grant = state.authority.grants[event.grant_id]
    if grant.budget_exhausted:
        return []
    detail = f"grant revision {event.revision} lifts token_limit to {grant.token_limit} (usage {grant.usage})"
    calls: dict[str, int] = {}
    if grant.call_limit is not None:  # contract v1.2 section 3.4
        lifted = f"call_limit to {grant.call_limit} (calls {grant.calls})"
        detail = f"{detail}, {lifted}" if grant.token_limit is not None else f"grant revision {event.revision} lifts {lifted}"
        calls = {"calls": grant.calls, "call_limit": grant.call_limit}
    return resolve_alert(
        state,
        event.cause,
        f"budget_exhausted:{event.grant_id}",
        detail=detail,
        facts=ev.AlertFacts(
            reason="limit_lifted", grant_id=grant.grant_id, usage=grant.usage, token_limit=grant.token_limit, **calls
        ),
    )


def _on_incident(state: State, event: ev.IncidentOpened) -> list[ev.Event]:
    provider = state.health.providers.get(event.incident_id.removeprefix("provider/"))
    if provider is not None and event.incident_id.startswith("provider/"):
        # Contract v1.2 section 10: the readiness report, or the recorded expiry.
        facts = ev.AlertFacts(
            incident_id=event.incident_id, reason=event.kind, provider=provider.provider,
            observed_at=provider.observed_at if event.reported_by != "engine" else None,  # a report, or the expiry
            auth_expires_at=provider.auth_expires_at,
        )  # fmt: skip
    else:
        facts = ev.AlertFacts(incident_id=event.incident_id)
    return raise_alert(
        state,
        event.cause,
        f"incident:{event.incident_id}",
        _at(state),
        new_occurrence=True,
        detail=f"{event.kind} ({event.reported_by}): {event.detail}",
        facts=facts,
    )


def _on_task_stalled(state: State, event: ev.TaskStalled) -> list[ev.Event]:
    """Contract v1.2 section 4.4: once per occurrence (its timer is gone until it progresses)."""
    return raise_alert(
        state,
        event.cause,
        f"no_progress:{event.task_id}",
        _at(state),
        new_occurrence=True,
        detail=f"no progress since {event.last_progress_event} at {inp.format_at(event.last_progress_at)}"
        f" ({event.progress_deadline_s} s deadline)",
        facts=ev.AlertFacts(
            task_id=event.task_id, due_at=event.due_at, progress_deadline_s=event.progress_deadline_s,
            last_progress_at=event.last_progress_at, last_progress_event=event.last_progress_event,
        ),
    )  # fmt: skip


def _on_recovered(state: State, event: ev.IncidentRecovered) -> list[ev.Event]:
    return resolve_alert(
        state,
        event.cause,
        f"incident:{event.incident_id}",
        detail=f"{event.incident_id} recovered",
        facts=ev.AlertFacts(reason="recovered", incident_id=event.incident_id),
    )


def _on_question_answered(state: State, event: ev.QuestionAnswered) -> list[ev.Event]:
    return resolve_alert(
        state,
        event.cause,
        f"question_stale:{event.task_id}/{event.question_key}",
        detail=f"{event.task_id}/{event.question_key} answered",
        facts=ev.AlertFacts(reason="answered", task_id=event.task_id, question_key=event.question_key),
    )


def _on_question_resurfaced(state: State, event: ev.QuestionResurfaced) -> list[ev.Event]:
    question = state.tasks.questions[(event.task_id, event.question_key)]
    return raise_alert(
        state,
        event.cause,
        f"question_stale:{event.task_id}/{event.question_key}",
        _at(state),
        new_occurrence=True,
        detail=f"open since {question.first_seen_at.isoformat()} ({event.k} x question_resurface_s)",
        facts=ev.AlertFacts(
            task_id=event.task_id,
            question_key=event.question_key,
            k=event.k,
            first_seen_at=question.first_seen_at,
            due_at=event.due_at,
        ),
    )


def _on_action_blocked(state: State, event: ev.ActionBlocked) -> list[ev.Event]:
    if "watchdog_unavailable" not in event.blocked_by:
        return []
    return raise_alert(
        state,
        event.cause,
        WATCHDOG_ALERT,
        _at(state),
        detail=f"{event.operation_id} waits for a fresh watchdog",
        facts=ev.AlertFacts(
            operation_id=event.operation_id,
            heartbeat_generation=state.health.heartbeat_generation,
            heartbeat_at=state.health.heartbeat_at,
            watchdog_max_age_s=state.authority.config.watchdog_max_age_s,
        ),
    )


def _on_delivery_receipted(state: State, event: ev.DeliveryReceipted) -> list[ev.Event]:
    """An accepted delivery holding an urgent alert's revision (or a newer one) resolves it."""
    if event.attempt_state != "accepted":
        return []
    events: list[ev.Event] = resolve_alert(
        state,
        event.cause,
        f"delivery_failing:{event.conversation_id}",
        detail=f"{event.delivery_id} was accepted",
        facts=ev.AlertFacts(reason="accepted_delivery", conversation_id=event.conversation_id, delivery_id=event.delivery_id),
    )  # contract v1.2 section 3.6
    delivery = state.conversation.by_id[event.conversation_id].deliveries[event.delivery_id]
    for cause_key, revision in delivery.included:
        alert = state.alerts.by_id.get(f"urgent:{cause_key}")
        if alert is not None and alert.open and alert.revision is not None and revision >= alert.revision:
            events.extend(
                resolve_alert(
                    state,
                    event.cause,
                    alert.alert_id,
                    detail=f"{event.delivery_id} holding revision {revision} was accepted",
                    facts=ev.AlertFacts(
                        reason="accepted_delivery", conversation_id=event.conversation_id, delivery_id=event.delivery_id
                    ),
                )
            )
    return events


def _on_context_reset(state: State, event: ev.ContextReset) -> list[ev.Event]:
    return resolve_alert(
        state,
        event.cause,
        f"compaction_required:{event.conversation_id}",
        detail=f"context reset ({event.reason}): epoch {event.epoch}",
        facts=ev.AlertFacts(reason="reset", conversation_id=event.conversation_id),
    )


def _on_outcome(state: State, event: ev.ActionOutcomeReported) -> list[ev.Event]:
    """A task action's outcome opens an obligation to tell its conversation."""
    action = state.actions.by_id[event.operation_id]
    if action.task_id is None:
        return []  # a rule's action: routine, no obligation
    return [
        ev.ObligationOpened(
            cause=event.cause,
            operation_id=action.operation_id,
            cause_key=f"outcome:{action.operation_id}",
            conversation_id=state.tasks.by_id[action.task_id].conversation_id,
            due_at=_at(state) + datetime.timedelta(seconds=state.authority.config.fallback_after_s),
        )
    ]


def _on_turn_ended(state: State, event: ev.TurnEnded) -> list[ev.Event]:
    """A completed turn meets the obligations its accepted deliveries held
    (only those listed in `delivered`, when given); one it held but left out
    of `delivered` falls due at once."""
    if event.outcome != "completed" or not state.alerts.obligations_by_cause:
        return []
    conversation = state.conversation.by_id[event.conversation_id]
    turn = conversation.last_turn
    assert turn is not None and turn.turn_id == event.turn_id
    listed = set(event.delivered) if event.delivered is not None else None
    events: list[ev.Event] = []
    settled: set[str] = set()
    for delivery_id in turn.deliveries:
        delivery = conversation.deliveries[delivery_id]
        if delivery.attempt_state != "accepted":
            continue
        for cause_key, _ in delivery.included:
            operation_id = state.alerts.obligations_by_cause.get(cause_key)
            if operation_id is None or operation_id in settled:
                continue
            settled.add(operation_id)
            if listed is None or cause_key in listed:
                events.append(
                    ev.ObligationMet(
                        cause=event.cause,
                        operation_id=operation_id,
                        cause_key=cause_key,
                        turn_id=turn.turn_id,
                        delivery_id=delivery_id,
                    )
                )
            elif OBLIGATION.allows(state.alerts.obligations[operation_id].state, "fall_due"):
                events.append(
                    ev.ObligationDue(
                        cause=event.cause,
                        operation_id=operation_id,
                        reason="left_out",
                        turn_id=turn.turn_id,
                        delivery_id=delivery_id,
                    )
                )
    return events


def _on_obligation_due(state: State, event: ev.ObligationDue) -> list[ev.Event]:
    obligation = state.alerts.obligations[event.operation_id]
    why = f"{event.turn_id} completed without listing it in delivered" if event.reason == "left_out" else "fallback_after_s passed"
    return raise_alert(
        state,
        event.cause,
        f"fallback_delivery:{event.operation_id}",
        _at(state),
        cause_key=obligation.cause_key,
        detail=f"{obligation.conversation_id} was not told: {why}",
        # The alert id names the obligation (ObligationOpened: its conversation and
        # due time; ObligationDue, just before this: why). Only a turn that left it
        # out adds facts: which turn and delivery.
        facts=(
            ev.AlertFacts(reason="left_out", turn_id=event.turn_id, delivery_id=event.delivery_id)
            if event.reason == "left_out"
            else None
        ),
    )


def _on_obligation_met(state: State, event: ev.ObligationMet) -> list[ev.Event]:
    return resolve_alert(
        state,
        event.cause,
        f"fallback_delivery:{event.operation_id}",
        detail=f"met by {event.turn_id} ({event.delivery_id})",
        facts=ev.AlertFacts(
            reason="obligation_met", operation_id=event.operation_id, turn_id=event.turn_id, delivery_id=event.delivery_id
        ),
    )




# =============================================================== time rules


def run_time_rules(
    state: State, cause: int, at: datetime.datetime, emit: Emit, deadline: Step | None = None, exhaust: Step | None = None
) -> None:
    """Spec 6, on every input's `at`: an unannounced suspend (contract v1.2
    section 4.5), the watchdog's freshness, then the timers in time order
    (`_next_timer`; `deadline()` makes the first due execution deadline's
    event, contract v1.2 section 3.3, `exhaust()` the first due
    investigation's, section 5.1). Overdue ones go out at the first pass
    (after a restart too: the timers are part of the folded state)."""
    resumed = unannounced_resume(state, cause, at)
    if resumed is not None:
        emit(resumed)
    fresh = state.is_fresh(at)
    if fresh != state.watchdog_fresh:
        state.watchdog_fresh = fresh
        state.touch_all_pending()
        if fresh:
            facts = ev.AlertFacts(
                reason="fresh_heartbeat",
                heartbeat_generation=state.health.heartbeat_generation,
                heartbeat_at=state.health.heartbeat_at,
                watchdog_max_age_s=state.authority.config.watchdog_max_age_s,
            )
            detail = f"heartbeat generation {state.health.heartbeat_generation} is fresh"
            for event in resolve_alert(state, cause, WATCHDOG_ALERT, detail=detail, facts=facts):
                emit(event)
    resolve_progressed(state, cause, emit)
    while True:
        # Each event below removes its timer (evolve), so this loop ends.
        event = _next_timer(state, cause, at, deadline, exhaust)
        if event is None:
            return
        emit(event)


def _next_timer(
    state: State, cause: int, at: datetime.datetime, deadline: Step | None = None, exhaust: Step | None = None
) -> ev.Event | None:
    """The earliest timer `at` has reached; ties in the contract v1.2 section 9
    order: obligations, questions, execution deadlines, investigations, task
    progress, known auth expiry."""
    due: list[tuple[datetime.datetime, int, Step]] = []
    obligation = next(iter(state.alerts.obligation_timers.items()), None)
    if obligation is not None:
        due.append((obligation[1], 0, lambda: ev.ObligationDue(cause=cause, operation_id=obligation[0], reason="overdue")))
    if state.tasks.question_timers.entries:
        due.append((state.tasks.question_timers.entries[0][0], 1, lambda: _resurfaced(state, cause, at)))
    if deadline is not None and state.actions.deadline_timers.entries:
        due.append((state.actions.deadline_timers.entries[0][0], 2, deadline))
    if exhaust is not None and state.investigations.timers.entries:
        due.append((state.investigations.timers.entries[0][0], 3, exhaust))
    for rank, timer in ((4, progress_due(state, cause)), (5, expiry_due(state, cause))):
        if timer is not None:
            due.append((timer[0], rank, lambda event=timer[1]: event))  # type: ignore[misc]
    ready = [entry for entry in due if entry[0] <= at]
    return min(ready, key=lambda entry: entry[:2])[2]() if ready else None


def _resurfaced(state: State, cause: int, at: datetime.datetime) -> ev.QuestionResurfaced:
    _, _, first, second = state.tasks.question_timers.entries[0]
    question = state.tasks.questions[(first, second)]
    k = int((at - question.first_seen_at).total_seconds() // state.authority.config.question_resurface_s)
    due_at = question.first_seen_at + datetime.timedelta(seconds=k * state.authority.config.question_resurface_s)
    return ev.QuestionResurfaced(cause=cause, task_id=first, question_key=second, k=k, due_at=due_at)


def resolve_progressed(state: State, cause: int, emit: Emit) -> None:
    """Contract v1.2 section 4.4: a stalled task that progressed, or is no
    longer active, has its no_progress resolved (in every pass's time rules,
    and again after its actions: a claim is progress)."""
    if not state.unstalled:
        return
    for task_id in sorted(state.unstalled):
        task = state.tasks.by_id[task_id]
        active = task.state == "active"
        reason = "progressed" if active else task.state
        detail = f"{task_id} progressed ({task.last_progress_event})" if active else f"{task_id} is {task.state}"
        facts = ev.AlertFacts(reason=reason, task_id=task_id, last_progress_event=task.last_progress_event)
        for event in resolve_alert(state, cause, f"no_progress:{task_id}", detail=detail, facts=facts):
            emit(event)
    state.unstalled.clear()



# ================================================================= deciders


def decide_incident(state: State, value: inp.RaiseIncident, seq: int) -> list[ev.Event]:
    if state.alerts.incidents.get(value.incident_id):
        return []  # open already: accepted, no new occurrence
    return [
        ev.IncidentOpened(
            cause=seq, incident_id=value.incident_id, kind=value.kind, detail=value.detail, reported_by=value.sender,
            observed_at=value.observed_at, last_success_at=value.last_success_at,
        )
    ]  # fmt: skip


def decide_recovered(state: State, value: inp.RecoverIncident, seq: int) -> list[ev.Event]:
    if not state.alerts.incidents.get(value.incident_id):
        what = "recovered already" if value.incident_id in state.alerts.incidents else "not known"
        raise Rejected("not_open", f"incident {value.incident_id!r} is {what}")
    return [ev.IncidentRecovered(cause=seq, incident_id=value.incident_id)]


def decide_daemon_stop(state: State, value: inp.StopDaemon, seq: int) -> list[ev.Event]:
    return [ev.DaemonStopped(cause=seq, expected=value.expected)]


def decide_daemon_start(state: State, value: inp.StartDaemon, seq: int) -> list[ev.Event]:
    """A start not preceded by an expected stop was a crash (the very first
    start excepted): incident `daemon_crash/{n}`."""
    events: list[ev.Event] = [ev.DaemonStarted(cause=seq, after=state.alerts.daemon_last)]
    if state.alerts.daemon_last is not None and state.alerts.daemon_last != "expected_stop":
        before = "a start with no stop" if state.alerts.daemon_last == "start" else "an unexpected stop"
        events.append(
            ev.IncidentOpened(
                cause=seq,
                incident_id=f"daemon_crash/{state.alerts.crashes + 1}",
                kind="daemon_crash",
                detail=f"daemon started after {before}",
                reported_by=value.sender,
            )
        )
    return events


def decide_alert_seen(state: State, value: inp.SeeAlert, seq: int) -> list[ev.Event]:
    alert = known_alert(state, value.alert_id)
    return [ev.AlertSeen(cause=seq, alert_id=alert.alert_id)] if ALERT.allows(alert.state, "see") else []


def decide_alert_resolve(state: State, value: inp.ResolveAlert, seq: int) -> list[ev.Event]:
    alert = known_alert(state, value.alert_id)
    if not ALERT.allows(alert.state, "resolve"):
        return []  # resolved already (the engine may still resolve it when it sees the end)
    return [ev.AlertResolved(cause=seq, alert_id=alert.alert_id, by="human")]


def decide_tick(state: State, value: inp.Tick, seq: int) -> list[ev.Event]:
    return []  # time passes: the time rules run in the pass


# ----------------------------------------------------------------- evolvers


def _alert_raised(state: State, event: ev.AlertRaised) -> None:
    raised = ALERT.after[ev.AlertRaised]
    alert = state.alerts.by_id.get(event.alert_id)
    if alert is None:
        state.alerts.by_id[event.alert_id] = Alert(
            event.alert_id, event.kind, event.at, event.at, state=raised, cause_key=event.cause_key, revision=event.revision
        )
        return
    alert.count += 1
    alert.last_raised_at = event.at
    alert.state = raised
    alert.open = True
    alert.cause_key = event.cause_key
    alert.revision = event.revision


def _alert_seen(state: State, event: ev.AlertSeen) -> None:
    state.alerts.by_id[event.alert_id].state = ALERT.after[ev.AlertSeen]


def _alert_resolved(state: State, event: ev.AlertResolved) -> None:
    alert = state.alerts.by_id[event.alert_id]
    alert.state = ALERT.after[ev.AlertResolved]
    if event.by == "engine":
        alert.open = False


def _incident_opened(state: State, event: ev.IncidentOpened) -> None:
    state.alerts.incidents[event.incident_id] = True
    provider_incident_opened(state, event)
    if event.kind == "daemon_crash":
        state.alerts.crashes += 1


def _incident_recovered(state: State, event: ev.IncidentRecovered) -> None:
    state.alerts.incidents[event.incident_id] = False


def _daemon_stopped(state: State, event: ev.DaemonStopped) -> None:
    state.alerts.daemon_last = "expected_stop" if event.expected else "unexpected_stop"


def _daemon_started(state: State, event: ev.DaemonStarted) -> None:
    state.alerts.daemon_last = "start"


def _obligation_opened(state: State, event: ev.ObligationOpened) -> None:
    state.alerts.obligations[event.operation_id] = Obligation(
        event.operation_id, event.cause_key, event.conversation_id, event.due_at, state=OBLIGATION.after[ev.ObligationOpened]
    )
    state.alerts.obligations_by_cause[event.cause_key] = event.operation_id
    timers = state.alerts.obligation_timers
    assert not timers or event.due_at >= next(reversed(timers.values())), "obligations fall due in order"
    timers[event.operation_id] = event.due_at


def _obligation_met(state: State, event: ev.ObligationMet) -> None:
    obligation = state.alerts.obligations[event.operation_id]
    obligation.state = OBLIGATION.after[ev.ObligationMet]
    state.alerts.obligation_timers.pop(event.operation_id, None)
    del state.alerts.obligations_by_cause[obligation.cause_key]


def _obligation_due(state: State, event: ev.ObligationDue) -> None:
    obligation = state.alerts.obligations[event.operation_id]
    obligation.state = OBLIGATION.after[ev.ObligationDue]
    state.alerts.obligation_timers.pop(event.operation_id, None)


DECIDERS = {
    inp.RaiseIncident: decide_incident,
    inp.RecoverIncident: decide_recovered,
    inp.StopDaemon: decide_daemon_stop,
    inp.StartDaemon: decide_daemon_start,
    inp.SeeAlert: decide_alert_seen,
    inp.ResolveAlert: decide_alert_resolve,
    inp.Tick: decide_tick,
}
EVOLVERS = {
    ev.AlertRaised: _alert_raised,
    ev.AlertSeen: _alert_seen,
    ev.AlertResolved: _alert_resolved,
    ev.IncidentOpened: _incident_opened,
    ev.IncidentRecovered: _incident_recovered,
    ev.DaemonStopped: _daemon_stopped,
    ev.DaemonStarted: _daemon_started,
    ev.ObligationOpened: _obligation_opened,
    ev.ObligationMet: _obligation_met,
    ev.ObligationDue: _obligation_due,
}
REACTIONS = {
    ev.CardProposed: _on_card,
    ev.ApprovalOpened: _on_approval_opened,
    ev.ApprovalResolved: _on_approval_resolved,
    ev.BudgetExhausted: _on_budget_exhausted,
    ev.GrantRevised: _on_grant_revised,
    ev.IncidentOpened: _on_incident,
    ev.IncidentRecovered: _on_recovered,
    ev.QuestionAnswered: _on_question_answered,
    ev.QuestionResurfaced: _on_question_resurfaced,
    ev.ActionBlocked: _on_action_blocked,
    ev.DeliveryReceipted: _on_delivery_receipted,
    ev.ContextReset: _on_context_reset,
    ev.ActionOutcomeReported: _on_outcome,
    ev.TurnEnded: _on_turn_ended,
    ev.ObligationDue: _on_obligation_due,
    ev.ObligationMet: _on_obligation_met,
    ev.TaskStalled: _on_task_stalled,
}

# The consumers' alerts (reconciliation_required, consumer_sequence_reset) are
# in their own module; it uses raise_alert and resolve_alert above.
from tandem.domain.alerts import consumers  # noqa: E402

MORE_RULES = (consumers,)
