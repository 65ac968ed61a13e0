"""The stream's row changes (docs/api.md, "Row changes", `GET
/v1/stream?rows=1`), in process, on every fixture: a replica that starts
from the empty views and applies each commit's row changes equals the views
document after every commit; each commit's changes name exactly the views
it names; and the changes rebuilt from the log (replay/commits.py, as a
restarted server rebuilds its resume ring) are the live ones, byte for byte.
Each commit's keys (`?rows=keys`) are exactly those its row changes name.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from tandem.client.replica import Replica
from tandem.adapters.runtime import LiveEngine
from tandem.adapters.store import open_store
from tandem.adapters.trace import parse_trace, read_trace
from tandem.projections import Views
from tandem.replay import commits as commits_module
from tandem.replay.commits import Commit, summarize, with_changed_views

from tests.integration.fixture_traces import ROOT, VALID_TRACES, trace_id


def as_json(value: Any) -> Any:
    """As a client decodes it: the server's encoding, read back."""
    return json.loads(msgspec.json.encode(value))


def live_engine() -> tuple[LiveEngine, list[Commit]]:
    engine = LiveEngine(open_store("memory:"))
    engine.rows_wanted = lambda: True
    commits: list[Commit] = []
    engine.listeners.append(commits.append)
    return engine, commits


def touched_keys(rows: dict[str, Any]) -> dict[str, Any]:
    """What `?rows=keys` must say of a commit whose `?rows=1` changes are
    `rows`: each keyed change's upserted and removed keys, sorted; null for
    a change that names no keys."""
    said: dict[str, Any] = {}
    for name, change in rows.items():
        field = change.get("key")
        keys = [row[field] for row in change["upserted"]] + change["removed"] if field else []
        said[name] = {"key": field, "touched": sorted(keys)} if field else None
    return said


def follow(engine: LiveEngine, commits: list[Commit], lines: list[Any], replica: Replica) -> None:
    """Submit each line; after each commit, the replica applies its row
    changes and must equal the views."""
    views = engine.views
    assert views is not None
    for line in lines:
        before = len(commits)
        engine.submit(line.item)
        if len(commits) == before:
            continue
        commit = commits[-1]
        assert commit.rows is not None, line.item.line
        rows = json.loads(commit.rows)
        assert list(rows) == commit.views, (line.item.line, list(rows), commit.views)
        # A keyed view says its rows, never itself whole (its cost is what changed).
        whole = [name for name, change in rows.items() if views.by_name[name].key is not None and "key" not in change]
        assert not whole, (line.item.line, whole)
        assert commit.keys is not None and touched_keys(rows) == json.loads(commit.keys), line.item.line
        assert replica.apply({"position": commit.position, "rows": rows})
        expected = as_json({**views.document(), "position": commit.position})
        got = replica.document()
        wrong = sorted(name for name in expected if got[name] != expected[name])
        assert not wrong, (f"line {line.item.line} ({line.item.input.input_type}): the replica's {wrong} differ", rows)


@pytest.mark.parametrize("path", VALID_TRACES, ids=trace_id)
def test_a_replica_kept_by_the_row_changes_equals_the_views(path: str) -> None:
    engine, commits = live_engine()
    replica = Replica(as_json({**Views().document(), "position": 0}))
    follow(engine, commits, read_trace(path).lines, replica)
    assert commits, path
    # Rebuilt from the log, from a position in the middle (views folded up
    # to there, then commit by commit): the same row changes.
    assert engine.store is not None
    kept = commits[len(commits) // 2 :]
    rebuilt = with_changed_views(engine.store, [summarize(commit.head_before, commit.events) for commit in kept])
    assert [summary.rows for summary in rebuilt] == [commit.rows for commit in kept]
    assert [summary.keys for summary in rebuilt] == [commit.keys for commit in kept]
    assert [list(summary.views or ()) for summary in rebuilt] == [commit.views for commit in kept]


def test_rejections_are_appended_then_sent_whole_when_file_appears() -> None:
    """A rejection is appended; once a second file shows `file` in every
    row, the rows are sent whole."""
    first = b'{"type": "task.cancel", "at": "2026-03-01T09:00:00Z", "actor": "human", "task_id": "nope"}\n'
    engine, commits = live_engine()
    replica = Replica(as_json({**Views().document(), "position": 0}))
    follow(engine, commits, parse_trace(first * 2, "one.jsonl").lines, replica)
    assert json.loads(commits[-1].rows or b"")["rejections"] == {"appended": [{"line": 2, "type": "task.cancel", "reason": "unknown_task"}]}
    follow(engine, commits, parse_trace(first, "two.jsonl").lines, replica)
    whole = json.loads(commits[-1].rows or b"")["rejections"]
    assert list(whole) == ["rows"] and [row["file"] for row in whole["rows"]] == ["one.jsonl", "one.jsonl", "two.jsonl"]


def test_row_changes_over_the_bound_are_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit whose row changes pass `message_rows_bytes_max` carries none
    (the stream sends its rows clients a reset); the next one does again."""
    data = (ROOT / "fixtures" / "gates" / "02_prerequisite_user_away.jsonl").read_bytes()
    data = data.replace(b'"goal":"Email signup"', b'"goal":"' + b"x" * 3_000 + b'"')
    lines = [line for line in parse_trace(data, "big.jsonl").lines][:9]
    assert lines[7].item.input.input_type == "task.delegate"
    monkeypatch.setattr(commits_module, "message_rows_bytes_max", 2_000)
    engine, commits = live_engine()
    for line in lines:
        engine.submit(line.item)
    assert [commit.rows is None for commit in commits] == [False] * 7 + [True, False]
    assert "tasks" in commits[7].views


@pytest.mark.parametrize("path", VALID_TRACES, ids=trace_id)
def test_the_health_views_deliverable_counts_are_kept_after_every_event(path: str) -> None:
    """`health` counts the deliverable causes as they change (its render
    walks no candidates, so a commit's `value` costs no more with more
    causes): after every event, the counts are the candidates no delivery holds."""
    engine, _ = live_engine()
    assert engine.views is not None and engine.store is not None
    for line in read_trace(path).lines:
        engine.submit(line.item)
    views = Views()
    health = views.by_name["health"]
    for _, event in engine.store.read(after=0):
        views.apply(event)
        walked: dict[str, int] = {}
        for cause_key, foreground_id in health.candidates.items():  # type: ignore[attr-defined]
            if cause_key not in health.holder:  # type: ignore[attr-defined]
                walked[foreground_id] = walked.get(foreground_id, 0) + 1
        assert health.deliverable == walked, event  # type: ignore[attr-defined]
