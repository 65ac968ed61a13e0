"""`tandem whatif` over a trace (issue 27; docs/whatif.md).

1. Every fixture with no edit: no difference.
2. Every fixture, dropping an input (its first, one in the middle, its
   last): the fork is, event for event and byte for byte, what replaying
   the trace without that line records, and its views are what `tandem
   replay --json` prints for that file; the first divergence is that line.
3. The same what-if twice: byte-identical `--json`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from tandem.adapters.ingest import ingest
from tandem.adapters.store import open_store
from tandem.adapters.trace import parse_trace
from tandem.adapters.whatif import trace_sides, whatif_trace
from tandem.replay.engine import Engine
from tandem.replay.whatif.diff import compare
from tandem.replay.whatif.edits import parse_drop
from tests.integration.fixture_traces import VALID_TRACES, trace_id

ROOT = Path(__file__).resolve().parents[2]


def input_lines(path: str) -> list[int]:
    lines = Path(path).read_bytes().split(b"\n")
    return [n for n, line in enumerate(lines, start=1) if line.strip() and not line.strip().startswith(b"//")]


def sample(path: str) -> list[int]:
    lines = input_lines(path)
    return sorted({lines[0], lines[len(lines) // 2], lines[-1]})


def without(path: str, line: int) -> bytes:
    lines = Path(path).read_bytes().split(b"\n")
    return b"\n".join(lines[: line - 1] + lines[line:])


def replayed_events(data: bytes, path: str) -> list[bytes]:
    store = open_store("memory:")
    ingest(Engine(store), parse_trace(data, path))
    return [msgspec.json.encode(event) for _, event in store.read()]


@pytest.mark.parametrize("path", VALID_TRACES, ids=trace_id)
def test_no_edit_is_no_difference(path: str) -> None:
    result = whatif_trace(path, [])
    assert not result.different, (result.first_divergence, [t.id for t in result.decisions], [v.view for v in result.views])
    assert result.first_divergence is None and result.decisions == [] and result.views == []


@pytest.mark.parametrize("path", VALID_TRACES, ids=trace_id)
def test_a_dropped_input_is_the_trace_replayed_without_that_line(path: str) -> None:
    for line in sample(path):
        original, fork = trace_sides(path, [parse_drop(str(line))])
        assert [msgspec.json.encode(e) for _, e in fork.events] == replayed_events(without(path, line), path), line
        assert [msgspec.json.encode(e) for _, e in original.events] == replayed_events(Path(path).read_bytes(), path)
        result = compare(original, fork, source=path, unit="line", edits=[f"--drop {line}"], until=None)
        assert result.different and result.first_divergence is not None
        assert (result.first_divergence.where.line, result.first_divergence.fork) == (line, "absent")


def tandem(*arguments: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tandem.adapters.cli", *arguments], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("path", VALID_TRACES[::6], ids=trace_id)
def test_the_forks_views_are_what_tandem_replay_prints_for_the_edited_file(path: str, tmp_path: Path) -> None:
    line = sample(path)[1]
    edited = tmp_path / Path(path).name  # the same name: the same trace, one line less
    edited.write_bytes(without(path, line))
    replayed = tandem("replay", str(edited), "--json")
    assert replayed.returncode == 0, replayed.stderr
    _, fork = trace_sides(path, [parse_drop(str(line))])
    assert json.loads(json.dumps(fork.views)) == json.loads(replayed.stdout)


def test_the_same_whatif_twice_is_byte_identical() -> None:
    trace = "fixtures/gates/16_backend_frontend_tests.jsonl"
    runs = [tandem("whatif", trace, "--drop", "29", "--shift", "36=30", "--json") for _ in range(2)]
    assert [run.returncode for run in runs] == [1, 1], runs[0].stderr
    assert runs[0].stdout == runs[1].stdout and json.loads(runs[0].stdout)["different"] is True
