"""The lifecycles of the conversation area: the python-statemachine class of each thing
with states, the single definition of its allowed transitions, and what each
recorded event leaves it in (domain/lifecycle_base.py derives the tables;
domain/lifecycles.py gathers every area's)."""

from __future__ import annotations

from statemachine import State, StateMachine
from tandem.domain import events as ev
from tandem.domain.lifecycle_base import INITIAL, Lifecycle


class MessageMachine(StateMachine):
    """A human message in a foreground's queue (contract section 5.1): it leaves the queue
    only in a delivery, and comes back to its front if the turn does not
    complete, so no human message is ever lost."""

    queued = State(initial=True)
    dispatched = State()
    handled = State(final=True)
    withdrawn = State(final=True)

    edit = queued.to.itself()
    withdraw = queued.to(withdrawn)
    dispatch = queued.to(dispatched)
    complete = dispatched.to(handled)
    requeue = dispatched.to(queued)


MESSAGE = Lifecycle(
    MessageMachine,
    after={
        ev.MessageQueued: INITIAL,
        (ev.QueueEdited, "edit"): "edit",
        (ev.QueueEdited, "withdraw"): "withdraw",
        ev.DeliveryCreated: "dispatch",  # the messages it lists
        (ev.TurnEnded, "completed"): "complete",  # the turn's messages
        (ev.TurnEnded, "failed"): "requeue",
        (ev.TurnEnded, "interrupted"): "requeue",
    },
    by={ev.QueueEdited: "op", ev.TurnEnded: "outcome"},
    in_flight=("dispatched",),
)


class DeliveryMachine(StateMachine):
    """A context delivery's attempt (contract section 5.2): only `accepted` counts as delivered."""

    submitting = State(initial=True)
    accepted = State(final=True)
    unknown = State()
    refused = State(final=True)
    not_received = State(final=True)

    receipt_accepted = submitting.to(accepted)
    receipt_unknown = submitting.to(unknown)
    receipt_refused = submitting.to(refused)
    reconcile_accepted = unknown.to(accepted)
    reconcile_not_received = unknown.to(not_received)
    compose = submitting.to.itself()  # its exact payload recorded (contract v1.2 section 6)


class TurnMachine(StateMachine):
    """A turn of a foreground conversation, `{conversation_id}/t{n}` (contract section 5.3)."""

    running = State(initial=True)
    completed = State(final=True)
    failed = State(final=True)
    interrupted = State(final=True)

    complete = running.to(completed)
    fail = running.to(failed)
    interrupt = running.to(interrupted)


DELIVERY = Lifecycle(
    DeliveryMachine,
    after={ev.DeliveryCreated: INITIAL, ev.DeliveryComposed: "compose"},  # DeliveryReceipted records `attempt_state`
    # With the provider, not settled: it keeps holding what it holds.
    in_flight=("submitting", "unknown"),
)


TURN = Lifecycle(
    TurnMachine,
    after={
        ev.TurnStarted: INITIAL,
        (ev.TurnEnded, "completed"): "complete",
        (ev.TurnEnded, "failed"): "fail",
        (ev.TurnEnded, "interrupted"): "interrupt",
    },
    by={ev.TurnEnded: "outcome"},
    in_flight=("running",),
)


LIFECYCLES = (MESSAGE, DELIVERY, TURN,)  # this area's, in the order docs/lifecycles.md draws them
__all__ = ['MessageMachine', 'MESSAGE', 'DeliveryMachine', 'TurnMachine', 'DELIVERY', 'TURN']
