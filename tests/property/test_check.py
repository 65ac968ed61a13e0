"""Bounded exhaustive checking (replay/proving/check.py, `tandem check`).

- the shipped scenarios (fixtures/scenarios/) check clean at a depth that runs
  in about a second each (deeper in the long run: TANDEM_CHECK_DEPTH);
- the checker FINDS the deliberately broken engines of tests/property/broken.py
  and its counterexample is the shortest: no sequence one move shorter
  violates anything; the trace written violates the same invariant when
  replayed with the broken rules, nothing with the real ones, and
  `tandem replay` reads it;
- breadth first with state hashing: moves that commute are one state;
  `after` and `repeatable` are honoured; a violation in the setup is a
  counterexample of no moves; a registered invariant is checked too;
- `tandem check`: exit 0 / 1 / 2, its report, --json, --out and its default,
  and clear errors (what and where) on bad scenario files.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tandem.adapters.cli import main
from tandem.adapters.trace import read_trace
from tandem.replay.proving import by_name, check, check_trace, load_scenario, register, state_invariant, unregister
from tests.property import broken

SCENARIOS = Path(__file__).resolve().parents[2] / "fixtures" / "scenarios"
DEPTH = {
    "receipts_cancel_question": 4, "human_races_wake": 3, "holds_no_bypass": 3, "ci_repair_source_race": 4, "tools_admission": 3,
    "health_probes": 3, "call_limit": 4, "payload_required": 4, "owner_preempts_maintenance": 4,
    "background_reseed": 4, "review_batch": 4, "review_batch_late_join": 4, "urgent_idle_wake": 4,
    "human_commands_supersede_affected_intents": 3, "background_recovery": 5,
}  # fmt: skip
LONG_DEPTH = int(os.environ.get("TANDEM_CHECK_DEPTH", "0"))


def test_every_shipped_scenario_is_listed_here() -> None:
    assert sorted(p.stem for p in SCENARIOS.glob("*.json")) == sorted(DEPTH)


@pytest.mark.parametrize("name", sorted(DEPTH))
def test_shipped_scenarios_check_clean(name: str) -> None:
    depth = max(DEPTH[name], LONG_DEPTH)
    result = check(SCENARIOS / f"{name}.json", depth)
    assert result.counterexample is None, result.counterexample.message
    assert result.depth_reached == depth
    assert result.explored > 100 and 1 < result.distinct <= result.explored + 1


# ----------------------------------------------------- finding broken engines


@pytest.mark.parametrize(
    ("rules", "invariant", "moves"),
    [
        (broken.retry_unknown, "unknown_is_never_retried", ["receipt-unknown"]),
        (broken.ignore_question_hold, "claims_respect_blockers", ["question", "receipt-refused"]),
    ],
    ids=["unknown-retried", "question-hold-ignored"],
)
def test_the_checker_finds_a_broken_engine_with_the_shortest_counterexample(
    rules, invariant: str, moves: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = SCENARIOS / "receipts_cancel_question.json"
    out = tmp_path / "counterexample.jsonl"
    result = check(scenario, 4, step=rules, out=out)
    found = result.counterexample
    assert found is not None and found.invariant == invariant, found
    assert found.moves == moves
    assert result.depth_reached == len(moves)
    # Shortest: one move fewer violates nothing.
    assert check(scenario, len(moves) - 1, step=rules).counterexample is None
    # The trace reproduces it with the broken rules, not with the real ones.
    assert found.trace == out and out.exists()
    again = check_trace(out, step=rules)
    assert again is not None and again.invariant.name == invariant
    assert check_trace(out) is None
    setup = len(load_scenario(scenario).setup)
    assert len(read_trace(str(out)).lines) == setup + len(moves)
    assert main(["replay", str(out), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [row["operation_id"] for row in document["actions"]] == ["op-build"]


def test_the_checker_finds_a_call_allowed_past_its_call_limit(tmp_path: Path) -> None:
    """Contract v1.2 section 3.4: an engine that allows the call denied
    `budget_exhausted` breaks budgets_never_exceeded at the second call."""
    scenario = SCENARIOS / "call_limit.json"
    out = tmp_path / "counterexample.jsonl"
    found = check(scenario, 3, step=broken.allow_past_call_limit, out=out).counterexample
    assert found is not None and found.invariant == "budgets_never_exceeded", found
    assert found.moves == ["call-1", "call-2"]
    again = check_trace(out, step=broken.allow_past_call_limit)
    assert again is not None and again.invariant.name == "budgets_never_exceeded"
    assert check_trace(out) is None


def test_the_checker_finds_an_acceptance_with_no_payload_in_one_move(tmp_path: Path) -> None:
    """Contract v1.2 section 6: an engine that records the receipt refused
    `payload_unrecorded` breaks payload_frozen_before_acceptance at once; the
    real one never does, in any order of the receipts and the composition."""
    scenario = SCENARIOS / "payload_required.json"
    out = tmp_path / "counterexample.jsonl"
    found = check(scenario, 3, step=broken.accept_without_payload, out=out).counterexample
    assert found is not None and found.invariant == "payload_frozen_before_acceptance", found
    assert found.moves == ["accepted"]
    again = check_trace(out, step=broken.accept_without_payload)
    assert again is not None and again.invariant.name == "payload_frozen_before_acceptance"
    assert check_trace(out) is None


def test_the_checker_finds_a_background_acting_before_its_reseed(tmp_path: Path) -> None:
    """Contract v1.2 section 5.4: an engine that forgets context_not_reseeded
    accepts the background's triage between the reset and bg/d1's acceptance."""
    scenario = SCENARIOS / "background_reseed.json"
    out = tmp_path / "counterexample.jsonl"
    found = check(scenario, 3, step=broken.act_before_reseed, out=out).counterexample
    assert found is not None and found.invariant == "background_acts_only_reseeded", found
    assert found.moves == ["reset", "triage"]
    again = check_trace(out, step=broken.act_before_reseed)
    assert again is not None and again.invariant.name == "background_acts_only_reseeded"
    assert check_trace(out) is None


def test_the_worked_example_of_section_5_violates_the_reseed_gate_only_with_a_broken_engine() -> None:
    """The gate 43 trace: the first triage after the reset is refused by the
    real engine; without the gate it is accepted, and the catalog says so."""
    trace = SCENARIOS.parent / "gates" / "43_background_reseed_after_context_reset.jsonl"
    assert check_trace(trace) is None
    found = check_trace(trace, step=broken.act_before_reseed)
    assert found is not None and found.invariant.name == "background_acts_only_reseeded"
    assert found.applying.input.input_type == "triage.classify"


@pytest.mark.parametrize("rules", [broken.count_claimed_tokens, broken.stay_in_recovery], ids=lambda r: r.__name__)
def test_the_checker_finds_a_background_kept_in_context_recovery(rules, tmp_path: Path) -> None:
    """Contract v1.2 sections 5.2, 5.3 (issue 23): a checkpoint counted at the
    model's 5000 tokens, or a background never costed again, stays in
    context recovery once inv-1's close makes its reseed fit (390 of 400)."""
    scenario = SCENARIOS / "background_recovery.json"
    out = tmp_path / "counterexample.jsonl"
    found = check(scenario, 3, step=rules, out=out).counterexample
    assert found is not None and found.invariant == "recovery_has_a_way_out", found
    assert found.moves == ["reset", "close"]
    again = check_trace(out, step=rules)
    assert again is not None and again.invariant.name == "recovery_has_a_way_out"
    assert check_trace(out) is None


def test_the_checker_finds_a_second_fix_for_a_batch(tmp_path: Path) -> None:
    """Contract v1.2 section 7.3: proposals checked without duplicate_batch
    start a fix for 556 while the one for 555, of the same batch, is live."""
    scenario = SCENARIOS / "review_batch.json"
    out = tmp_path / "counterexample.jsonl"
    found = check(scenario, 3, step=broken.skip_duplicate_batch, out=out).counterexample
    assert found is not None and found.invariant == "one_fix_per_batch", found
    assert found.moves == ["fix-555", "fix-556"]
    again = check_trace(out, step=broken.skip_duplicate_batch)
    assert again is not None and again.invariant.name == "one_fix_per_batch"
    assert check_trace(out) is None


def test_the_checker_finds_a_late_join_that_stops_no_fix(tmp_path: Path) -> None:
    """Contract v1.2 section 7.3 (issue 23): when the late alias brings the
    SCM copy's cause into a batch with 555, whose fix rv1 is live, the broken
    engine leaves rv9 live too (one_fix_per_batch, counted by the batch's
    causes now: neither fix recorded a batch when proposed)."""
    scenario = SCENARIOS / "review_batch_late_join.json"
    out = tmp_path / "counterexample.jsonl"
    found = check(scenario, 3, step=broken.keep_fixes_on_join, out=out).counterexample
    assert found is not None and found.invariant == "one_fix_per_batch", found
    assert found.moves == ["fix-555", "fix-scm", "alias"]
    assert "'rv1', 'rv9'" in found.message
    again = check_trace(out, step=broken.keep_fixes_on_join)
    assert again is not None and again.invariant.name == "one_fix_per_batch"
    assert check_trace(out) is None


def test_the_checker_finds_a_late_batch_observation_that_stops_no_fix(tmp_path: Path) -> None:
    """The same through observations naming a batch (section 7.1): without the
    alias, 555 and 556 join review-batch:77 after rv1 and rv2 started."""
    data = json.loads((SCENARIOS / "review_batch_late_join.json").read_text())
    data["moves"] = [move for move in data["moves"] if move["name"] != "alias"]
    scenario = tmp_path / "review_batch_late_observations.json"
    scenario.write_text(json.dumps(data))
    found = check(scenario, 4, step=broken.keep_fixes_on_join, out=tmp_path / "ce.jsonl").counterexample
    assert found is not None and found.invariant == "one_fix_per_batch", found
    assert found.moves == ["fix-555", "fix-556", "join-555", "join-556"]
    assert check(scenario, 4).counterexample is None


def test_the_checker_finds_a_pass_without_the_source_rule(tmp_path: Path) -> None:
    """Contract v1.2 section 2.2: without the source rule, r1 is claimed for
    revision 1 once CI passed (revision 2) and its resource freed."""
    scenario = SCENARIOS / "ci_repair_source_race.json"
    out = tmp_path / "counterexample.jsonl"
    result = check(scenario, 4, step=broken.skip_source_rule, out=out)
    found = result.counterexample
    assert found is not None and found.invariant == "no_claim_behind_source_revision", found
    assert found.moves == ["ci-passes", "hold-done"]
    assert check(scenario, 1, step=broken.skip_source_rule).counterexample is None
    again = check_trace(out, step=broken.skip_source_rule)
    assert again is not None and again.invariant.name == "no_claim_behind_source_revision"
    assert check_trace(out) is None


@pytest.mark.parametrize(
    ("rules", "invariant", "moves"),
    [
        (broken.forget_preemption, "maintenance_yields_to_the_owner", ["message"]),
        (broken.claim_while_owner_active, "claims_respect_blockers", ["message", "dream-2"]),
    ],
    ids=["preemption-forgotten", "claimed-while-owner-active"],
)
def test_the_checker_finds_maintenance_that_does_not_yield_to_the_owner(
    rules, invariant: str, moves: list[str], tmp_path: Path
) -> None:
    """Contract v1.2 section 8.1: a human message that leaves dream-1 running,
    or a pass that claims dream-2 while the message is queued."""
    scenario = SCENARIOS / "owner_preempts_maintenance.json"
    out = tmp_path / "counterexample.jsonl"
    found = check(scenario, 3, step=rules, out=out).counterexample
    assert found is not None and found.invariant == invariant, found
    assert found.moves == moves
    assert check(scenario, len(moves) - 1, step=rules).counterexample is None
    again = check_trace(out, step=rules)
    assert again is not None and again.invariant.name == invariant
    assert check_trace(out) is None
    # The state invariant sees the claimed one too (the catalog reports the claim's check first).
    if rules is broken.claim_while_owner_active:
        own = check(scenario, 3, step=rules, invariants=by_name(["maintenance_yields_to_the_owner"])).counterexample
        assert own is not None and own.invariant == "maintenance_yields_to_the_owner" and own.moves == moves


def test_the_checker_finds_an_urgent_wake_deferred_by_the_interval(tmp_path: Path) -> None:
    """Contract v1.2 section 3.7 (issue 23): with the rule before it, the wake
    interval defers the urgent ci:u's wake, and idle fg is left with it and
    nothing else holding it; the real engine wakes it at once, in every
    order of the hold, the approval, the refusal and the other update."""
    scenario = SCENARIOS / "urgent_idle_wake.json"
    out = tmp_path / "counterexample.jsonl"
    found = check(scenario, 3, step=broken.interval_defers_urgent_wakes, out=out).counterexample
    assert found is not None and found.invariant == "urgent_idle_not_held_by_interval", found
    assert found.moves == ["observe-u", "urgent"]
    assert "nothing holds them (deferred wake_interval until 2026-03-01T09:01:07Z (urgent ci:u))" in found.detail
    assert check(scenario, 1, step=broken.interval_defers_urgent_wakes).counterexample is None
    again = check_trace(out, step=broken.interval_defers_urgent_wakes)
    assert again is not None and again.invariant.name == "urgent_idle_not_held_by_interval"
    assert check_trace(out) is None


def test_the_checker_finds_an_engine_wide_preemption(tmp_path: Path) -> None:
    """Contract v1.2 section 8.1's scope: the first, engine-wide rule (one
    owner preempts and blocks every maintenance action) is found at once: fg's
    message preempts vacuum-1, which runs on a resource no work of fg names
    (preemption_is_scoped); and the old rule's block of vacuum-2 while fg's
    owner speaks is found by the restated blockers as well."""
    scenario = SCENARIOS / "human_commands_supersede_affected_intents.json"
    out = tmp_path / "counterexample.jsonl"
    found = check(scenario, 3, step=broken.engine_wide_preemption, out=out).counterexample
    assert found is not None and found.invariant == "preemption_is_scoped", found
    assert found.moves == ["fg-message"]
    assert check(scenario, 0, step=broken.engine_wide_preemption).counterexample is None
    again = check_trace(out, step=broken.engine_wide_preemption)
    assert again is not None and again.invariant.name == "preemption_is_scoped"
    assert check_trace(out) is None
    # The over-broad block alone: blocked_by_is_section_4 restates owner_active with its scope.
    blocks = check(scenario, 3, step=broken.engine_wide_preemption, invariants=by_name(["blocked_by_is_section_4"]))
    assert blocks.counterexample is not None and blocks.counterexample.moves == ["fg-message", "vacuum-2"]
    # The real engine: fg2's owner preempts vacuum-1 once its work names store, in either order.
    assert check(scenario, 3).counterexample is None


# ------------------------------------------------------------ exploration


def _scenario(moves: list[dict[str, Any]], setup: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "setup": setup
        if setup is not None
        else [{"type": "policy.set", "actor": "daemon", "allowed_operations": ["worker.start"], "write_roots": ["/repo"]}],
        "moves": moves,
    }


def _move(name: str, kind: str = "alert.seen", **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"type": kind, **fields}
    if kind == "alert.seen":
        body.setdefault("alert_id", f"urgent:{name}")
    return {"name": name, "input": body, **{k: body.pop(k) for k in ("gap_s", "repeatable", "after") if k in body}}


def test_moves_that_commute_are_one_state() -> None:
    # Two rejected inputs change nothing but the time: a then b and b then a
    # reach the same state, explored once.
    result = check(_scenario([_move("a"), _move("b")]), 2)
    assert result.counterexample is None
    assert (result.explored, result.distinct, result.levels) == (4, 4, [2, 1])


def test_after_and_repeatable() -> None:
    ticks = _scenario([_move("tick", "tick", actor="daemon", repeatable=True), _move("late", after=["tick"])])
    result = check(ticks, 3)
    # depth 1: tick; depth 2: tick tick, tick late; depth 3: tick tick tick,
    # tick tick late = tick late tick (the same state: one kept); late only once
    assert (result.explored, result.levels) == (1 + 2 + 3, [1, 2, 2])
    assert check(_scenario([_move("b", after=["a"]), _move("a")]), 1).explored == 1


def test_a_violation_in_the_setup_is_a_counterexample_of_no_moves(tmp_path: Path) -> None:
    @state_invariant
    def no_policy_ever(world) -> str | None:
        """A test invariant: no policy is ever set."""
        return "a policy was set" if world.state.authority.policy.revision else None

    result = check(_scenario([_move("a")]), 3, invariants=[no_policy_ever], out=tmp_path / "x.jsonl")
    assert result.counterexample is not None and result.counterexample.moves == []
    assert result.counterexample.invariant == "no_policy_ever"
    assert len(read_trace(str(tmp_path / "x.jsonl")).lines) == 1


def test_a_registered_invariant_is_checked_by_default() -> None:
    @state_invariant
    def at_most_one_heartbeat_generation(world) -> str | None:
        """A test invariant: the watchdog never moves past generation 1."""
        generation = world.state.health.heartbeat_generation
        return f"watchdog generation {generation}" if generation is not None and generation > 1 else None

    scenario = _scenario([_move("hb2", "watchdog.heartbeat", actor="watchdog", generation=2), _move("a")])
    register(at_most_one_heartbeat_generation)
    try:
        found = check(scenario, 2).counterexample
        assert found is not None and found.invariant == "at_most_one_heartbeat_generation" and found.moves == ["hb2"]
    finally:
        unregister(at_most_one_heartbeat_generation)
    assert check(scenario, 2).counterexample is None


# --------------------------------------------------------------- the CLI


def test_cli_clean(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(SCENARIOS / "receipts_cancel_question.json"), "--depth", "2"]) == 0
    out = capsys.readouterr().out
    assert "receipts_cancel_question: 7 setup input(s), 9 move(s), depth 2" in out
    assert "states explored: 39; distinct: 37 (new per depth: 6, 30); depth reached: 2" in out
    assert "none violated" in out
    assert main(["check", str(SCENARIOS / "receipts_cancel_question.json"), "--depth", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["states_explored"] == 6 and report["distinct_states"] == 7 and report["violation"] is None
    assert "unknown_is_never_retried" in report["invariants"]


def test_cli_violation_writes_the_counterexample_next_to_the_scenario(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "race.json"
    shutil.copy(SCENARIOS / "receipts_cancel_question.json", scenario)
    monkeypatch.setattr("tandem.domain.dispatch.handle_input", broken.retry_unknown)
    assert main(["check", str(scenario), "--depth", "3"]) == 1
    captured = capsys.readouterr()
    expected = tmp_path / "race.counterexample.jsonl"
    assert expected.exists()
    assert "VIOLATION after 1 move(s): receipt-unknown" in captured.out
    assert f"invariant unknown_is_never_retried violated; counterexample: {expected}" in captured.err
    assert main(["check", str(scenario), "--depth", "3", "--json", "--out", str(tmp_path / "o.jsonl")]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["violation"]["moves"] == ["receipt-unknown"] and report["violation"]["trace"] == str(tmp_path / "o.jsonl")


def _bad(tmp_path: Path, content: str | dict[str, Any]) -> str:
    path = tmp_path / "bad.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


GOOD_MOVE = {"name": "t", "input": {"type": "tick", "actor": "daemon"}}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{\n  \"moves\": [,]\n}", "bad.json: bad JSON at line 2 column 13: Expecting value"),
        ([], "bad.json: a scenario is a JSON object with `setup` and `moves`"),
        ({"moves": [GOOD_MOVE], "step": 1}, "bad.json: unknown key(s) 'step'"),
        ({"setup": []}, "bad.json: moves: must be a non-empty list"),
        ({"moves": [GOOD_MOVE], "start": "yesterday"}, "bad.json: start: 'yesterday' is not an RFC 3339 UTC time"),
        ({"moves": [GOOD_MOVE], "gap_s": -1}, "bad.json: gap_s: -1 is not a number of seconds >= 0"),
        (
            {"setup": [{"type": "policy.set", "actor": "daemon", "allowed_operations": "all", "write_roots": []}], "moves": [GOOD_MOVE]},
            "bad.json: setup[0]: Expected `array`, got `str` - at `$.allowed_operations`",
        ),
        ({"moves": [{"name": "x", "input": {"type": "tock"}}]}, "bad.json: moves[0] (x).input: unknown input type 'tock'"),
        (
            {"moves": [{"name": "x", "input": {"type": "tick", "at": "2026-03-01T09:00:00Z"}}]},
            "bad.json: moves[0] (x).input: remove `at`: the checker stamps every input's time",
        ),
        ({"moves": [GOOD_MOVE, GOOD_MOVE]}, "bad.json: moves[1] (t): another move is already named 't'"),
        ({"moves": [{**GOOD_MOVE, "after": ["nope"]}]}, "bad.json: moves[0] (t).after: no move is named 'nope'"),
        ({"moves": [{**GOOD_MOVE, "repeat": True}]}, "bad.json: moves[0]: unknown key(s) 'repeat'"),
        ({"moves": [{"input": {"type": "tick"}}]}, "bad.json: moves[0]: `name` (a non-empty string) is required"),
    ],
    ids=[
        "json", "not-object", "unknown-key", "no-moves", "start", "gap", "setup-field", "unknown-type", "at-given",
        "duplicate-name", "after-unknown", "move-key", "no-name",
    ],
)  # fmt: skip
def test_cli_bad_scenarios_exit_2_saying_what_and_where(
    content: Any, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", _bad(tmp_path, content), "--depth", "2"]) == 2
    err = capsys.readouterr().err
    assert message in err, err


def test_cli_depth_must_be_a_small_number(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["check", str(SCENARIOS / "holds_no_bypass.json"), "--depth", "-1"])
    assert exited.value.code == 2
    assert "the depth is from 0 to 64" in capsys.readouterr().err


# ------------------------------------------- contract v1.2 section 1: tool policy


def test_the_worked_example_of_section_1_violates_the_allowlist_only_with_a_broken_tool_host() -> None:
    """The gate 39 trace: `shell:exec` is denied by the real engine; a tool host
    that skips the allowlist (broken.allow_unlisted_tool) allows it, and the
    catalog's `tools_within_admitted_allowlist` says so at that input."""
    trace = SCENARIOS.parent / "gates" / "39_no_inherited_tools_forbidden_tool_denied_before_execution.jsonl"
    assert check_trace(trace) is None
    found = check_trace(trace, step=broken.allow_unlisted_tool)
    assert found is not None and found.invariant.name == "tools_within_admitted_allowlist"
    assert "shell:exec" in found.detail and found.applying.input.input_type == "tool.request"


def test_the_checker_finds_a_tool_host_skipping_the_allowlist_in_one_move() -> None:
    scenario = SCENARIOS / "tools_admission.json"
    found = check(scenario, 3, step=broken.allow_unlisted_tool).counterexample
    assert found is not None and found.invariant == "tools_within_admitted_allowlist"
    assert found.moves == ["call-shell-bg"]
