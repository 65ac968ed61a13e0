"""What a console page of the past reads (adapters/console/reading.py,
adapters/past_folds.py): the boundaries it steps between, the engine's clock
read from the log alone, and the folds it keeps. Each is checked against
the fold itself, at every position of a fixture trace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tandem.adapters.console.reading import clock_at, next_boundary, previous_boundary
from tandem.adapters.ingest import ingest
from tandem.adapters.past_folds import PastFolds
from tandem.adapters.store import open_store
from tandem.adapters.trace import parse_trace
from tandem.domain import events as ev
from tandem.replay.engine import Engine, input_boundary, project

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"


@pytest.fixture(scope="module", params=["question_holds_open", "github_sources", "context_ceiling"])
def store(request: pytest.FixtureRequest) -> Any:
    path = FIXTURES / f"{request.param}.jsonl"
    if not path.exists():
        pytest.fail(f"no fixture {path}")
    engine = Engine(open_store("memory:"), snapshot_every=0)
    ingest(engine, parse_trace(path.read_bytes(), path.name))
    return engine.store


def test_the_clock_read_from_the_log_is_the_folds_at_every_boundary(store: Any) -> None:
    for position in range(store.head() + 1):
        boundary = input_boundary(store, position)
        assert clock_at(store, boundary) == project(store, until=boundary).by_name["health"].now, position


def test_previous_and_next_step_over_one_input(store: Any) -> None:
    """From every position: "previous" is the views before the last input
    folded, "next" those after the first input not folded, its events ended
    (by the next input, or a batch's marker, or the head); a plain scan of
    the whole log is the model."""
    head = store.head()
    events = dict(store.read(after=0, until=head))
    records = [p for p, event in events.items() if isinstance(event, (ev.InputAccepted, ev.InputRejected))]
    starts = [p for p, event in events.items() if isinstance(event, (ev.InputAccepted, ev.InputRejected, ev.SourceProgressed))]
    for boundary in range(head + 1):
        before = [p for p in records if p <= boundary]
        assert previous_boundary(store, boundary) == (before[-1] - 1 if before else None), boundary
        after = [p for p in records if p > boundary]
        ends = [p for p in starts if after and p > after[0]]
        expected = None if not after else ends[0] - 1 if ends else head
        assert next_boundary(store, boundary, head) == expected, boundary


def test_past_folds_keep_the_last_asked_and_fold_each_once() -> None:
    folded: list[int] = []

    def fold(position: int) -> object:
        folded.append(position)
        return object()

    kept = PastFolds(kept=2)
    first = kept.at(10, fold)
    assert kept.at(10, fold) is first and folded == [10]
    kept.at(20, fold)
    kept.at(10, fold)  # the latest asked now: 20 is the one to go
    kept.at(30, fold)
    assert kept.at(10, fold) is first and folded == [10, 20, 30]
    kept.at(20, fold)
    assert folded == [10, 20, 30, 20]
