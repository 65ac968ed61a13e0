"""The lifecycles of the alerts area: the python-statemachine class of each thing
with states, the single definition of its allowed transitions, and what each
recorded event leaves it in (domain/lifecycle_base.py derives the tables;
domain/lifecycles.py gathers every area's)."""

from __future__ import annotations

from statemachine import State, StateMachine
from tandem.domain import events as ev
from tandem.domain.lifecycle_base import INITIAL, Lifecycle


class AlertMachine(StateMachine):
    """An alert's view state (contract section 6). Whether its condition is still on is
    another matter (`Alert.open`): a human's resolution leaves it on, and the
    engine resolves it again when it sees the condition end (`end`, from any
    state); a new occurrence raises it again, resolved or not."""

    raised = State(initial=True)
    seen = State()
    resolved = State()

    raise_again = raised.to.itself() | seen.to(raised) | resolved.to(raised)
    see = raised.to(seen)
    resolve = raised.to(resolved) | seen.to(resolved)
    end = raised.to(resolved) | seen.to(resolved) | resolved.to.itself()


class ObligationMachine(StateMachine):
    """A delivery obligation (contract section 6): a task action's outcome must reach its
    conversation; `due` once its fallback alert is raised, until it is met."""

    open = State(initial=True)
    due = State()
    met = State(final=True)

    fall_due = open.to(due)
    meet = open.to(met) | due.to(met)


ALERT = Lifecycle(
    AlertMachine,
    # A first AlertRaised creates it raised; a later one raises it again.
    after={ev.AlertRaised: "raise_again", ev.AlertSeen: "see", ev.AlertResolved: "end"},
)


OBLIGATION = Lifecycle(
    ObligationMachine, after={ev.ObligationOpened: INITIAL, ev.ObligationDue: "fall_due", ev.ObligationMet: "meet"}
)


LIFECYCLES = (ALERT, OBLIGATION,)  # this area's, in the order docs/lifecycles.md draws them
__all__ = ['AlertMachine', 'ObligationMachine', 'ALERT', 'OBLIGATION']
