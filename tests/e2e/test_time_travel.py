"""Time travel: `tandem replay TRACE --until LINE` and `tandem show --at POSITION`
give the views exactly as they were then: the same as replaying a trace cut
at that line, and the same at every input boundary of a store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tandem.adapters.cli import main
from tandem.adapters.ingest import ingest
from tandem.adapters.store import open_store
from tandem.adapters.trace import read_trace
from tandem.domain import events as ev
from tandem.replay.engine import Engine, input_boundary, project

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "fixtures" / "gates" / "02_prerequisite_user_away.jsonl"
TRACES = [EXAMPLE, REPO / "fixtures" / "traces" / "obligations_fallback.jsonl"]


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def input_lines(trace: Path) -> list[int]:
    return [n for n, text in enumerate(trace.read_text().splitlines(), 1) if text.strip() and not text.startswith("//")]


@pytest.mark.parametrize("trace", TRACES, ids=[t.stem for t in TRACES])
def test_replay_until_a_line_equals_a_replay_of_the_trace_cut_there(trace: Path, tmp_path: Path, capsys) -> None:
    lines = trace.read_text().splitlines(keepends=True)
    for cut in input_lines(trace)[:: max(1, len(input_lines(trace)) // 6)] + [input_lines(trace)[-1]]:
        shortened = tmp_path / trace.name  # same name: same `file` in rejections
        shortened.write_text("".join(lines[:cut]))
        code, expected, _ = run_cli(capsys, "replay", str(shortened), "--json")
        assert code == 0
        code, travelled, _ = run_cli(capsys, "replay", str(trace), "--json", "--until", str(cut))
        assert code == 0
        assert json.loads(travelled) == json.loads(expected), f"--until {cut}"


def test_replay_until_still_validates_the_whole_trace(tmp_path: Path, capsys) -> None:
    trace = tmp_path / "bad.jsonl"
    trace.write_text(EXAMPLE.read_text() + '{"type": "tick"}\n')
    code, out, err = run_cli(capsys, "replay", str(trace), "--json", "--until", "12")
    assert code == 2 and out == "" and "missing required field" in err


def test_show_at_every_input_boundary_equals_the_replay_up_to_that_input(tmp_path: Path, capsys) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = Engine(open_store(url))
    ingest(engine, read_trace(str(EXAMPLE)), batch_inputs=5)  # batches: boundaries inside transactions too
    store = open_store(url)
    starts: list[tuple[int, int]] = []  # (position before the input, its line)
    position = 0
    for page in store.read_pages():
        for event in page:
            if isinstance(event, (ev.InputAccepted, ev.InputRejected)):
                starts.append((position, event.line))
            position += 1
    assert len(starts) == len(input_lines(EXAMPLE))
    for (before, _), (_, previous_line) in zip(starts[1:], starts):
        code, shown, _ = run_cli(capsys, "show", "--store", url, "--json", "--at", str(before))
        assert code == 0
        code, replayed, _ = run_cli(capsys, "replay", str(EXAMPLE), "--json", "--until", str(previous_line))
        assert json.loads(shown) == json.loads(replayed), f"--at {before} vs --until {previous_line}"


def test_show_at_a_position_inside_an_input_shows_the_views_before_it(tmp_path: Path, capsys) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    ingest(Engine(open_store(url)), read_trace(str(EXAMPLE)))
    store = open_store(url)
    events = [event for page in store.read_pages() for event in page]
    claim = next(n for n, event in enumerate(events) if isinstance(event, ev.ActionClaimed))
    start = max(n for n in range(claim) if isinstance(events[n], (ev.InputAccepted, ev.InputRejected)))
    assert input_boundary(store, claim) == start  # the claim's input had begun, not ended
    code, shown, err = run_cli(capsys, "show", "--store", url, "--json", "--at", str(claim))
    assert code == 0 and f"showing the views before that input (position {start})" in err
    assert json.loads(shown) == project(store, until=start).document()
    code, _, err = run_cli(capsys, "show", "--store", url, "--at", str(len(events) + 1))
    assert code == 2 and "past the store's last event" in err
    code, shown, _ = run_cli(capsys, "show", "--store", url, "--json", "--at", "0")
    assert json.loads(shown)["tasks"] == []
