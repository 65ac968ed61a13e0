"""Restart is replay: an ingest killed for real (SIGKILL) and run again gives the
views of one uninterrupted replay, with no input applied twice or skipped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from bench.workload import synthetic_trace
from tests.e2e.serving import stored_inputs

ROOT = Path(__file__).resolve().parents[2]


def tandem(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "tandem.adapters.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    if check and result.returncode != 0:
        raise AssertionError(f"tandem {' '.join(args)} exited {result.returncode}:\n{result.stderr}")
    return result


def test_killed_ingest_resumes_to_the_same_views(tmp_path: Path) -> None:
    trace = tmp_path / "long.jsonl"
    trace.write_bytes(synthetic_trace(actions=6_000))
    total_inputs = sum(1 for line in trace.read_bytes().splitlines() if line.strip())
    database = tmp_path / "store.db"
    url = f"sqlite:///{database}"

    process = subprocess.Popen(
        [sys.executable, "-m", "tandem.adapters.cli", "ingest", str(trace), "--store", url, "--batch", "7"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while stored_inputs(database) < total_inputs // 10:
            assert process.poll() is None, "ingest ended before it could be killed mid-way"
            assert time.monotonic() < deadline, "ingest made no progress"
            time.sleep(0.02)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL
    partial = stored_inputs(database)
    assert 0 < partial < total_inputs, f"killed at {partial} of {total_inputs} inputs: not mid-way"
    assert partial % 7 == 0 or partial == total_inputs, "a batch was half-written"

    resumed = tandem("ingest", str(trace), "--store", url)
    assert f"{partial} already in the store" in resumed.stderr
    assert stored_inputs(database) == total_inputs  # none twice, none skipped

    from_store = json.loads(tandem("show", "--store", url, "--json").stdout)
    uninterrupted = json.loads(tandem("replay", str(trace), "--json").stdout)
    assert from_store == uninterrupted

    again = tandem("ingest", str(trace), "--store", url)
    assert f"0 input(s) applied (0 rejected), {total_inputs} already in the store" in again.stderr
    assert stored_inputs(database) == total_inputs


def test_a_changed_trace_under_the_same_name_is_refused(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_bytes(synthetic_trace(actions=3))
    url = f"sqlite:///{tmp_path / 'store.db'}"
    tandem("ingest", str(trace), "--store", url)
    before = stored_inputs(tmp_path / "store.db")
    trace.write_bytes(b"// edited\n" + trace.read_bytes())
    result = tandem("ingest", str(trace), "--store", url, check=False)
    assert result.returncode == 2
    assert "different trace" in result.stderr
    assert stored_inputs(tmp_path / "store.db") == before


def test_two_traces_continue_one_store(tmp_path: Path) -> None:
    """Spec 1: ingesting A then B gives the views of A followed by B as one trace
    (rejections then name their file, lines counted per file)."""
    lines = synthetic_trace(actions=4).splitlines(keepends=True)
    first, second, whole = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "whole.jsonl"
    first.write_bytes(b"".join(lines[:9]))
    second.write_bytes(b"".join(lines[9:]))
    whole.write_bytes(b"".join(lines))
    url = f"sqlite:///{tmp_path / 'store.db'}"
    tandem("ingest", str(first), str(second), "--store", url)
    from_store = json.loads(tandem("show", "--store", url, "--json").stdout)
    one_trace = json.loads(tandem("replay", str(whole), "--json").stdout)
    assert from_store == one_trace


def test_a_trace_going_back_in_time_against_the_store_is_refused(tmp_path: Path) -> None:
    lines = synthetic_trace(actions=2).splitlines(keepends=True)
    late, early = tmp_path / "late.jsonl", tmp_path / "early.jsonl"
    late.write_bytes(b"".join(lines[5:]))
    early.write_bytes(b"".join(lines[:5]))
    url = f"sqlite:///{tmp_path / 'store.db'}"
    tandem("ingest", str(late), "--store", url)
    before = stored_inputs(tmp_path / "store.db")
    result = tandem("ingest", str(early), "--store", url, check=False)
    assert result.returncode == 2
    assert "line 1: `at`" in result.stderr and "earlier than the store's last input" in result.stderr
    assert stored_inputs(tmp_path / "store.db") == before
