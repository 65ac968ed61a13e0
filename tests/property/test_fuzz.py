"""The stateful fuzzer (replay/proving/fuzz.py): random interleavings of the whole
input language on a real SQLite store, with restarts and crash injection,
the invariants catalog after every input.

- `TestSQLiteFuzz`: `TandemMachine` on SQLite in a temp dir. A restart closes
  the store and opens the file again; a crash is injected either before the
  commit or in the middle of the transaction (a trigger aborts the insert of
  one of the batch's rows after the earlier ones were inserted), and the
  machine checks that nothing of the batch was stored and that the engine
  reloaded exactly what was. CI budget: TANDEM_FUZZ_EXAMPLES (default 25)
  runs of up to TANDEM_FUZZ_STEPS (default 30) rules. The long run:

      TANDEM_FUZZ_EXAMPLES=2000 TANDEM_FUZZ_STEPS=100 python -m pytest tests/property/test_fuzz.py -q

- the fuzzer FINDS the deliberately broken engines of tests/property/broken.py
  (a retried `unknown` attempt, a claim ignoring a question hold, a delivery
  during its back-off, an unlisted tool, a pass without the source rule, a
  call past its grant's call_limit, an unready provider deferring nothing)
  with a targeted rule set and a fixed seed, writes a trace, and that trace
  violates the same invariant when replayed with the broken rules — and
  nothing with the real ones; the failure names the single inputs whose
  removal makes every invariant hold (`tandem whatif TRACE --drop LINE`). The last three were found on 20 of 20 seeds
  (1 to 20, test_each_hunt_finds_its_bug_on_most_seeds with
  TANDEM_HUNT_SEEDS=20), each within the CI hunt's budget: the source rule in
  at most 17.9 s (median 3 s), the call limit 15.4 s (median 2.5 s), the
  unready deferral 1.6 s (median 0.5 s);
- the restart and crash checks themselves can fail (a store that loses an
  event on reopening, a store that writes half a batch).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import seed
from hypothesis.stateful import run_state_machine_as_test

from tandem.adapters.store import open_store, table_name_default
from tandem.adapters.trace import read_trace
from tandem.replay.port import EventStore
from tandem.replay.proving import FuzzFailure, ProvingStore, TandemMachine, catalog, check_trace, machine, machine_settings
from tandem.replay.proving.traces import _trace_inputs
from tests.property import broken

EVENTS_TABLE = table_name_default  # the events table of a store URL without ?table=


class SQLiteMachine(TandemMachine):
    """The fuzzer on a real SQLite file; crashes in the middle of a transaction."""

    def open_store(self) -> EventStore:
        self.directory = tempfile.mkdtemp(prefix="tandem-fuzz-")
        self.path = os.path.join(self.directory, "fuzz.db")
        return open_store(f"sqlite:///{self.path}")

    def reopen_store(self, store: EventStore) -> EventStore:
        store.close()
        return open_store(f"sqlite:///{self.path}")

    def crash_mid_batch(self, store: ProvingStore, expected_head: int, size: int) -> Callable[[], None] | None:
        # The insert of a row past the first aborts: the earlier rows of the
        # batch are already in the (uncommitted) transaction.
        row = expected_head + max(2, (size + 1) // 2 + 1)
        with sqlite3.connect(self.path) as connection:
            connection.execute(
                f"CREATE TRIGGER tandem_fuzz_crash BEFORE INSERT ON {EVENTS_TABLE} "
                f"WHEN NEW.originator_version = {row} BEGIN SELECT RAISE(ABORT, 'injected crash mid-batch'); END"
            )

        def undo() -> None:
            with sqlite3.connect(self.path) as connection:
                connection.execute("DROP TRIGGER IF EXISTS tandem_fuzz_crash")

        return undo

    def teardown(self) -> None:
        super().teardown()
        directory = getattr(self, "directory", None)
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)


SQLiteMachine.TestCase.settings = machine_settings()
TestSQLiteFuzz = SQLiteMachine.TestCase


# ------------------------------------------------- the fuzzer finds bugs

# A fixed seed; no Hypothesis shrinking (machine_settings leaves it out): the
# machine minimizes the failing trace itself, checked by replaying it.
FIND = machine_settings(examples=300, steps=30, derandomize=True, database=None)
# Targeted rule sets (the machine's own rules, fewer of them), each building
# its bug's preconditions: proposals and lost acknowledgements; proposals,
# questions that hold work and executor receipts; deliveries refused and
# retried; tool calls; the source rule's race (a proposal answering its
# cause's revision, the cause revised while it waits or is out, a refusal or
# an outcome bringing it back to a claim: contract v1.2 section 2.2); a worker
# runtime calling for its in-flight action while its grant's call_limit is set
# at or just above its calls (section 3.4); a provider not ready while
# messages and updates arrive (sections 3.10, 4.3); a payload not recorded
# (section 6); the owner's messages and maintenance work (section 8.1); a
# background reset and its reseed (section 5.4); review batches (section 7.3).
# Each is found on most random seeds within this budget
# (test_each_hunt_finds_its_bug_on_most_seeds, TANDEM_HUNT_SEEDS=N; the rates
# measured are in docs/fuzzing.md), and with the fixed seed here.
HUNTS = [
    (broken.retry_unknown, ("propose", "lost_ack", "heartbeat"), "unknown_is_never_retried"),
    (broken.ignore_question_hold, ("propose", "ask", "executor", "heartbeat"), "claims_respect_blockers"),
    (broken.resend_during_backoff, ("refusals",), "budgets_never_exceeded"),
    (broken.allow_unlisted_tool, ("tools",), "tools_within_admitted_allowlist"),
    (broken.skip_source_rule, ("source_race",), "no_claim_behind_source_revision"),
    (broken.allow_past_call_limit, ("workers",), "budgets_never_exceeded"),
    (broken.forget_unready_deferral, ("health", "conversation_lifecycle"), "unready_provider_is_the_deferral"),
    (broken.accept_without_payload, ("conversation_lifecycle",), "payload_frozen_before_acceptance"),
    # A claim while the owner is active is a claim against its blockers first.
    (broken.forget_preemption, ("owner", "heartbeat"), "maintenance_yields_to_the_owner"),
    (broken.claim_while_owner_active, ("owner", "heartbeat"), "claims_respect_blockers"),
    (broken.act_before_reseed, ("continuity",), "background_acts_only_reseeded"),
    (broken.skip_duplicate_batch, ("reviews", "heartbeat"), "one_fix_per_batch"),
    (broken.ignore_execution_deadline, ("deadlines", "time_passes"), "budgets_never_exceeded"),
    # A claim before its retry_at is a claim against its blockers (retry_backoff) first.
    (broken.ignore_retry_backoff, ("deadlines", "time_passes"), "claims_respect_blockers"),
    # Contract v1.2 section 7.3 (issue 23): causes that join a batch after their fixes started.
    (broken.keep_fixes_on_join, ("reviews", "heartbeat"), "one_fix_per_batch"),
    (broken.interval_defers_urgent_wakes, ("urgent_wakes",), "urgent_idle_not_held_by_interval"),
    # Two owners: one's message preempting (or its activity blocking) what it does not affect.
    (broken.engine_wide_preemption, ("owners", "heartbeat"), "preemption_is_scoped"),
    # Issue 23: an inflated checkpoint counted whole; a background in recovery never costed again.
    (broken.count_claimed_tokens, ("continuity",), "recovery_has_a_way_out"),
    (broken.stay_in_recovery, ("continuity",), "recovery_has_a_way_out"),
]
HUNT_IDS = [
    "unknown-retried", "question-hold-ignored", "delivery-backoff-ignored", "unlisted-tool-allowed", "source-rule-skipped",
    "call-limit-ignored", "unready-not-deferred", "payload-not-required", "preemption-forgotten",
    "claimed-while-owner-active", "acted-before-reseed", "batch-second-fix", "deadline-ignored",
    "retry-backoff-ignored", "batch-late-join-kept", "urgent-wake-deferred", "engine-wide-preemption",
    "checkpoint-claim-counted", "recovery-never-left",
]  # fmt: skip


@pytest.mark.parametrize(("rules", "hunt_rules", "invariant"), HUNTS, ids=HUNT_IDS)
def test_the_fuzzer_finds_a_broken_engine_and_writes_a_trace_that_reproduces_it(
    rules, hunt_rules: tuple[str, ...], invariant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TANDEM_FUZZ_OUT", str(tmp_path))
    hunt = machine(f"Hunt_{rules.__name__}", step=rules, rules=hunt_rules)
    with pytest.raises(FuzzFailure) as caught:
        run_state_machine_as_test(hunt, settings=FIND)
    failure = caught.value
    assert failure.invariant == invariant
    assert failure.trace.parent == tmp_path and str(failure.trace) in str(failure)
    again = check_trace(failure.trace, step=rules)
    assert again is not None and again.invariant.name == invariant, again
    assert check_trace(failure.trace) is None  # the real engine: nothing violated
    assert_every_input_needed(failure.trace, rules, invariant)  # minimized to what it needs
    assert_whatif_reported(failure)


def assert_whatif_reported(failure: FuzzFailure) -> None:
    """The failure names the single inputs whose removal makes every
    invariant hold (replay/proving/drops.py): in a minimized trace the last
    input is where it is violated, and without it all holds."""
    items = _trace_inputs(failure.trace)
    whatif = failure.whatif
    assert whatif is not None and whatif.violated and whatif.inputs == whatif.tried == len(items)
    assert whatif.violated_at == items[-1].line
    assert whatif.holding and whatif.holding[-1].line == items[-1].line
    for line in whatif.lines():
        assert f"\n  {line}" in str(failure)
    assert f"--drop {items[-1].line}\n" in str(failure) + "\n"


def assert_every_input_needed(trace: Path, rules, invariant: str) -> None:
    """The written trace is 1-minimal: without any one of its inputs the
    broken engine no longer violates the invariant (the minimizer's promise;
    a bound on the length would depend on what the generators draw)."""
    items = _trace_inputs(trace)
    chosen = [i for i in catalog() if i.name == invariant]
    assert len(items) >= 2
    for k in range(len(items)):
        try:
            found = check_trace(items[:k] + items[k + 1 :], step=rules, invariants=chosen)
        except Exception:
            found = None  # an engine that cannot even apply the rest: that input was needed
        assert found is None, f"input {k + 1} of {len(items)} ({items[k].input.input_type}) is not needed"


# The source rule, the call limit and the unready deferral (contract v1.2
# sections 2.2, 3.4, 3.10/4.3): found on most seeds, not by one lucky seed.
SEEDED = HUNTS  # every hunt: its rate over seeds


@pytest.mark.skipif(not os.environ.get("TANDEM_HUNT_SEEDS"), reason="the rate over many seeds: set TANDEM_HUNT_SEEDS=N")
@pytest.mark.parametrize(("rules", "hunt_rules", "invariant"), SEEDED, ids=HUNT_IDS)
def test_each_hunt_finds_its_bug_on_most_seeds(
    rules, hunt_rules: tuple[str, ...], invariant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seeds 1..TANDEM_HUNT_SEEDS, each within the CI hunt's budget (300 runs
    of up to 30 rules): at least 8 in 10 find the bug. Prints the rate."""
    monkeypatch.setenv("TANDEM_FUZZ_OUT", str(tmp_path))
    seeds = range(1, int(os.environ["TANDEM_HUNT_SEEDS"]) + 1)
    budget = machine_settings(examples=300, steps=30, database=None)
    found, seconds = 0, []
    for n in seeds:
        hunt = seed(n)(machine(f"Seeded_{rules.__name__}_{n}", step=rules, rules=hunt_rules, minimize=False))
        started = time.monotonic()
        try:
            run_state_machine_as_test(hunt, settings=budget)
        except FuzzFailure as failure:
            assert failure.invariant == invariant
            found += 1
        seconds.append(time.monotonic() - started)
    print(f"{rules.__name__}: found on {found} of {len(seeds)} seeds; seconds {sorted(round(s, 1) for s in seconds)}")
    assert found * 10 >= len(seeds) * 8, f"found on {found} of {len(seeds)} seeds"


def test_the_fuzzer_reports_an_engine_that_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tandem.domain.dispatch import handle_input

    def crashing(state, value, seq, file, line, emit):
        if value.input_type == "executor.outcome":
            raise RuntimeError("boom")
        handle_input(state, value, seq, file, line, emit)

    monkeypatch.setenv("TANDEM_FUZZ_OUT", str(tmp_path))
    with pytest.raises(FuzzFailure) as caught:
        run_state_machine_as_test(machine("Crashing", step=crashing, rules=("propose", "executor")), settings=FIND)
    assert caught.value.invariant == "engine_error"
    assert caught.value.trace.exists()


# ------------------------------------------ the restart and crash checks can fail


class ForgetfulMachine(TandemMachine):
    """Reopened, the store has lost its last event."""

    def reopen_store(self, store: EventStore) -> EventStore:
        assert isinstance(store, ProvingStore)
        return ProvingStore(store.events[:-1])


class HalfWritingMachine(TandemMachine):
    """An append made to fail writes its first event, then raises: not atomic."""

    def crash_mid_batch(self, store: ProvingStore, expected_head: int, size: int) -> Callable[[], None] | None:
        store.crash_next_append(written=1)
        return lambda: None


@pytest.mark.parametrize(
    ("base", "rules", "invariant"),
    [(ForgetfulMachine, ("restart", "heartbeat"), "restart_is_replay"), (HalfWritingMachine, ("crash",), "crash_recovery")],
    ids=["restart-loses-an-event", "crash-writes-half-a-batch"],
)
def test_restart_and_crash_checks_catch_a_bad_store(
    base: type[TandemMachine], rules: tuple[str, ...], invariant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TANDEM_FUZZ_OUT", str(tmp_path))
    with pytest.raises(FuzzFailure) as caught:
        run_state_machine_as_test(machine(f"Bad{base.__name__}", rules=rules, base=base), settings=FIND)
    assert caught.value.invariant == invariant


def test_a_crash_in_the_middle_of_a_sqlite_transaction_writes_nothing(tmp_path: Path) -> None:
    """The SQLite crash injection really aborts after some of the batch's rows
    were inserted, and the store rolls all of them back."""
    from tandem.replay.engine import Engine, Located
    from tests.unit import helpers as h

    probe = SQLiteMachine()
    store = probe.open_store()
    try:
        engine = Engine(store)
        lines = [*h.world(), h.propose("op-1")]
        for n, line in enumerate(lines, 1):
            engine.submit(Located(h.decode({**line, "at": h.at(n)})))
        head = store.head()
        batch = [Located(h.decode({**h.receipt("op-1", "op-1/a1", "refused"), "at": h.at(20)}))]
        size = len(Engine(ProvingStore(e for page in store.read_pages() for e in page)).decide(batch[0]))
        assert size >= 3  # record, AttemptUpdated, ActionClaimed...
        undo = probe.crash_mid_batch(store, head, size)
        with pytest.raises(Exception) as caught:
            engine.submit_batch(batch)
        undo()
        chain = []
        error: BaseException | None = caught.value
        while error is not None:
            chain.append(str(error))
            error = error.__cause__ or error.__context__
        assert any("injected crash mid-batch" in text for text in chain), chain
        assert store.head() == head
        assert engine.state.position == head
        engine.submit_batch(batch)  # the trigger is gone: the same batch goes in
        assert store.head() == head + size
    finally:
        store.close()
        probe.teardown()
