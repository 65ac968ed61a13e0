"""The lifecycles of the actions area: the python-statemachine class of each thing
with states, the single definition of its allowed transitions, and what each
recorded event leaves it in (domain/lifecycle_base.py derives the tables;
domain/lifecycles.py gathers every area's)."""

from __future__ import annotations

from statemachine import State, StateMachine
from tandem.domain import events as ev
from tandem.domain.lifecycle_base import INITIAL, Lifecycle


class ActionMachine(StateMachine):
    """A managed action: one dispatch authority's unit of work (contract section 3.3, 4)."""

    pending = State(initial=True)
    fenced = State()
    submitting = State()
    queued = State()
    accepted = State()
    unknown = State()
    cancel_requested = State()
    succeeded = State(final=True)
    failed = State(final=True)
    cancelled = State(final=True)
    exhausted = State(final=True)
    superseded = State(final=True)

    claim = pending.to(submitting)
    fence = pending.to(fenced) | fenced.to.itself()
    revalidate = fenced.to(pending)
    cancel = pending.to(cancelled) | fenced.to(cancelled)
    # Contract v1.2 section 2.2: its cause moved on and made it pointless before
    # any attempt was out (a stale unaccepted command, rejected for good); 7.3:
    # its batch has an earlier live fix.
    supersede = pending.to(superseded) | fenced.to(superseded)
    request_cancel = (
        submitting.to(cancel_requested)
        | queued.to(cancel_requested)
        | accepted.to(cancel_requested)
        | unknown.to(cancel_requested)
    )
    # Receipts and reconciles on the latest attempt. From cancel_requested the
    # action stays where it is, except that a refusal ends it.
    queue = submitting.to(queued) | queued.to.itself() | cancel_requested.to.itself()
    accept = (
        submitting.to(accepted) | queued.to(accepted) | unknown.to(accepted) | cancel_requested.to.itself()
    )
    lose_track = submitting.to(unknown) | queued.to(unknown) | cancel_requested.to.itself()
    refuse = submitting.to(pending) | queued.to(pending) | unknown.to(pending) | cancel_requested.to(cancelled)
    exhaust = submitting.to(exhausted) | queued.to(exhausted) | unknown.to(exhausted)
    # A refusal after the task was revised, or the grant or policy narrowed,
    # while the attempt was out: back under current authority only by revalidation.
    refuse_stale = submitting.to(fenced) | queued.to(fenced) | unknown.to(fenced)
    # Executor outcomes: an observed outcome proves acceptance.
    succeed = (
        submitting.to(succeeded)
        | queued.to(succeeded)
        | accepted.to(succeeded)
        | unknown.to(succeeded)
        | cancel_requested.to(succeeded)
    )
    fail = (
        submitting.to(failed)
        | queued.to(failed)
        | accepted.to(failed)
        | unknown.to(failed)
        | cancel_requested.to(failed)
    )
    confirm_cancel = cancel_requested.to(cancelled)
    # Contract v1.2 section 3.3: its execution deadline passed before it was claimed again.
    expire = pending.to(exhausted) | fenced.to(exhausted)


class AttemptMachine(StateMachine):
    """One transport attempt of an action, `{operation_id}/a{n}`."""

    submitting = State(initial=True)
    queued = State()
    accepted = State(final=True)
    unknown = State()
    refused = State(final=True)
    not_received = State(final=True)

    receipt_queued = submitting.to(queued) | queued.to.itself()
    receipt_accepted = submitting.to(accepted) | queued.to(accepted)
    receipt_unknown = submitting.to(unknown) | queued.to(unknown)
    receipt_refused = submitting.to(refused) | queued.to(refused)
    reconcile_accepted = unknown.to(accepted)
    reconcile_not_received = unknown.to(not_received)
    observe_outcome = submitting.to(accepted) | queued.to(accepted) | unknown.to(accepted)


ACTION = Lifecycle(
    ActionMachine,
    after={
        ev.ActionProposed: INITIAL,
        ev.ActionRevalidated: "revalidate",
        ev.ActionCancelled: "cancel",
        ev.ActionCancelRequested: "request_cancel",
        ev.ActionClaimed: "claim",
        # For the actions each lists in `fenced`:
        ev.PolicySet: "fence",
        ev.GrantRevised: "fence",
        ev.TaskRevised: "fence",
        # The source rule (contract v1.2 section 2.2); its outcome "restamped" changes no state.
        (ev.SourceRuleApplied, "fenced"): "fence",
        (ev.SourceRuleApplied, "superseded"): "supersede",
        # Contract v1.2 section 7.3: a batch's causes have an earlier live fix.
        ev.BatchFixSuperseded: "supersede",
        # AttemptUpdated and ActionOutcomeReported record `action_state`.
    },
    # An attempt is out with the executor (the contract's "in flight").
    in_flight=("submitting", "queued", "accepted", "unknown", "cancel_requested"),
    by={ev.SourceRuleApplied: "outcome"},
)


ATTEMPT = Lifecycle(
    AttemptMachine,
    after={ev.ActionClaimed: INITIAL},  # AttemptUpdated and ActionOutcomeReported record `attempt_state`
    in_flight=("submitting", "queued", "unknown"),
)


LIFECYCLES = (ACTION, ATTEMPT,)  # this area's, in the order docs/lifecycles.md draws them
__all__ = ['ActionMachine', 'AttemptMachine', 'ACTION', 'ATTEMPT']
