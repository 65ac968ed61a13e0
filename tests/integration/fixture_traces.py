"""Every fixture trace that reads as a trace (the few written to be refused
whole are left out): what the tests that walk every fixture, input by
input, parametrize over."""

from __future__ import annotations

import glob
from pathlib import Path

from tandem.adapters.trace import TraceInvalid, read_trace

ROOT = Path(__file__).resolve().parents[2]
TRACES = sorted(glob.glob(str(ROOT / "fixtures" / "**" / "*.jsonl"), recursive=True))


def _valid(path: str) -> bool:
    try:
        read_trace(path)
    except TraceInvalid:
        return False
    return True


VALID_TRACES = [path for path in TRACES if _valid(path)]


def trace_id(path: str) -> str:
    return Path(path).name
