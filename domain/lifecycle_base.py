"""The base of every lifecycle: one python-statemachine class per thing with
states (in its area's `lifecycle.py`) is the single definition of its allowed
transitions and of what each recorded event leaves it in.

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

Transitions are verbs that match input kinds; states are nouns or adjectives.
(replay/proving/invariants.py restates some of these facts on purpose: an
invariant that asked the machine would check the machine against itself.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from statemachine import StateMachine
from tandem.domain import events as ev


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
