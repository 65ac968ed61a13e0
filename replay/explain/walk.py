"""The walk: which kinds an id names, and reading the log until every key
the explanations' facts name has been read (two or three reads)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from tandem.replay.explain.alerts import Alert, Obligation
from tandem.replay.explain.causes import Cause, Reconciliation
from tandem.replay.explain.chain import Chain
from tandem.replay.explain.consumers import Consumer
from tandem.replay.explain.conversations import Delivery, Turn
from tandem.replay.explain.indexed import IndexedReads
from tandem.replay.explain.investigations import Investigation
from tandem.replay.explain.keys import Key
from tandem.replay.explain.log import Grow, Log, Resolver
from tandem.replay.explain.model import Document, ExplainError, Explanation
from tandem.replay.explain.operations import Attempt, Operation
from tandem.replay.explain.runtimes import Runtime
from tandem.replay.explain.tasks import Question, Task
from tandem.replay.port import EventStore

if TYPE_CHECKING:
    from tandem.replay.index import LogIndex

# The kinds an id may name, in the order matches are reported.
CHAINS: dict[str, type[Chain]] = {
    chain.kind: chain
    for chain in (
        Operation, Attempt, Delivery, Turn, Alert, Question, Task, Obligation, Cause, Reconciliation, Runtime, Investigation,
        Consumer,
    )
}  # fmt: skip
KINDS = tuple(CHAINS)
# The kinds contract v1.2 added, each with the singleton key every event that makes one has:
# an id that names nothing lists them only when the store holds one (so a v1
# store's message is what it was).
LATER_KINDS: dict[str, Key] = {Runtime.kind: ("runtimes",), Investigation.kind: ("investigations",)}
# Kinds an id that names nothing does not list: a consumer (Tandem's extension) is
# left out so that that message stays what it was in every store.
UNLISTED: frozenset[str] = frozenset({"consumer"})

# Bounded output: the links of one explanation (the latest are kept).
steps_max = 2_000
# Reads of the log to resolve facts (the first finds the thing; each later one
# fetches the events its facts name, until nothing new is asked for).
resolve_rounds_max = 4


def _leads() -> dict[type, list[Any]]:
    """Per event type, what leads from an event of a thing to more keys (each kind's `leads_to`)."""
    leads: dict[type, list[Any]] = {}
    for chain in CHAINS.values():
        for event_type, lead in chain.leads_to.items():
            leads.setdefault(event_type, []).append(lead)
    return leads


LEADS = _leads()


def _grow(identifier: str) -> Grow:
    """Keys a thing's own events lead to (its task's grant, its turn's deliveries)."""

    def grow(event: Any, wanted: set[Key]) -> None:
        for lead in LEADS.get(type(event), ()):
            key = lead(event, identifier)
            if key is not None:
                wanted.add(key)

    return grow


def _read(
    store: EventStore, wanted: set[Key], identifier: str, prefilter: bool, mention: str | None = None, until: int | None = None
) -> Log:
    log = Log()
    log.read(store, wanted, _grow(identifier), prefilter, mention, until)
    return log


def _named(log: Any, identifier: str) -> list[str]:
    """The kinds `identifier` names: a defining event with its key is in the log."""
    return [
        name
        for name, chain in CHAINS.items()
        if any(isinstance(entry[1], chain.defined_by) for entry in log.by_key.get((chain.key, identifier), ()))
    ]


def _listed(log: Any) -> list[str]:
    """The kinds an id could name in this store (for the message of an id that names none)."""
    return [
        kind for kind in KINDS if kind not in UNLISTED and (kind not in LATER_KINDS or log.by_key.get(LATER_KINDS[kind]))
    ]


def _kinds(log: Any, identifier: str, kind: str | None) -> list[str]:
    """The kinds `identifier` names, or only `kind`."""
    kinds = _named(log, identifier)
    if not kinds:
        refused = "; ".join(
            (
                f"input {r.seq} ({r.file}:{r.line} {r.type}) was rejected {r.rejected}"
                if r.line
                else f"input {r.seq} ({r.type}) was rejected {r.rejected}"
            )
            + (f" ({log.details[r.seq]})" if r.seq in log.details else "")
            for r in log.rejected
        )
        hint = f"; it is named by refused inputs only: {refused}" if refused else ""
        raise ExplainError(f"nothing in the store is named {identifier!r} (kinds: {', '.join(_listed(log))}){hint}")
    if kind is None:
        return kinds
    if kind not in kinds:
        raise ExplainError(f"{identifier!r} is no {kind} (it is: {', '.join(kinds)})")
    return [kind]


def keys_named(identifier: str) -> set[Key]:
    """The keys a read for `identifier` starts from (whatever its kind)."""
    wanted: set[Key] = {key for chain in CHAINS.values() for key in chain.keys(identifier)}
    wanted.update(LATER_KINDS.values())
    return wanted


def explain(
    store: EventStore, identifier: str, *, kind: str | None = None, index: LogIndex | None = None, until: int | None = None
) -> list[Explanation]:
    """Explain `identifier` from the store's log: one Explanation per kind it
    names (only `kind`, if given). Raises ExplainError if it names nothing;
    with `index`, at once (its message does not list the refused inputs that
    name it: that takes a read of the whole log). `index` may be any object
    that answers as a `LogIndex` does (replay/key_scan.py)."""
    return _explained(store, identifier, kind, True, index, until, listing=index is None)[1]


def document(
    store: EventStore,
    identifier: str,
    *,
    kind: str | None = None,
    prefilter: bool = True,
    index: LogIndex | None = None,
    until: int | None = None,
) -> Document:
    """`explain`, with the id, the store's head and trace files (the JSON
    document). `until`: as of that position (what a store holding only the
    events up to it explains), else of the head. With `index` (replay/index.py,
    of this store's log), the reads visit only the events they keep, as of
    the index's head (or `until` before it); the output is the same as a full
    read's at that position. An id the index finds no kind for is read in
    full (the error names the refused inputs that name it)."""
    log, explanations = _explained(store, identifier, kind, prefilter, index, until, listing=True)
    files = _files_named(explanations)
    other = bool(log.files_seen - set(files))
    return Document(id=identifier, position=log.head, files=files, matches=explanations, other_files=other)


def _explained(
    store: EventStore, identifier: str, kind: str | None, prefilter: bool, index: LogIndex | None, until: int | None,
    *, listing: bool,
) -> tuple[Any, list[Explanation]]:  # fmt: skip
    """The last read's log and the explanations. `listing`: an id the index
    finds no kind for is read in full, for the refused inputs that name it."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
    wanted = keys_named(identifier)
    log: Any = None
    if index is not None:  # as of the index's head, or `until` before it, either way
        until = index.head if until is None else min(until, index.head)
    if index is not None and index.head > 0:
        reads = IndexedReads(store, index, _grow(identifier), set(LEADS), until)
        grown = set(wanted)
        log = reads.read(grown)
        if _named(log, identifier) or not listing:
            wanted, read = grown, reads.read
        else:
            log = None  # the error path: a full read lists the refused inputs
    if log is None:
        log = _read(store, wanted, identifier, prefilter, identifier, until)
        read = lambda keys: _read(store, keys, identifier, prefilter, until=until)  # noqa: E731
    if log.head == 0:
        raise ExplainError(f"the store is empty: nothing is named {identifier!r}")
    kinds = _kinds(log, identifier, kind)
    for _ in range(resolve_rounds_max):
        resolver = Resolver(log)
        explanations = [_bounded(CHAINS[name](resolver, identifier).explain()) for name in kinds]
        missing = resolver.asked - wanted
        if not missing:
            break
        wanted |= missing
        log = read(wanted)
    return log, explanations


def _files_named(explanations: list[Explanation]) -> list[str]:
    """The trace files the explanations' inputs came from (not every file of
    the store: over HTTP every request is one, `http@P`)."""
    found: set[str] = set()
    pending: list[Any] = [msgspec.to_builtins(explanations)]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            if "seq" in value and isinstance(value.get("file"), str):
                found.add(value["file"])
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return sorted(found)


def _bounded(explanation: Explanation) -> Explanation:
    if len(explanation.steps) <= steps_max:
        return explanation
    omitted = len(explanation.steps) - steps_max
    return msgspec.structs.replace(explanation, steps=explanation.steps[-steps_max:], steps_omitted=omitted)
