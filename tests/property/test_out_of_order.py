"""Any order of delivery (contract v1.1, `source_time`): for a set of
versions of a few sources — each version newer than the last, a source's
deletion carrying its last edit's time, as GitHub sends it — delivered in
any order, every cause's inbox `latest` is what the in-order delivery leaves,
its revision counts only the versions that came in order, and a deleted
source stays deleted."""

from __future__ import annotations

import datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.helpers import PR, at, inbox_row, observe, when, world
from tests.unit.helpers import given as given_inputs

BASE = datetime.datetime(2026, 2, 1, 10, 0, tzinfo=datetime.timezone.utc)


def stamp(seconds: int) -> str:
    return (BASE + datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


@st.composite
def histories(draw: Any) -> list[dict[str, Any]]:
    """Per source (1 to 3 comments), 1 to 5 versions at increasing times,
    maybe ending in a deletion at the last edit's time."""
    versions: list[dict[str, Any]] = []
    for number in range(draw(st.integers(1, 3))):
        source = f"c-{number}"
        times = sorted(draw(st.sets(st.integers(0, 10_000), min_size=1, max_size=5)))
        for index, seconds in enumerate(times):
            versions.append({"source_id": source, "fingerprint": f"{source}-v{index}", "source_time": stamp(seconds), "text": f"{source} body {index}"})
        if draw(st.booleans()):
            last = versions[-1]
            versions.append({**last, "fingerprint": f"{source}-deleted", "deleted": True})
    return versions


def deliver(versions: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The inbox rows, by cause, after delivering `versions` in that order."""
    engine = given_inputs(world())
    for number, version in enumerate(versions, start=1):
        when(engine, observe(kind="comment", at=at(number), **version))
    return {f"comment:{PR}:{source}": inbox_row(engine, f"comment:{PR}:{source}") for source in {v["source_id"] for v in versions}}


@settings(max_examples=60, deadline=None)
@given(data=st.data(), versions=histories())
def test_any_delivery_order_leaves_the_in_order_latest(data: Any, versions: list[dict[str, Any]]) -> None:
    in_order = deliver(versions)
    shuffled = data.draw(st.permutations(versions))
    delivered = deliver(shuffled)
    for cause, row in in_order.items():
        assert row["out_of_order"] == 0, cause
        assert delivered[cause]["latest"] == row["latest"], cause
        assert delivered[cause]["revision"] + delivered[cause]["out_of_order"] == row["revision"], cause
        source = cause.rsplit(":", 1)[1]
        if any(v.get("deleted") for v in versions if v["source_id"] == source):
            assert delivered[cause]["latest"]["deleted"] is True, cause


def test_newest_first_counts_every_older_one_out_of_order() -> None:
    """The property's worst case, by hand: three edits, newest delivered first."""
    versions = [{"source_id": "c-0", "fingerprint": f"v{i}", "source_time": stamp(i), "text": f"body {i}"} for i in range(3)]
    (row,) = deliver(versions[::-1]).values()
    assert (row["revision"], row["out_of_order"], row["latest"]["excerpt"]) == (1, 2, "body 2")
