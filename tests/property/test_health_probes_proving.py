"""Contract v1.2 section 4 under the bounded checker and the fuzzer: the
health probes' invariants (`heartbeat_never_fresher_than_its_beat`,
`no_delivery_while_provider_unready`, `unready_provider_is_the_deferral`) hold for every interleaving of the
shipped scenario, and each finds its deliberately broken rule
(tests/property/broken.py) with a shortest counterexample the real engine
replays clean."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis.stateful import run_state_machine_as_test

from tandem.replay.proving import check, check_trace
from tandem.replay.proving.fuzz import FuzzFailure, machine, machine_settings
from tests.property import broken

SCENARIO = Path(__file__).resolve().parents[2] / "fixtures" / "scenarios" / "health_probes.json"


@pytest.mark.parametrize(
    ("rules", "invariant", "moves"),
    [
        (broken.stamp_heartbeats_at_import, "heartbeat_never_fresher_than_its_beat", ["old-row-imported"]),
        (broken.deliver_while_provider_unready, "no_delivery_while_provider_unready", ["login-expired", "message"]),
        (broken.forget_unready_deferral, "unready_provider_is_the_deferral", ["login-expired"]),
    ],
    ids=["heartbeat-stamped-at-import", "delivered-while-unready", "unready-not-deferred"],
)
def test_the_checker_finds_each_broken_probe(rules, invariant: str, moves: list[str], tmp_path: Path) -> None:
    out = tmp_path / "counterexample.jsonl"
    result = check(SCENARIO, 2, step=rules, out=out)
    found = result.counterexample
    assert found is not None and found.invariant == invariant, found
    assert found.moves == moves
    again = check_trace(out, step=rules)
    assert again is not None and again.invariant.name == invariant
    assert check_trace(out) is None  # the real engine: nothing violated


FIND = machine_settings(examples=300, steps=30, derandomize=True, database=None)


def test_the_fuzzer_finds_a_heartbeat_stamped_at_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TANDEM_FUZZ_OUT", str(tmp_path))
    hunt = machine("Hunt_stamp_heartbeats_at_import", step=broken.stamp_heartbeats_at_import, rules=("propose", "heartbeat"))
    with pytest.raises(FuzzFailure) as caught:
        run_state_machine_as_test(hunt, settings=FIND)
    assert caught.value.invariant == "heartbeat_never_fresher_than_its_beat"
    assert check_trace(caught.value.trace) is None
