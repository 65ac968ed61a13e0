"""The lifecycles of the tools area: the python-statemachine class of each thing
with states, the single definition of its allowed transitions, and what each
recorded event leaves it in (domain/lifecycle_base.py derives the tables;
domain/lifecycles.py gathers every area's)."""

from __future__ import annotations

from statemachine import State, StateMachine
from tandem.domain import events as ev
from tandem.domain.lifecycle_base import Lifecycle


class RuntimeMachine(StateMachine):
    """A runtime's admission (contract v1.2 section 1): admitted at a tool
    policy revision; refused (a failed admission, or revoked by a narrower
    tool policy); fenced (its background was bound at a new generation).
    Only a new admission makes it admitted again; a refusal creates it refused."""

    admitted = State(initial=True)
    refused = State()
    fenced = State()

    admit = admitted.to.itself() | refused.to(admitted) | fenced.to(admitted)
    refuse = admitted.to(refused) | refused.to.itself() | fenced.to(refused)
    revoke = admitted.to(refused)
    fence = admitted.to(fenced)


RUNTIME = Lifecycle(
    RuntimeMachine,
    # A first RuntimeAdmitted creates it admitted, a first RuntimeRefused refused.
    after={
        ev.RuntimeAdmitted: "admit",
        ev.RuntimeRefused: "refuse",
        ev.ToolPolicySet: "revoke",  # the runtimes it lists in `revoked`
        ev.RuntimeFenced: "fence",
    },
)


LIFECYCLES = (RUNTIME,)  # this area's, in the order docs/lifecycles.md draws them
__all__ = ['RuntimeMachine', 'RUNTIME']
