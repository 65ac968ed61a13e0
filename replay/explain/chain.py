"""The walk every kind shares: a thing's events in log order, each rendered
by its event type's renderer in the kind's table (`renderers`; an event
type without one is not a link of this kind's chain), the state each leaves
the thing in asked of the kind's lifecycle; then what it waits for."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from tandem.domain.lifecycles import Lifecycle
from tandem.replay.explain.keys import Key
from tandem.replay.explain.log import Entry, Resolver, source
from tandem.replay.explain.model import ExplainError, Explanation, Fact, Link, Source, Waiting
from tandem.replay.explain.now import created_by, state_after

# Bounded output: the facts of one link.
facts_per_link_max = 64

Rendered = tuple[str, list[Fact]] | None  # a link's summary and facts (None: no link)
Renderer = Callable[[Any, Entry, Any], Rendered]  # (the chain, the entry, its event)


def link(entry: Entry, summary: str, state: str | None, facts: Iterable[Fact] = ()) -> Link:
    position, event, reference = entry
    listed = list(facts)[:facts_per_link_max]
    name = type(event).__name__
    return Link(position=position, event=name, summary=summary, state=state, input=reference, facts=listed)


def state_at(links: list[Link], position: int) -> str | None:
    """The state the links before `position` left (for links folded in later)."""
    current = None
    for earlier in sorted(links, key=lambda link: link.position):
        if earlier.position > position:
            break
        current = earlier.state
    return current


def said(template: str) -> Renderer:
    """A renderer of a summary without facts, formatted from the event (`{e.field}`)."""
    return lambda chain, entry, event: (template.format(e=event), [])


class Chain:
    """One explanation being walked. A kind declares its key kind, its
    lifecycle, the events that make such a thing (`defined_by`, by default
    those its lifecycle creates it with), its renderers, and, for links folded in from other keys after the walk,
    `later` renderers and `later_keys`."""

    kind: ClassVar[str]
    key: ClassVar[str]
    defined_by: ClassVar[tuple[type, ...]]
    lifecycle: ClassVar[Lifecycle | None] = None
    renderers: ClassVar[dict[type, Renderer]]
    # What it waits for in a state: (the code, its text, formatted with the chain as `c`).
    waits: ClassVar[dict[str, tuple[str, str]]] = {}
    later: ClassVar[dict[type, Renderer]] = {}
    # Keys an event of the thing leads to, read in the same pass (its task's grant, its turn's deliveries).
    leads_to: ClassVar[dict[type, Callable[[Any, str], "Key | None"]]] = {}

    def __init_subclass__(cls) -> None:
        # A thing with a lifecycle is made by the events its lifecycle declares INITIAL.
        if "defined_by" not in cls.__dict__ and cls.lifecycle is not None:
            cls.defined_by = created_by(cls.lifecycle)

    def __init__(self, resolver: Resolver, identifier: str) -> None:
        self.resolver = resolver
        self.identifier = identifier
        self.state = "unknown"
        self.last: Entry | None = None  # the event that last changed the state
        self.latest: Entry | None = None  # the latest event walked
        self.links: list[Link] = []

    @classmethod
    def keys(cls, identifier: str) -> list[Key]:
        """The keys whose events make the chain."""
        return [(cls.key, identifier)]

    def state_after(self, event: Any) -> str | None:
        return state_after(self.lifecycle, event, self.identifier) if self.lifecycle is not None else None

    def changed(self, entry: Entry) -> None:
        """Called when an event changes the state, before it is rendered."""

    def label(self) -> str | None:
        """The state a link shows."""
        return self.state

    def explain(self) -> Explanation:
        entries = self.resolver.merged(self.keys(self.identifier))
        if not any(isinstance(entry[1], self.defined_by) for entry in entries):
            raise ExplainError(f"no {self.kind} {self.identifier!r}")
        for entry in entries:
            render = self.renderers.get(type(entry[1]))
            if render is None:
                continue
            after = self.state_after(entry[1])
            if after is not None:
                self.state, self.last = after, entry
                self.changed(entry)
            self.latest = entry
            rendered = render(self, entry, entry[1])
            if rendered is not None:
                self.links.append(link(entry, rendered[0], self.label(), rendered[1]))
        self._fold_later()
        return Explanation(
            kind=self.kind,
            id=self.identifier,
            state=self.state,
            summary=self.summary(),
            steps=self.links,
            waiting=self.waiting(),
            related=self.related(),
        )

    def _fold_later(self) -> None:
        for key in self.later_keys():
            for entry in self.resolver.entries(key):
                render = self.later.get(type(entry[1]))
                rendered = render(self, entry, entry[1]) if render is not None else None
                if rendered is not None:
                    self.links.append(link(entry, rendered[0], state_at(self.links, entry[0]), rendered[1]))
        self.links.sort(key=lambda link: link.position)

    def later_keys(self) -> list[Key]:
        return []

    def summary(self) -> str:
        raise NotImplementedError

    def waiting(self) -> list[Waiting]:
        if self.state not in self.waits:
            return []
        code, text = self.waits[self.state]
        return [Waiting(code=code, text=text.format(c=self), since=self.since())]

    def since(self) -> Source | None:
        """The event since which it waits."""
        return source(self.last)

    def related(self) -> list[str]:
        return []
