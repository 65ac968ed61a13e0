"""A standby's takeover, and a follower's lag, on PostgreSQL (issue 15).

    TANDEM_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/DB python bench/takeover.py [--rounds 5] [--events 0]

Each round, on a fresh table of that database: a `tandem serve` writer and a
`tandem serve --standby` (real processes), `--events` inputs written through
the writer first (in batches of 1,000), then the writer is SIGKILLed and two
times are taken from the kill: until the standby's `/v1/health` says
`writer: true`, and until its first POSTed input is answered 200 (the client
retrying every 5 ms meanwhile). Then, with a follower (`--follow`) beside a
writer: from a POST to the writer to the follower's `/v1/stream` message for that commit (from the POST being sent: the notification can
come before the writer's answer does), for 50 inputs one at a time (LISTEN/NOTIFY, not
the poll). Medians, with min and max.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tandem.adapters.client import ApiError  # noqa: E402
from tests.e2e.serving import Served  # noqa: E402
from tests.e2e.test_serve_faults import postgres_store_url  # noqa: E402
from tests.e2e.test_standby import inputs, pair  # noqa: E402

poll_s = 0.005
wait_s_max = 60
lag_inputs = 50
batch_inputs = 1_000


def _until(condition: Any) -> None:
    deadline = time.monotonic() + wait_s_max
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit("gave up waiting")
        time.sleep(poll_s)


def _accepted(standby: Served, value: dict[str, Any]) -> bool:
    try:
        standby.client("human").submit(value)
        return True
    except (ApiError, OSError):
        return False


def takeover_round(directory: Path, events: int) -> tuple[float, float]:
    for url in postgres_store_url():  # a fresh table, dropped afterwards
        writer, standby = pair(directory, url)
        with writer, standby:
            writer.client("daemon").submit({k: v for k, v in inputs(0)[0].items() if k != "at"})
            client = writer.client("human")
            for start in range(0, events, batch_inputs):
                client.submit_batch(
                    {"type": "human.message", "conversation_id": "fg", "message_id": f"b-{n}", "text": "x"}
                    for n in range(start, min(events, start + batch_inputs))
                )
            health = standby.client("human")
            _until(lambda: health.health().get("position") == client.health()["position"])
            assert writer.process is not None
            killed = time.monotonic()
            os.kill(writer.process.pid, signal.SIGKILL)
            _until(lambda: health.health().get("writer") is True)
            writing_s = time.monotonic() - killed
            value = {"type": "human.message", "conversation_id": "fg", "message_id": "after", "text": "x", "id": "after"}
            _until(lambda: _accepted(standby, value))
            accepted_s = time.monotonic() - killed
            writer.process.wait()
    return writing_s, accepted_s


def follower_lag(directory: Path) -> list[float]:
    lags: list[float] = []
    for url in postgres_store_url():
        with Served(directory, url, name="lag-writer") as writer, Served(directory, url, "--follow", name="lag-follower") as follower:
            writer.client("daemon").submit({k: v for k, v in inputs(0)[0].items() if k != "at"})
            client = writer.client("human")
            _until(lambda: follower.client("human").health().get("position") == client.health()["position"])
            seen: dict[int, float] = {}
            stream = follower.client("human").stream(last_event_id=client.health()["position"], timeout_s=wait_s_max)
            reader = threading.Thread(target=lambda: [seen.setdefault(m.id, time.monotonic()) for m in stream], daemon=True)
            reader.start()
            for n in range(lag_inputs):
                sent_at = time.monotonic()
                answered = client.submit({"type": "human.message", "conversation_id": "fg", "message_id": f"l-{n}", "text": "x"})
                _until(lambda: answered["position"] in seen)
                lags.append(seen[answered["position"]] - sent_at)
    return lags


def _line(name: str, values: list[float]) -> str:
    ms = [value * 1000 for value in values]
    return f"{name}: median {statistics.median(ms):.0f} ms (min {min(ms):.0f}, max {max(ms):.0f}, n={len(ms)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--events", type=int, default=0, help="inputs written before the kill (the standby folds them)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        rounds = [takeover_round(directory, args.events) for _ in range(args.rounds)]
        print(_line(f"SIGKILL -> standby health writer:true ({args.events} inputs before)", [r[0] for r in rounds]))
        print(_line("SIGKILL -> standby's first input answered 200", [r[1] for r in rounds]))
        print(_line("POST sent to the writer -> the follower's stream message", follower_lag(directory)))


if __name__ == "__main__":
    main()
