"""The minimal what-ifs of a failing trace (replay/proving/drops.py, issue 27
point 5): `tandem check` and the fuzzer name the single inputs whose removal
makes every invariant hold, each with the `tandem whatif TRACE --drop LINE`
that shows what it changes.

- `tandem check` on `ci_repair_source_race` with the source rule skipped
  (tests/property/broken.py) prints exactly which inputs of its
  counterexample, dropped alone, make it hold, and each printed command runs
  and exits 1 (the runs differ); `--json` carries the same;
- `check(..., out=...)` sets `counterexample.whatif`; each drop found is
  checked again on its fork, with every invariant;
- `single_drops`: a trace that violates nothing suggests nothing; a trace
  whose violation no single drop removes says so; the limit on the inputs
  tried (the last ones) is said; labels are short and named by type and id.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest

from tandem.adapters.cli import main
from tandem.replay.proving import check, check_trace
from tandem.replay.proving.drops import drops_tried_max, input_label, single_drops, whatif_command
from tandem.replay.traces import parse_trace
from tandem.replay.whatif.edits import Edit, apply
from tests.property import broken

SCENARIOS = Path(__file__).resolve().parents[2] / "fixtures" / "scenarios"

# The counterexample of ci_repair_source_race without the source rule: the
# setup on lines 5 to 11, `// move 1: ci-passes`, line 13, `// move 2: hold-done`, line 15.
HOLDING = [
    (5, "policy.set"),
    (7, "watchdog.heartbeat"),
    (8, "rule.set ci-repair"),
    (9, "action.propose hold"),
    (10, "observe check-1"),
    (11, "action.propose r1"),
    (13, "observe check-2"),
    (15, "executor.outcome hold, where it is violated"),
]


def expected_lines(trace: Path) -> list[str]:
    return [
        "what-if: 8 of the 9 input(s) tried, each dropped alone, make every invariant hold:",
        *(f"  without line {line} ({label}) every invariant holds: {whatif_command(str(trace), line)}" for line, label in HOLDING),
    ]


def test_cli_names_the_drops_that_make_it_hold_and_each_command_shows_a_difference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "race.json"
    shutil.copy(SCENARIOS / "ci_repair_source_race.json", scenario)
    monkeypatch.setattr("tandem.domain.dispatch.handle_input", broken.skip_source_rule)
    assert main(["check", str(scenario), "--depth", "4"]) == 1
    trace = tmp_path / "race.counterexample.jsonl"
    lines = capsys.readouterr().out.splitlines()
    assert lines[lines.index(f"counterexample: {trace} (tandem replay {trace} --json)") + 1 :] == expected_lines(trace)
    # Line 6 (conversation.open) is the one input the violation does not need
    # gone: without it r1 is claimed behind its source revision all the same.
    assert "line 6 " not in "\n".join(lines)
    for line, _ in HOLDING:
        command = shlex.split(whatif_command(str(trace), line))
        assert command[0] == "tandem"
        assert main(command[1:]) == 1, command  # the runs differ
        out = capsys.readouterr().out
        assert f"first divergence: line {line} (original: accepted; fork: absent)" in out


def test_cli_json_carries_the_drops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "race.json"
    shutil.copy(SCENARIOS / "ci_repair_source_race.json", scenario)
    monkeypatch.setattr("tandem.domain.dispatch.handle_input", broken.skip_source_rule)
    out = tmp_path / "ce.jsonl"
    assert main(["check", str(scenario), "--depth", "4", "--json", "--out", str(out)]) == 1
    whatif = json.loads(capsys.readouterr().out)["violation"]["whatif"]
    assert whatif == {
        "violated": True,
        "violated_at": 15,
        "inputs": 9,
        "tried": 9,
        "without": [
            {"line": line, "input": label.removesuffix(", where it is violated"), "command": f"tandem whatif {out} --drop {line}"}
            for line, label in HOLDING
        ],
    }


def test_cli_clean_prints_no_whatif(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(SCENARIOS / "ci_repair_source_race.json"), "--depth", "1"]) == 0
    assert "what-if" not in capsys.readouterr().out


def test_the_api_sets_the_counterexamples_whatif_and_each_fork_holds(tmp_path: Path) -> None:
    out = tmp_path / "ce.jsonl"
    found = check(SCENARIOS / "ci_repair_source_race.json", 4, step=broken.skip_source_rule, out=out).counterexample
    assert found is not None and found.whatif is not None
    assert [(drop.line, drop.label) for drop in found.whatif.holding] == [
        (line, label.removesuffix(", where it is violated")) for line, label in HOLDING
    ]
    assert found.whatif.violated_at == 15
    data = out.read_bytes()
    for line in (5, 6, 7, 8, 9, 10, 11, 13, 15):  # every input, dropped alone, replayed with every invariant
        edited, _ = apply(data, [Edit("drop", line, f"--drop {line}")])
        holds = check_trace(parse_trace(edited, str(out)).items, step=broken.skip_source_rule) is None
        assert holds == (line != 6), line
    assert check(SCENARIOS / "ci_repair_source_race.json", 4, step=broken.skip_source_rule).counterexample.whatif is None  # not written


def test_the_whatif_needs_the_trace_written() -> None:
    found = check(SCENARIOS / "ci_repair_source_race.json", 4, step=broken.skip_source_rule).counterexample
    with pytest.raises(ValueError, match="write the counterexample first"):
        found.try_drops(broken.skip_source_rule)


# ------------------------------------------------------------ single_drops


def _counterexample(tmp_path: Path) -> Path:
    out = tmp_path / "ce.jsonl"
    check(SCENARIOS / "ci_repair_source_race.json", 4, step=broken.skip_source_rule, out=out)
    return out


def test_a_trace_that_violates_nothing_suggests_nothing(tmp_path: Path) -> None:
    trace = _counterexample(tmp_path)
    drops = single_drops(trace.read_bytes(), str(trace))  # the real engine: it holds
    assert (drops.violated, drops.tried, drops.holding) == (False, 0, [])
    assert drops.lines() == [
        "what-if: replayed from its inputs alone, the trace violates no invariant: no input's removal to suggest"
    ]


def test_no_single_drop_removes_a_violation_that_comes_before_the_inputs_tried(tmp_path: Path) -> None:
    """A trace with an input after the one it is violated at, and only that
    last input tried: dropping it leaves the violation, so none is named."""
    trace = _counterexample(tmp_path)
    tick = b'{"type": "tick", "at": "2026-03-01T09:00:09Z", "actor": "daemon"}\n'
    trace.write_bytes(trace.read_bytes() + tick)
    drops = single_drops(trace.read_bytes(), str(trace), step=broken.skip_source_rule, limit=1)
    assert (drops.violated, drops.violated_at, drops.inputs, drops.tried, drops.holding) == (True, 15, 10, 1, [])
    assert drops.lines() == [
        "what-if: no single input's removal makes every invariant hold (1 input(s) tried)",
        "  (only the last 1 of the trace's 10 inputs were tried)",
    ]


def test_the_inputs_tried_are_the_last_ones_and_the_limit_is_said(tmp_path: Path) -> None:
    trace = _counterexample(tmp_path)
    drops = single_drops(trace.read_bytes(), str(trace), step=broken.skip_source_rule, limit=3)
    assert [drop.line for drop in drops.holding] == [11, 13, 15]
    assert drops.lines()[0] == "what-if: 3 of the 3 input(s) tried, each dropped alone, make every invariant hold:"
    assert drops.lines()[-1] == "  (only the last 3 of the trace's 9 inputs were tried)"
    assert 9 < drops_tried_max  # a counterexample this size is tried whole


def test_a_path_is_quoted_in_the_command_and_escaped_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert whatif_command("my ce.jsonl", 7) == "tandem whatif 'my ce.jsonl' --drop 7"
    scenario = tmp_path / "race\x1b[31m.json"
    shutil.copy(SCENARIOS / "ci_repair_source_race.json", scenario)
    monkeypatch.setattr("tandem.domain.dispatch.handle_input", broken.skip_source_rule)
    assert main(["check", str(scenario), "--depth", "4"]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert f"tandem whatif '{tmp_path}/race\\x1b[31m.counterexample.jsonl' --drop 15" in out


@pytest.mark.parametrize(
    ("raw", "label"),
    [
        (b'{"type": "executor.receipt", "operation_id": "op2", "attempt_id": "op2/a1"}', "executor.receipt op2/a1"),
        (b'{"type": "tick", "actor": "daemon"}', "tick"),
        (b'{"type": "task.delegate", "task_id": "' + b"t" * 60 + b'"}', "task.delegate " + "t" * 39 + "\u2026"),
        (b'{"type": "observe", "source_id": 7}', "observe"),
        (b"not json", "an input"),
    ],
    ids=["attempt-first", "no-id", "long-id", "not-a-string", "not-json"],
)
def test_an_inputs_label_is_its_type_and_main_id(raw: bytes, label: str) -> None:
    assert input_label(raw) == label
