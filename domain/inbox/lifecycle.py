"""The lifecycles of the inbox area: the python-statemachine class of each thing
with states, the single definition of its allowed transitions, and what each
recorded event leaves it in (domain/lifecycle_base.py derives the tables;
domain/lifecycles.py gathers every area's)."""

from __future__ import annotations

from statemachine import State, StateMachine
from tandem.domain import events as ev
from tandem.domain.lifecycle_base import Lifecycle


class UpdateMachine(StateMachine):
    """A pending update's triage (contract section 3.4): each new revision is untriaged again."""

    untriaged = State(initial=True)
    triaged = State()

    classify = untriaged.to(triaged) | triaged.to.itself()
    revise = untriaged.to.itself() | triaged.to(untriaged)


UPDATE = Lifecycle(
    UpdateMachine,
    after={
        ev.ObservationRecorded: "revise",  # one that revises the update (`update_revision` set)
        ev.UpdateRevised: "revise",
        ev.UpdateTriaged: "classify",
    },
)


LIFECYCLES = (UPDATE,)  # this area's, in the order docs/lifecycles.md draws them
__all__ = ['UpdateMachine', 'UPDATE']
