"""bench/rss.py works: a few seconds of its load against a real `tandem
serve`, every kind of client doing its part, the RSS sampled and the
verdict printed. No memory assertion: a figure is the benchmark's business
(bench/README.md has the 10-minute run's)."""

from __future__ import annotations

import io
from pathlib import Path

from bench import rss as bench


def test_the_rss_bench_runs(tmp_path: Path) -> None:
    load = bench.Load(inputs_per_s=10.0, streams=3, stream_life_s=(0.5, 1.5), slow_readers=1, slow_read_every_s=0.5, half_heads=1, head_timeout_s=1.0)
    out = io.StringIO()
    samples, counts = bench.run(load, minutes=0.1, sample_s=1.0, store=None, scratch=str(tmp_path), out=out)
    assert len(samples) >= 6 and all(sample.rss_kib > 10_000 for sample in samples)  # a Python server is tens of MiB
    assert counts.errors == []
    assert counts.inputs > 10 and counts.reads > 10 and counts.streams_opened > 3 and counts.stream_messages > 10
    assert counts.half_heads_closed >= 2  # the server's head timeout closed them
    text = out.getvalue()
    assert "growth: first half" in text and "levelled off: " in text, text
    assert list(tmp_path.iterdir()) == []  # the scratch store is removed
