"""The streaming trace (replay/trace_scan.py, issue 15): pass 1 checks a file
as `parse_trace` does, keeping no input; pass 2 reads it again a group at a
time, only bytes pass 1 checked; ingest holds one batch. Compared against the
parser that reads a file whole, and against a file changed between passes."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tandem.adapters.ingest import ingest
from tandem.adapters.store import open_store
from tandem.replay import trace_scan
from tandem.replay.engine import Engine, project
from tandem.replay.trace_scan import TraceChanged, scan_trace
from tandem.replay.traces import TraceInvalid, line_bytes_max, parse_trace
from tests.unit.helpers import tick_trace, world

ROOT = Path(__file__).resolve().parents[2]
TRACES = sorted((ROOT / "fixtures" / "traces").glob("*.jsonl"))


def _read(source) -> list[tuple[object, int, int, bytes]]:
    return [(line.item.input, line.item.line, line.end_offset, data) for line, data in source.read()]


def _outcome(path: Path):
    """What each parser makes of the file: its lines and bytes, or its errors."""
    try:
        whole = _read(parse_trace(path.read_bytes(), str(path)))
    except TraceInvalid as error:
        whole = [(e.line, e.message) for e in error.errors], error.total
    try:
        streamed = _read(scan_trace(str(path)))
    except TraceInvalid as error:
        streamed = [(e.line, e.message) for e in error.errors], error.total
    return whole, streamed


@pytest.mark.parametrize("path", TRACES, ids=[path.stem for path in TRACES])
def test_a_fixture_reads_the_same_streamed_as_whole(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace_scan, "scan_group_lines_max", 3)  # many groups, many seams
    whole, streamed = _outcome(path)
    assert streamed == whole and whole


_valid = [json.dumps(line).encode() for line in world()[:4]]
_line = st.sampled_from(
    [b"", b"   ", b"// a comment", "\u00a0".encode(), b"{bad json", b'{"type": "nope"}', b"\xff", *_valid, _valid[0] + b"\r"]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_line, max_size=12), final_newline=st.booleans(), group=st.integers(1, 4))
def test_any_mix_of_lines_reads_the_same_streamed_as_whole(tmp_path: Path, lines, final_newline, group) -> None:
    path = tmp_path / "mix.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline and lines else b""))
    original = trace_scan.scan_group_lines_max
    trace_scan.scan_group_lines_max = group
    try:
        whole, streamed = _outcome(path)
    finally:
        trace_scan.scan_group_lines_max = original
    assert streamed == whole


def test_an_over_long_line_is_named_and_the_lines_after_it_keep_their_numbers(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    path.write_bytes(b"\n".join([_valid[0], b"x" * (line_bytes_max + 5), b"{bad", _valid[1]]) + b"\n")
    with pytest.raises(TraceInvalid) as caught:
        scan_trace(str(path))
    assert [(e.line, e.message) for e in caught.value.errors] == [
        (2, f"line is {line_bytes_max + 5} bytes, over the {line_bytes_max}-byte limit"),
        (3, "bad JSON: object keys must be strings (byte 1)"),
    ]


def test_a_file_changed_after_its_check_applies_no_changed_line_and_resumes(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(trace_scan, "scan_group_lines_max", 10)
    path = tick_trace(tmp_path / "t.jsonl", 40)
    scanned = scan_trace(str(path))
    lines = path.read_text().splitlines()
    changed_line = 25  # in the third group
    lines[changed_line - 1] = lines[changed_line - 1].replace("{", "{ ", 1)  # other bytes, the same input
    path.write_text("\n".join(lines) + "\n")
    store = open_store(f"sqlite:///{tmp_path / 's.db'}")
    engine = Engine(store, with_views=False)
    with pytest.raises(TraceChanged, match=r"t\.jsonl changed after it was checked \(bytes \d+\.\.\d+\)"):
        ingest(engine, scanned, batch_inputs=5)
    taken = engine.state.traces["t.jsonl"]
    assert taken.line == 20  # the two checked groups' batches, whole; nothing of the third
    result = ingest(engine, scan_trace(str(path)), batch_inputs=5)  # checked again: resumes after line 20
    assert (result.skipped, result.applied) == (20, len(lines) - 20)
    fresh = open_store("memory:")
    ingest(Engine(fresh, with_views=False), parse_trace(path.read_bytes(), "t.jsonl"))
    assert project(store).document() == project(fresh).document()
    store.close()


def _ingest_peak_bytes(tmp_path: Path, ticks: int) -> int:
    path = tick_trace(tmp_path / f"peak{ticks}.jsonl", ticks)
    store = open_store(f"sqlite:///{tmp_path / f'peak{ticks}.db'}")
    engine = Engine(store, with_views=False)
    tracemalloc.start()
    try:
        ingest(engine, scan_trace(str(path)), batch_inputs=200)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        store.close()


def test_ingest_memory_stays_flat_as_the_file_grows(tmp_path: Path, monkeypatch) -> None:
    # Allocation counts (tracemalloc), not time: the same on any machine.
    monkeypatch.setattr(trace_scan, "scan_group_lines_max", 200)
    small, large = 1_000, 4_000
    grown = _ingest_peak_bytes(tmp_path, large) - _ingest_peak_bytes(tmp_path, small)
    file_growth = (tmp_path / f"peak{large}.jsonl").stat().st_size - (tmp_path / f"peak{small}.jsonl").stat().st_size
    # Reading a file whole holds its bytes and every parsed input: several times its size.
    assert grown < file_growth / 4, (grown, file_growth)
