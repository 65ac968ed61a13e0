"""What an executor reads in the `actions` view (docs/contract/views.md,
"What an executor reads") is the engine's own record, after every input of
every fixture: `input_revisions` the revisions the engine validates the
action under, `attempt_id` and `envelope` its latest attempt while that is
out with the executor (else null), and the view's claim order holds exactly
those actions."""

from __future__ import annotations

from pathlib import Path

import pytest

from tandem.adapters.runtime import LiveEngine
from tandem.adapters.store import open_store
from tandem.adapters.trace import read_trace
from tandem.domain.lifecycles import ACTION
from tandem.projections.actions import envelope_row, revisions_row

from tests.integration.fixture_traces import VALID_TRACES, trace_id


@pytest.mark.parametrize("path", VALID_TRACES, ids=trace_id)
def test_the_executor_keys_are_the_engine_s_record_after_every_input(path: str) -> None:
    engine = LiveEngine(open_store("memory:"))
    assert engine.views is not None
    view = engine.views.by_name["actions"]
    for line in read_trace(path).lines:
        engine.submit(line.item)
        where = (Path(path).name, line.item.line)
        actions = engine.state.actions.by_id
        rows = engine.views.view("actions")
        assert [row["operation_id"] for row in rows] == sorted(actions), where
        for row in rows:
            action = actions[row["operation_id"]]
            assert row["input_revisions"] == revisions_row(action.revisions), where
            assert (row["target"], row["write_paths"]) == (action.target, list(action.write_paths)), where
            if action.state in ACTION.in_flight:
                latest = action.attempts[-1]
                assert (row["attempt_id"], row["envelope"]) == (latest.attempt_id, envelope_row(latest.envelope)), where
            else:
                assert (row["attempt_id"], row["envelope"]) == (None, None), where
        out = {op for op, action in actions.items() if action.state in ACTION.in_flight}
        assert set(view.out) == out, where
