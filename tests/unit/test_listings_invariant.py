"""The state invariant `listings_match_rows` (replay/proving/state_invariants.py)
holds on a fixture's views and catches each way the keys the views keep
beside their rows could drift from them: a key in the wrong state, a key
missing, a retained cause forgotten or one kept that is not retained."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable

import pytest

from tandem.adapters.ingest import ingest
from tandem.adapters.store import open_store
from tandem.adapters.trace import parse_trace
from tandem.projections import Views
from tandem.replay.engine import Engine
from tandem.replay.proving.state_invariants import listings_match_rows

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "traces" / "idempotency_and_gates.jsonl"


@pytest.fixture(scope="module")
def views() -> Views:
    engine = Engine(open_store("memory:"), snapshot_every=0)
    ingest(engine, parse_trace(FIXTURE.read_bytes(), FIXTURE.name))
    assert engine.views is not None
    return engine.views


class Seen:
    """What the invariant reads of a World: the views alone."""

    def __init__(self, views: Views) -> None:
        self.views = views
        self.replayed_views = views


def _moved(views: Views) -> None:
    tasks: Any = views.by_name["tasks"]
    key = next(iter(tasks.rows))
    state = tasks.rows[key]["state"]
    tasks.by_state.keys[state].pop(key)
    tasks.by_state.keys.setdefault("cancelled" if state != "cancelled" else "active", {})[key] = None


def _dropped(views: Views) -> None:
    actions: Any = views.by_name["actions"]
    key = next(iter(actions.rows))
    actions.by_state.keys[actions.rows[key]["state"]].pop(key)


def _forgotten(views: Views) -> None:
    inbox: Any = views.by_name["inbox"]
    assert inbox.retained, "the fixture's inbox retains a cause"
    inbox.retained.pop(next(iter(inbox.retained)))


def _invented(views: Views) -> None:
    inbox: Any = views.by_name["inbox"]
    inbox.retained["no-such-cause"] = None


def test_the_fixtures_views_keep_their_listings(views: Views) -> None:
    assert listings_match_rows.check(Seen(views)) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("break_it", [_moved, _dropped, _forgotten, _invented], ids=lambda f: f.__name__.strip("_"))
def test_a_listing_that_drifts_from_the_rows_is_caught(views: Views, break_it: Callable[[Views], None]) -> None:
    broken = copy.deepcopy(views)
    break_it(broken)
    said = listings_match_rows.check(Seen(broken))  # type: ignore[arg-type]
    assert said is not None and ("keys by state" in said or "retained" in said), said
