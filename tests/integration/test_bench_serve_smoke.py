"""bench/serve.py's measurement 4 works: a real `tandem serve` with several
clients at once, and the server's side in-process, each give a positive
rate and a store that verifies clean. No timing assertions."""

from __future__ import annotations

import math
from pathlib import Path

from tests.e2e.serving import tandem


def test_concurrent_clients_and_in_process_groups_give_positive_rates(tmp_path: Path) -> None:
    from bench.serve import engine_groups, http_concurrent

    for name in ("http", "engine"):
        (tmp_path / name).mkdir()
    rates = [http_concurrent(str(tmp_path / "http"), 4, 16), engine_groups(str(tmp_path / "engine"), 4, 16)]
    assert all(math.isfinite(rate) and rate > 0 for rate in rates), rates
    for name in ("http", "engine"):
        done = tandem("verify", "--store", f"sqlite:///{tmp_path / name}/events.db")
        assert done.returncode == 0 and "clean" in done.stdout, done.stdout + done.stderr
