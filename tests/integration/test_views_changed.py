"""The live stream names the views a commit changed (API.md, "Live changes"):
every view whose rendered value changed is named, and an input that changes
no view (a tick while nothing is due) names none."""

from __future__ import annotations


import pytest

from tandem.adapters.runtime import LiveEngine, Runtime, Settings
from tandem.adapters.store import open_store
from tandem.adapters.trace import parse_trace, read_trace
from tandem.replay.commits import Commit
from tandem.replay.edge import TokenActor

from tests.integration.fixture_traces import VALID_TRACES, trace_id


@pytest.mark.parametrize("path", VALID_TRACES, ids=trace_id)
def test_every_changed_view_is_named(path: str) -> None:
    engine = LiveEngine(open_store("memory:"))
    commits: list[Commit] = []
    engine.listeners.append(commits.append)
    assert engine.views is not None
    for line in read_trace(path).lines:
        before = engine.views.document()
        engine.submit(line.item)
        after = engine.views.document()
        changed = {name for name in before if before[name] != after[name]}
        assert changed <= set(commits[-1].views), (line.item.line, line.item.input.input_type)


def test_an_idle_tick_names_no_view() -> None:
    trace = parse_trace(
        b'{"type": "watchdog.heartbeat", "at": "2026-03-01T09:00:00Z", "actor": "watchdog", "generation": 1}\n'
        b'{"type": "tick", "at": "2026-03-01T09:00:30Z", "actor": "daemon"}\n'
        b'{"type": "tick", "at": "2026-03-01T09:05:00Z", "actor": "daemon"}\n',
        "ticks",
    )
    engine = LiveEngine(open_store("memory:"))
    commits: list[Commit] = []
    engine.listeners.append(commits.append)
    for line in trace.lines:
        engine.submit(line.item)
    assert commits[0].views == ["health"]  # the first heartbeat: fresh
    assert commits[1].views == []  # 30 s on: still fresh, nothing shows it
    assert commits[2].views == ["health"]  # 5 min on: stale (watchdog_max_age_s 120)


def test_a_request_gets_back_the_commit_its_listeners_heard() -> None:
    """One transaction, one `Commit`: what `submit_body` returns (the HTTP
    answer, the console's flash) is the very object the stream and the log's
    index were told, its changed views with it; a body of blank lines
    commits nothing and tells no one."""
    runtime = Runtime(Settings(store_url="memory:", runtime_inputs=False))
    runtime.open()
    try:
        assert runtime.engine is not None
        heard: list[Commit] = []
        runtime.engine.listeners.append(heard.append)
        body = b'{"type": "watchdog.heartbeat", "at": "2026-03-01T09:00:00Z", "generation": 1}\n' * 2
        commit = runtime.submit_body(body, True, TokenActor("watchdog"))
        assert heard == [commit] and heard[0] is commit
        assert commit.head_before == 0 and commit.position == runtime.engine.committed > 0
        assert "health" in commit.views
        nothing = runtime.submit_body(b"\n// no input\n", True, TokenActor("watchdog"))
        assert heard == [commit] and nothing.events == [] and nothing.position == commit.position
    finally:
        runtime.close()
