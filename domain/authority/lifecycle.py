"""The lifecycles of the authority area: the python-statemachine class of each thing
with states, the single definition of its allowed transitions, and what each
recorded event leaves it in (domain/lifecycle_base.py derives the tables;
domain/lifecycles.py gathers every area's)."""

from __future__ import annotations

from statemachine import State, StateMachine
from tandem.domain import events as ev
from tandem.domain.lifecycle_base import INITIAL, Lifecycle


class GrantMachine(StateMachine):
    live = State(initial=True)
    revoked = State(final=True)

    revise = live.to.itself()
    revoke = live.to(revoked)


GRANT = Lifecycle(
    GrantMachine, after={ev.GrantIssued: INITIAL, ev.GrantRevised: "revise", ev.GrantRevoked: "revoke"}
)


LIFECYCLES = (GRANT,)  # this area's, in the order docs/lifecycles.md draws them
__all__ = ['GrantMachine', 'GRANT']
