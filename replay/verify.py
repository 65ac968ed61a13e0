"""Verify a store: re-derive every event from its recorded inputs, and the
state and views at every snapshot, and compare with what is stored.

Every input's events start with its record (`InputAccepted` or
`InputRejected`), which carries the decoded input, its trace file and line.
`verify` walks the stored log in order. At each record it asks a fresh engine
(no store; `step`, the decision rules, replaceable) to decide that input, and
compares the events it derives with the stored ones, position by position, as
encoded bytes (`domain.events.encode_event`: the same trace gives the same
bytes). `SourceProgressed` (ingest's bookkeeping: how far a trace file was
taken) is no decision: it is taken as recorded. At the position of every
stored snapshot of the running code, it compares the snapshot's state and
views with the ones derived from the events (snapshots of other code are
counted as skipped: they are never used).

The first divergence stops the walk: its position, the input whose events
it is among (seq, trace file and line, type), the stored and the re-derived
event as JSON and the fields that differ. A store written by an older
version of Tandem shows where today's rules decide differently.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import msgspec

from tandem.domain import events as ev
from tandem.domain.dispatch import handle_input as default_step
from tandem.domain.rules import evolve
from tandem.projections import Views
from tandem.replay import snapshot as snapshots
from tandem.replay.key_table import KeyRow, first_key_difference, key_rows
from tandem.replay.compare import first_difference, short as _short
from tandem.replay.engine import DecisionStep, Engine, Located, collector_paused
from tandem.replay.port import EventStore

differences_max = 12  # differing fields listed per divergence
text_chars_max = 4_000  # of a stored or re-derived event shown in a report


@dataclass(frozen=True, slots=True)
class InputRef:
    """The input whose events a divergence is among."""

    seq: int
    file: str | None
    line: int | None
    type: str
    position: int  # of its record (InputAccepted / InputRejected)

    def describe(self) -> str:
        where = f"{self.file or '(no file)'}" + (f" line {self.line}" if self.line is not None else "")
        return f"input seq {self.seq} ({self.type}, {where}; recorded at position {self.position})"


@dataclass(frozen=True, slots=True)
class Divergence:
    position: int
    kind: str  # event | extra | missing | undecodable | error | snapshot | keys
    message: str
    input: InputRef | None
    stored: str | None  # the stored event as JSON (or what the snapshot holds)
    rederived: str | None  # the re-derived event as JSON (or the derived value)
    differences: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"first divergence at position {self.position}: {self.message}"]
        if self.input is not None:
            relation = "taken after" if self.kind == "snapshot" else "caused by"
            out.append(f"  {relation} {self.input.describe()}")
        for difference in self.differences:
            out.append(f"  differs: {difference}")
        if self.stored is not None:
            out.append(f"  stored:     {self.stored}")
        if self.rederived is not None:
            out.append(f"  re-derived: {self.rederived}")
        return out


@dataclass(slots=True)
class Report:
    url: str
    head: int = 0
    events_checked: int = 0
    inputs: int = 0
    progress_markers: int = 0
    snapshots_checked: int = 0
    snapshots_skipped: int = 0  # written by other code (another fingerprint): never used
    keys_checked: int = 0  # the key table's mark (this code's): its rows checked up to there
    divergence: Divergence | None = None

    @property
    def ok(self) -> bool:
        return self.divergence is None

    def summary(self) -> str:
        skipped = f", {self.snapshots_skipped} of other code skipped" if self.snapshots_skipped else ""
        counts = (
            f"{self.events_checked:,} of {self.head:,} event(s) checked, {self.inputs:,} input(s) re-derived, "
            f"{self.snapshots_checked} snapshot(s) checked{skipped}"
        )
        if self.keys_checked:
            counts += f", key table checked to {self.keys_checked:,}"
        return f"verify: {'clean' if self.ok else 'DIVERGED'}: {counts}"

    def to_json(self) -> dict[str, Any]:
        divergence = self.divergence
        return {
            "ok": self.ok,
            "store": self.url,
            "head": self.head,
            "events_checked": self.events_checked,
            "inputs": self.inputs,
            "progress_markers": self.progress_markers,
            "snapshots_checked": self.snapshots_checked,
            "snapshots_skipped": self.snapshots_skipped,
            "keys_checked": self.keys_checked,
            "divergence": None
            if divergence is None
            else {
                "position": divergence.position,
                "kind": divergence.kind,
                "message": divergence.message,
                "input": None
                if divergence.input is None
                else {
                    "seq": divergence.input.seq,
                    "file": divergence.input.file,
                    "line": divergence.input.line,
                    "type": divergence.input.type,
                    "position": divergence.input.position,
                },
                "differences": divergence.differences,
                "stored": _json_or_text(divergence.stored),
                "rederived": _json_or_text(divergence.rederived),
            },
        }


def _json_or_text(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError:
        return text


def _text(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    return text if len(text) <= text_chars_max else text[:text_chars_max] + f"... ({len(text):,} characters)"


def _input_ref(event: ev.InputAccepted | ev.InputRejected, position: int) -> InputRef:
    return InputRef(event.seq, event.file, event.line, event.input.input_type, position)


# ------------------------------------------------------------------- verify


def verify(store: EventStore, step: DecisionStep = default_step) -> Report:
    """Re-derive `store`'s events and snapshots with the decision step `step`;
    the report names the first divergence, if any."""
    return _Verification(store, step).run()


class _Verification:
    """One run of `verify`: the engine re-deciding the stored inputs, the views
    folded from what it re-derives, the re-derived events not yet compared,
    and the snapshots still to check."""

    def __init__(self, store: EventStore, step: DecisionStep) -> None:
        self.store = store
        self.report = report = Report(url=getattr(store, "url", repr(store)))
        self.head = report.head = store.head()
        self.engine = Engine(None, with_views=False, step=step, snapshot_every=0)
        self.views = Views()
        self.fingerprint = fingerprint = snapshots.code_fingerprint()
        listed = store.list_snapshots()
        report.snapshots_skipped = sum(1 for info in listed if info.fingerprint != fingerprint)
        checkpoints = sorted(info.position for info in listed if info.fingerprint == fingerprint)
        self.beyond = [position for position in checkpoints if position > self.head]
        self.pending_checks = deque(position for position in checkpoints if position <= self.head)
        self.expected: deque[ev.Event] = deque()  # re-derived events not yet compared
        self.current: InputRef | None = None
        self.keys_marked = store.keys_through(fingerprint)
        self.keys_mark = min(self.head, self.keys_marked)
        self.key_rows: list[KeyRow] = []  # derived from the log up to `keys_mark`

    def diverge(
        self,
        position: int,
        kind: str,
        message: str,
        stored: str | None = None,
        rederived: str | None = None,
        differences: list[str] | None = None,
    ) -> Report:
        self.report.divergence = Divergence(position, kind, message, self.current, stored, rederived, differences or [])
        return self.report

    def run(self) -> Report:
        with collector_paused():
            for position, data in self.store.read_encoded(until=self.head):
                if position <= self.keys_mark:
                    self.key_rows.extend(key_rows(position, data))
                if not self.expected:
                    # A new input's events begin here (or ingest's bookkeeping).
                    stored_event = self._decode(position, data)
                    if isinstance(stored_event, Report):
                        return stored_event
                    kind = type(stored_event)
                    if kind is ev.InputAccepted or kind is ev.InputRejected:
                        if (diverged := self._redecide(position, data, stored_event)) is not None:  # type: ignore[arg-type]
                            return diverged
                    elif kind is ev.SourceProgressed:
                        if (diverged := self._bookkeeping(position, data, stored_event)) is not None:
                            return diverged
                        continue
                    else:
                        return self._extra(position, data, kind)
                if (diverged := self._compare(position, data)) is not None:
                    return diverged
            if (diverged := self._end()) is not None:
                return diverged
        if (diverged := self._keys_check()) is not None:
            return diverged
        if self.beyond:
            self.current = None
            return self.diverge(self.beyond[0], "snapshot", f"a snapshot is stored past the log's head ({self.head})")
        return self.report

    def _decode(self, position: int, data: bytes) -> ev.Event | Report:
        try:
            return ev.decode_event(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            return self.diverge(position, "undecodable", f"the stored bytes do not decode as an event ({error})", stored=_text(data))

    def _redecide(self, position: int, data: bytes, stored_event: ev.InputAccepted | ev.InputRejected) -> Report | None:
        """Decide the recorded input again: its events are what the store must hold next."""
        self.current = _input_ref(stored_event, position)
        self.report.inputs += 1
        try:
            derived = self.engine.decide(Located(stored_event.input, stored_event.file, stored_event.line))
        except Exception as error:  # the rules crashed on a recorded input
            return self.diverge(position, "error", f"re-deciding the input raised {type(error).__name__}: {error}", stored=_text(data))
        apply_view = self.views.apply
        for event in derived:
            apply_view(event)
        self.expected.extend(derived)
        return None

    def _bookkeeping(self, position: int, data: bytes, stored_event: ev.Event) -> Report | None:
        """Ingest's progress marker: taken as recorded."""
        evolve(self.engine.state, stored_event)
        self.views.apply(stored_event)
        self.report.progress_markers += 1
        self.report.events_checked += 1
        return self._snapshot_check(position, data)

    def _extra(self, position: int, data: bytes, kind: type) -> Report:
        after = "" if self.current is None else " (the re-derived events of the input before ended at the position before)"
        message = f"the store holds a {kind.__name__} that no input re-derives here" + after
        return self.diverge(position, "extra", message, stored=_text(data))

    def _compare(self, position: int, data: bytes) -> Report | None:
        derived_event = self.expected.popleft()
        derived_data = ev.encode_event(derived_event)
        if derived_data != data:
            return self.diverge(
                position,
                "event",
                f"the stored event differs from the re-derived {type(derived_event).__name__}",
                stored=_text(data),
                rederived=_text(derived_data),
                differences=json_differences(data, derived_data),
            )
        self.report.events_checked += 1
        if self.pending_checks and self.pending_checks[0] == position and self.expected:
            self.pending_checks.popleft()
            return self.diverge(
                position,
                "snapshot",
                "a snapshot is stored at this position, inside the events of one input "
                "(snapshots are taken between transactions)",
            )
        return self._snapshot_check(position, data)

    def _snapshot_check(self, position: int, data: bytes) -> Report | None:
        """Check the snapshot stored at `position`, if one is due there."""
        if not (self.pending_checks and self.pending_checks[0] == position):
            return None
        self.pending_checks.popleft()
        if (problem := _check_snapshot(self.store, position, self.fingerprint, data, self.engine, self.views)) is not None:
            return self.diverge(position, "snapshot", *problem)
        self.report.snapshots_checked += 1
        return None

    def _keys_check(self) -> Report | None:
        """The key table up to its mark holds exactly the keys of the log's events there."""
        if self.keys_mark == 0:
            return None
        self.current = None
        if self.keys_marked > self.head:
            return self.diverge(self.head + 1, "keys", f"the key table is marked complete to {self.keys_marked}, past the log's head ({self.head})")
        difference = first_key_difference(self.key_rows, self.store.read_key_rows(self.keys_mark))
        if difference is not None:
            return self.diverge(difference[0], "keys", difference[1])
        self.report.keys_checked = self.keys_mark
        return None

    def _end(self) -> Report | None:
        """At the end of the log: nothing may still be expected, nothing unread."""
        head = self.head
        if self.expected:
            missing = self.expected[0]
            return self.diverge(
                head + 1,
                "missing",
                f"the log ends at {head}, but the input re-derives {len(self.expected)} more event(s), "
                f"the first a {type(missing).__name__}",
                rederived=_text(ev.encode_event(missing)),
            )
        if self.report.events_checked != head:
            return self.diverge(self.report.events_checked + 1, "missing", f"the store read {self.report.events_checked} event(s) of {head}")
        return None


def _check_snapshot(
    store: EventStore, position: int, fingerprint: str, event_data: bytes, engine: Engine, views: Views
) -> tuple[str, str | None, str | None, list[str]] | None:
    """None when the snapshot at `position` holds the derived state and views;
    else (message, stored, rederived, differences)."""
    found = store.latest_snapshot(fingerprint, until=position)
    if found is None or found[0] != position:
        return ("the snapshot listed at this position cannot be read", None, None, [])
    try:
        body = snapshots.decode_body(found[1], position)
        if body.digest != snapshots.event_digest(event_data):
            return ("the snapshot was taken after another event at this position (another log)", None, None, [])
        state = body.state()
        stored_views = body.views()
    except Exception as error:
        return (f"the snapshot cannot be loaded ({type(error).__name__}: {error})", None, None, [])
    derived_state = engine.state
    difference = first_difference(state, derived_state, "state", ignore={"dirty_actions", "dirty_tasks", "dirty_sources", "unstalled"})
    if difference is not None:
        return ("the snapshot's state differs from the state derived from the events", *difference)
    for name, view in views.by_name.items():
        difference = first_difference(vars(stored_views.by_name[name]), vars(view), f"views.{name}")
        if difference is not None:
            return (f"the snapshot's {name} view differs from the view derived from the events", *difference)
    return None


# ---------------------------------------------------------------- comparing


def json_differences(stored: bytes, derived: bytes) -> list[str]:
    """The paths (`input.at`, `blocked_by[1]`) where two JSON events differ."""
    try:
        left, right = msgspec.json.decode(stored), msgspec.json.decode(derived)
    except msgspec.DecodeError:
        return ["(the stored bytes are not JSON)"]
    found: list[str] = []
    _json_walk(left, right, "", found)
    return found[:differences_max]


def _json_walk(left: Any, right: Any, path: str, found: list[str]) -> None:
    if len(found) >= differences_max:
        return
    if isinstance(left, dict) and isinstance(right, dict):
        for key in list(left) + [key for key in right if key not in left]:
            where = f"{path}.{key}" if path else key
            if key not in right:
                found.append(f"{where}: only stored")
            elif key not in left:
                found.append(f"{where}: only re-derived")
            else:
                _json_walk(left[key], right[key], where, found)
        if not found and list(left) != list(right):
            found.append(f"{path or '(event)'}: the same fields in another order")
    elif isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        for index, (a, b) in enumerate(zip(left, right)):
            _json_walk(a, b, f"{path}[{index}]", found)
    elif left != right or type(left) is not type(right):
        found.append(f"{path or '(event)'}: stored {_short(left)}, re-derived {_short(right)}")

