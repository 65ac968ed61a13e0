"""The catalog's state invariants: each looks at the engine after an input
(its live state and views, and the same folded again from the stored events).
docs/invariants.md lists them all."""

from __future__ import annotations

import pickle
from dataclasses import fields
from typing import Any

from tandem.domain.records import Conversation
from tandem.domain.state import State
from tandem.projections import VIEW_NAMES
from tandem.replay.proving.model import World, state_invariant
from tandem.replay.proving.restated import PASS_SCRATCH, TERMINAL, backoff_until, section_4_codes

@state_invariant
def one_live_action_per_cause(world: World) -> str | None:
    """At most one live action per cause (`duplicate_cause`): "lifecycle +
    background same fix -> one accepted managed operation"; "reconcile existing
    ownership before accepting a successor for the same cause"."""
    live: dict[str, list[str]] = {}
    for action in world.state.actions.by_id.values():
        if action.state not in TERMINAL:
            live.setdefault(action.cause_key, []).append(action.operation_id)
    for cause_key, operation_ids in live.items():
        if len(operation_ids) > 1:
            return f"cause {cause_key!r} has {len(operation_ids)} live actions: {operation_ids}"
    return None


@state_invariant
def one_fix_per_batch(world: World) -> str | None:
    """At most one live fix per batch (`duplicate_batch`, contract v1.2
    section 7.3): "track batch membership so the same review cannot start two
    fixes". Membership is the batch's now: an action counts for the batch its
    cause is in, whatever batch (or none) it recorded when proposed, so two
    fixes live before their causes joined one batch count together. Live: not
    terminal and not `cancel_requested` (asked to stop, it never becomes live
    again: a fix stopped `duplicate_batch` is not a second one)."""
    state = world.state
    batch_of = {cause_key: batch_id for batch_id, batch in state.reviews.batches.items() for cause_key in batch.joined}
    live: dict[str, list[str]] = {}
    for action in state.actions.by_id.values():
        batch_id = batch_of.get(action.cause_key)
        if batch_id is not None and action.state not in TERMINAL and action.state != "cancel_requested":
            live.setdefault(batch_id, []).append(action.operation_id)
    for batch_id, operation_ids in live.items():
        if len(operation_ids) > 1:
            return f"batch {batch_id!r} has {len(operation_ids)} live fixes: {operation_ids}"
    return None


@state_invariant
def blocked_by_is_section_4(world: World) -> str | None:
    """Blockers are visible and exact: "unclear blockers: show which task needs
    your answer, why"; authorised work is not left waiting. A pending action's
    `blocked_by` is exactly the section 4 codes that apply (so a pending action
    with none would have been claimed); every other action's is empty; the
    actions view agrees with the state."""
    state = world.state
    at = world.applying.at
    rows = {row["operation_id"]: row for row in world.document["actions"]} if world.document is not None else None
    for operation_id, action in state.actions.by_id.items():
        if action.state == "pending":
            codes = section_4_codes(state, action, at)
            if list(action.blocked_by) != codes:
                hint = " (nothing blocks it: it should have been claimed)" if not codes else ""
                return f"pending {operation_id}: blocked_by {list(action.blocked_by)}, section 4 says {codes}{hint}"
        elif action.blocked_by:
            return f"{operation_id} is {action.state} but blocked_by is {list(action.blocked_by)}"
        if rows is not None:
            row = rows.get(operation_id)
            if row is None or row["state"] != action.state or row["blocked_by"] != list(action.blocked_by):
                return f"actions view row {row} disagrees with the state ({action.state}, {list(action.blocked_by)})"
    return None


def _backing_off(state: State, conversation: Conversation) -> bool:
    """A refusal's back-off (contract v1.2 section 3.6) holds every delivery."""
    until = backoff_until(state, conversation)
    return until is not None and state.last_at is not None and state.last_at < until


@state_invariant
def human_messages_kept(world: World) -> str | None:
    """No human message lost: "keep human messages durable and the UI
    available"; "human races wake claim -> human not starved". Every queued
    message is in its queue exactly once, every dispatched one in the running
    turn, none withdrawn or handled is queued; an idle foreground that nothing
    holds has no message waiting."""
    for conversation in world.state.conversation.by_id.values():
        queue = conversation.queue
        if len(queue) != len(set(queue)):
            return f"{conversation.conversation_id} queue has duplicates: {queue}"
        running = conversation.running_turn
        in_turn = set(running.messages) if running is not None else set()
        for message_id, message in conversation.messages.items():
            queued = message_id in queue
            if (message.state == "queued") != queued:
                return f"{message_id} is {message.state} but {'in' if queued else 'not in'} the queue {queue}"
            if message.state == "dispatched" and message_id not in in_turn:
                return f"{message_id} is dispatched but not in a running turn"
        for message_id in queue:
            if message_id not in conversation.messages:
                return f"{conversation.conversation_id} queues {message_id}, which was never accepted"
        if conversation.role != "foreground" or not queue or running is not None:
            continue
        reseed = conversation.deliveries.get(conversation.reseed_id) if conversation.reseed_id else None
        held = (
            conversation.approvals
            or conversation.failure_held
            or conversation.recovery is not None
            or conversation.reseed_due
            or (reseed is not None and reseed.attempt_state != "accepted")
            or _backing_off(world.state, conversation)
            # contract v1.2 section 4.3: its provider is not ready (the incident, recomputed)
            or (conversation.provider is not None and world.state.alerts.incidents.get(f"provider/{conversation.provider}"))
        )
        if not held:
            return f"{conversation.conversation_id} is idle and dispatchable with {queue} queued: no human turn started"
    return None


@state_invariant
def restart_is_replay(world: World) -> str | None:
    """Restart is replay: "save the plan, worker results and unfinished tasks
    outside the model conversation"; a restarted engine folds the stored
    events into exactly the live decision state and views (contract section 7's eleven
    views)."""
    state, replayed = world.state, world.replayed
    for f in fields(State):
        if f.name in PASS_SCRATCH:
            continue
        live_value, replay_value = getattr(state, f.name), getattr(replayed, f.name)
        if live_value != replay_value:
            return f"replayed state.{f.name} differs:\n live   {live_value}\n replay {replay_value}"
    document = world.document
    if document is not None:
        if tuple(document) != VIEW_NAMES:
            return f"document keys {list(document)} are not contract section 7's {list(VIEW_NAMES)}"
        if document != world.replayed_document:
            for name in VIEW_NAMES:
                if document[name] != world.replayed_document[name]:
                    return f"replayed view {name} differs:\n live   {document[name]}\n replay {world.replayed_document[name]}"
    return None


@state_invariant
def reading_changes_nothing(world: World) -> str | None:
    """Restart is replay, for what is read too: a snapshot keeps each view's
    fold (its attributes) and a restart starts from it, so reading a view
    (`render`) must write nothing into it; else what a restart starts from
    depends on who read the views when (a writer's clients reading
    `/v1/views` while a turn ran kept `state: running` in a stored row)."""
    views = world.views if world.views is not None else world.replayed_views
    for name, view in views.by_name.items():
        before = pickle.dumps(vars(view), protocol=pickle.HIGHEST_PROTOCOL)
        view.render()
        if pickle.dumps(vars(view), protocol=pickle.HIGHEST_PROTOCOL) != before:
            return f"rendering the {name} view changed what it holds (what a snapshot keeps)"
    return None


@state_invariant
def listings_match_rows(world: World) -> str | None:
    """What the console lists is what the views hold: a page counts and lists
    a keyed view's rows by state, and the inbox's pending rows, from keys
    the views keep beside their rows (projections/base.py, `ByState`; the
    inbox's `retained`), so those keys must be exactly the rows in each
    state, and exactly the rows `render()` says are retained."""
    views = world.views if world.views is not None else world.replayed_views
    for name in LISTED_BY_STATE:
        view: Any = views.by_name[name]
        held = {state: set(keys) for state, keys in view.by_state.keys.items() if keys}
        rows: dict[str, set[Any]] = {}
        for key, row in view.rows.items():
            rows.setdefault(row["state"], set()).add(key)
        if held != rows:
            return f"the {name} view's keys by state {held} are not its rows' states {rows}"
    inbox: Any = views.by_name["inbox"]
    # What `rendered` says of each row (`retained`), asked of the stored row
    # itself: rendering the whole inbox at every input made checks quadratic.
    retained = {key for key, row in inbox.rows.items() if inbox._retains(row)}
    if set(inbox.retained) != retained:
        return f"the inbox keeps {sorted(inbox.retained)} as retained, its rows say {sorted(retained)}"
    return None


LISTED_BY_STATE = ("tasks", "actions", "alerts", "questions")


# The invariant reported when an event does not survive its own codec.
RESTART_IS_REPLAY = restart_is_replay



@state_invariant
def unready_provider_is_the_deferral(world: World) -> str | None:
    """A foreground whose provider is not ready says so: "provider
    readiness/auth failures" are visible (contract v1.2 sections 3.10, 4.3):
    deferred `provider_unready` (until null) exactly while `provider/{provider}`
    is open (the incident, recomputed), in the state and in the view."""
    views = world.views if world.views is not None else world.replayed_views
    rows = {row["conversation_id"]: row for row in views.view("conversations")}
    for conversation_id in world.state.conversation.foregrounds:
        conversation = world.state.conversation.by_id[conversation_id]
        provider = conversation.provider
        unready = provider is not None and bool(world.state.alerts.incidents.get(f"provider/{provider}"))
        deferred = conversation.deferred
        if unready != (deferred is not None and deferred[0] == "provider_unready"):
            return f"{conversation_id} on {provider} (incident open: {unready}) is deferred {deferred}"
        shown = rows[conversation_id]["deferred"]
        if unready and shown != {"until": None, "reason": "provider_unready"}:
            return f"{conversation_id}'s view shows deferred {shown} while provider/{provider} is open"
    return None
