"""A background's own activity is recorded but never becomes news, and never
hides news: the same state reported otherwise later is a new revision."""

from __future__ import annotations

from tandem.domain import events as ev
from tests.unit.helpers import given, kinds, line, of_type, when, world


def observation(fingerprint: str, origin: str | None = None, n: float = 10, **fields: object):
    body = {"source_id": "ci-7", "kind": "ci", "scope": "pr/7", "fingerprint": fingerprint, "complete": True, **fields}
    if origin is not None:
        body["origin_conversation"] = origin
    return line("observe", "source", n, **body)


def test_background_origin_revises_no_update() -> None:
    engine = given(world())
    events = when(engine, observation("failed#1", origin="bg"))
    recorded = of_type(events, ev.ObservationRecorded)[0]
    assert recorded.update_revision is None and recorded.local_revision == 1
    assert engine.views.view("inbox") == []


def test_the_same_state_reported_later_without_that_origin_is_news() -> None:
    engine = given(world(), observation("failed#1", origin="bg"))
    events = when(engine, observation("failed#1", n=11))
    assert kinds(events)[:2] == ["InputAccepted", "ObservationRecorded"]
    recorded = of_type(events, ev.ObservationRecorded)[0]
    assert (recorded.local_revision, recorded.update_revision) == (2, 1)
    assert [row["revision"] for row in engine.views.view("inbox")] == [1]


def test_a_versioned_background_observation_does_not_mark_its_version_seen() -> None:
    engine = given(world(), observation("failed#1", origin="bg", source_version="run-9"))
    events = when(engine, observation("failed#1", n=11, source_version="run-9"))
    assert of_type(events, ev.ObservationRecorded)[0].update_revision == 1
    # ...and once reported by the source itself, it is a repeat.
    repeat = when(engine, observation("failed#1", n=12, source_version="run-9"))
    assert of_type(repeat, ev.ObservationRepeated)[0].counted is True
