"""A view keeps nothing per input that it never shows (issue 22, point 7:
the server's memory under load). The `rejections` view kept the name of
every input's file to tell whether the store holds several: over HTTP every
request is a file of its own (`http@N`), so it grew with every input. Now
it keeps the first file and a flag: its fold is the same size after 50 or
2,000 accepted requests, and it still shows `file` once there are two."""

from __future__ import annotations

import pickle

from tandem.replay.engine import Engine, Located
from tests.unit.helpers import at, decode, tick


def _view_bytes(requests: int) -> tuple[int, Engine]:
    engine = Engine()
    for number in range(requests):
        engine.submit(Located(decode(tick(at=at(number))), file=f"http@{number}", line=1))
    assert engine.views is not None
    return len(pickle.dumps(vars(engine.views.by_name["rejections"]))), engine


def test_the_rejections_view_keeps_nothing_per_accepted_request() -> None:
    few, _ = _view_bytes(50)
    many, engine = _view_bytes(2_000)
    assert many == few
    assert engine.views is not None
    rejections = engine.views.by_name["rejections"]
    assert rejections.several and rejections.render() == []


def test_one_file_shows_no_file_column_and_a_second_one_does() -> None:
    engine = Engine()
    engine.submit(Located(decode(tick(at=at(0))), file="a.jsonl", line=1))
    engine.submit(Located(decode(tick(at=at(1), id="t")), file="a.jsonl", line=2))
    engine.submit(Located(decode(tick(at=at(2), id="t")), file="a.jsonl", line=3))  # duplicate_input: a row
    assert engine.views is not None
    assert engine.views.view("rejections") == [{"line": 3, "type": "tick", "reason": "duplicate_input"}]
    engine.submit(Located(decode(tick(at=at(3))), file="b.jsonl", line=1))
    assert engine.views.view("rejections") == [{"line": 3, "type": "tick", "reason": "duplicate_input", "file": "a.jsonl"}]
