"""`tandem serve` over loopback HTTP against the engine in-process, side by side in one run.

    python bench/serve.py            # full sizes, about 5 minutes
    python bench/serve.py --only concurrent --against OTHER/.venv/bin/python   # 4 alone, old and new
    python bench/serve.py --quick    # small sizes (a smoke run)

Four measurements, each on fresh SQLite stores (WAL, synchronous=FULL):

1. durable inputs/s, one input per transaction: `POST /v1/inputs` (one JSON
   input per request, one client, keep-alive, a real `tandem serve` process)
   vs `engine.submit(Located(...))` in this process.            goal >= 0.6x
2. batch inputs/s: `POST /v1/inputs` with 1,000 inputs per request
   (application/x-ndjson) vs `adapters.ingest.ingest` of the same trace
   in-process (1,000 per transaction, parsing included). The trace is one
   actor's (a source's CI observations over 1,000 PRs: a batch speaks for one
   token, and an SCM observer is who sends big batches).        goal >= 0.8x
3. live stream latency: 50 clients on `/v1/stream` (in a process of their
   own), one input POSTed at a time; from the POST being sent, and from its
   answer, to each client's receipt of the commit's message: p50 and p99.
4. concurrent clients (group commit): 1, 4, 16 and 64 clients at once, each
   POSTing one `observe` input per request (its own causes, `at` stamped by
   the server), durable inputs/s against raw sqlite3 single-row commits/s
   (bench/run.py's baseline) in the same rounds, rotated.  goal at 16 >= 3x
   Beside each, "in-process": the same bodies in groups of as many, through
   `Runtime.submit_bodies` in this process (the server's side without HTTP).
   With `--against PYTHON` (the interpreter of another checkout's virtualenv,
   e.g. a worktree of main), the same clients against that code's server too,
   in the same rounds: old and new side by side.

The two sides of 1 and 2 alternate (A B, B A, ...) and medians are reported,
because these 2-core machines are shared and noisy. The server and the
in-process engine never run at the same time. The clock is CLOCK_MONOTONIC,
which every process on the machine shares.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tandem.adapters.client import Client  # noqa: E402
from tandem.adapters.ingest import ingest  # noqa: E402
from tandem.adapters.snapshots_beside import snapshots_beside_for  # noqa: E402
from tandem.adapters.store import open_store  # noqa: E402
from tandem.adapters.tokens import ACTORS, new_token, write_tokens_file  # noqa: E402
from tandem.adapters.trace import parse_trace  # noqa: E402
from tandem.replay.engine import Engine  # noqa: E402
from bench.workload import alternate, observation_trace, started_serve, synthetic_trace  # noqa: E402

GOALS = {"single": 0.6, "batch": 0.8, "concurrent_16": 3.0}
stream_clients = 50
concurrent_clients = (1, 4, 16, 64)
server_start_timeout_s = 30


@dataclass(frozen=True)
class Sizes:
    repetitions: int
    single_actions: int  # synthetic_trace(actions): ~3.1 inputs an action
    batch_observations: int
    stream_commits: int
    concurrent_inputs: int  # per client count, split among the clients


FULL = Sizes(repetitions=5, single_actions=800, batch_observations=30_000, stream_commits=300, concurrent_inputs=3_072)
QUICK = Sizes(repetitions=3, single_actions=150, batch_observations=5_000, stream_commits=60, concurrent_inputs=640)
batch_causes = 1_000


# -------------------------------------------------------------- the server


class Server:
    """A real `tandem serve` on a fresh SQLite store, on a free loopback port."""

    def __init__(self, directory: str, python: str = sys.executable) -> None:
        self.tokens = {actor: new_token() for actor in ACTORS}
        tokens_file = Path(directory) / "tokens.json"
        write_tokens_file(tokens_file, self.tokens)
        options = ["--store", f"sqlite:///{directory}/events.db", "--tokens", str(tokens_file)]
        self.process, self.url = started_serve([*options, "--stream-clients-max", str(stream_clients + 10)], python)
        self.clients = {actor: Client(self.url, token) for actor, token in self.tokens.items()}

    def stop(self) -> None:
        for client in self.clients.values():
            client.close()
        self.process.terminate()
        self.process.wait(timeout=30)


def _actor(value: dict[str, Any]) -> str:
    from tandem.domain.inputs import accepted_actors

    return value.get("actor") or accepted_actors(value["type"])[0]


def http_single(directory: str, inputs: list[dict[str, Any]]) -> float:
    server = Server(directory)
    try:
        clients = [server.clients[_actor(value)] for value in inputs]
        bodies = [json.dumps(value).encode() for value in inputs]
        for client in set(clients):
            client.health()  # connections open before the clock starts
        started = time.perf_counter()
        for client, body in zip(clients, bodies):
            client.request("POST", "/v1/inputs", body, "application/json")
        elapsed = time.perf_counter() - started
    finally:
        server.stop()
    return len(inputs) / elapsed


def engine_single(directory: str, data: bytes) -> float:
    engine = Engine(open_store(f"sqlite:///{directory}/events.db"))
    items = [line.item for line in parse_trace(data, "bench").lines]
    try:
        started = time.perf_counter()
        for item in items:
            engine.submit(item)
        elapsed = time.perf_counter() - started
    finally:
        engine.store.close()  # type: ignore[union-attr]
    return len(items) / elapsed


def http_batch(directory: str, inputs: list[dict[str, Any]], batch: int = 1_000) -> float:
    """One actor's token per request: the batch is split where the actor changes."""
    server = Server(directory)
    try:
        requests: list[tuple[Client, bytes]] = []
        chunk: list[bytes] = []
        actor = None
        for value in inputs:
            if chunk and (len(chunk) == batch or _actor(value) != actor):
                requests.append((server.clients[actor], b"".join(chunk)))  # type: ignore[index]
                chunk = []
            actor = _actor(value)
            chunk.append(json.dumps(value).encode() + b"\n")
        requests.append((server.clients[actor], b"".join(chunk)))  # type: ignore[index]
        started = time.perf_counter()
        for client, body in requests:
            client.request("POST", "/v1/inputs", body, "application/x-ndjson")
        elapsed = time.perf_counter() - started
    finally:
        server.stop()
    return len(inputs) / elapsed


def engine_ingest(directory: str, data: bytes) -> float:
    """The engine's own ingest, its snapshots written beside it as `tandem
    serve` writes them, and like the server's, not waited for by the clock
    (waited for after it): the ratio is what HTTP and serving cost, not a
    snapshot policy."""
    url = f"sqlite:///{directory}/events.db"
    engine = Engine(open_store(url), with_views=False, snapshots_beside=snapshots_beside_for(url))
    try:
        started = time.perf_counter()
        trace = parse_trace(data, "bench")
        ingest(engine, trace)
        elapsed = time.perf_counter() - started
        engine.collect_beside(wait=True)
    finally:
        engine.store.close()  # type: ignore[union-attr]
    return len(trace.lines) / elapsed


def token_actors_in_trace(data: bytes) -> list[dict[str, Any]]:
    """The trace's inputs, each with its actor said out loud (the server
    gives an input without `actor` its token's actor, not the kind's default)."""
    inputs = []
    for line in data.splitlines():
        if line.strip():
            value = json.loads(line)
            value["actor"] = _actor(value)
            inputs.append(value)
    return inputs


# ------------------------------------------------------------------ stream


def _readers(url: str, token: str, count: int, ready: Any, results: Any, expected: int) -> None:
    """In a process of its own: `count` streams, each message's arrival time."""
    import asyncio

    async def one(index: int) -> list[tuple[int, float]]:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(f"GET /v1/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
        await writer.drain()
        seen: list[tuple[int, float]] = []
        buffer = b""
        while len(seen) < expected:
            chunk = await reader.read(65536)
            if not chunk:
                break
            now = time.monotonic()
            buffer += chunk
            # Chunked transfer: chunk sizes sit between messages, never inside one.
            while b"\n\n" in buffer:
                block, buffer = buffer.split(b"\n\n", 1)
                if b": connected" in block:
                    ready.put(index)
                for field in block.split(b"\n"):
                    if field.startswith(b"id: "):
                        seen.append((int(field[4:]), now))
        writer.close()
        return seen

    async def main() -> None:
        found = await asyncio.gather(*(one(index) for index in range(count)))
        results.put([item for seen in found for item in seen])

    asyncio.run(main())


def stream_latency(directory: str, commits: int) -> dict[str, float]:
    server = Server(directory)
    context = multiprocessing.get_context("spawn")
    ready, results = context.Queue(), context.Queue()
    reader = context.Process(target=_readers, args=(server.url, server.tokens["human"], stream_clients, ready, results, commits))
    try:
        reader.start()
        for _ in range(stream_clients):
            ready.get(timeout=60)
        client = server.clients["daemon"]
        sent: dict[int, tuple[float, float]] = {}
        for _ in range(commits):
            before = time.monotonic()
            answer = client.submit({"type": "tick"})
            sent[answer["position"]] = (before, time.monotonic())
            time.sleep(0.005)
        arrivals = results.get(timeout=120)
        reader.join(timeout=30)
    finally:
        server.stop()
    from_send = sorted(arrival - sent[position][0] for position, arrival in arrivals if position in sent)
    from_answer = sorted(arrival - sent[position][1] for position, arrival in arrivals if position in sent)
    return {
        "messages": len(from_send),
        "send_p50_ms": _percentile(from_send, 50) * 1e3,
        "send_p99_ms": _percentile(from_send, 99) * 1e3,
        "answer_p50_ms": _percentile(from_answer, 50) * 1e3,
        "answer_p99_ms": _percentile(from_answer, 99) * 1e3,
    }


def _percentile(values: list[float], percent: float) -> float:
    if not values:
        return float("nan")
    index = min(len(values) - 1, max(0, round(percent / 100 * (len(values) - 1))))
    return values[index]


# ------------------------------------------------------ concurrent clients


def observation(client: int, number: int) -> bytes:
    """One `observe` input of client `client`'s own cause, `at` left to the server."""
    cause = f"{client}-{number % 8}"
    status = "failed" if number % 2 == 0 else "passed"
    return json.dumps({
        "type": "observe", "source_id": f"ci-{cause}", "kind": "ci", "scope": f"https://scm/pr/{cause}",
        "fingerprint": f"{status}#{number}", "status": status, "complete": True, "text": f"CI {status} on PR {cause}",
    }).encode()  # fmt: skip


def http_concurrent(directory: str, clients: int, inputs: int, python: str = sys.executable) -> float:
    """Durable inputs/s with `clients` clients at once, each POSTing its
    share of `inputs`, one input per request, one after the other."""
    import threading

    server = Server(directory, python)
    each = inputs // clients
    try:
        connections = [Client(server.url, server.tokens["source"]) for _ in range(clients)]
        bodies = [[observation(client, number) for number in range(each)] for client in range(clients)]
        for connection in connections:
            connection.health()  # connections open before the clock starts
        start = threading.Barrier(clients + 1)

        def work(connection: Client, mine: list[bytes]) -> None:
            start.wait()
            for body in mine:
                connection.request("POST", "/v1/inputs", body, "application/json")

        threads = [threading.Thread(target=work, args=pair) for pair in zip(connections, bodies)]
        for thread in threads:
            thread.start()
        start.wait()
        started = time.perf_counter()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        for connection in connections:
            connection.close()
    finally:
        server.stop()
    return each * clients / elapsed


def engine_groups(directory: str, group: int, inputs: int) -> float:
    """Inputs/s of the server's own side, in this process: the same requests'
    bodies, `group` at a time, through `Runtime.submit_bodies` (parsing,
    deciding, one transaction each group): what grouping gives without HTTP."""
    from tandem.adapters.group_commit import Body
    from tandem.adapters.runtime import Runtime, Settings
    from tandem.replay.edge import TokenActor

    runtime = Runtime(Settings(store_url=f"sqlite:///{directory}/events.db", runtime_inputs=False))
    runtime.open()
    bodies = [Body(observation(index % group, index // group), False, TokenActor("source")) for index in range(inputs)]
    try:
        started = time.perf_counter()
        for begin in range(0, inputs, group):
            runtime.submit_bodies(bodies[begin : begin + group])
        elapsed = time.perf_counter() - started
    finally:
        runtime.close()
    return inputs / elapsed


def concurrent_rounds(fresh: Any, sizes: Sizes, against: str | None) -> dict[str, list[float]]:
    """Each side's figures, rounds rotated: the raw commit loop, then each
    client count against this code (and against `against`'s)."""
    from bench.run import raw_single_row_commits

    sides: list[tuple[str, Any]] = [("raw", lambda: raw_single_row_commits(fresh(), sizes.concurrent_inputs))]
    for clients in concurrent_clients:
        sides.append((f"new {clients}", lambda clients=clients: http_concurrent(fresh(), clients, sizes.concurrent_inputs)))
        if against is not None:
            sides.append((f"old {clients}", lambda clients=clients: http_concurrent(fresh(), clients, sizes.concurrent_inputs, against)))
        sides.append((f"engine {clients}", lambda clients=clients: engine_groups(fresh(), clients, sizes.concurrent_inputs)))
    figures: dict[str, list[float]] = {name: [] for name, _ in sides}
    for repetition in range(sizes.repetitions):
        turn = repetition % len(sides)
        for name, measure in sides[turn:] + sides[:turn]:
            figures[name].append(measure())
    return figures


def report_concurrent(figures: dict[str, list[float]], sizes: Sizes) -> bool:
    raw = statistics.median(figures["raw"])
    print(f"4. concurrent clients, one input per request, {sizes.concurrent_inputs:,} inputs per client count")
    print(f"  raw sqlite3 single-row commits {raw:>8,.0f} /s   (min {min(figures['raw']):,.0f}, max {max(figures['raw']):,.0f})")
    met = True
    for clients in concurrent_clients:
        for side in ("new", "old", "engine"):
            values = figures.get(f"{side} {clients}")
            if values is None:
                continue
            rate = statistics.median(values)
            goal = ""
            if side == "new" and clients == 16:
                met = rate / raw >= GOALS["concurrent_16"]
                goal = f"   goal >= {GOALS['concurrent_16']}x   {'MET' if met else 'MISSED'}"
            label = f"{clients} client{'s' if clients > 1 else ''}" + {"new": "", "old": " (--against)", "engine": " in-process"}[side]
            print(f"  {label:<22} {rate:>8,.0f} inputs/s   {rate / raw:.2f}x raw   (min {min(values):,.0f}, max {max(values):,.0f}){goal}")
    print()
    return met


# ------------------------------------------------------------------- report



def report(name: str, what: str, a: list[float], b: list[float], goal: float) -> bool:
    ratio = statistics.median(a) / statistics.median(b)
    verdict = "MET" if ratio >= goal else "MISSED"
    print(f"{name}: {what}")
    print(f"  HTTP       {statistics.median(a):>10,.0f} inputs/s   (min {min(a):,.0f}, max {max(a):,.0f})")
    print(f"  in-process {statistics.median(b):>10,.0f} inputs/s   (min {min(b):,.0f}, max {max(b):,.0f})")
    print(f"  ratio {ratio:.2f}x   goal >= {goal}x   {verdict}\n")
    return ratio >= goal


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--tmp", help="where the scratch stores go (default: the system temp dir)")
    parser.add_argument("--against", metavar="PYTHON", help="4. also against the server of this interpreter's tandem (another checkout)")
    parser.add_argument("--only", choices=("concurrent",), help="run only measurement 4")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    scratch = tempfile.mkdtemp(prefix="tandem-serve-bench-", dir=args.tmp)
    count = [0]

    def fresh() -> str:
        count[0] += 1
        path = os.path.join(scratch, f"run-{count[0]}")
        os.mkdir(path)
        return path

    try:
        print(f"tandem serve benchmark: {os.cpu_count()} cores, python {sys.version.split()[0]}, {sizes}\n")
        if args.only == "concurrent":
            return 0 if report_concurrent(concurrent_rounds(fresh, sizes, args.against), sizes) else 1
        single = synthetic_trace(sizes.single_actions)
        single_inputs = token_actors_in_trace(single)
        a, b = alternate(lambda: http_single(fresh(), single_inputs), lambda: engine_single(fresh(), single), sizes.repetitions)
        met = [report("1. durable single inputs", f"{len(single_inputs):,} inputs, one per request / transaction", a, b, GOALS["single"])]
        batch = observation_trace(sizes.batch_observations, batch_causes)
        batch_inputs = token_actors_in_trace(batch)
        a, b = alternate(lambda: http_batch(fresh(), batch_inputs), lambda: engine_ingest(fresh(), batch), sizes.repetitions)
        met.append(report("2. batches of 1,000", f"{len(batch_inputs):,} inputs", a, b, GOALS["batch"]))
        latency = stream_latency(fresh(), sizes.stream_commits)
        print(f"3. live stream, {stream_clients} clients, {sizes.stream_commits} commits ({latency['messages']:,} messages)")
        print(f"  POST sent     -> message: p50 {latency['send_p50_ms']:.2f} ms, p99 {latency['send_p99_ms']:.2f} ms")
        print(f"  POST answered -> message: p50 {latency['answer_p50_ms']:.2f} ms, p99 {latency['answer_p99_ms']:.2f} ms\n")
        met.append(report_concurrent(concurrent_rounds(fresh, sizes, args.against), sizes))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0 if all(met) else 1


if __name__ == "__main__":
    sys.exit(main())
