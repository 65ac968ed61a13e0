"""The lifecycles of the consumer area: the python-statemachine class of each thing
with states, the single definition of its allowed transitions, and what each
recorded event leaves it in (domain/lifecycle_base.py derives the tables;
domain/lifecycles.py gathers every area's)."""

from __future__ import annotations

from statemachine import State, StateMachine
from tandem.domain import events as ev
from tandem.domain.lifecycle_base import INITIAL, Lifecycle


class ConsumerMachine(StateMachine):
    """A change-log consumer (contract section 3.4)."""

    consuming = State(initial=True)
    reconciliation_required = State()

    batch = consuming.to.itself()
    require_reconciliation = consuming.to(reconciliation_required)
    reconcile = reconciliation_required.to(consuming)


CONSUMER = Lifecycle(
    ConsumerMachine,
    after={
        ev.ConsumerCreated: INITIAL,
        ev.CursorMoved: "batch",
        ev.ReconciliationStarted: "require_reconciliation",
        ev.ReconciliationCommitted: "reconcile",
    },
)


LIFECYCLES = (CONSUMER,)  # this area's, in the order docs/lifecycles.md draws them
__all__ = ['ConsumerMachine', 'CONSUMER']
