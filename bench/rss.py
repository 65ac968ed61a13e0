"""The memory of `tandem serve` under a steady load: does it level off?

    python bench/rss.py                   # 10 minutes on a fresh SQLite store
    python bench/rss.py --minutes 30      # longer
    python bench/rss.py --store URL       # another store (a fresh PostgreSQL table, say)
    python bench/rss.py --quick           # 20 s, sampled every 2 s (a smoke run)

A real `tandem serve` takes, all at once and at a steady pace (`Load`):

- inputs: `tick`s, each with an id never used before, from one client;
- reads: the views (all, one, one `?at=` in the past), a page of events,
  an explain (of an id nothing has: the log index is asked), the health,
  from two clients;
- live streams that connect (resuming with `Last-Event-ID`), read for a
  few seconds and hang up, over and over;
- slow stream readers: a small receive buffer read a little at a time, so
  that the server's per-stream queue fills and it cuts them off (a reset),
  then they connect again;
- half-sent request heads, closed by the server's head timeout.

The server's RSS (VmRSS of /proc/PID/status) is printed every minute (every
`--sample` seconds) with what the clients did, and at the end whether it
levelled off: the growth in the last half of the run against the first
half. The engine's state grows with the inputs by design (each is recorded;
the idempotency set holds every id), so the inputs are few against the reads
and streams, and the growth per 1,000 inputs is printed too: what grows with
connections, streams or time, beyond that, is what this looks for.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # runnable as `python bench/rss.py` from anywhere
    sys.path.insert(0, str(ROOT))

from tandem.adapters.client import ApiError, Client  # noqa: E402
from tandem.adapters.tokens import ACTORS, new_token, write_tokens_file  # noqa: E402

server_start_timeout_s = 60
# Levelled off: the last half grew at most this share of the first half's growth, or at most this many MiB.
levelled_share = 0.25
levelled_mib = 2.0
slow_receive_buffer_bytes = 4_096
client_timeout_s = 30.0
seed = 22  # the streams' lifetimes: the same load every run


@dataclass(frozen=True)
class Load:
    inputs_per_s: float = 1.0  # few against the reads and streams: the state grows with the inputs
    readers: int = 2
    reads_per_s: float = 10.0  # per reader
    streams: int = 10
    stream_life_s: tuple[float, float] = (1.0, 15.0)
    slow_readers: int = 2
    slow_read_every_s: float = 5.0
    half_heads: int = 2  # at a time, each closed by the server's head timeout
    head_timeout_s: float = 10.0


@dataclass
class Counts:
    """What the clients did (their threads add with `add`)."""

    inputs: int = 0
    reads: int = 0
    streams_opened: int = 0
    stream_messages: int = 0
    resets: int = 0
    half_heads_closed: int = 0
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str, count: int = 1) -> None:
        with self.lock:
            setattr(self, name, getattr(self, name) + count)


@dataclass(frozen=True)
class Sample:
    at_s: float
    rss_kib: int
    inputs: int


# -------------------------------------------------------------- the server


class Server:
    """A real `tandem serve` of `store`, on a free loopback port."""

    def __init__(self, directory: Path, store: str, load: Load) -> None:
        self.tokens = {actor: new_token() for actor in ACTORS}
        tokens_file = directory / "tokens.json"
        write_tokens_file(tokens_file, self.tokens)
        self.log = open(directory / "serve.log", "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tandem.adapters.cli", "serve", "--store", store, "--tokens", str(tokens_file),
             "--listen", "127.0.0.1:0", "--no-runtime-inputs", "--head-timeout", str(load.head_timeout_s),
             "--stream-clients-max", str(load.streams + load.slow_readers + 10)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=self.log, text=True,
        )  # fmt: skip
        line = self.process.stdout.readline() if self.process.stdout else ""
        if not line.startswith("listening on "):
            self.stop()
            raise RuntimeError(f"tandem serve did not start: {line!r}: {(directory / 'serve.log').read_text()}")
        self.url = line.split()[-1]
        host, port = self.url.removeprefix("http://").rsplit(":", 1)
        self.address = (host, int(port))

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=60)
        self.log.close()


# ------------------------------------------------------------- the clients


def poster(server: Server, load: Load, counts: Counts, stop: threading.Event) -> None:
    client = Client(server.url, server.tokens["daemon"], client_timeout_s)
    run = os.getpid()
    if load.inputs_per_s <= 0:
        return  # a run without inputs: whatever grows, grows with the reads, the streams or the time
    for number in itertools.count():
        if stop.wait(1 / load.inputs_per_s):
            return
        client.submit({"type": "tick", "id": f"rss-{run}-{number}"})
        counts.add("inputs")


def reader(server: Server, load: Load, counts: Counts, stop: threading.Event) -> None:
    client = Client(server.url, server.tokens["human"], client_timeout_s)
    names = itertools.cycle(["tasks", "actions", "inbox", "alerts", "conversations", "health", "usage", "rejections"])
    for number in itertools.count():
        if stop.wait(1 / load.reads_per_s):
            return
        head = int(client.health()["position"])
        kind = number % 5
        if kind == 0:
            client.views()
        elif kind == 1:
            client.view(next(names))
        elif kind == 2:
            client.events(after=max(0, head - 50), limit=50)
        elif kind == 3 and head > 10:
            client.view("health", at=head // 2)
        else:
            _unknown(lambda: client.explain(f"rss-unknown-{number}"))  # a tick explains nothing: the log index is asked
        counts.add("reads", 2)


def _unknown(read: Any) -> None:
    try:
        read()
    except ApiError as error:
        if error.status != 404:
            raise


def _stream_request(server: Server, last_id: int | None) -> bytes:
    resume = f"Last-Event-ID: {last_id}\r\n" if last_id is not None else ""
    return f"GET /v1/stream HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {server.tokens['human']}\r\n{resume}\r\n".encode()


def _ids_and_resets(data: bytes) -> tuple[list[int], int]:
    ids = [int(line[4:]) for line in data.split(b"\n") if line.startswith(b"id: ") and line[4:].isdigit()]
    return ids, data.count(b"event: reset")


def streamer(server: Server, load: Load, counts: Counts, stop: threading.Event, lives: random.Random) -> None:
    """Connect, read for a while, hang up; again, resuming where it was."""
    last_id: int | None = None
    while not stop.is_set():
        with socket.create_connection(server.address, timeout=1.0) as connection:
            connection.sendall(_stream_request(server, last_id))
            counts.add("streams_opened")
            ends = time.monotonic() + lives.uniform(*load.stream_life_s)
            while time.monotonic() < ends and not stop.is_set():
                try:
                    data = connection.recv(65_536)
                except TimeoutError:
                    continue
                if not data:
                    break
                ids, resets = _ids_and_resets(data)
                counts.add("stream_messages", len(ids))
                counts.add("resets", resets)
                last_id = ids[-1] if ids else last_id


def slow_reader(server: Server, load: Load, counts: Counts, stop: threading.Event) -> None:
    """A stream read a little at a time: its queue fills, the server cuts it off; again."""
    while not stop.is_set():
        connection = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, slow_receive_buffer_bytes)
        connection.settimeout(client_timeout_s)
        try:
            connection.connect(server.address)
            connection.sendall(_stream_request(server, None))
            counts.add("streams_opened")
            while not stop.wait(load.slow_read_every_s):
                data = connection.recv(512)
                if not data:
                    break
                counts.add("resets", data.count(b"event: reset"))
        except OSError:
            pass  # cut off: aborted by the server
        finally:
            connection.close()


def half_head(server: Server, load: Load, counts: Counts, stop: threading.Event) -> None:
    """Half a request head, then nothing: the server closes it after its head timeout."""
    while not stop.is_set():
        with socket.create_connection(server.address, timeout=load.head_timeout_s * 3) as connection:
            connection.sendall(b"GET /v1/health HTTP/1.1\r\nHost: bench\r\n")
            try:
                while connection.recv(1_024):
                    pass
                counts.add("half_heads_closed")
            except OSError as error:
                counts.errors.append(f"half head: {error}")


def _guarded(work: Any, counts: Counts, *arguments: Any) -> None:
    try:
        work(*arguments)
    except Exception as error:  # reported at the end: the load goes on without this client
        counts.errors.append(f"{work.__name__}: {type(error).__name__}: {error}")


def start_clients(server: Server, load: Load, counts: Counts, stop: threading.Event) -> list[threading.Thread]:
    lives = random.Random(seed)
    jobs: list[tuple[Any, tuple[Any, ...]]] = [(poster, ())]
    jobs += [(reader, ())] * load.readers
    jobs += [(streamer, (random.Random(lives.random()),)) for _ in range(load.streams)]
    jobs += [(slow_reader, ())] * load.slow_readers + [(half_head, ())] * load.half_heads
    threads = [
        threading.Thread(target=_guarded, args=(work, counts, server, load, counts, stop, *more), daemon=True)
        for work, more in jobs
    ]
    for thread in threads:
        thread.start()
    return threads


# ---------------------------------------------------------------- the run


def mib(kib: float) -> float:
    return kib / 1024


def run(load: Load, minutes: float, sample_s: float, store: str | None, scratch: str, out: TextIO) -> tuple[list[Sample], Counts]:
    """The load for `minutes`, the server's RSS every `sample_s`; the samples and what the clients did."""
    directory = Path(tempfile.mkdtemp(prefix="tandem-rss-", dir=scratch))
    try:
        server = Server(directory, store or f"sqlite:///{directory}/events.db", load)
        counts, stop = Counts(), threading.Event()
        threads: list[threading.Thread] = []
        try:
            samples = [Sample(0.0, server.rss_kib(), 0)]
            print(f"tandem serve under load for {minutes:g} min: {load}", file=out)
            print(f"  {'t':>7}  {'RSS MiB':>8}  {'inputs':>7}  {'reads':>7}  {'streams':>7}  {'messages':>8}  {'resets':>6}  {'half heads':>10}", file=out)
            _line(out, samples[0], counts)
            threads = start_clients(server, load, counts, stop)
            started = time.monotonic()
            for number in itertools.count(1):
                time.sleep(max(0.0, started + number * sample_s - time.monotonic()))
                samples.append(Sample(time.monotonic() - started, server.rss_kib(), counts.inputs))
                _line(out, samples[-1], counts)
                if samples[-1].at_s >= minutes * 60 - sample_s / 2:
                    break
        finally:
            stop.set()
            server.stop()
        for thread in threads:
            thread.join(timeout=load.head_timeout_s * 4)
        _verdict(out, samples, counts)
        return samples, counts
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _line(out: TextIO, sample: Sample, counts: Counts) -> None:
    print(
        f"  {sample.at_s:>6.0f}s  {mib(sample.rss_kib):>8.1f}  {counts.inputs:>7,}  {counts.reads:>7,}  {counts.streams_opened:>7,}"
        f"  {counts.stream_messages:>8,}  {counts.resets:>6,}  {counts.half_heads_closed:>10,}",
        file=out, flush=True,
    )  # fmt: skip


def levelled(samples: list[Sample]) -> tuple[bool, float, float]:
    """Whether the RSS levelled off, and its growth (MiB) in the first and the last half of the run."""
    middle = samples[len(samples) // 2]
    first, last = mib(middle.rss_kib - samples[0].rss_kib), mib(samples[-1].rss_kib - middle.rss_kib)
    return last <= max(levelled_mib, levelled_share * first), first, last


def _verdict(out: TextIO, samples: list[Sample], counts: Counts) -> None:
    ok, first, last = levelled(samples)
    middle = samples[len(samples) // 2]
    inputs_late = samples[-1].inputs - middle.inputs
    per_thousand = f" ({last / inputs_late * 1_000:+.2f} MiB per 1,000 inputs in the last half)" if inputs_late else ""
    print(f"growth: first half {first:+.1f} MiB, last half {last:+.1f} MiB{per_thousand}", file=out)
    print(f"levelled off: {'yes' if ok else 'NO'} (the last half grew at most {levelled_share:.0%} of the first, or {levelled_mib:g} MiB)", file=out)
    for error in counts.errors[:10]:
        print(f"  client error: {error}", file=out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="how long the load runs (default 10)")
    parser.add_argument("--sample", type=float, default=60.0, metavar="SECONDS", help="RSS printed this often (default 60)")
    parser.add_argument("--store", metavar="URL", help="the store served (default: a fresh SQLite file); give a fresh one")
    parser.add_argument("--inputs-per-s", type=float, default=Load.inputs_per_s, help=f"inputs a second (default {Load.inputs_per_s:g}; 0: none)")
    parser.add_argument("--quick", action="store_true", help="20 s sampled every 2 s, a 2 s head timeout (a smoke run)")
    parser.add_argument("--tmp", help="where the scratch files go (default: the system temp dir)")
    args = parser.parse_args(argv)
    load = Load(inputs_per_s=args.inputs_per_s, head_timeout_s=2.0 if args.quick else Load.head_timeout_s)
    minutes, sample_s = (1 / 3, 2.0) if args.quick else (args.minutes, args.sample)
    samples, counts = run(load, minutes, sample_s, args.store, args.tmp or tempfile.gettempdir(), sys.stdout)
    return 0 if levelled(samples)[0] and not counts.errors else 1


if __name__ == "__main__":
    sys.exit(main())
