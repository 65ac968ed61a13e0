"""Property tests for spec/TRACE.md section 5 (conversations and foreground
delivery), checked after EVERY input.

A random interleaving (drawn step by step from the live state, so that ids are
mostly valid and sometimes stale) of `human.message` (small or too big),
`human.queue_edit` (edit / withdraw, of queued or dispatched messages),
`provider.receipt` / `provider.reconcile` (of existing deliveries in any
state, and unknown ids), `turn.ended` (running turn or stale ids, all three
outcomes, with or without `delivered`), `context.reset`, `approval.required` /
`approval.resolved` (on the foreground or its background), `hold.failure` /
`hold.release`, `usage.report` with `context_tokens`, `observe` +
`triage.classify` of a few causes (so wakes, steers and reseeds happen) and
`tick`s, on a foreground `fg` (steer on or off, a 1000-token context with
reserve 100 or 945 — the latter too small for any reseed) with a bound
background `bg` and an active task `t1`.

The checker keeps its own ledger from the accepted inputs and the recorded
events and verifies after every input:

1. **No human message is lost.** Every message id ever accepted by
   `human.message` and not withdrawn by an accepted `human.queue_edit` is in
   exactly one of: the conversation view's `queue`, the messages of the
   running turn's deliveries, or the set of messages of turns that ended
   `completed`. The queue holds no duplicates and no withdrawn message; a
   withdrawn message is in no delivery created after its withdrawal.
2. **No message is delivered twice in one epoch.** For every message id and
   epoch, among the deliveries of that epoch that carry it, every one except
   the latest belongs to a turn that ended `failed` or `interrupted` before
   the next one was created (the message was requeued in between). Hence a
   message is handled by at most one `completed` turn, ever.
3. **At most one turn runs per conversation**: a `TurnStarted` only when no
   turn is running; the view's `state` is `running` only when a turn runs
   (and no recovery / failure hold applies).
4. **A held (cause, revision) is never in a second delivery.** The ledger
   models holding from the spec's words: a delivery of the current epoch holds
   each included (cause, revision) from its creation until a `refused` /
   `not_received` receipt, a reset (new epoch), or the end `failed` /
   `interrupted` of its turn (unless it is `unknown` then: it holds until its
   `provider.reconcile`). When a `DeliveryCreated` includes a pair, no other
   delivery may hold it. Each delivery's `tokens` never makes it overflow:
   `context_tokens + tokens + reserve ≤ context_limit` at creation.
5. **The view's `state`** is the first of `context_recovery_required`
   (a `RecoveryChanged` to non-null is in force), `failure_held`, `running`,
   `idle`; and (5.3 rule 3) after every input, a foreground with no open
   approval, no failure hold, no recovery, its reseed (after a reset)
   accepted and no running turn has an empty queue — the pass started a
   human turn.
6. **Replay**: folding the encoded/decoded events into fresh `Views()` and
   `State()` gives the same views document and the same state.

The invariants catalog (replay/proving/invariants.py, docs/invariants.md) is checked
after every input as well.

Budget: 50 examples by default (deadline None); TANDEM_FUZZ_EXAMPLES and
TANDEM_FUZZ_STEPS (default 40) for longer runs.
"""

from __future__ import annotations

import os
from dataclasses import fields
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tandem.domain import events as ev
from tandem.domain.events import decode_event, encode_event
from tandem.domain.rules import evolve
from tandem.domain.state import State
from tandem.projections import Views
from tandem.replay.engine import Engine, Located
from tandem.replay.proving import Monitor
from tests.unit import helpers as h

FUZZ_EXAMPLES = int(os.environ.get("TANDEM_FUZZ_EXAMPLES", "50"))
FUZZ_STEPS = int(os.environ.get("TANDEM_FUZZ_STEPS", "40"))
PASS_SCRATCH = frozenset({"dirty_actions", "dirty_tasks", "watchdog_fresh"})
CAUSES = ("a", "b", "c")
LIMIT = 1000


class Checker:
    def __init__(self, steer: bool, reserve: int = 100) -> None:
        self.reserve = reserve
        self.engine = Engine()
        self.monitor = Monitor()  # the invariants catalog too (replay/proving/invariants.py)
        self.log: list[bytes] = []
        self.step = 0
        self.time = 0
        self.queued: list[str] = []  # accepted human.message ids
        self.withdrawn: set[str] = set()
        self.handled: list[str] = []  # messages of completed turns (with repeats, to catch doubles)
        self.turn_messages: dict[str, list[str]] = {}
        self.turn_epoch: dict[str, int] = {}
        self.turn_end: dict[str, str] = {}
        self.running: str | None = None
        self.delivery: dict[str, dict[str, Any]] = {}  # id -> {epoch, turn, included, messages, state, holds}
        self.message_deliveries: dict[str, list[str]] = {}
        self.epoch = 1
        self.context_tokens = 0
        self.fingerprints = 0
        self.approvals: set[str] = set()  # open on fg
        self.held = False
        self.recovery: str | None = None
        self.reseed_accepted = True  # epoch 1 needs no reseed
        for line in (
            h.policy(),
            h.open_foreground(context_limit=LIMIT, reserve=reserve, steer=steer),
            h.open_background(),
            h.bind(1),
            h.heartbeat(1),
            h.delegate("t1"),
        ):
            self.apply(line)

    # ------------------------------------------------------------- apply

    def fail(self, text: str) -> None:
        raise AssertionError(f"step {self.step}: {text}")

    def apply(self, line: dict[str, Any]) -> list[ev.Event]:
        self.step += 1
        line = {**line, "at": h.at(self.step)}
        value = h.decode(line)
        events = self.engine.submit(Located(value, line=self.step))
        self.monitor.observe(value, events, self.engine.state, self.engine.views, line=self.step)
        for event in events:
            data = encode_event(event)
            if decode_event(data) != event:
                self.fail(f"{type(event).__name__} does not survive encode/decode")
            self.log.append(data)
        rejected = isinstance(events[0], ev.InputRejected)
        if not rejected:
            if line["type"] == "human.message":
                self.queued.append(line["message_id"])
            elif line["type"] == "human.queue_edit" and line["op"] == "withdraw":
                self.withdrawn.add(line["message_id"])
        for event in events:
            self.follow(event)
        self.check()
        return events

    def follow(self, event: ev.Event) -> None:
        if isinstance(event, ev.TurnStarted):
            if self.running is not None:
                self.fail(f"turn {event.turn_id} started while {self.running} runs")
            if event.turn_id in self.turn_epoch:
                self.fail(f"turn id {event.turn_id} reused")
            self.running = event.turn_id
            self.turn_messages[event.turn_id] = []
            self.turn_epoch[event.turn_id] = event.epoch
        elif isinstance(event, ev.DeliveryCreated):
            if event.delivery_id in self.delivery:
                self.fail(f"delivery id {event.delivery_id} reused")
            if event.epoch != self.epoch:
                self.fail(f"{event.delivery_id} in epoch {event.epoch}, current {self.epoch}")
            if self.context_tokens + event.tokens + self.reserve > LIMIT:
                self.fail(f"{event.delivery_id} does not fit: {self.context_tokens}+{event.tokens}+{self.reserve}>{LIMIT}")
            for pair in event.included:
                pair = tuple(pair)
                for other_id, other in self.delivery.items():
                    if other["holds"] and pair in other["included"]:
                        self.fail(f"{pair} put in {event.delivery_id} while {other_id} holds it")
            for message_id in event.messages:
                if message_id in self.withdrawn:
                    self.fail(f"withdrawn {message_id} sent in {event.delivery_id}")
                for earlier in self.message_deliveries.get(message_id, []):
                    d = self.delivery[earlier]
                    if d["epoch"] == event.epoch and self.turn_end.get(d["turn"]) not in ("failed", "interrupted"):
                        self.fail(f"{message_id} in {earlier} and again in {event.delivery_id} (epoch {event.epoch})")
                self.message_deliveries.setdefault(message_id, []).append(event.delivery_id)
            self.delivery[event.delivery_id] = {
                "epoch": event.epoch,
                "turn": event.turn_id,
                "included": {tuple(p) for p in event.included},
                "messages": list(event.messages),
                "state": "submitting",
                "holds": True,
                "turn_over": False,
            }
            if event.turn_id is not None:
                if event.turn_id != self.running:
                    self.fail(f"{event.delivery_id} for {event.turn_id}, running {self.running}")
                self.turn_messages[event.turn_id].extend(event.messages)
        elif isinstance(event, ev.DeliveryReceipted):
            d = self.delivery[event.delivery_id]
            was = d["state"]
            d["state"] = event.attempt_state
            if event.attempt_state == "accepted" and d["turn"] is None and d["epoch"] == self.epoch:
                self.reseed_accepted = True
            if event.attempt_state in ("refused", "not_received"):
                d["holds"] = False
            elif was == "unknown" and d["turn_over"]:
                d["holds"] = False  # held only until provider.reconcile (the lenient reading)
            self.context_tokens = event.context_tokens
        elif isinstance(event, ev.TurnEnded):
            if event.turn_id != self.running:
                self.fail(f"{event.turn_id} ended, running {self.running}")
            self.running = None
            self.turn_end[event.turn_id] = event.outcome
            if event.outcome == "completed":
                self.handled.extend(self.turn_messages[event.turn_id])
            else:
                for d in self.delivery.values():
                    if d["turn"] == event.turn_id:
                        d["turn_over"] = True
                        if d["state"] != "unknown":
                            d["holds"] = False
        elif isinstance(event, ev.ApprovalOpened) and event.conversation_id == "fg":
            self.approvals.add(event.request_id)
        elif isinstance(event, ev.ApprovalResolved) and event.conversation_id == "fg":
            self.approvals.discard(event.request_id)
        elif isinstance(event, ev.FailureHoldChanged) and event.conversation_id == "fg":
            self.held = event.held
        elif isinstance(event, ev.RecoveryChanged) and event.conversation_id == "fg":
            self.recovery = event.recovery
        elif isinstance(event, ev.ContextReset):
            self.reseed_accepted = False
            self.epoch = event.epoch
            self.context_tokens = 0
            for d in self.delivery.values():
                d["holds"] = False
        elif isinstance(event, ev.UsageReported):
            if getattr(event, "conversation_id", None) == "fg" and getattr(event, "context_tokens", None) is not None:
                self.context_tokens = event.context_tokens

    # ------------------------------------------------------------- checks

    def row(self) -> dict[str, Any]:
        return h.conversation_row(self.engine, "fg")

    def check(self) -> None:
        if "fg" not in self.engine.state.conversation.by_id:
            return
        row = self.row()
        queue = row["queue"]
        if len(queue) != len(set(queue)):
            self.fail(f"queue has duplicates {queue}")
        if set(queue) & self.withdrawn:
            self.fail(f"withdrawn messages queued {queue}")
        if row["epoch"] != self.epoch:
            self.fail(f"epoch {row['epoch']}, events say {self.epoch}")
        running = self.turn_messages.get(self.running, []) if self.running else []
        handled = self.handled
        if len(handled) != len(set(handled)):
            self.fail(f"a message handled by two completed turns: {handled}")
        for message_id in self.queued:
            if message_id in self.withdrawn:
                continue
            places = [queue.count(message_id), running.count(message_id), handled.count(message_id)]
            if sum(places) != 1:
                self.fail(f"{message_id}: queue/running/handled counts {places} (queue {queue}, running {running})")
        if row["state"] == "running" and self.running is None:
            self.fail("view says running, no turn runs")
        if self.running is not None and row["state"] == "idle":
            self.fail(f"view says idle while {self.running} runs")
        expected = (
            "context_recovery_required" if self.recovery is not None
            else "failure_held" if self.held
            else "running" if self.running is not None
            else "idle"
        )
        if row["state"] != expected:
            self.fail(f"view state {row['state']}, expected {expected}")
        blocked = self.approvals or self.held or self.recovery is not None or not self.reseed_accepted
        if not blocked and self.running is None and queue:
            self.fail(f"idle and dispatchable with messages queued {queue}: no human turn")
        if row["context_tokens"] != self.context_tokens:
            self.fail(f"context_tokens {row['context_tokens']}, events say {self.context_tokens}")
        # the view's deliveries match the ledger
        for d in row["deliveries"]:
            mine = self.delivery[d["delivery_id"]]
            if d["attempt_state"] != mine["state"] or d["epoch"] != mine["epoch"] or d["turn_id"] != mine["turn"]:
                self.fail(f"view delivery {d} vs ledger {mine}")
        # no two holders of one pair at once
        seen: dict[tuple, str] = {}
        for delivery_id, d in self.delivery.items():
            if not d["holds"]:
                continue
            for pair in d["included"]:
                current = self.engine.state.inbox.updates[pair[0]].revision
                if pair[1] != current:
                    continue
                if pair in seen:
                    self.fail(f"{pair} held by {seen[pair]} and {delivery_id}")
                seen[pair] = delivery_id

    def check_replay(self) -> None:
        views, replayed = Views(), State()
        for data in self.log:
            event = decode_event(data)
            views.apply(event)
            evolve(replayed, event)
        if views.document() != self.engine.views.document():
            self.fail(f"replayed views differ:\n live   {self.engine.views.document()}\n replay {views.document()}")
        for f in fields(State):
            if f.name not in PASS_SCRATCH and getattr(self.engine.state, f.name) != getattr(replayed, f.name):
                self.fail(f"replayed state.{f.name} differs")


# -------------------------------------------------------------- the driver


def step(data: st.DataObject, checker: Checker) -> None:
    state = checker.engine.state
    conversation = state.conversation.by_id["fg"]
    kind = data.draw(st.sampled_from([
        "message", "message", "message", "edit", "receipt", "receipt", "reconcile", "end", "end", "end",
        "reset", "approval", "resolve", "resolve", "hold", "release", "release", "usage", "observe", "observe",
        "observe", "tick",
    ]))
    if kind == "message":
        n = len(checker.queued) + 1 + data.draw(st.integers(0, 1))  # sometimes a repeated id
        tokens = data.draw(st.sampled_from([None, 1, 20, 200, 850, 950]))
        extra = {} if tokens is None else {"tokens": tokens}
        checker.apply(h.message(f"m{n}", **extra))
    elif kind == "edit":
        if not checker.queued:
            return
        message_id = data.draw(st.sampled_from(checker.queued))
        op = data.draw(st.sampled_from(["edit", "withdraw"]))
        checker.apply(h.queue_edit(message_id, op, **({"text": "edited text"} if op == "edit" else {})))
    elif kind in ("receipt", "reconcile"):
        known = list(conversation.deliveries)
        wanted = "submitting" if kind == "receipt" else "unknown"
        live = [d for d, row in conversation.deliveries.items() if row.attempt_state == wanted]
        delivery_id = data.draw(st.sampled_from(live * 4 + known + [f"fg/d{len(known) + 1}", "nope/d1"]))
        if kind == "receipt":
            checker.apply(h.provider_receipt(delivery_id, data.draw(st.sampled_from(["accepted", "unknown", "refused"]))))
        else:
            checker.apply(h.provider_reconcile(delivery_id, data.draw(st.sampled_from(["accepted", "not_received"]))))
    elif kind == "end":
        candidates = [f"fg/t{conversation.turns}", f"fg/t{conversation.turns + 1}"]
        if conversation.running_turn is not None:
            candidates += [conversation.running_turn.turn_id] * 3
        turn_id = data.draw(st.sampled_from(candidates))
        outcome = data.draw(st.sampled_from(["completed", "completed", "failed", "interrupted"]))
        extra = data.draw(st.sampled_from([{}, {"delivered": []}, {"delivered": ["ci:a"]}]))
        checker.apply(h.turn_ended(turn_id, outcome, **extra))
    elif kind == "reset":
        checker.apply(h.context_reset("fg", data.draw(st.sampled_from(["compaction", "rollover", "provider_loss"]))))
    elif kind == "approval":
        checker.apply(h.approval_required(data.draw(st.sampled_from(["r1", "r2"])), data.draw(st.sampled_from(["fg", "bg"]))))
    elif kind == "resolve":
        open_ = [(r, c) for c in ("fg", "bg") for r in state.conversation.by_id[c].approvals]
        request, where = data.draw(st.sampled_from(open_ * 3 + [("r1", "fg"), ("r2", "bg")]))
        checker.apply(h.approval_resolved(request, where))
    elif kind == "hold":
        checker.apply(h.hold_failure())
    elif kind == "release":
        checker.apply(h.hold_release())
    elif kind == "usage":
        checker.apply(h.conversation_usage(context_tokens=data.draw(st.sampled_from([0, 100, 500, 880]))))
    elif kind == "observe":
        cause = data.draw(st.sampled_from(CAUSES))
        if data.draw(st.booleans()):
            checker.fingerprints += 1
            checker.apply(h.observe(source_id=f"src-{cause}", scope=cause, fingerprint=f"fp{checker.fingerprints}",
                                    tokens=data.draw(st.sampled_from([1, 30, 300, 950]))))
        update = state.inbox.updates.get(f"ci:{cause}")
        if update is not None:
            revision = update.revision - data.draw(st.sampled_from([0, 0, 0, 1]))
            checker.apply(h.triage(
                f"ci:{cause}", max(revision, 1),
                data.draw(st.sampled_from(["routine", "actionable", "urgent", "needs_input"])),
                notification_priority=data.draw(st.integers(0, 3)),
            ))
    else:
        checker.apply(h.tick())


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data(), st.booleans(), st.sampled_from([100, 100, 945]))
def test_conversation_invariants(data: st.DataObject, steer: bool, reserve: int) -> None:
    """Reserve 945 leaves 55 tokens: the reseed's control state (task t1 and
    its grant, 60) never fits, so every reset ends in recovery."""
    checker = Checker(steer, reserve)
    for _ in range(data.draw(st.integers(1, FUZZ_STEPS))):
        step(data, checker)
    checker.check_replay()
