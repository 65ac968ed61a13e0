"""The lifecycles of the health area: the python-statemachine class of each thing
with states, the single definition of its allowed transitions, and what each
recorded event leaves it in (domain/lifecycle_base.py derives the tables;
domain/lifecycles.py gathers every area's)."""

from __future__ import annotations

from statemachine import State, StateMachine
from tandem.domain import events as ev
from tandem.domain.lifecycle_base import Lifecycle


class HostMachine(StateMachine):
    """The engine's host (contract v1.2 section 4.5): asleep after `host.suspend`;
    after a resume (`host.resume`, or a gap longer than `suspend_gap_s`) the
    watchdog is not fresh until a heartbeat written since (`recheck`); a
    resume that finds one recorded already is running at once."""

    running = State(initial=True)
    suspended = State()
    resuming = State()

    suspend = running.to(suspended) | suspended.to.itself() | resuming.to(suspended)
    resume = running.to(resuming) | suspended.to(resuming) | resuming.to.itself()
    resume_rechecked = running.to.itself() | suspended.to(running) | resuming.to(running)
    recheck = resuming.to(running)


# A heartbeat rechecks a resuming host only if written since the resume (the
# evolver says: `HOST.target(host, "recheck")`), so HeartbeatRecorded is not here.
HOST = Lifecycle(
    HostMachine,
    after={ev.HostSuspended: "suspend", (ev.HostResumed, False): "resume", (ev.HostResumed, True): "resume_rechecked"},
    by={ev.HostResumed: "running"},
)


LIFECYCLES = (HOST,)  # this area's, in the order docs/lifecycles.md draws them
__all__ = ['HostMachine', 'HOST']
