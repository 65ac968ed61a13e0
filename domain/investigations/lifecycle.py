"""The lifecycles of the investigations area: the python-statemachine class of each thing
with states, the single definition of its allowed transitions, and what each
recorded event leaves it in (domain/lifecycle_base.py derives the tables;
domain/lifecycles.py gathers every area's)."""

from __future__ import annotations

from statemachine import State, StateMachine
from tandem.domain import events as ev
from tandem.domain.lifecycle_base import INITIAL, Lifecycle


class InvestigationMachine(StateMachine):
    """A background's investigation (contract v1.2 section 5.1): open until its
    duration or calls run out (exhausted: its calls are denied) or it is
    closed; an exhausted one may still be closed."""

    open = State(initial=True)
    exhausted = State()
    concluded = State(final=True)
    abandoned = State(final=True)
    delegated = State(final=True)

    exhaust = open.to(exhausted)
    conclude = open.to(concluded) | exhausted.to(concluded)
    abandon = open.to(abandoned) | exhausted.to(abandoned)
    delegate = open.to(delegated) | exhausted.to(delegated)


INVESTIGATION = Lifecycle(
    InvestigationMachine,
    after={
        ev.InvestigationOpened: INITIAL,
        ev.InvestigationExhausted: "exhaust",
        (ev.InvestigationClosed, "concluded"): "conclude",
        (ev.InvestigationClosed, "abandoned"): "abandon",
        (ev.InvestigationClosed, "delegated"): "delegate",
    },
    by={ev.InvestigationClosed: "outcome"},
)


LIFECYCLES = (INVESTIGATION,)  # this area's, in the order docs/lifecycles.md draws them
__all__ = ['InvestigationMachine', 'INVESTIGATION']
