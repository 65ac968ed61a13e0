"""Lifecycles: one python-statemachine class per aggregate, the single definition
of its allowed transitions (DESIGN principle 4).

The machines are never run while deciding or replaying: building one costs
~100 µs and `send()` ~80 µs, and replayed events are facts, not requests.
Instead `Lifecycle` derives a `{(state, event): target}` table from each class
once, at import, and `decide` asks the table (a dict lookup). The same classes
draw the diagrams in docs/ (`python -m domain.lifecycles`).

Event names are verbs that match input kinds; states are nouns or adjectives.
"""

from __future__ import annotations

from statemachine import State, StateMachine


class ActionMachine(StateMachine):
    """A managed action: one dispatch authority's unit of work (spec 3.3, 4)."""

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

    claim = pending.to(submitting)
    fence = pending.to(fenced) | fenced.to.itself()
    revalidate = fenced.to(pending)
    cancel = pending.to(cancelled) | fenced.to(cancelled)
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
    """A context delivery's attempt (spec 5.2): only `accepted` counts as delivered."""

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


class UpdateMachine(StateMachine):
    """A pending update's triage (spec 3.4): each new revision is untriaged again."""

    untriaged = State(initial=True)
    triaged = State()

    classify = untriaged.to(triaged) | triaged.to.itself()
    revise = untriaged.to.itself() | triaged.to(untriaged)


class ConsumerMachine(StateMachine):
    """A change-log consumer (spec 3.4)."""

    consuming = State(initial=True)
    reconciliation_required = State()

    batch = consuming.to.itself()
    require_reconciliation = consuming.to(reconciliation_required)
    reconcile = reconciliation_required.to(consuming)


class Lifecycle:
    """The transition table of one StateMachine class, derived once."""

    def __init__(self, machine: type[StateMachine]) -> None:
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

    def target(self, state: str, event: str) -> str | None:
        """Where `event` takes `state`, or None if the lifecycle forbids it."""
        return self.table.get((state, event))

    def allows(self, state: str, event: str) -> bool:
        return (state, event) in self.table

    def mermaid(self) -> str:
        lines = ["stateDiagram-v2", f"    [*] --> {self.initial}"]
        for (source, event), target in sorted(self.table.items()):
            lines.append(f"    {source} --> {target}: {event}")
        lines.extend(f"    {state} --> [*]" for state in sorted(self.terminal))
        return "\n".join(lines)


ACTION = Lifecycle(ActionMachine)
ATTEMPT = Lifecycle(AttemptMachine)
TASK = Lifecycle(TaskMachine)
GRANT = Lifecycle(GrantMachine)
QUESTION = Lifecycle(QuestionMachine)
DELIVERY = Lifecycle(DeliveryMachine)
UPDATE = Lifecycle(UpdateMachine)
CONSUMER = Lifecycle(ConsumerMachine)
LIFECYCLES = (ACTION, ATTEMPT, TASK, GRANT, QUESTION, DELIVERY, UPDATE, CONSUMER)

# The action states the spec calls in flight (an attempt is out with the executor).
IN_FLIGHT = frozenset({"submitting", "queued", "accepted", "unknown", "cancel_requested"})


def diagrams_markdown() -> str:
    """docs/lifecycles.md, drawn from the classes (a test keeps it current)."""
    parts = [
        "# Lifecycles\n\n"
        "Generated by `python -m domain.lifecycles > docs/lifecycles.md` from the\n"
        "python-statemachine classes in `domain/lifecycles.py`, the single definition of\n"
        "each lifecycle's allowed transitions. Terminal states end in `[*]`.\n"
    ]
    for lifecycle in LIFECYCLES:
        parts.append(f"## {lifecycle.name}\n\n```mermaid\n{lifecycle.mermaid()}\n```\n")
    return "\n".join(parts)


if __name__ == "__main__":  # pragma: no cover - documentation helper
    print(diagrams_markdown(), end="")
