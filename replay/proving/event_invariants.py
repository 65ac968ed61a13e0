"""The catalog's event invariants: each looks at one recorded event with the
state it is applied to and the input being applied, and catches a wrong
decision at the moment it is made. docs/invariants.md lists them all."""

from __future__ import annotations

import datetime

from msgspec import UNSET

from tandem.domain import events as ev
from tandem.domain import inputs as inp
from tandem.domain.events import Event
from tandem.domain.state import State
from tandem.replay.proving.model import Applying, event_invariant
from tandem.replay.proving.restated import (
    ACTION_EVENTS,
    HOLDING,
    TERMINAL,
    backoff_until,
    inside,
    normalised,
    section_4_codes,
)


@event_invariant
def terminal_actions_never_change(before: State, event: Event, applying: Applying) -> str | None:
    """Terminal actions never change again (contract section 3.3): "suppression, exhausted
    retry budget, accepted delivery and resolved work are distinct outcomes" —
    a succeeded, failed, cancelled or exhausted operation is never revived,
    fenced, re-stamped or claimed."""
    if isinstance(event, ACTION_EVENTS):
        action = before.actions.by_id.get(event.operation_id)
        if isinstance(event, ev.ActionProposed):
            if action is not None:
                return f"{event.operation_id} proposed again while it exists ({action.state})"
        elif action is not None and action.state in TERMINAL:
            return f"{type(event).__name__} changes {event.operation_id}, which is already {action.state}"
    if isinstance(event, (ev.PolicySet, ev.GrantRevised, ev.TaskRevised)):
        for operation_id in [*event.fenced, *getattr(event, "restamped", ())]:
            action = before.actions.by_id.get(operation_id)
            if action is not None and action.state in TERMINAL:
                return f"{type(event).__name__} fences or re-stamps {operation_id}, which is {action.state}"
    return None


@event_invariant
def unknown_is_never_retried(before: State, event: Event, applying: Applying) -> str | None:
    """An `unknown` attempt is never retried automatically: "ambiguous outcome
    -> reconcile / expose unknown; no blind retry"; "uncertain attempts
    suppress automatic replay until reconciliation". Only an
    `executor.reconcile` saying `not_received` for that attempt lets the
    action go back to pending."""
    if isinstance(event, ev.ActionClaimed):
        action = before.actions.by_id.get(event.operation_id)
        if action is not None and action.attempts and action.attempts[-1].state == "unknown":
            return (
                f"{event.attempt_id} claimed while {action.attempts[-1].attempt_id} is unknown "
                f"(action {action.state}); no reconcile said not_received"
            )
    elif isinstance(event, (ev.AttemptUpdated, ev.ActionRevalidated)):
        action = before.actions.by_id.get(event.operation_id)
        if action is None or not action.attempts or action.attempts[-1].state != "unknown":
            return None
        if isinstance(event, ev.ActionRevalidated):
            return f"{event.operation_id} revalidated while its attempt {action.attempts[-1].attempt_id} is unknown"
        value = applying.input
        reconciled = (
            isinstance(value, inp.ExecutorReconcile)
            and value.observed == "not_received"
            and value.attempt_id == action.attempts[-1].attempt_id
        )
        if event.action_state == "pending" and not reconciled:
            return f"{event.operation_id} sent back to pending from unknown by {value.input_type}, not by a not_received reconcile"
    return None


@event_invariant
def attempts_follow_receipts(before: State, event: Event, applying: Applying) -> str | None:
    """Each transport attempt has its own id and its receipts move only it:
    "persist a submission attempt before transport I/O"; "a retry reuses its
    operation ID". Attempt n + 1 (`{op}/a{n+1}`) only after attempt n was
    refused or not received; a receipt or reconcile moves the latest attempt
    only, and only the one it names."""
    if isinstance(event, ev.ActionClaimed):
        action = before.actions.by_id.get(event.operation_id)
        if action is None:
            return f"claim of {event.operation_id}, which was never proposed"
        n = len(action.attempts)
        if event.attempt_id != f"{event.operation_id}/a{n + 1}":
            return f"attempt id {event.attempt_id}, expected {event.operation_id}/a{n + 1}"
        if n and action.attempts[-1].state not in ("refused", "not_received"):
            return f"new attempt {event.attempt_id} while {action.attempts[-1].attempt_id} is {action.attempts[-1].state}"
    elif isinstance(event, ev.AttemptUpdated):
        action = before.actions.by_id.get(event.operation_id)
        latest = action.attempts[-1] if action is not None and action.attempts else None
        if latest is None or event.attempt_id != latest.attempt_id:
            return f"AttemptUpdated names {event.attempt_id}, the latest attempt is {latest.attempt_id if latest else None}"
        value = applying.input
        if not isinstance(value, (inp.ExecutorReceipt, inp.ExecutorReconcile)) or value.attempt_id != event.attempt_id:
            return f"{event.attempt_id} moved by {value.input_type}, not by a receipt or reconcile naming it"
        allowed = ("submitting", "queued") if isinstance(value, inp.ExecutorReceipt) else ("unknown",)
        if latest.state not in allowed:
            return f"{value.input_type} moved {event.attempt_id} from {latest.state} (only from {' or '.join(allowed)})"
    elif isinstance(event, ev.ActionOutcomeReported):
        action = before.actions.by_id.get(event.operation_id)
        latest = action.attempts[-1].attempt_id if action is not None and action.attempts else None
        if event.attempt_id != latest:
            return f"outcome of {event.operation_id} names attempt {event.attempt_id}, the latest is {latest}"
    return None


@event_invariant
def claims_respect_blockers(before: State, event: Event, applying: Applying) -> str | None:
    """No claim while a blocking code applies (contract section 4): "approval / failure hold
    / pause -> no automation bypass"; "hold only the affected task and
    dependents"; a fresh watchdog heartbeat "before each new unattended
    dispatch"; prerequisites verified "before atomically claiming"; conflicting
    work serialised by resource. The codes are recomputed here from the facts."""
    if not isinstance(event, ev.ActionClaimed):
        return None
    action = before.actions.by_id.get(event.operation_id)
    if action is None:
        return None  # attempts_follow_receipts says so
    if action.state != "pending":
        return f"{event.attempt_id} claimed while {event.operation_id} is {action.state}, not pending"
    codes = section_4_codes(before, action, applying.at)
    if codes:
        return f"{event.operation_id} claimed ({event.attempt_id}) while blocked by {codes}"
    return None


@event_invariant
def claims_under_current_authority(before: State, event: Event, applying: Applying) -> str | None:
    """Claims only under current authority: "at dispatch, check current
    task/intent, grant and policy revisions ... operation, write roots"; "model
    prose cannot mint or widen a grant". The grant is live, the operation and
    every write path are inside grant ∩ policy, the task is active, and the
    attempt's envelope carries the current task, grant and policy revisions."""
    if not isinstance(event, ev.ActionClaimed):
        return None
    action = before.actions.by_id.get(event.operation_id)
    if action is None:
        return None
    grant = before.authority.grants.get(action.grant_id)
    if grant is None or grant.state != "live":
        return f"{event.operation_id} claimed under grant {action.grant_id}, which is not live"
    policy = before.authority.policy
    if action.operation not in grant.operations or action.operation not in policy.operations:
        return (
            f"{event.operation_id} claimed for {action.operation}, outside grant {sorted(grant.operations)} "
            f"∩ policy {sorted(policy.operations)}"
        )
    for path in action.write_paths:
        norm = normalised(path)
        if norm is None or not any(inside(norm, r) for r in grant.roots) or not any(inside(norm, r) for r in policy.roots):
            return f"{event.operation_id} claimed writing {path!r} outside grant {list(grant.roots)} ∩ policy {list(policy.roots)}"
    envelope = event.envelope
    if envelope.grant_revision != grant.revision:
        return f"{event.attempt_id} validated under grant r{envelope.grant_revision}, the grant is at r{grant.revision}"
    if envelope.policy_revision != policy.revision:
        return f"{event.attempt_id} validated under policy r{envelope.policy_revision}, the policy is at r{policy.revision}"
    if action.task_id is not None:
        task = before.tasks.by_id[action.task_id]
        if task.state != "active":
            return f"{event.operation_id} claimed while task {task.task_id} is {task.state}"
        if envelope.task_revision != task.revision:
            return f"{event.attempt_id} validated under task r{envelope.task_revision}, the task is at r{task.revision}"
    return None


@event_invariant
def no_claim_behind_source_revision(before: State, event: Event, applying: Applying) -> str | None:
    """No claim for a source revision older than the cause's latest (contract
    v1.2 section 2.2): "At command acceptance, check intent/control and source
    revisions again"; "Reject stale unaccepted commands". An action that
    answers a source revision is claimed only while that is its cause's
    current update revision, its latest observation is on its target commit
    and is not moot; and its envelope says which revision it answers."""
    if not isinstance(event, ev.ActionClaimed):
        return None
    action = before.actions.by_id.get(event.operation_id)
    if action is None or action.source_revision is None:
        return None
    update = before.inbox.updates.get(action.cause_key)
    current = update.revision if update is not None else 0
    if action.source_revision != current:
        return f"{event.attempt_id} claimed for source revision {action.source_revision}; {action.cause_key} is at {current}"
    latest = update.latest if update is not None else None
    if latest is not None and latest.complete:
        if latest.deleted or (latest.status is not None and latest.status in action.moot_statuses):
            return f"{event.attempt_id} claimed while {action.cause_key} is moot ({'deleted' if latest.deleted else latest.status})"
        if action.target_sha is not None and latest.commit_sha is not None and latest.commit_sha != action.target_sha:
            return f"{event.attempt_id} claimed for {action.target_sha}; {action.cause_key} is on {latest.commit_sha}"
    if latest is not None and not latest.complete and action.target_sha is not None:
        if latest.commit_sha is not None and latest.commit_sha != action.target_sha:
            return f"{event.attempt_id} claimed for {action.target_sha}; {action.cause_key} is on {latest.commit_sha}"
    if event.envelope.source_revision != action.source_revision:
        return f"{event.attempt_id}'s envelope names source revision {event.envelope.source_revision}, not {action.source_revision}"
    return None


@event_invariant
def grants_within_policy(before: State, event: Event, applying: Applying) -> str | None:
    """No permission escalation: "trusted daemon intake records only authority
    supported by the human instruction/current policy"; "narrow the grant to
    the delegated task". A grant is issued or revised inside the policy in
    force (operations ⊆ the policy's, every root inside a policy root)."""
    if not isinstance(event, (ev.GrantIssued, ev.GrantRevised)):
        return None
    policy = before.authority.policy
    if event.policy_revision != policy.revision:
        return f"grant {event.grant_id} narrowed to policy r{event.policy_revision}, the policy is at r{policy.revision}"
    extra = set(event.allowed_operations) - policy.operations
    if extra:
        return f"grant {event.grant_id} keeps operations {sorted(extra)} outside the policy {sorted(policy.operations)}"
    for root in event.write_roots:
        if normalised(root) != root or not any(inside(root, r) for r in policy.roots):
            return f"grant {event.grant_id} keeps root {root!r}, not inside the policy roots {list(policy.roots)}"
    if not event.allowed_operations or not event.write_roots:
        return f"grant {event.grant_id} has no operation or no root"
    return None


@event_invariant
def budget_usage_adds_up(before: State, event: Event, applying: Applying) -> str | None:
    """Budgets are bounded and counted exactly: "bound ... calls, tokens,
    retries"; a grant's usage is the sum of `input_tokens + output_tokens` of
    the usage reports of its operations (a field not reported adds nothing)."""
    if not isinstance(event, ev.UsageReported) or event.grant_id is None:
        return None
    grant = before.authority.grants.get(event.grant_id)
    expected = (grant.usage if grant is not None else 0) + (event.input_tokens or 0) + (event.output_tokens or 0)
    if event.grant_usage != expected:
        return f"grant {event.grant_id} usage becomes {event.grant_usage}, its reports sum to {expected}"
    return None


@event_invariant
def fenced_generation_commits_nothing(before: State, event: Event, applying: Applying) -> str | None:
    """A replaced background cannot commit for its successor: "foreground
    replacement transfers/rebinds the background owner and fences the old
    generation before new dispatch". A background input carrying a generation
    other than the current binding's is never accepted."""
    if not isinstance(event, ev.InputAccepted):
        return None
    value = event.input
    generation = getattr(value, "generation", None)
    if value.sender != "background" or generation is None or generation is UNSET:
        return None
    conversations = before.conversation.by_id
    if isinstance(value, (inp.ProposeAction, inp.RevalidateAction)):
        task_id = value.task_id if isinstance(value, inp.ProposeAction) else getattr(before.actions.by_id.get(value.operation_id), "task_id", None)
        task = before.tasks.by_id.get(task_id) if isinstance(task_id, str) else None
        bound = conversations[task.conversation_id].generation if task is not None else None
    elif isinstance(value, inp.SyncIntent):
        conversation = conversations.get(value.conversation_id)
        bound = conversation.generation if conversation is not None else None
    elif isinstance(value, inp.ClassifyTriage):
        background = conversations.get(value.conversation_id)
        foreground = conversations.get(background.foreground_id or "") if background is not None else None
        bound = foreground.generation if foreground is not None and foreground.background_id == value.conversation_id else None
    elif isinstance(value, inp.ProposeCard):
        generations = {c.generation for c in conversations.values() if c.role == "foreground"}
        bound = generation if generation in generations else None
    else:
        return None
    if bound != generation:
        return f"{value.input_type} from background generation {generation} accepted; the binding is at {bound}"
    return None


@event_invariant
def stale_triage_is_refused(before: State, event: Event, applying: Applying) -> str | None:
    """"update@2 during update@1 triage -> stale commit rejected; @2 remains
    pending": a triage is recorded only for the update's current revision."""
    if not isinstance(event, ev.UpdateTriaged):
        return None
    update = before.inbox.updates.get(event.cause_key)
    value = applying.input
    current = update.revision if update is not None else 0
    if event.revision != current or (isinstance(value, inp.ClassifyTriage) and value.update_revision != current):
        named = value.update_revision if isinstance(value, inp.ClassifyTriage) else event.revision
        return f"triage of {event.cause_key} r{named} recorded while the update is at r{current}"
    return None


@event_invariant
def one_turn_at_a_time(before: State, event: Event, applying: Applying) -> str | None:
    """At most one running turn per conversation: "one controller/writer per
    provider conversation"; a turn runs from its dispatch until `turn.ended`,
    and deliveries of a turn go to the running one."""
    if isinstance(event, ev.TurnStarted):
        running = before.conversation.by_id[event.conversation_id].running_turn
        if running is not None:
            return f"{event.turn_id} started while {running.turn_id} runs"
    elif isinstance(event, ev.DeliveryCreated) and event.turn_id is not None:
        running = before.conversation.by_id[event.conversation_id].running_turn
        if running is None or running.turn_id != event.turn_id:
            return f"{event.delivery_id} for turn {event.turn_id}, the running turn is {running.turn_id if running else None}"
    return None


@event_invariant
def messages_sent_from_the_queue(before: State, event: Event, applying: Applying) -> str | None:
    """No human message delivered twice in an epoch, none withdrawn sent: "keep
    human messages durable"; a message goes into a delivery only while it is
    queued (a failed or interrupted turn puts it back), never once handled or
    withdrawn; a turn's end requeues only its own dispatched messages."""
    if isinstance(event, ev.DeliveryCreated):
        conversation = before.conversation.by_id[event.conversation_id]
        for message_id in event.messages:
            message = conversation.messages.get(message_id)
            if message is None or message.state != "queued" or message_id not in conversation.queue:
                state = message.state if message is not None else "unknown"
                return f"{message_id} put in {event.delivery_id} while it is {state}, not queued"
    elif isinstance(event, ev.TurnEnded):
        conversation = before.conversation.by_id[event.conversation_id]
        turn = conversation.running_turn
        own = turn.messages if turn is not None else []
        for message_id in event.requeued:
            if message_id not in own or conversation.messages[message_id].state != "dispatched":
                return f"{event.turn_id} requeues {message_id}, not a dispatched message of its own"
    return None


@event_invariant
def held_revision_not_resent(before: State, event: Event, applying: Applying) -> str | None:
    """No revision in two live deliveries: "uncertain acceptance stays
    uncertain until reconciled"; "reconcile by observation before any resend".
    A (cause, revision) held by
    a delivery of the current epoch (submitting, accepted, or unknown until its
    reconcile) is never put in another delivery."""
    if not isinstance(event, ev.DeliveryCreated):
        return None
    conversation = before.conversation.by_id[event.conversation_id]
    included = {tuple(pair) for pair in event.included}
    for other in conversation.deliveries.values():
        if other.epoch != conversation.epoch or other.released or other.attempt_state not in HOLDING:
            continue
        both = included & set(other.included)
        if both:
            return f"{event.delivery_id} includes {sorted(both)}, held by {other.delivery_id} ({other.attempt_state})"
    return None


@event_invariant
def deliveries_fit_the_context(before: State, event: Event, applying: Applying) -> str | None:
    """Every delivery fits the context: "if the estimated request plus reserves
    would exceed the configured session limit" it is not submitted
    (`context_tokens + tokens + reserve <= context_limit`, steers and reseeds
    included)."""
    if not isinstance(event, ev.DeliveryCreated):
        return None
    conversation = before.conversation.by_id[event.conversation_id]
    total = conversation.context_tokens + event.tokens + conversation.reserve
    if total > conversation.context_limit:
        return (
            f"{event.delivery_id} does not fit: {conversation.context_tokens} + {event.tokens} + "
            f"{conversation.reserve} > {conversation.context_limit}"
        )
    return None


@event_invariant
def cursor_never_moves_backwards(before: State, event: Event, applying: Applying) -> str | None:
    """The consumer cursor never moves backwards within an epoch: "an empty log
    still uses the watermark; never reset to zero merely because no rows
    remain"; a crash can neither lose nor double-apply an entry."""
    if not isinstance(event, (ev.CursorMoved, ev.ReconciliationCommitted)):
        return None
    consumer = before.consumer.by_id.get(event.consumer_id)
    reached = consumer.reached.get(event.epoch, 0) if consumer is not None else 0
    if event.seq < reached:
        return f"{event.consumer_id} cursor moves to ({event.epoch}, {event.seq}), below {reached} reached in that epoch"
    return None


@event_invariant
def alerts_raised_once_per_occurrence(before: State, event: Event, applying: Applying) -> str | None:
    """Alerts are raised once per occurrence: "cause-specific notification
    identity and resolution"; "repeated polls must not reset deadlines"; a
    continuing condition is not raised again — only a new update revision, a
    new incident, a new stale-question period or a new denied tool call is a
    new occurrence."""
    if not isinstance(event, ev.AlertRaised):
        return None
    if any(isinstance(e, ev.AlertRaised) and e.alert_id == event.alert_id for e in applying.events):
        return f"{event.alert_id} raised twice by one input"
    alert = before.alerts.by_id.get(event.alert_id)
    if alert is None or not alert.open:
        return None
    kind = event.alert_id.partition(":")[0]
    if kind == "urgent" and event.revision is not None and event.revision != alert.revision:
        return None
    if kind == "question_stale":
        task_id, _, question_key = event.alert_id.partition(":")[2].partition("/")
        if any(
            isinstance(e, ev.QuestionResurfaced) and e.task_id == task_id and e.question_key == question_key
            for e in applying.events
        ):
            return None
    if kind == "incident":
        incident_id = event.alert_id.partition(":")[2]
        if any(isinstance(e, ev.IncidentOpened) and e.incident_id == incident_id for e in applying.events):
            return None
    if kind == "tool_denied":  # contract v1.2 section 12: every denied call is a new occurrence
        runtime_id = event.alert_id.partition(":")[2]
        if any(isinstance(e, ev.ToolCallDenied) and e.runtime_id == runtime_id for e in applying.events):
            return None
    return f"{event.alert_id} raised again while its condition goes on (count {alert.count}, no new occurrence)"


@event_invariant
def obligations_met_by_completed_turns(before: State, event: Event, applying: Applying) -> str | None:
    """Obligations are met only by a completed turn (the production loop the design studied:
    "marked handled only when a turn completes, background task delivery with
    a fallback"; the RFC: "compaction preserves outstanding obligations"): a
    delivery obligation is met when a turn whose accepted
    delivery held the outcome's update ends `completed` (and lists the cause
    in `delivered`, when given) — never by a failed turn or a reseed."""
    if not isinstance(event, ev.ObligationMet):
        return None
    value = applying.input
    if not isinstance(value, inp.EndTurn) or value.outcome != "completed" or value.turn_id != event.turn_id:
        return f"obligation {event.operation_id} met by {value.input_type}, not by turn {event.turn_id} completing"
    obligation = before.alerts.obligations.get(event.operation_id)
    if obligation is None or obligation.state == "met":
        return f"obligation {event.operation_id} met twice or never opened"
    delivery = before.conversation.by_id[obligation.conversation_id].deliveries.get(event.delivery_id)
    if delivery is None or delivery.turn_id != event.turn_id or delivery.attempt_state != "accepted":
        state = delivery.attempt_state if delivery is not None else "missing"
        return f"obligation {event.operation_id} met by {event.delivery_id} ({state}), not an accepted delivery of {event.turn_id}"
    if obligation.cause_key not in {cause for cause, _ in delivery.included}:
        return f"obligation {event.operation_id} met by {event.delivery_id}, which did not hold {obligation.cause_key}"
    if value.delivered is not UNSET and value.delivered is not None and obligation.cause_key not in value.delivered:
        return f"obligation {event.operation_id} met though {event.turn_id} did not list {obligation.cause_key} in delivered"
    return None




@event_invariant
def budgets_never_exceeded(before: State, event: Event, applying: Applying) -> str | None:
    """No budget exceeded (contract v1.2 sections 3.3, 3.5, 3.6, 14): "Bound
    batch size and wait, investigation duration, calls, tokens, retries and
    wake frequency". No claim at or after an action's `deadline_at`, nor
    before its `retry_at`; no delivery of any kind to a conversation before
    its refusal back-off's `until`; no tool call allowed for an action whose
    grant has already made `call_limit` calls (section 3.4), nor one counted
    on an investigation that is not open, past its due time or at
    `investigation_calls_max` (section 5.1)."""
    at = applying.at
    if isinstance(event, ev.ToolCallAllowed) and event.investigation_id is not UNSET:
        return _investigation_exceeded(before, event, at)
    if isinstance(event, ev.ToolCallAllowed) and event.operation_id is not None:
        action = before.actions.by_id.get(event.operation_id)
        grant = before.authority.grants.get(action.grant_id) if action is not None else None
        if grant is not None and grant.call_limit is not None and grant.calls >= grant.call_limit:
            return f"call {event.call_id} of {event.operation_id} allowed with grant {grant.grant_id} at {grant.calls} of its call_limit {grant.call_limit}"
    elif isinstance(event, ev.ActionClaimed):
        action = before.actions.by_id.get(event.operation_id)
        if action is None:
            return None
        if action.deadline_at is not None and at >= action.deadline_at:
            return f"{event.attempt_id} claimed at {at.isoformat()}, at or after its deadline {action.deadline_at.isoformat()}"
        if action.retry_at is not None and at < action.retry_at:
            return f"{event.attempt_id} claimed at {at.isoformat()}, before its retry back-off ends ({action.retry_at.isoformat()})"
    elif isinstance(event, ev.DeliveryCreated):
        until = backoff_until(before, before.conversation.by_id[event.conversation_id])
        if until is not None and at < until:
            return f"{event.delivery_id} made at {at.isoformat()}, during the back-off of {event.conversation_id} (until {until.isoformat()})"
    return None


def _investigation_exceeded(before: State, event: ev.ToolCallAllowed, at: datetime.datetime) -> str | None:
    investigation = before.investigations.by_id.get(event.investigation_id)  # type: ignore[arg-type]
    if investigation is None or investigation.state != "open":
        return f"call {event.call_id} allowed for investigation {event.investigation_id}, which is {investigation.state if investigation else 'unknown'}"
    if at >= investigation.due_at:
        return f"call {event.call_id} allowed for {event.investigation_id} at {at.isoformat()}, at or after its due time"
    if investigation.calls >= before.authority.config.investigation_calls_max:
        return f"call {event.call_id} allowed for {event.investigation_id} past investigation_calls_max"
    return None


# ------------------------------------------------ contract v1.2 section 4


@event_invariant
def heartbeat_never_fresher_than_its_beat(before: State, event: Event, applying: Applying) -> str | None:
    """A heartbeat is never fresher than its own `beat_at`: "a cached successful
    read must not extend freshness" (contract v1.2 section 4.1) — the beat time
    recorded is at most the input's `at` and at most the `beat_at` the watchdog
    wrote; and no unattended claim is made while the host is suspended, or
    resuming with no heartbeat written since ("recheck health on resume")."""
    if isinstance(event, ev.HeartbeatRecorded):
        value = applying.input
        if not isinstance(value, inp.Heartbeat):
            return f"a heartbeat recorded for a {value.input_type}"
        beat = event.beat_at if event.beat_at is not UNSET else event.at
        if beat > value.at or (value.beat_at is not UNSET and beat > value.beat_at):
            written = value.beat_at if value.beat_at is not UNSET else value.at
            return f"heartbeat recorded at {inp.format_at(beat)}, written at {inp.format_at(written)}"
    elif isinstance(event, ev.ActionClaimed):
        action = before.actions.by_id.get(event.operation_id)
        if action is not None and action.unattended and before.health.host != "running":
            return f"unattended {event.operation_id} claimed while the host is {before.health.host}"
    return None


@event_invariant
def no_delivery_while_provider_unready(before: State, event: Event, applying: Applying) -> str | None:
    """While a provider is not ready, nothing is delivered to a conversation
    on it (contract v1.2 section 4.3, "provider readiness/auth failures"):
    messages stay queued until a ready report recovers `provider/{provider}`."""
    if not isinstance(event, ev.DeliveryCreated):
        return None
    conversation = before.conversation.by_id[event.conversation_id]
    if conversation.provider is not None and before.alerts.incidents.get(f"provider/{conversation.provider}"):
        return f"{event.delivery_id} delivered to {event.conversation_id} while provider/{conversation.provider} is open"
    return None
