"""The stateful fuzzer: random interleavings of the whole input language.

`TandemMachine` is a Hypothesis `RuleBasedStateMachine` that drives one
engine over a real store, one input per rule — tasks, grants, questions,
actions; duplicate, late, lost and reordered executor and provider
receipts; stale triage; generation changes; observations and change-log
batches; turns, resets, approvals and holds; incidents, heartbeats and time
passing; alerts — and, at arbitrary points, **restarts** (the engine is
dropped and a new one opened on the same store) and **crashes** (a store
append made to fail, store.py: nothing of the batch may be written and the
engine must reload exactly what was stored). After every input the
invariants catalog is checked (`Monitor`). A failure is minimised and
written out as a replayable trace (`tandem replay FILE --json`) into
$TANDEM_FUZZ_OUT (or the temp dir's `tandem-fuzz/`), and the error names the
file. `machine(...)` customises it, `machine_settings(...)` sets a run's
budget.

The inputs come from the generators (generators/: the same ones `traces()`
draws whole traces from). This module needs Hypothesis (the `test` extra);
`import tandem.replay` does not. docs/fuzzing.md shows how to subclass the
machine, add rules and invariants.
"""

from __future__ import annotations

import datetime
import inspect
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RULE_MARKER, RuleBasedStateMachine, initialize, invariant, precondition, rule

from tandem.domain.dispatch import handle_input as default_step
from tandem.domain.events import Event
from tandem.domain.inputs import format_at
from tandem.replay.engine import DecisionStep, Engine, Located
from tandem.replay.port import EventStore
from tandem.replay.printable import printable
from tandem.replay.proving.check import fingerprint
from tandem.replay.proving.drops import Drops, single_drops
from tandem.replay.proving.generators.kinds import KINDS, WEIGHTED, applicable
from tandem.replay.proving.generators.universe import INPUT_IDS, Builder, decode, fuzz_preamble, often
from tandem.replay.proving.generators.work import task_delegate
from tandem.replay.proving.invariants import catalog
from tandem.replay.proving.model import Applying, Invariant, InvariantViolation, World
from tandem.replay.proving.monitor import Monitor
from tandem.replay.proving.state_invariants import restart_is_replay
from tandem.replay.proving.store import InjectedCrash, ProvingStore
from tandem.replay.proving.traces import check_trace, minimize_trace, write_trace
from tandem.replay.traces import TraceInvalid


class FuzzFailure(AssertionError):
    """The fuzzer found a bug: `invariant` (or "engine_error" when the engine
    raised, "crash_recovery" when a crash left the store or engine
    inconsistent), `trace`, the replayable trace file written, and `whatif`,
    its single inputs whose removal makes every invariant hold (drops.py;
    None if the trace could not be read back)."""

    def __init__(self, invariant: str, message: str, trace: Path, whatif: Drops | None = None) -> None:
        self.invariant = invariant
        self.trace = trace
        self.whatif = whatif
        shown = "".join(f"\n  {printable(line)}" for line in (whatif.lines() if whatif is not None else ()))
        super().__init__(f"{message}\n  trace: {trace} (reproduce: tandem replay {trace} --json){shown}")


def fuzz_out_dir() -> Path:
    """Where failures are written: $TANDEM_FUZZ_OUT, else <tmp>/tandem-fuzz."""
    configured = os.environ.get("TANDEM_FUZZ_OUT")
    return Path(configured) if configured else Path(tempfile.gettempdir()) / "tandem-fuzz"


class TandemMachine(RuleBasedStateMachine):
    """The engine under random interleavings of every input kind, with
    restarts and crashes, and the invariants catalog after every input.

    Override to change what it runs on:
    - `decision_step` (a staticmethod): the decision step (`domain.dispatch.handle_input`);
    - `checked_invariants`: the list checked (None: `catalog()`);
    - `open_store()` / `reopen_store(store)`: the store (default: an in-process
      `ProvingStore`, which outlives the engines opened on it); a subclass opens
      SQLite in a temp dir, say (the machine wraps any other store in a
      `ProvingStore(over=...)`, for its crash injection);
    - `crash_mid_batch(store, expected_head, size)`: make the store fail in
      the middle of writing a batch, if it can (default: it cannot; the
      `ProvingStore` then fails the append before it writes);
    - `minimize_failures`: reduce a failing trace before writing it.
    Add rules with `@rule()` calling `self.send(line)`; `self.builder` has the
    generators' view (`state`, `line(...)`, `now`)."""

    decision_step: DecisionStep = staticmethod(default_step)
    checked_invariants: list[Invariant] | None = None
    # Reduce a failing trace to the inputs it needs (delta debugging) before
    # writing it: replayed with `decision_step`, it still fails. Seconds,
    # where Hypothesis's own shrinking of these runs takes minutes (so
    # machine_settings() leaves that phase out).
    minimize_failures = True

    @classmethod
    def rule_names(cls) -> list[str]:
        """The names of this machine's rules."""
        return sorted(name for name, member in inspect.getmembers(cls) if getattr(member, RULE_MARKER, None) is not None)

    def __init__(self) -> None:
        super().__init__()
        self.builder = Builder(Engine())
        self.record: list[dict[str, Any] | str] = []  # the trace so far, with comments
        self.restarts = 0
        self.crashes = 0

    # ------------------------------------------------------------- hooks

    def open_store(self) -> EventStore:
        return ProvingStore()

    def reopen_store(self, store: EventStore) -> EventStore:
        """`store`: what `open_store` (or the last reopen) returned."""
        return store  # the in-process log outlives the engine dropped

    def crash_mid_batch(self, store: ProvingStore, expected_head: int, size: int) -> Callable[[], None] | None:
        """Arrange for the store to fail while writing a batch of `size` events
        after `expected_head` (some of them written inside the transaction
        first), and return how to undo that arrangement; None if this store
        cannot (then the append fails before writing). `store` is the one
        the engine writes to (`store.backing`: the one opened)."""
        return None

    # ------------------------------------------------------------- driving

    @property
    def engine(self) -> Engine:
        return self.builder.engine

    def _open_engine(self) -> Engine:
        return Engine(self.store, step=type(self).decision_step)

    @staticmethod
    def _proving(store: EventStore) -> ProvingStore:
        return store if isinstance(store, ProvingStore) else ProvingStore(over=store)

    @initialize(steer=st.booleans(), tasks=st.integers(1, 3), data=st.data())
    def start(self, steer: bool, tasks: int, data: st.DataObject) -> None:
        self.store = self._proving(self.open_store())
        self.builder.engine = self._open_engine()
        self.monitor = Monitor(type(self).checked_invariants)
        budgets = data.draw(st.booleans())  # contract v1.2 section 3.2 settings, or none
        payload_required = data.draw(st.booleans())  # contract v1.2 section 6
        for line in fuzz_preamble(steer, budgets, payload_required):
            self.send(line)
        for _ in range(tasks):
            self.send(task_delegate(data.draw, self.builder))

    def teardown(self) -> None:
        store = getattr(self, "store", None)
        if store is not None:
            store.close()

    def send(self, line: dict[str, Any]) -> list[Event]:
        """Apply one input (a trace line) and check the invariants."""
        value = decode(line)  # well-formed, or a generator is wrong
        self.builder.lines.append(line)
        self.record.append(line)
        try:
            events = self.engine.submit(Located(value, line=len(self.builder.lines)))
            self.monitor.observe(value, events, self.engine.state, self.engine.views, line=len(self.builder.lines))
        except InvariantViolation as violation:
            self.fail(violation.invariant.name, str(violation))
        except Exception as error:
            self.fail("engine_error", f"the engine raised {type(error).__name__}: {error}")
        return events

    def draw_line(self, data: st.DataObject, kinds: Sequence[str], gaps: st.SearchStrategy[int] | None = None) -> dict[str, Any]:
        """Time passes (a drawn gap), then one input of one of `kinds`."""
        self.builder.now += datetime.timedelta(seconds=data.draw(gaps if gaps is not None else _MACHINE_GAPS))
        kind = data.draw(st.sampled_from(list(kinds)))
        line = KINDS[kind][0](data.draw, self.builder)
        if kind != "repeat" and data.draw(st.integers(0, 29)) == 0:
            line["id"] = data.draw(st.sampled_from(INPUT_IDS))  # now and then an idempotency key (maybe reused)
        return line

    def fail(self, invariant: str, message: str) -> None:
        out = fuzz_out_dir() / f"{type(self).__name__}-{invariant}.jsonl"
        header = [
            f"tandem fuzz: {type(self).__name__} found {invariant} violated after {len(self.builder.lines)} input(s)",
            " ".join(message.split()),
            "replay: tandem replay THIS_FILE --json (restarts and crashes are comments: restart is replay)",
        ]
        record: list[dict[str, Any] | str] = self.record
        if self.minimize_failures and invariant in {i.name for i in catalog()}:
            items = [Located(decode(line), line=n) for n, line in enumerate(self.builder.lines, 1)]
            kept = minimize_trace(items, invariant, step=type(self).decision_step)
            if len(kept) < len(items):
                record = [self.builder.lines[item.line - 1] for item in kept if item.line is not None]
                again = check_trace([Located(item.input, line=n) for n, item in enumerate(kept, 1)], step=type(self).decision_step)
                header[1:2] = [
                    f"minimized: {len(record)} of the {len(items)} inputs sent still violate it (restarts and crashes dropped)",
                    " ".join(str(again).split()) if again is not None else header[1],
                ]
        path = write_trace(out, record, header=header)
        try:  # the minimal what-ifs: which single inputs, dropped, make every invariant hold
            whatif = single_drops(path.read_bytes(), str(path), step=type(self).decision_step, invariants=type(self).checked_invariants)
        except TraceInvalid:
            whatif = None  # a trace the parser refuses: the failure is reported all the same
        raise FuzzFailure(invariant, message, path, whatif)

    # --------------------------------------------------------------- rules
    # Hypothesis picks a rule uniformly (and, per run, switches some off):
    # `any_input` covers the whole language by the weights of KINDS, the
    # others make the action and conversation lifecycles and the heartbeats
    # frequent enough for their races to happen in a short run.

    @rule(data=st.data())
    def any_input(self, data: st.DataObject) -> None:
        """One input of any kind, weighted (KINDS), steered to something that
        applies most of the time."""
        kind = data.draw(st.sampled_from(WEIGHTED))
        if not applicable(kind, self.builder) and often(data.draw, 7):
            kind = "action.propose" if applicable("action.propose", self.builder) else "task.delegate"
        self.send(self.draw_line(data, [kind]))

    @rule(data=st.data())
    def propose(self, data: st.DataObject) -> None:
        """Proposals, revalidations, cancels, questions and answers, intent syncs."""
        self.send(self.draw_line(data, _PROPOSE))

    @rule(data=st.data())
    def executor(self, data: st.DataObject) -> None:
        """Executor receipts (queued, accepted, refused, unknown), reconciles,
        outcomes and usage reports, mostly for the latest attempt."""
        self.send(self.draw_line(data, _EXECUTOR))

    @rule(data=st.data())
    def sources(self, data: st.DataObject) -> None:
        """Observations, some revising the cause of a live action that answers
        a source revision (contract v1.2 section 2: the source rule), and
        evidence of succeeded actions."""
        self.send(self.draw_line(data, _SOURCES))

    @rule(data=st.data())
    def source_race(self, data: st.DataObject) -> None:
        """The source rule's race (contract v1.2 section 2.2): proposals that
        answer their cause's current revision, the cause revised while one
        waits or is out with the executor, and the receipts (a refusal brings
        it back to pending), outcomes (freeing its resource) and heartbeats
        that lead to its next claim."""
        self.send(self.draw_line(data, _SOURCE_RACE))

    @rule(data=st.data())
    def conversation_lifecycle(self, data: st.DataObject) -> None:
        """Human messages and edits, triage, provider receipts and reconciles,
        turn ends, resets, approvals, holds, composed payloads (contract v1.2 section 6)."""
        self.send(self.draw_line(data, _CONVERSATION))

    @rule(data=st.data())
    def lost_ack(self, data: st.DataObject) -> None:
        """An executor or provider receipt lost in transit: `unknown`."""
        self.send(self.draw_line(data, ["lost_ack"]))

    @rule(data=st.data())
    def ask(self, data: st.DataObject) -> None:
        """A question that holds a task, or some of its operations."""
        self.send(self.draw_line(data, ["holding_question"]))

    @rule(data=st.data())
    def tools(self, data: st.DataObject) -> None:
        """Tool policies, runtime admissions and tool calls (contract v1.2 section 1)."""
        self.send(self.draw_line(data, _TOOLS))

    @rule(data=st.data())
    def owner(self, data: st.DataObject) -> None:
        """Proposals (maintenance work among them), the owner's messages and
        turn ends, executor receipts (contract v1.2 section 8.1)."""
        self.send(self.draw_line(data, _OWNER))

    @rule(data=st.data())
    def owners(self, data: st.DataObject) -> None:
        """Two owners (contract v1.2 section 8.1's scope): a second foreground
        and its tasks, the rule, maintenance proposals of either's tasks or of
        the rule (some on a session itself), both owners' messages, their
        turns' receipts and ends, executor receipts and outcomes."""
        self.send(self.draw_line(data, _OWNERS))

    @rule(data=st.data())
    def continuity(self, data: st.DataObject) -> None:
        """Investigations, checkpoints, the background's resets and its reseed's
        receipts, and background inputs around them (contract v1.2 section 5)."""
        self.send(self.draw_line(data, _CONTINUITY))

    @rule(data=st.data())
    def reviews(self, data: st.DataObject) -> None:
        """Observations in review batches, source aliases and the proposals
        that batches keep to one fix (contract v1.2 section 7), and causes
        that join a batch after their fixes started (section 7.3's late join)."""
        self.send(self.draw_line(data, _REVIEWS))

    @rule(data=st.data())
    def workers(self, data: st.DataObject) -> None:
        """What a worker's tool calls need and the calls themselves (contract
        v1.2 sections 1.5, 3.4): a worker tool policy and admissions that
        pass, proposals (naming a worker runtime half the time one exists),
        calls by an admitted worker for the action it executes, and revisions
        of its grant's call_limit to at or just above the calls made, so the
        limit is reached and calls go past it."""
        self.send(self.draw_line(data, _WORKERS))

    @rule(data=st.data())
    def deadlines(self, data: st.DataObject) -> None:
        """Execution deadlines and retry back-offs (contract v1.2 sections 3.3,
        3.5): proposals, short deadlines or back-offs on their grants,
        attempts refused and claimed again, receipts, outcomes, heartbeats."""
        self.send(self.draw_line(data, _DEADLINES))

    @rule(data=st.data())
    def refusals(self, data: st.DataObject) -> None:
        """Deliveries refused and their messages re-sent (contract v1.2 section
        3.6): human messages, refusals of a submitting delivery, receipts, turn
        ends and heartbeats (the back-off needs the budgets preamble)."""
        self.send(self.draw_line(data, _REFUSALS))

    @rule(data=st.data())
    def health(self, data: st.DataObject) -> None:
        """The health probes (contract v1.2 section 4): provider readiness
        (p1, the foreground's, or p2), the host suspended and resumed,
        incidents and recoveries, heartbeats (some imported late)."""
        self.send(self.draw_line(data, _HEALTH))

    @rule(data=st.data())
    def urgent_wakes(self, data: st.DataObject) -> None:
        """Urgent updates reaching an idle foreground (contract v1.2 section
        3.7, with the budgets preamble's wake_min_interval_s): observations,
        urgent and other triage, provider receipts (some refused) and turn
        ends, so wakes follow each other inside the interval."""
        self.send(self.draw_line(data, _URGENT_WAKES))

    @rule(data=st.data())
    def heartbeat(self, data: st.DataObject) -> None:
        self.send(self.draw_line(data, ["watchdog.heartbeat"]))

    @rule(data=st.data(), gap=st.sampled_from([1, 60, 121, 301, 901, 3600]))
    def time_passes(self, data: st.DataObject, gap: int) -> None:
        """A tick after a gap: the watchdog goes stale, obligations fall due, questions resurface."""
        self.builder.now += datetime.timedelta(seconds=gap)
        self.send(self.builder.line("tick", "daemon"))

    @precondition(lambda self: bool(self.builder.lines))
    @rule(data=st.data())
    def send_again(self, data: st.DataObject) -> None:
        """An earlier input again, later: duplicate and late receipts and
        outcomes (stale_attempt), duplicate inputs (duplicate_input)."""
        lines = self.builder.lines
        late = [line for line in lines if line["type"] in _LATE_KINDS]
        earlier = dict(data.draw(st.sampled_from(late if late and data.draw(st.booleans()) else lines)))
        self.builder.now += datetime.timedelta(seconds=data.draw(_MACHINE_GAPS))
        earlier["at"] = format_at(self.builder.now)
        self.send(earlier)

    @rule(graceful=st.booleans())
    def restart(self, graceful: bool) -> None:
        """Drop the engine and open a new one on the same store: it must fold
        exactly the live state and views. A graceful stop writes a snapshot
        first (as the daemon does), so the new engine starts from it."""
        live = self.engine
        checkpoint = getattr(live, "checkpoint", None)
        if graceful and checkpoint is not None:
            checkpoint()
        self.store = self._proving(self.reopen_store(self.store.backing))
        self.builder.engine = self._open_engine()
        self.restarts += 1
        how = "stopped (snapshot written)" if graceful else "dropped"
        self.record.append(f"// restart {self.restarts}: the engine is {how} and opened again on the store")
        self._same(live, self.engine, f"after a restart ({how})")

    @rule(data=st.data(), size=st.integers(1, 3), mid_batch=st.booleans())
    def crash(self, data: st.DataObject, size: int, mid_batch: bool) -> None:
        """A batch of inputs whose append fails (mid-transaction when the store
        allows it, else before writing): nothing of it may be stored, the
        engine must reload exactly what was; then the batch is sent again
        (the writer resumes) and checked input by input."""
        lines = [self.draw_line(data, WEIGHTED) for _ in range(size)]
        items = [Located(decode(line), line=len(self.builder.lines) + n) for n, line in enumerate(lines, 1)]
        engine = self.engine
        head = self.store.head()
        before = (fingerprint(engine.state), engine.views.document() if engine.views is not None else None)
        # Decide once on a throwaway engine to know how many events the batch writes.
        probe = Engine(ProvingStore(self.store.events), step=type(self).decision_step)
        expected = sum(len(probe.decide(item)) for item in items)
        undo = self.crash_mid_batch(self.store, head, expected) if mid_batch and expected > 1 else None
        if undo is None:
            self.store.crash_next_append()
        try:
            engine.submit_batch(items)
        except Exception as error:
            if not _injected(error):
                self.fail("engine_error", f"a batch failed, but not by the injected crash: {type(error).__name__}: {error}")
        else:
            self.fail("crash_recovery", f"the append of a {size}-input batch was made to fail, but it succeeded")
        finally:
            if undo is not None:
                undo()
        self.crashes += 1
        if self.store.head() != head:
            self.fail("crash_recovery", f"a failed append of {expected} event(s) left the store at {self.store.head()}, not {head}")
        after = (fingerprint(engine.state), engine.views.document() if engine.views is not None else None)
        if after != before:
            self.fail("crash_recovery", "after a failed append the engine did not reload the state and views it had")
        self._same(engine, Engine(self.store, step=type(self).decision_step), "after a failed append")
        where = "in the middle of the transaction" if undo is not None else "before the transaction"
        self.record.append(f"// crash {self.crashes}: a batch of {size} input(s) failed {where}; nothing was stored; it is sent again")
        for line in lines:
            self.send(line)

    @invariant()
    def store_holds_what_the_engine_folded(self) -> None:
        store = getattr(self, "store", None)
        if store is not None and store.head() != self.engine.state.position:
            self.fail("restart_is_replay", f"the engine folded {self.engine.state.position} events, the store holds {store.head()}")

    def _same(self, live: Engine, other: Engine, when: str) -> None:
        applying = Applying(decode(self.builder.lines[-1]), self.monitor.inputs)
        world = World(other.state, other.views, live.state, live.views if live.views is not None else other.views, applying)
        problem = restart_is_replay.check(world)
        if problem:
            self.fail("restart_is_replay", f"{when}: {problem}")


_PROPOSE = (
    "action.propose", "action.propose", "action.propose", "action.propose", "action.revalidate", "action.cancel",
    "question.raise", "question.answer", "intent.synced", "task.delegate",
)  # fmt: skip
_SOURCES = ("observe", "cause_revised", "evidence.attach")
_SOURCE_RACE = (
    "source_proposal", "source_proposal", "cause_revised", "cause_revised", "executor.receipt", "executor.receipt",
    "executor.outcome", "watchdog.heartbeat",
)  # fmt: skip
_REVIEWS = (
    "review_observation", "review_observation", "observe", "log.batch", "source.alias", "action.propose",
    "action.propose", "action.propose", "executor.outcome", "late_join", "late_join",
)  # fmt: skip
_EXECUTOR = (
    "executor.receipt", "executor.receipt", "executor.receipt", "executor.reconcile", "executor.outcome",
    "executor.outcome", "usage.report",
)  # fmt: skip
_CONVERSATION = (
    "human.message", "human.message", "human.queue_edit", "observe", "triage.classify", "triage.classify",
    "provider.receipt", "provider.receipt", "provider.reconcile", "turn.ended", "turn.ended", "context.reset",
    "approval.required", "approval.resolved", "hold.failure", "hold.release", "delivery.composed", "delivery.composed",
)  # fmt: skip
_OWNER = (
    "action.propose", "action.propose", "human.message", "turn.ended", "provider.receipt", "executor.receipt",
    "executor.outcome",
)  # fmt: skip
_OWNERS = (
    "second_foreground", "rule.set", "maintenance_proposal", "maintenance_proposal", "maintenance_proposal",
    "owner_message", "owner_receipt", "owner_turn_ended", "executor.receipt", "executor.outcome",
)  # fmt: skip

# Seconds before each input the machine sends: mostly short (the watchdog, at
# 120 s, stays fresh between heartbeats); `time_passes` makes the long jumps.
_MACHINE_GAPS = st.sampled_from([0, 0, 1, 1, 1, 2, 3, 5, 10, 30])
_TOOLS = ("tool_policy.set", "runtime.admit", "tool.request", "tool.request", "tool.request", "action.propose")
_CONTINUITY = (
    "background.checkpoint", "background.checkpoint", "investigation.open", "investigation.close", "background_reset",
    "reseed_receipt", "reseed_receipt", "triage.classify", "observe", "intent.synced", "tool.request", "runtime.admit",
)  # fmt: skip
_WORKERS = ("worker_admit", "worker_call", "worker_call", "worker_call", "action.propose", "call_limit_revise")
_DEADLINES = (
    "action.propose", "action.propose", "timing_revise", "refused_attempt", "refused_attempt", "executor.receipt",
    "executor.outcome", "watchdog.heartbeat", "tick",
)  # fmt: skip
_REFUSALS = (
    "human.message", "human.message", "refused_receipt", "refused_receipt", "provider.receipt", "turn.ended",
    "watchdog.heartbeat",
)  # fmt: skip
_HEALTH = (
    "provider.readiness", "provider.readiness", "host.suspend", "host.resume", "health.incident", "health.recovered",
    "watchdog.heartbeat",
)  # fmt: skip
_URGENT_WAKES = (
    "observe", "observe", "urgent_triage", "urgent_triage", "triage.classify", "provider.receipt", "provider.receipt",
    "turn.ended", "turn.ended", "tick",
)  # fmt: skip
_LATE_KINDS = frozenset({"executor.receipt", "executor.reconcile", "executor.outcome", "provider.receipt", "provider.reconcile", "turn.ended"})


def _injected(error: BaseException | None) -> bool:
    """Was this failure (or one it was raised from) the injected crash?"""
    while error is not None:
        if isinstance(error, InjectedCrash) or "injected crash" in str(error):
            return True
        error = error.__cause__ or error.__context__
    return False


def machine_settings(examples: int | None = None, steps: int | None = None, **overrides: Any) -> settings:
    """Settings for a run: examples and steps from $TANDEM_FUZZ_EXAMPLES /
    $TANDEM_FUZZ_STEPS unless given (defaults 25 and 30: a few seconds), no
    deadline, and no Hypothesis shrink phase (the machine minimizes the
    failing trace itself; pass `phases=` to shrink anyway)."""
    chosen: dict[str, Any] = {
        "max_examples": examples if examples is not None else int(os.environ.get("TANDEM_FUZZ_EXAMPLES", "25")),
        "stateful_step_count": steps if steps is not None else int(os.environ.get("TANDEM_FUZZ_STEPS", "30")),
        "deadline": None,
        "suppress_health_check": list(HealthCheck),
        "phases": [Phase.explicit, Phase.reuse, Phase.generate],
        "report_multiple_bugs": False,
    }
    chosen.update(overrides)
    return settings(**chosen)


def machine(
    name: str = "CustomMachine",
    *,
    step: DecisionStep | None = None,
    invariants: Sequence[Invariant] | None = None,
    rules: Sequence[str] | None = None,
    minimize: bool | None = None,
    base: type[TandemMachine] = TandemMachine,
) -> type[TandemMachine]:
    """A machine class: `base` with another decision step (`step`), another
    invariants list, only the named `rules` (a targeted rule set: the others
    are switched off), or failures minimized. Run it with
    `hypothesis.stateful.run_state_machine_as_test(cls, settings=...)` or
    expose `cls.TestCase` to pytest."""
    namespace: dict[str, Any] = {"__module__": base.__module__, "__doc__": f"{base.__name__}, customised by machine()."}
    if step is not None:
        namespace["decision_step"] = staticmethod(step)
    if invariants is not None:
        namespace["checked_invariants"] = list(invariants)
    if minimize is not None:
        namespace["minimize_failures"] = minimize
    if rules is not None:
        known = set(base.rule_names())
        unknown = sorted(set(rules) - known)
        if unknown:
            raise ValueError(f"no rule named {', '.join(unknown)}; rules: {', '.join(sorted(known))}")
        for dropped in known - set(rules):
            namespace[dropped] = None  # no longer a rule
    return type(name, (base,), namespace)
