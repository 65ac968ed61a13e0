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


LIFECYCLES = (MESSAGE,)  # this area's, in the order docs/lifecycles.md draws them
__all__ = ['MessageMachine', 'MESSAGE']
