"""Property tests: the invariants catalog (`replay/proving/invariants.py`) after EVERY
input of random traces.

The traces come from `tests.property.strategies.traces()` (well-formed inputs
over a small universe of ids, mostly referring to what exists, with current
revisions most of the time). Each trace is applied input by input to a fresh
in-memory `Engine`, watched by a `tandem.replay.proving.Monitor` running the whole
catalog (docs/invariants.md): every event is checked against the state it is
applied to (no claim while blocked or under stale authority, no retry of an
`unknown` attempt, terminal actions never change, grants inside the policy,
...) and after every input the state is (one live action per cause, exact
`blocked_by`, messages kept, replay of the stored events equal to the live
state and views).

And separately, determinism: the same trace applied to two fresh engines gives
byte-identical encoded events.

Run time: the default (60 examples of up to 40 random inputs each, per test)
takes a few seconds. For a longer run set TANDEM_FUZZ_EXAMPLES, e.g.

    TANDEM_FUZZ_EXAMPLES=2000 python -m pytest tests/property -q

(TANDEM_FUZZ_STEPS changes the maximum number of random inputs per trace,
default 40.) The stateful fuzzer with restarts and crash injection is
tests/property/test_fuzz.py.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, given, settings

from tandem.domain.events import encode_event
from tandem.replay.engine import Engine, Located
from tandem.replay.proving import Monitor
from tests.property.strategies import decode, traces

FUZZ_EXAMPLES = int(os.environ.get("TANDEM_FUZZ_EXAMPLES", "60"))
FUZZ_STEPS = int(os.environ.get("TANDEM_FUZZ_STEPS", "40"))

FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)


@FUZZ
@given(trace=traces(max_steps=FUZZ_STEPS))
def test_invariants_hold_after_every_input(trace: list[dict[str, Any]]) -> None:
    engine = Engine()
    monitor = Monitor()
    for number, line in enumerate(trace, start=1):
        value = decode(line)
        events = engine.submit(Located(value, line=number))
        monitor.observe(value, events, engine.state, engine.views, line=number)


@FUZZ
@given(trace=traces(max_steps=FUZZ_STEPS))
def test_same_trace_gives_byte_identical_events(trace: list[dict[str, Any]]) -> None:
    runs = []
    for _ in range(2):
        engine = Engine()
        encoded: list[bytes] = []
        for number, line in enumerate(trace, start=1):
            encoded.extend(encode_event(e) for e in engine.submit(Located(decode(line), line=number)))
        runs.append(encoded)
    assert runs[0] == runs[1]
