"""Lifecycles: one python-statemachine class per thing with states, the single
definition of its allowed transitions (DESIGN principle 4), and of what each
recorded event leaves it in.

The machines are never run while deciding or replaying: building one costs
~100 µs and `send()` ~80 µs, and replayed events are facts, not requests.
Instead `Lifecycle` derives, once, at import:

- `table`: `{(state, transition): target}` from the class; `decide` asks it
  (`allows`, `target`: a dict lookup);
- `after`: `{event type: resulting state}` from the transitions each event
  type records, declared beside the machine; evolve and the views ask it
  instead of naming states themselves ("ActionClaimed leaves the action
  submitting" is written here only). An event type whose effect depends on one
  of its fields (a turn's `outcome`) is keyed `(event type, value)`, and the
  field is named in `by`. An event that records the state it sets
  (`AttemptUpdated.action_state`) is not in `after`: the event says;
- `in_flight`: the states in which the thing is out with someone else (an
  action's attempt with the executor, a delivery with the provider).

The same classes draw docs/lifecycles.md and the SVGs under docs/lifecycles/
(`python -m tandem.domain.lifecycles --write docs`; see `write_docs`).
Transitions are verbs that match input kinds; states are nouns or adjectives.
(replay/proving/invariants.py restates some of these facts on purpose: an
invariant that asked the machine would check the machine against itself.)
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from statemachine import State, StateMachine

from tandem.domain import events as ev


class ActionMachine(StateMachine):
    """A managed action: one dispatch authority's unit of work (contract section 3.3, 4)."""

    pending = State(initial=True)
    fenced = State()
    submitting = State()
    queued = State()
    accepted = State()
    unknown = State()
    cancel_requested = State()
    succeeded = State(final=True)
    failed = State(final=True)
    cancelled = State(final=True)
    exhausted = State(final=True)
    superseded = State(final=True)

    claim = pending.to(submitting)
    fence = pending.to(fenced) | fenced.to.itself()
    revalidate = fenced.to(pending)
    cancel = pending.to(cancelled) | fenced.to(cancelled)
    # Contract v1.2 section 2.2: its cause moved on and made it pointless before
    # any attempt was out (a stale unaccepted command, rejected for good); 7.3:
    # its batch has an earlier live fix.
    supersede = pending.to(superseded) | fenced.to(superseded)
    request_cancel = (
        submitting.to(cancel_requested)
        | queued.to(cancel_requested)
        | accepted.to(cancel_requested)
        | unknown.to(cancel_requested)
    )
    # Receipts and reconciles on the latest attempt. From cancel_requested the
    # action stays where it is, except that a refusal ends it.
    queue = submitting.to(queued) | queued.to.itself() | cancel_requested.to.itself()
    accept = (
        submitting.to(accepted) | queued.to(accepted) | unknown.to(accepted) | cancel_requested.to.itself()
    )
    lose_track = submitting.to(unknown) | queued.to(unknown) | cancel_requested.to.itself()
    refuse = submitting.to(pending) | queued.to(pending) | unknown.to(pending) | cancel_requested.to(cancelled)
    exhaust = submitting.to(exhausted) | queued.to(exhausted) | unknown.to(exhausted)
    # A refusal after the task was revised, or the grant or policy narrowed,
    # while the attempt was out: back under current authority only by revalidation.
    refuse_stale = submitting.to(fenced) | queued.to(fenced) | unknown.to(fenced)
    # Executor outcomes: an observed outcome proves acceptance.
    succeed = (
        submitting.to(succeeded)
        | queued.to(succeeded)
        | accepted.to(succeeded)
        | unknown.to(succeeded)
        | cancel_requested.to(succeeded)
    )
    fail = (
        submitting.to(failed)
        | queued.to(failed)
        | accepted.to(failed)
        | unknown.to(failed)
        | cancel_requested.to(failed)
    )
    confirm_cancel = cancel_requested.to(cancelled)
    # Contract v1.2 section 3.3: its execution deadline passed before it was claimed again.
    expire = pending.to(exhausted) | fenced.to(exhausted)


class AttemptMachine(StateMachine):
    """One transport attempt of an action, `{operation_id}/a{n}`."""

    submitting = State(initial=True)
    queued = State()
    accepted = State(final=True)
    unknown = State()
    refused = State(final=True)
    not_received = State(final=True)

    receipt_queued = submitting.to(queued) | queued.to.itself()
    receipt_accepted = submitting.to(accepted) | queued.to(accepted)
    receipt_unknown = submitting.to(unknown) | queued.to(unknown)
    receipt_refused = submitting.to(refused) | queued.to(refused)
    reconcile_accepted = unknown.to(accepted)
    reconcile_not_received = unknown.to(not_received)
    observe_outcome = submitting.to(accepted) | queued.to(accepted) | unknown.to(accepted)


class TaskMachine(StateMachine):
    active = State(initial=True)
    completed = State(final=True)
    cancelled = State(final=True)

    revise = active.to.itself()
    complete = active.to(completed)
    cancel = active.to(cancelled)


class GrantMachine(StateMachine):
    live = State(initial=True)
    revoked = State(final=True)

    revise = live.to.itself()
    revoke = live.to(revoked)


class QuestionMachine(StateMachine):
    open = State(initial=True)
    answered = State()

    raise_again = open.to.itself()
    reopen = answered.to(open)
    answer = open.to(answered)


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


class UpdateMachine(StateMachine):
    """A pending update's triage (contract section 3.4): each new revision is untriaged again."""

    untriaged = State(initial=True)
    triaged = State()

    classify = untriaged.to(triaged) | triaged.to.itself()
    revise = untriaged.to.itself() | triaged.to(untriaged)


class ConsumerMachine(StateMachine):
    """A change-log consumer (contract section 3.4)."""

    consuming = State(initial=True)
    reconciliation_required = State()

    batch = consuming.to.itself()
    require_reconciliation = consuming.to(reconciliation_required)
    reconcile = reconciliation_required.to(consuming)


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


class TurnMachine(StateMachine):
    """A turn of a foreground conversation, `{conversation_id}/t{n}` (contract section 5.3)."""

    running = State(initial=True)
    completed = State(final=True)
    failed = State(final=True)
    interrupted = State(final=True)

    complete = running.to(completed)
    fail = running.to(failed)
    interrupt = running.to(interrupted)


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


INITIAL = "(created)"  # in an `after` declaration: the event creates the thing, in its initial state

AfterKey = type | tuple[type, Any]


class Lifecycle:
    """The tables of one StateMachine class, derived once (see the module doc).

    `after` declares, per event type (or `(event type, value of its field named
    in by)`), the transition it records, or INITIAL; `self.after` is the state
    that leaves, derived from the machine (a declared transition must have a
    single target)."""

    def __init__(
        self,
        machine: type[StateMachine],
        after: Mapping[AfterKey, str],
        in_flight: Iterable[str] = (),
        by: Mapping[type, str] | None = None,
    ) -> None:
        self.machine = machine
        self.name = machine.__name__.removesuffix("Machine").lower()
        self.initial: str = next(s.id for s in machine.states if s.initial)
        self.states: tuple[str, ...] = tuple(s.id for s in machine.states)
        self.terminal: frozenset[str] = frozenset(s.id for s in machine.states if s.final)
        table: dict[tuple[str, str], str] = {}
        for state in machine.states:
            for transition in state.transitions:
                for event in transition.events:
                    key = (state.id, str(event.id))
                    assert key not in table, f"{self.name}: {key} is ambiguous"
                    table[key] = transition.target.id
        self.table = table
        self.events: tuple[str, ...] = tuple(sorted({event for _, event in table}))
        self.in_flight: frozenset[str] = frozenset(in_flight)
        assert self.in_flight <= set(self.states) - self.terminal, f"{self.name}: in flight must be live states"
        self.by: dict[type, str] = dict(by or {})
        self.after_transitions: dict[AfterKey, str] = dict(after)
        self.after: dict[AfterKey, str] = {key: self._result(key, name) for key, name in after.items()}

    def _result(self, key: AfterKey, transition: str) -> str:
        kind = key[0] if isinstance(key, tuple) else key
        assert isinstance(kind, type) and issubclass(kind, ev.Event), f"{self.name}: {key!r} is no event type"
        assert isinstance(key, tuple) == (kind in self.by), f"{self.name}: {key!r}: key by a field iff `by` names one"
        if transition == INITIAL:
            return self.initial
        targets = {target for (_, event), target in self.table.items() if event == transition}
        assert len(targets) == 1, f"{self.name}: {transition} leads to {sorted(targets)}: the event must say which"
        return targets.pop()

    def target(self, state: str, event: str) -> str | None:
        """Where `event` takes `state`, or None if the lifecycle forbids it."""
        return self.table.get((state, event))

    def allows(self, state: str, event: str) -> bool:
        return (state, event) in self.table

    def state_after(self, event: ev.Event) -> str | None:
        """The state `event` leaves the thing in, if its type declares one."""
        kind = type(event)
        field = self.by.get(kind)
        return self.after.get((kind, getattr(event, field)) if field is not None else kind)

    def mermaid(self) -> str:
        lines = ["stateDiagram-v2", f"    [*] --> {self.initial}"]
        for (source, event), target in sorted(self.table.items()):
            lines.append(f"    {source} --> {target}: {event}")
        lines.extend(f"    {state} --> [*]" for state in sorted(self.terminal))
        return "\n".join(lines)

    def dot(self) -> str:
        """The machine in the DOT language, as python-statemachine's own diagram
        support draws it (`statemachine.contrib.diagram`: its extract and DOT
        renderer, the two steps of its DotGraphMachine), with three changes:
        states and events are named as in the code (the library would write
        "Cancel requested"), the transitions between the same two states are one
        edge listing their events, and the node ids the library derives from
        `id()` are made stable, so the same machine gives the same text.

        Needs pydot (python-statemachine's `diagrams` extra, in the test extra),
        imported here only: the domain never needs it at run time."""
        from statemachine.contrib.diagram import extract
        from statemachine.contrib.diagram.renderers.dot import DotRenderer

        graph = extract(self.machine)
        event_ids = {str(event.name): str(event.id) for event in self.machine.events}
        for state in graph.states:
            state.name = state.id
        edges: dict[tuple[str, tuple[str, ...]], Any] = {}
        for transition in graph.transitions:
            event = event_ids[transition.event]  # one event per transition here
            edge = edges.setdefault((transition.source, tuple(transition.targets)), transition)
            edge.event = event if edge is transition else f"{edge.event}, {event}"
        graph.transitions = list(edges.values())
        drawing = DotRenderer().render(graph)
        text: str = drawing.to_string().replace(f"_{id(drawing)}", "")
        assert str(id(drawing)) not in text, f"{self.name}: an id() is left in the DOT"
        return text

    def after_markdown(self) -> str:
        """The `after` declaration as a table, and the in-flight group."""
        rows = ["| event | records | leaves it |", "| --- | --- | --- |"]
        for key, transition in self.after_transitions.items():
            if isinstance(key, tuple):
                name = f"`{key[0].__name__}` ({self.by[key[0]]} `{key[1]}`)"
            else:
                name = f"`{key.__name__}`"
            records = "created" if transition == INITIAL else f"`{transition}`"
            rows.append(f"| {name} | {records} | `{self.after[key]}` |")
        flight = ", ".join(f"`{state}`" for state in self.states if state in self.in_flight) or "none"
        return "\n".join(rows) + f"\n\nIn flight: {flight}.\n"


ACTION = Lifecycle(
    ActionMachine,
    after={
        ev.ActionProposed: INITIAL,
        ev.ActionRevalidated: "revalidate",
        ev.ActionCancelled: "cancel",
        ev.ActionCancelRequested: "request_cancel",
        ev.ActionClaimed: "claim",
        # For the actions each lists in `fenced`:
        ev.PolicySet: "fence",
        ev.GrantRevised: "fence",
        ev.TaskRevised: "fence",
        # The source rule (contract v1.2 section 2.2); its outcome "restamped" changes no state.
        (ev.SourceRuleApplied, "fenced"): "fence",
        (ev.SourceRuleApplied, "superseded"): "supersede",
        # Contract v1.2 section 7.3: a batch's causes have an earlier live fix.
        ev.BatchFixSuperseded: "supersede",
        # AttemptUpdated and ActionOutcomeReported record `action_state`.
    },
    # An attempt is out with the executor (the contract's "in flight").
    in_flight=("submitting", "queued", "accepted", "unknown", "cancel_requested"),
    by={ev.SourceRuleApplied: "outcome"},
)
ATTEMPT = Lifecycle(
    AttemptMachine,
    after={ev.ActionClaimed: INITIAL},  # AttemptUpdated and ActionOutcomeReported record `attempt_state`
    in_flight=("submitting", "queued", "unknown"),
)
TASK = Lifecycle(
    TaskMachine,
    after={
        ev.TaskDelegated: INITIAL,
        ev.TaskRevised: "revise",
        ev.TaskCompleted: "complete",
        ev.TaskCancelled: "cancel",
    },
)
GRANT = Lifecycle(
    GrantMachine, after={ev.GrantIssued: INITIAL, ev.GrantRevised: "revise", ev.GrantRevoked: "revoke"}
)
QUESTION = Lifecycle(
    QuestionMachine,
    # Raised first, raised again or reopened, it is open.
    after={ev.QuestionRaised: INITIAL, ev.QuestionAnswered: "answer"},
)
DELIVERY = Lifecycle(
    DeliveryMachine,
    after={ev.DeliveryCreated: INITIAL, ev.DeliveryComposed: "compose"},  # DeliveryReceipted records `attempt_state`
    # With the provider, not settled: it keeps holding what it holds.
    in_flight=("submitting", "unknown"),
)
UPDATE = Lifecycle(
    UpdateMachine,
    after={
        ev.ObservationRecorded: "revise",  # one that revises the update (`update_revision` set)
        ev.UpdateRevised: "revise",
        ev.UpdateTriaged: "classify",
    },
)
CONSUMER = Lifecycle(
    ConsumerMachine,
    after={
        ev.ConsumerCreated: INITIAL,
        ev.CursorMoved: "batch",
        ev.ReconciliationStarted: "require_reconciliation",
        ev.ReconciliationCommitted: "reconcile",
    },
)
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
ALERT = Lifecycle(
    AlertMachine,
    # A first AlertRaised creates it raised; a later one raises it again.
    after={ev.AlertRaised: "raise_again", ev.AlertSeen: "see", ev.AlertResolved: "end"},
)
OBLIGATION = Lifecycle(
    ObligationMachine, after={ev.ObligationOpened: INITIAL, ev.ObligationDue: "fall_due", ev.ObligationMet: "meet"}
)
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
# A heartbeat rechecks a resuming host only if written since the resume (the
# evolver says: `HOST.target(host, "recheck")`), so HeartbeatRecorded is not here.
HOST = Lifecycle(
    HostMachine,
    after={ev.HostSuspended: "suspend", (ev.HostResumed, False): "resume", (ev.HostResumed, True): "resume_rechecked"},
    by={ev.HostResumed: "running"},
)
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
LIFECYCLES = (
    ACTION, ATTEMPT, TASK, GRANT, QUESTION, DELIVERY, UPDATE, CONSUMER, MESSAGE, TURN, ALERT, OBLIGATION, RUNTIME, HOST,
    INVESTIGATION,
)  # fmt: skip

# The action states the contract calls in flight (an attempt is out with the executor).
IN_FLIGHT = ACTION.in_flight


WRITE_COMMAND = "python -m tandem.domain.lifecycles --write docs"


def diagrams_markdown() -> str:
    """docs/lifecycles.md, drawn from the classes (a test keeps it current)."""
    parts = [
        "# Lifecycles\n\n"
        f"Generated by `{WRITE_COMMAND}` from the\n"
        "python-statemachine classes in `domain/lifecycles.py`, the single definition of\n"
        "each lifecycle's allowed transitions and of the state each recorded event leaves\n"
        "it in. Terminal states end in `[*]`.\n\n"
        "Each picture is `lifecycles/{name}.svg`, drawn by python-statemachine's diagram\n"
        "support and Graphviz (Debian's `graphviz` package; pydot comes with the test\n"
        "extra) from `lifecycles/{name}.dot`, by the same command: a black dot points at\n"
        "the initial state, terminal states have a double border, and the transitions\n"
        "between two states are one arrow naming their events. The SVGs are installed\n"
        "as package data (`tandem.lifecycle_diagrams`) for the console's `/lifecycles`\n"
        "page, which needs no Graphviz.\n"
    ]
    for lifecycle in LIFECYCLES:
        parts.append(
            f"## {lifecycle.name}\n\n![{lifecycle.name}](lifecycles/{lifecycle.name}.svg)\n\n"
            f"```mermaid\n{lifecycle.mermaid()}\n```\n\n{lifecycle.after_markdown()}"
        )
    return "\n".join(parts)


def svg_stamp(dot: str) -> str:
    """The XML comment an SVG of docs/lifecycles/ carries: the SHA-256 of the
    DOT it was drawn from, so that a test sees a stale SVG without Graphviz."""
    return f"<!-- drawn from this DOT source: sha256 {hashlib.sha256(dot.encode()).hexdigest()} -->"


def write_docs(docs: Path) -> list[Path]:
    """Write `docs`/lifecycles.md, and `docs`/lifecycles/{name}.dot and .svg for
    every lifecycle (removing those of a lifecycle that is gone); the paths
    written. Runs Graphviz's `dot` (the SVG's bytes are that Graphviz's)."""
    from statemachine.contrib.diagram.graphviz import run_graphviz

    folder = docs / "lifecycles"
    folder.mkdir(parents=True, exist_ok=True)
    (docs / "lifecycles.md").write_text(diagrams_markdown())
    written = [docs / "lifecycles.md"]
    for lifecycle in LIFECYCLES:
        dot = lifecycle.dot()
        svg = run_graphviz(dot, "svg").decode()
        assert svg.count("<svg") == 1, f"{lifecycle.name}: Graphviz wrote no single <svg>"
        svg = svg.replace("<svg", f"{svg_stamp(dot)}\n<svg", 1)
        for suffix, text in ((".dot", dot), (".svg", svg)):
            (path := folder / f"{lifecycle.name}{suffix}").write_text(text)
            written.append(path)
    names = {lifecycle.name for lifecycle in LIFECYCLES}
    for stale in [*folder.glob("*.dot"), *folder.glob("*.svg")]:
        if stale.stem not in names:
            stale.unlink()
    return written


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m tandem.domain.lifecycles",
        description="Print docs/lifecycles.md, or --write it and the SVGs beside it.",
    )
    parser.add_argument(
        "--write",
        metavar="DOCS",
        type=Path,
        help="write DOCS/lifecycles.md and DOCS/lifecycles/{name}.dot and .svg (needs pydot and Graphviz)",
    )
    args = parser.parse_args(argv)
    if args.write is None:
        print(diagrams_markdown(), end="")
        return
    for path in write_docs(args.write):
        print(f"wrote {path}")


if __name__ == "__main__":  # pragma: no cover - documentation helper
    main()
