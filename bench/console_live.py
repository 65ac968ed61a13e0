"""What an open console costs a commit, on a large store against a small one.

A console page follows `/v1/stream`: with `?rows=1` the server renders every
commit's changed rows for it (a conversation's row holds every delivery it
ever made, so it grows with the store); with `?rows=keys` (what the console
follows) only their keys. Each side is a real `tandem serve` of a copy of
bench/console_workload.py's store (bench/console_pages.py builds and caches
them), one stream open on it; a human message to the first foreground is
posted and timed until the stream has told of its commit, the large store's
and the small one's alternated, once the start's grace for rows streams
(`rows_start_grace_s`) is over. Also: the bytes a message weighs.

    python -m bench.console_live [--quick] [--cache DIR] [--posts N]
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from queue import Queue
from typing import Any

from tandem.adapters.console.reading import clock_at
from tandem.adapters.store import open_store
from tandem.adapters.stream import rows_start_grace_s
from tandem.adapters.tokens import ACTORS, new_token, write_tokens_file

from bench.console_pages import Store, prepared
from bench.workload import SideBySide, alternate, started_serve

CONVERSATION = "fg-0"  # bench/console_workload.py's first foreground: its row holds a delivery a task
warm_posts = 3
posts_default = 15
wait_s_max = 60.0


@dataclass(frozen=True)
class Sizes:
    large_tasks: int
    small_tasks: int


FULL = Sizes(large_tasks=13_050, small_tasks=10)  # ~1M events against ~1k (bench/console.py's stores)
QUICK = Sizes(large_tasks=130, small_tasks=10)


class Served:
    """`tandem serve` of a copy of `store`, a stream open on it with `?rows=DETAIL`."""

    def __init__(self, store: Store, scratch: str, detail: str) -> None:
        directory = os.path.join(scratch, f"{os.path.basename(store.directory)}-{detail}")
        os.makedirs(directory)
        for suffix in ("", "-wal"):
            if os.path.exists(store.url.removeprefix("sqlite:///") + suffix):
                shutil.copy(store.url.removeprefix("sqlite:///") + suffix, os.path.join(directory, "events.db" + suffix))
        url = f"sqlite:///{directory}/events.db"
        self.clock = _last_input_at(url)
        self.tokens = {actor: new_token() for actor in ACTORS}
        write_tokens_file(Path(directory) / "tokens.json", self.tokens)
        self.process, base = started_serve(["--store", url, "--tokens", str(Path(directory) / "tokens.json")])
        host, port = base.removeprefix("http://").rstrip("/").split(":")
        self.posting = http.client.HTTPConnection(host, int(port), timeout=wait_s_max)
        self.told: Queue[tuple[int, int]] = Queue()  # (position, bytes) of each change message
        self.streaming = http.client.HTTPConnection(host, int(port), timeout=wait_s_max * 10)
        self.streaming.request("GET", f"/v1/stream?rows={detail}", headers={"Authorization": f"Bearer {self.tokens['human']}"})
        answer = self.streaming.getresponse()
        assert answer.status == 200, answer.status
        threading.Thread(target=self._read, args=(answer,), daemon=True).start()
        self.number = 0
        self.message_bytes: list[int] = []

    def _read(self, answer: Any) -> None:
        block: list[bytes] = []
        for line in iter(answer.readline, b""):
            if line.strip():
                block.append(line)
                continue
            data = [part[6:] for part in block if part.startswith(b"data: ")]
            if block and block[0].startswith(b"id: ") and data:
                self.told.put((json.loads(data[0])["position"], sum(map(len, block))))
            block = []

    def post_ms(self) -> float:
        """One human message, from its POST until the stream told of its commit."""
        self.number += 1
        at = (self.clock + datetime.timedelta(seconds=self.number)).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = json.dumps({"type": "human.message", "conversation_id": CONVERSATION, "message_id": f"live-{self.number}",
                           "text": "and then?", "at": at}).encode()  # fmt: skip
        started = time.perf_counter()
        headers = {"Authorization": f"Bearer {self.tokens['human']}", "Content-Type": "application/json"}
        self.posting.request("POST", "/v1/inputs", body=body, headers=headers)
        answer = self.posting.getresponse()
        reply = json.loads(answer.read())
        assert answer.status == 200 and reply["results"][0]["accepted"], reply
        while True:
            position, size = self.told.get(timeout=wait_s_max)
            if position >= reply["position"]:
                break
        self.message_bytes.append(size)
        return (time.perf_counter() - started) * 1000

    def stop(self) -> None:
        self.posting.close()
        self.process.terminate()
        self.process.wait(timeout=60)
        self.streaming.close()


def _last_input_at(url: str) -> datetime.datetime:
    """The engine's clock at the store's head: its last input's `at`."""
    store = open_store(url)
    try:
        at = clock_at(store, store.head())
    finally:
        store.close()
    assert at is not None, f"{url} holds no input"
    return at


@dataclass
class Row(SideBySide):
    detail: str
    large_ms: list[float] = field(default_factory=list)
    small_ms: list[float] = field(default_factory=list)
    large_bytes: int = 0
    small_bytes: int = 0

    def line(self) -> str:
        large, small = statistics.median(self.large_ms), statistics.median(self.small_ms)
        return (
            f"  ?rows={self.detail:<5} {large:10.1f} {small:9.1f} {self.ratio:8.2f}x  {self.verdict:<6}"
            f" {self.large_bytes:>12,} {self.small_bytes:>9,}"
        )


def measure(large: Store, small: Store, detail: str, posts: int, scratch: str) -> Row:
    sides = Served(large, scratch, detail), Served(small, scratch, detail)
    try:
        time.sleep(rows_start_grace_s)  # a start renders rows for a while, in case a stream comes back: past it
        for side in sides:
            for _ in range(warm_posts):
                side.post_ms()
            side.message_bytes.clear()
        large_ms, small_ms = alternate(sides[0].post_ms, sides[1].post_ms, posts)
        sizes = [int(statistics.median(side.message_bytes)) for side in sides]
        return Row(detail, large_ms, small_ms, *sizes)
    finally:
        for side in sides:
            side.stop()


def run(sizes: Sizes, posts: int, cache: str | None, out: Any = sys.stdout) -> list[Row]:
    scratch = tempfile.mkdtemp(prefix="tandem-bench-live-")
    try:
        print(f"Tandem console-live bench: Python {platform.python_version()}, {os.cpu_count()} CPUs", file=out)
        large = prepared(sizes.large_tasks, cache, scratch, out)
        small = prepared(sizes.small_tasks, cache, scratch, out)
        print(f"\nA commit with a console open: ms from POST to its stream message, medians of {posts}"
              f" (goal <= {SideBySide.goal_ratio_max}x):", file=out)  # fmt: skip
        print(f"  {'stream':<11} {'large ms':>10} {'small ms':>9} {'ratio':>9}  {'goal':<6} {'large B/msg':>12} {'small B/msg':>9}", file=out)
        rows = []
        for detail in ("keys", "1"):
            rows.append(measure(large, small, detail, posts, scratch))
            print(rows[-1].line(), file=out, flush=True)
        return rows
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a store of ~10k events against ~1k: a smoke run")
    parser.add_argument("--cache", default=None, metavar="DIR", help="where bench/console.py keeps its built stores (reused)")
    parser.add_argument("--posts", type=int, default=posts_default, metavar="N", help=f"timed posts a side (default {posts_default})")
    arguments = parser.parse_args(argv)
    started = time.perf_counter()
    run(QUICK if arguments.quick else FULL, arguments.posts, arguments.cache)
    print(f"\n({time.perf_counter() - started:,.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
