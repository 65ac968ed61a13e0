"""Property tests: change-log consumers and the inbox, after EVERY input.

Traces come from `tests.property.strategies.consumer_traces()`: a model of each
source's change log (epochs, sparse seqs, prefix and interior pruning, always
announced with `log.pruned`) feeds random interleavings of live `observe`s,
`log.batch`es (mostly in the log's epoch from the cursor on; sometimes in
another epoch, sometimes re-delivering entries at or below the cursor,
sometimes out of order), `log.pruned` (new deletions, or an old notice again)
and `log.reconcile` (with the open id, or a stale one), plus some
`triage.classify`. After every input the checker verifies (spec/TRACE.md 3.4,
sections 2 and 7):

1. the cursor never moves backwards within an epoch: for each consumer and
   epoch, the seq is never below the highest seq the cursor ever held in
   that epoch;
2. it never skips an entry without a recorded gap: an accepted batch applies
   every entry above the cursor it started from (one `ObservationRecorded` or
   `ObservationRepeated` with `via="log"` each, in order), its `CursorMoved`
   passes no entry the source ever wrote in that epoch that the batch did not
   carry, the cursor changes only through `CursorMoved` (forwards, same epoch)
   or `ReconciliationCommitted`, which increments `gaps` by one;
3. at most one open reconciliation per consumer; ids are `{consumer}/r{n}`,
   n = 1, 2, ... never reused; a commit names the open one; a rejected batch
   applies none of its entries;
4. the views (the whole document, the inbox, the consumers) and the decision
   state (every field, the inbox's and the consumers' parts among them) equal
   the ones rebuilt by folding the stored (encoded, decoded) events into fresh
   `projections.Views()` and `domain.state.State()`;
5. an independent reference model written from the spec's words (repeat
   rules, revisions, partial, background origin, triage, consumer cursor,
   watermarks per epoch, reconciliation) predicts each input's rejection
   reason, every consumers row, every inbox row and `health.backlog`.

The invariants catalog (replay/proving/invariants.py, docs/invariants.md) is checked
after every input as well.

Two sources of traces: the log's epoch only moves forwards (a restart of the
source gives a new epoch), and — the second test — the source may also come
back to an earlier epoch it still holds (a restore).

Budget: 60 examples per test by default (deadline None); set
TANDEM_FUZZ_EXAMPLES (and TANDEM_FUZZ_STEPS, default 40) for longer runs.
"""

from __future__ import annotations

import copy
import datetime
import os
from dataclasses import dataclass, field, fields
from typing import Any

from hypothesis import HealthCheck, example, given, settings

from tandem.domain import events as ev
from tandem.domain.events import decode_event, encode_event
from tandem.domain.rules import evolve
from tandem.domain.state import State
from tandem.projections import Views
from tandem.replay.engine import Engine, Located
from tandem.replay.proving import Monitor
from tests.property.strategies import T0, consumer_traces, decode, preamble

FUZZ_EXAMPLES = int(os.environ.get("TANDEM_FUZZ_EXAMPLES", "60"))
FUZZ_STEPS = int(os.environ.get("TANDEM_FUZZ_STEPS", "40"))

FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)

PASS_SCRATCH = frozenset({"dirty_actions", "dirty_tasks", "watchdog_fresh"})
DELIVERABLE = frozenset({"actionable", "urgent", "needs_input"})
BACKGROUNDS = {"bg"}  # the preamble's background conversation, bound to fg at generation 1
BINDING = ("bg", 1)
SECTION_5_FIELDS = frozenset({"retained", "delivered_revision"})


def rfc3339(moment: datetime.datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(datetime.timezone.utc).replace(tzinfo=None).isoformat() + "Z"


def default_cause_key(fields: dict[str, Any]) -> str:
    """Spec 3.4, written out again."""
    if "cause_key" in fields:
        return fields["cause_key"]
    if fields["kind"] == "comment":
        return f"comment:{fields['scope']}:{fields['source_id']}"
    return f"{fields['kind']}:{fields['scope']}"


# ------------------------------------------------------- the reference model


@dataclass
class RefSource:
    """One source's observations of one cause (contract v1.1: repeats are
    judged per source and cause); `count` is kept on the source's first."""

    count: int = 0
    latest: str | None = None
    latest_deleted: bool = False  # the latest is a deletion: the same one resent is a repeat
    versions: set[str] = field(default_factory=set)


@dataclass
class RefUpdate:
    cause_key: str
    kind: str
    first_seen_at: datetime.datetime
    revision: int = 0
    triage_state: str = "untriaged"
    disposition: str | None = None
    action_priority: int | None = None
    notification_priority: int | None = None
    partial: bool = False
    repeats: int = 0
    last_seen_at: datetime.datetime | None = None
    revised_at: datetime.datetime | None = None
    latest: dict[str, Any] | None = None  # contract v1.1 (no source_time in these traces)
    batch_id: str | None = None  # contract v1.2 section 7.1: named by its first revising observation

    def row(self) -> dict[str, Any]:
        return {
            "cause_key": self.cause_key,
            "revision": self.revision,
            "kind": self.kind,
            "triage_state": self.triage_state,
            "disposition": self.disposition,
            "action_priority": self.action_priority,
            "notification_priority": self.notification_priority,
            "partial": self.partial,
            "repeats": self.repeats,
            "out_of_order": 0,
            "first_seen_at": rfc3339(self.first_seen_at),
            "last_seen_at": rfc3339(self.last_seen_at),
            "delivered_revision": None,  # no delivery in these traces
            "retained": self.triage_state == "untriaged" or self.disposition in DELIVERABLE,
            "latest": self.latest,
            "batch_id": self.batch_id,
            "ignored": 0,  # no ignored observations in these traces
        }


@dataclass
class RefConsumer:
    consumer_id: str
    epoch: int
    seq: int = 0
    watermarks: dict[int, int] = field(default_factory=dict)
    open_id: str | None = None
    issued: int = 0
    gaps: int = 0
    high: dict[int, int] = field(default_factory=dict)  # epoch -> highest seq the cursor held in it
    skipped: int = 0

    def row(self) -> dict[str, Any]:
        return {
            "consumer_id": self.consumer_id,
            "epoch": self.epoch,
            "seq": self.seq,
            "max_deleted_seq": self.watermarks.get(self.epoch, 0),
            "state": "consuming" if self.open_id is None else "reconciliation_required",
            "gaps": self.gaps,
            "skipped": self.skipped,
        }

    def move(self, epoch: int, seq: int) -> None:
        self.epoch, self.seq = epoch, seq
        self.high[epoch] = max(self.high.get(epoch, 0), seq)

    def enter_reconciliation(self) -> None:
        if self.open_id is None:  # re-entering issues nothing
            self.issued += 1
            self.open_id = f"{self.consumer_id}/r{self.issued}"


class Reference:
    """Spec 3.4 as the spec words it (and the engine decisions the brief lists
    where it is silent). Returns the rejection reason of each input (or None)."""

    def __init__(self) -> None:
        self.sources: dict[tuple[str, str], RefSource] = {}  # (source_id, cause_key)
        self.counts: dict[str, int] = {}  # source_id -> observations recorded
        self.updates: dict[str, RefUpdate] = {}
        self.consumers: dict[str, RefConsumer] = {}

    def observe(self, fields: dict[str, Any], at: datetime.datetime) -> None:
        cause_key = default_cause_key(fields)
        source = self.sources.setdefault((fields["source_id"], cause_key), RefSource())
        from_background = fields.get("origin_conversation") in BACKGROUNDS
        version = fields.get("source_version")
        deleted = fields.get("deleted", False)
        if deleted:  # news, unless the latest is this very deletion (docs/sources.md)
            repeat = source.latest_deleted and source.latest == fields["fingerprint"]
        else:
            repeat = version in source.versions if version is not None else source.latest == fields["fingerprint"]
        if repeat:
            update = self.updates.get(cause_key)
            if update is not None and not from_background:
                update.repeats += 1
                update.last_seen_at = at
            return
        self.counts[fields["source_id"]] = self.counts.get(fields["source_id"], 0) + 1
        if from_background:
            # recorded (a local revision), but no update changes (no feedback
            # loop), and it is not what later observations are compared with
            # (engine decision, docs/contract/decisions.md)
            return
        source.latest = fields["fingerprint"]
        source.latest_deleted = deleted
        if version is not None:
            source.versions.add(version)
        update = self.updates.get(cause_key)
        if update is None:
            update = self.updates[cause_key] = RefUpdate(cause_key, fields["kind"], at)
        update.revision += 1
        if update.batch_id is None:  # joins once, and stays (contract v1.2 section 7.1)
            update.batch_id = fields.get("batch_id")
        update.kind = fields["kind"]
        update.triage_state = "untriaged"
        update.disposition = update.action_priority = update.notification_priority = None
        update.partial = not fields["complete"]
        update.last_seen_at = update.revised_at = at
        text = fields.get("text")
        update.latest = {
            "status": fields.get("status"),
            "deleted": fields.get("deleted", False),
            "source_time": None,
            "evidence_ref": fields.get("evidence_ref"),
            "excerpt": text[:280] if text is not None else None,
            "truncated": False,
        }

    def apply(self, line: dict[str, Any], at: datetime.datetime) -> tuple[str | None, list[dict[str, Any]]]:
        """(rejection reason or None, the batch entries applied)."""
        kind = line["type"]
        if kind == "observe":
            self.observe({k: v for k, v in line.items() if k not in ("type", "at", "actor", "id")}, at)
            return None, []
        if kind == "triage.classify":
            if (line["conversation_id"], line["generation"]) != BINDING:
                return "generation_fenced", []
            update = self.updates.get(line["cause_key"])
            if update is None or update.revision != line["update_revision"]:
                return "stale_revision", []
            update.triage_state = "triaged"
            update.disposition = line["disposition"]
            update.action_priority = line["action_priority"]
            update.notification_priority = line["notification_priority"]
            return None, []
        if not kind.startswith("log."):
            return None, []  # the preamble
        consumer_id, epoch = line["consumer_id"], line["epoch"]
        consumer = self.consumers.get(consumer_id)
        if kind == "log.batch":
            if consumer is not None and consumer.open_id is not None:
                return "reconciliation_required", []
            if consumer is not None and epoch != consumer.epoch:
                consumer.enter_reconciliation()
                return "reconciliation_required", []
            seqs = [item["seq"] for item in line["entries"]]
            if any(later <= earlier for earlier, later in zip(seqs, seqs[1:])):
                return "bad_sequence", []  # contract v1.1: nothing of it, not even the consumer
            if consumer is None:
                consumer = self.consumers[consumer_id] = RefConsumer(consumer_id, epoch, high={epoch: 0})
            applied, start = [], consumer.seq
            cursor = start
            for item in line["entries"]:
                if item["seq"] <= start:
                    consumer.skipped += 1
                    continue
                applied.append(item)
                self.observe(item["observation"], at)
                cursor = max(cursor, item["seq"])
            consumer.move(epoch, cursor)
            return None, applied
        if kind == "log.pruned":
            if consumer is None:
                consumer = self.consumers[consumer_id] = RefConsumer(consumer_id, epoch, high={epoch: 0})
            consumer.watermarks[epoch] = max(consumer.watermarks.get(epoch, 0), line["max_deleted_seq"])
            if epoch != consumer.epoch or consumer.watermarks[epoch] > consumer.seq:
                consumer.enter_reconciliation()
            return None, []
        if kind == "log.reconcile":
            if consumer is None or consumer.open_id != line["reconciliation_id"]:
                return "stale_reconciliation", []
            for fact in line["facts"]:
                self.observe(fact, at)
            # commit to (epoch, max(retained_head, the epoch's watermark)); within
            # an epoch the cursor never goes backwards
            seq = max(line["retained_head"], consumer.watermarks.get(epoch, 0), consumer.high.get(epoch, 0))
            consumer.move(epoch, seq)
            consumer.gaps += 1
            consumer.open_id = None
            return None, []
        raise AssertionError(f"no reference for {kind}")

    def inbox(self) -> list[dict[str, Any]]:
        return [self.updates[key].row() for key in sorted(self.updates)]

    def backlog(self) -> dict[str, Any]:
        untriaged = [u.revised_at for u in self.updates.values() if u.triage_state == "untriaged"]
        return {"untriaged": len(untriaged), "oldest_untriaged_at": rfc3339(min(untriaged)) if untriaged else None}


# ----------------------------------------------------------------- checker


class Violation(AssertionError):
    pass


class Checker:
    def __init__(self) -> None:
        self.engine = Engine()
        self.reference = Reference()
        self.log: list[bytes] = []
        self.step = 0
        self.high: dict[tuple[str, int], int] = {}  # (consumer, epoch) -> highest seq held
        self.open: dict[str, str | None] = {}
        self.issued: dict[str, set[str]] = {}
        self.deliveries = False  # has the engine made a delivery (section 5)?
        self.monitor = Monitor()  # the invariants catalog too (replay/proving/invariants.py)

    def fail(self, what: str) -> None:
        raise Violation(f"after input {self.step} (1-based, preamble included): {what}")

    def rows(self) -> dict[str, dict[str, Any]]:
        return {row["consumer_id"]: row for row in self.engine.views.view("consumers")}

    def apply(self, line: dict[str, Any], known: dict[str, dict[int, frozenset[int]]]) -> None:
        self.step += 1
        value = decode(line)
        before_rows = self.rows()
        before_state = self.engine.state
        before_sources = copy.deepcopy(before_state.inbox.sources)
        before_updates = copy.deepcopy(before_state.inbox.updates)
        consumer_before = copy.deepcopy(before_state.consumer.by_id.get(line.get("consumer_id", "")))
        events = self.engine.submit(Located(value, line=self.step))
        self.monitor.observe(value, events, self.engine.state, self.engine.views, line=self.step)
        for event in events:
            data = encode_event(event)
            if decode_event(data) != event:
                self.fail(f"{type(event).__name__} does not survive encode/decode")
            self.log.append(data)
            self.deliveries = self.deliveries or type(event).__name__.startswith("Delivery")
        reason = events[0].reason if isinstance(events[0], ev.InputRejected) else None

        expected_reason, _ = self.reference.apply(line, value.at)
        if reason != expected_reason:
            self.fail(f"{line['type']} was {reason or 'accepted'}, the spec says {expected_reason or 'accepted'}: {line}")

        if line["type"].startswith("log."):
            self.check_log_input(line, events, reason, consumer_before, before_rows, known)
        if reason is not None:
            if of_type(events, ev.ObservationRecorded) or of_type(events, ev.ObservationRepeated):
                self.fail(f"rejected {line['type']} applied observations")
            if (self.engine.state.inbox.sources, self.engine.state.inbox.updates) != (before_sources, before_updates):
                self.fail(f"rejected {line['type']} changed the sources or updates")
        self.check_cursor_history()
        self.check_against_reference()
        self.check_replay()

    # ------------------------------------------------------- 2. and 3.

    def check_log_input(self, line, events, reason, consumer_before, before_rows, known) -> None:
        consumer_id = line["consumer_id"]
        mine = [e for e in events if getattr(e, "consumer_id", consumer_id) == consumer_id]
        if len(mine) != len(events):
            self.fail(f"{line['type']} for {consumer_id} touched another consumer")
        # reconciliation ids
        for event in of_type(events, ev.ReconciliationStarted):
            if self.open.get(consumer_id) is not None:
                self.fail(f"{event.reconciliation_id} started while {self.open[consumer_id]} is open")
            issued = self.issued.setdefault(consumer_id, set())
            expected = f"{consumer_id}/r{len(issued) + 1}"
            if event.reconciliation_id != expected or event.reconciliation_id in issued:
                self.fail(f"reconciliation id {event.reconciliation_id}, expected {expected} (issued {sorted(issued)})")
            issued.add(event.reconciliation_id)
            self.open[consumer_id] = event.reconciliation_id
        for event in of_type(events, ev.ReconciliationCommitted):
            if event.reconciliation_id != self.open.get(consumer_id) or line["type"] != "log.reconcile" or reason:
                self.fail(f"{event.reconciliation_id} committed by {line['type']} while {self.open.get(consumer_id)} is open")
            self.open[consumer_id] = None
        if len(of_type(events, ev.ReconciliationStarted)) + len(of_type(events, ev.ReconciliationCommitted)) > 1:
            self.fail(f"{line['type']} started or committed more than one reconciliation")

        moved = of_type(events, ev.CursorMoved)
        committed = of_type(events, ev.ReconciliationCommitted)
        after = self.rows().get(consumer_id)
        before = before_rows.get(consumer_id)
        if line["type"] == "log.batch" and reason is None:
            cursor = consumer_before.seq if consumer_before is not None else 0
            epoch = consumer_before.epoch if consumer_before is not None else line["epoch"]
            if epoch != line["epoch"]:
                self.fail(f"a batch in epoch {line['epoch']} was accepted with the cursor in epoch {epoch}")
            # every entry above the batch's starting cursor is applied, in the
            # batch's order, via the log; the cursor moves to the greatest seq
            expected = [item for item in line["entries"] if item["seq"] > cursor]
            running = max([cursor] + [item["seq"] for item in expected])
            observed = [
                e for e in events
                if isinstance(e, (ev.ObservationRecorded, ev.ObservationRepeated))
            ]  # fmt: skip
            if [e.via for e in observed] != ["log"] * len(observed) or [
                (e.source_id, e.cause_key) for e in observed
            ] != [(i["observation"]["source_id"], default_cause_key(i["observation"])) for i in expected]:
                self.fail(f"batch entries above the cursor {cursor}: {[i['seq'] for i in expected]}, applied {observed}")
            if expected:
                if len(moved) != 1 or (moved[0].epoch, moved[0].seq) != (epoch, running):
                    self.fail(f"cursor should move to ({epoch}, {running}) in the batch's transaction: {moved}")
                # the cursor passes no entry the source wrote that the batch did not carry
                carried = {i["seq"] for i in line["entries"]}
                skipped = sorted(
                    s for s in known.get(consumer_id, {}).get(epoch, ()) if cursor < s <= running and s not in carried
                )
                if skipped:
                    self.fail(f"batch moved the cursor ({epoch}) {cursor} -> {running} past entries {skipped} with no gap recorded")
            elif moved:
                self.fail(f"cursor moved by a batch with nothing above the cursor: {moved}")
        elif moved:
            self.fail(f"CursorMoved caused by a {line['type']} ({reason or 'accepted'})")
        # the cursor changes only through CursorMoved or a commit that counts a gap
        if before is not None and after is not None and (before["epoch"], before["seq"]) != (after["epoch"], after["seq"]):
            if committed:
                if after["gaps"] != before["gaps"] + 1:
                    self.fail(f"a commit moved the cursor but gaps went {before['gaps']} -> {after['gaps']}")
            elif not moved or before["epoch"] != after["epoch"] or after["seq"] <= before["seq"]:
                self.fail(f"cursor {before['epoch'], before['seq']} -> {after['epoch'], after['seq']} without a gap recorded")
        if before is not None and after is not None and after["gaps"] != before["gaps"] + len(committed):
            self.fail(f"gaps {before['gaps']} -> {after['gaps']} with {len(committed)} commits")

    # ------------------------------------------------------------- 1.

    def check_cursor_history(self) -> None:
        state_consumers = self.engine.state.consumer.by_id
        for consumer_id, row in self.rows().items():
            key = (consumer_id, row["epoch"])
            if row["seq"] < self.high.get(key, 0):
                self.fail(f"{consumer_id}'s cursor in epoch {row['epoch']} went back from {self.high[key]} to {row['seq']}")
            self.high[key] = max(self.high.get(key, 0), row["seq"])
            # 3. at most one open reconciliation, and the view says so
            consumer = state_consumers[consumer_id]
            is_open = consumer.reconciliation_id is not None
            if is_open != (row["state"] == "reconciliation_required") or consumer.reconciliation_id != self.open.get(consumer_id):
                self.fail(f"{consumer_id}: open reconciliation {consumer.reconciliation_id}, view state {row['state']}, "
                          f"events say {self.open.get(consumer_id)}")  # fmt: skip

    # ------------------------------------------------------------- 5.

    def check_against_reference(self) -> None:
        document = self.engine.views.document()
        expected_consumers = [self.reference.consumers[c].row() for c in sorted(self.reference.consumers)]
        if document["consumers"] != expected_consumers:
            self.fail(f"consumers view:\n engine {document['consumers']}\n spec   {expected_consumers}")
        expected_inbox, inbox = self.reference.inbox(), document["inbox"]
        if self.deliveries:
            # The reference does not model section 5: once the engine has made a
            # delivery (a wake for an actionable update), `retained` and
            # `delivered_revision` also depend on it. Everything else still counts.
            expected_inbox, inbox = (
                [{k: v for k, v in row.items() if k not in SECTION_5_FIELDS} for row in rows]
                for rows in (expected_inbox, inbox)
            )
        if inbox != expected_inbox:
            self.fail(f"inbox view:\n engine {inbox}\n spec   {expected_inbox}")
        backlog = {k: v for k, v in document["health"]["backlog"].items() if k != "deliverable"}  # v1.2 section 3.9
        if backlog != self.reference.backlog():
            self.fail(f"backlog: engine {backlog}, spec {self.reference.backlog()}")
        for (source_id, cause_key), source in self.reference.sources.items():
            recorded = self.engine.state.inbox.sources.get(source_id)
            mine = recorded.causes.get(cause_key) if recorded is not None else None
            found = (mine.latest_fingerprint, mine.versions) if mine is not None else (None, set())
            if found != (source.latest, source.versions):
                self.fail(f"source {source_id}, cause {cause_key}: engine {mine}, spec {source}")
        for source_id, count in self.reference.counts.items():
            recorded = self.engine.state.inbox.sources.get(source_id)
            if recorded is None or recorded.count != count:
                self.fail(f"source {source_id}: engine count {recorded and recorded.count}, spec {count}")

    # ------------------------------------------------------------- 4.

    def check_replay(self) -> None:
        views, replayed = Views(), State()
        for data in self.log:
            event = decode_event(data)
            views.apply(event)
            evolve(replayed, event)
        document = self.engine.views.document()
        rebuilt = views.document()
        for name in ("inbox", "consumers"):
            if rebuilt[name] != document[name]:
                self.fail(f"replayed {name} differs:\n live   {document[name]}\n replay {rebuilt[name]}")
        if rebuilt != document:
            self.fail(f"replayed views differ:\n live   {document}\n replay {rebuilt}")
        state = self.engine.state
        for name in ("inbox", "consumer"):  # the updates and sources, the consumers
            if getattr(state, name) != getattr(replayed, name):
                self.fail(f"replayed state.{name} differs:\n live   {getattr(state, name)}\n replay {getattr(replayed, name)}")
        for f in fields(State):
            if f.name not in PASS_SCRATCH and getattr(state, f.name) != getattr(replayed, f.name):
                self.fail(f"replayed state.{f.name} differs")


def of_type(events: list[ev.Event], kind: type) -> list[Any]:
    return [event for event in events if isinstance(event, kind)]


def run(trace: tuple[list[dict[str, Any]], list[Any]]) -> None:
    lines, known = trace
    checker = Checker()
    for line, seqs in zip(lines, known):
        checker.apply(line, seqs)


def _return_to_an_earlier_epoch() -> tuple[list[dict[str, Any]], list[Any]]:
    """The cursor reaches (1, 3); the log moves to epoch 2 (r1 commits (2, 1));
    the log is back in epoch 1, restored empty (r2, retained_head 0)."""
    at = T0.strftime("%Y-%m-%dT%H:%M:%SZ")

    def log(kind: str, **fields: Any) -> dict[str, Any]:
        return {"type": kind, "at": at, "actor": "source", "consumer_id": "scm", **fields}

    def entries(*seqs: int) -> list[dict[str, Any]]:
        return [{"seq": n, "observation": {"source_id": "ci-1", "kind": "ci", "scope": "https://scm/pr/1",
                                           "fingerprint": f"e{n}", "complete": True}} for n in seqs]  # fmt: skip

    lines = [
        *preamble(),
        log("log.batch", epoch=1, entries=entries(1, 2, 3)),
        log("log.batch", epoch=2, entries=entries(1)),  # another epoch: r1
        log("log.reconcile", reconciliation_id="scm/r1", epoch=2, retained_head=1, facts=[]),
        log("log.batch", epoch=1, entries=[]),  # another epoch: r2
        log("log.reconcile", reconciliation_id="scm/r2", epoch=1, retained_head=0, facts=[]),
    ]
    known = [{"scm": {1: frozenset({1, 2, 3}), 2: frozenset({1})}, "ci-log": {}}] * len(lines)
    return lines, known


# ------------------------------------------------------------------- tests


@FUZZ
@given(trace=consumer_traces(max_steps=FUZZ_STEPS))
def test_consumer_cursor_and_inbox_when_the_log_only_moves_to_new_epochs(trace) -> None:
    run(trace)


@FUZZ
@given(trace=consumer_traces(max_steps=FUZZ_STEPS, rollback=True))
@example(trace=_return_to_an_earlier_epoch())
def test_consumer_cursor_and_inbox_when_the_log_may_return_to_an_earlier_epoch(trace) -> None:
    run(trace)
