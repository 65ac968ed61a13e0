"""The lifecycles of the tasks area: the python-statemachine class of each thing
with states, the single definition of its allowed transitions, and what each
recorded event leaves it in (domain/lifecycle_base.py derives the tables;
domain/lifecycles.py gathers every area's)."""

from __future__ import annotations

from statemachine import State, StateMachine
from tandem.domain import events as ev
from tandem.domain.lifecycle_base import INITIAL, Lifecycle


class TaskMachine(StateMachine):
    active = State(initial=True)
    completed = State(final=True)
    cancelled = State(final=True)

    revise = active.to.itself()
    complete = active.to(completed)
    cancel = active.to(cancelled)


class QuestionMachine(StateMachine):
    open = State(initial=True)
    answered = State()

    raise_again = open.to.itself()
    reopen = answered.to(open)
    answer = open.to(answered)


TASK = Lifecycle(
    TaskMachine,
    after={
        ev.TaskDelegated: INITIAL,
        ev.TaskRevised: "revise",
        ev.TaskCompleted: "complete",
        ev.TaskCancelled: "cancel",
    },
)


QUESTION = Lifecycle(
    QuestionMachine,
    # Raised first, raised again or reopened, it is open.
    after={ev.QuestionRaised: INITIAL, ev.QuestionAnswered: "answer"},
)


LIFECYCLES = (TASK, QUESTION,)  # this area's, in the order docs/lifecycles.md draws them
__all__ = ['TaskMachine', 'QuestionMachine', 'TASK', 'QUESTION']
