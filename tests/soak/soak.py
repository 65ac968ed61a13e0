"""Kill -9 soak: SIGKILL a real `tandem ingest` or `tandem serve` at random
moments until its work is done, then check the store against the trace.

Two loops, one per command:

- `ingest_soak`: an ingest of a trace (every input with an `id`) is killed
  at a random moment, run again on the same store with a random `--batch`,
  killed again, ... `kills` times, then left to finish. A kill lands after
  the store reached a random number of events (drawn in advance, sorted)
  plus a random jitter, or, when the store holds that many already, at a
  random moment of the run's start: so kills fall all over the ingest, in
  its start (interpreter, lock, fold, resume check), in a batch being
  decided, in a commit.
- `serve_soak`: a client thread sends the trace's inputs, with their `id`s
  and `at`s, in requests of 1 to 20 inputs (random sizes), and sends a
  request again, unchanged, until it is answered (a connection refused, cut or timed out, or a 503,
  is retried; it learns the new port of each restart). The server is killed
  when the client has had a random number of answers (drawn in advance,
  sorted) plus a random jitter, so in a request being decided, in a commit,
  in an answer on its way, or just after a start; then restarted on the
  same store (a new port), killed again (one restart in four before it
  listens), ... and at last stopped.

After each kill the store's recorded inputs are read back: they must be the
trace's first N inputs, in order, each applied once. At the end the caller
checks the views and `tandem verify` (tests/soak/test_soak.py).

The random source is seeded (TANDEM_SOAK_SEED, else a fresh seed), and the
seed is in every failure message and in the figures.
"""

from __future__ import annotations

import json
import math
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from bench.serve import token_actors_in_trace
from bench.workload import synthetic_inputs
from tandem.adapters.client import ApiError, Client
from tandem.adapters.store import open_store
from tandem.domain import events as ev
from tandem.replay.port import StoreError
from tests.e2e.serving import ROOT, Served

id_prefix = "soak-"
ingest_batches = (7, 100, 1_000)  # --batch of each run, drawn at random
kill_jitter_s_max = 0.05  # a kill lands up to this long after its threshold was reached
poll_s = 0.005  # how often the store's head is read while waiting for a threshold
run_s_max = 300  # one run of ingest, or the client between two kills, stalls no longer than this
client_timeout_s = 30
serve_batch_inputs_max = 20  # inputs of one request, drawn from 1 to this
serve_jitter_s_max = 0.03  # a server kill lands up to this long after its threshold of answers
serve_start_kill_share = 0.25  # of the restarts, about this many are killed before they listen
restart_attempts_max = 20  # a restart refused (e.g. the lock not yet dropped) is tried again this often
restart_pause_s = 0.2


# --------------------------------------------------------------- the trace


def soak_trace(inputs: int) -> bytes:
    """`inputs` inputs of bench/workload.py's steady state, each with the id
    `soak-NNNNN` (its index): a valid trace, whose prefixes are valid too."""
    encode = msgspec.json.encode
    lines = []
    for index, value in enumerate(synthetic_inputs(actions=math.ceil(inputs / 3))):
        if index == inputs:
            break
        value["id"] = f"{id_prefix}{index:05d}"
        lines.append(encode(value) + b"\n")
    assert len(lines) == inputs, f"the workload made {len(lines)} inputs, not {inputs}"
    return b"".join(lines)


def trace_ids(data: bytes) -> list[str]:
    return [json.loads(line)["id"] for line in data.splitlines() if line.strip()]


# ---------------------------------------------------------------- figures


@dataclass
class Figures:
    """What one soak did and found: printed at the end of the session."""

    command: str
    store: str
    seed: int
    inputs: int
    kills: int = 0
    restarts: int = 0
    lost: int = 0
    duplicated: int = 0
    notes: dict[str, int] = field(default_factory=dict)

    def count(self, note: str) -> None:
        self.notes[note] = self.notes.get(note, 0) + 1

    def line(self) -> str:
        extra = "".join(f", {name} {value}" for name, value in self.notes.items())
        return (
            f"{self.command} on {self.store}: kills {self.kills}, restarts {self.restarts}, inputs {self.inputs}, "
            f"lost {self.lost}, duplicated {self.duplicated}{extra} (seed {self.seed})"
        )


@dataclass(frozen=True)
class Recorded:
    """The store's records of the soak's inputs, in log order."""

    accepted: list[str]  # ids, in order, of every InputAccepted
    rejected: Counter[tuple[str, str]]  # (id, reason) of every InputRejected

    def check_prefix(self, ids: list[str], context: str) -> None:
        """The accepted inputs are the trace's first N, in order, each once;
        nothing else was recorded except duplicates of accepted ones."""
        counts = Counter(self.accepted)
        twice = sorted(identifier for identifier, count in counts.items() if count > 1)
        assert not twice, f"{context}: applied more than once: {twice[:10]}"
        assert self.accepted == ids[: len(self.accepted)], f"{context}: the accepted inputs are not a prefix of the trace"
        others = {key: count for key, count in self.rejected.items() if key[1] != "duplicate_input" or key[0] not in counts}
        assert not others, f"{context}: rejected: {sorted(others)[:10]}"


def recorded(url: str) -> Recorded:
    accepted: list[str] = []
    rejected: Counter[tuple[str, str]] = Counter()
    store = open_store(url, read_only=True)
    try:
        for _, event in store.read():
            kind = type(event)
            if kind is ev.InputAccepted or kind is ev.InputRejected:
                identifier = event.input.id
                if identifier is None or not identifier.startswith(id_prefix):
                    continue
                if kind is ev.InputAccepted:
                    accepted.append(identifier)
                else:
                    rejected[(identifier, event.reason)] += 1
    finally:
        store.close()
    return Recorded(accepted, rejected)


def lost_and_duplicated(records: Recorded, ids: list[str]) -> tuple[int, int]:
    counts = Counter(records.accepted)
    lost = sum(1 for identifier in ids if identifier not in counts)
    duplicated = sum(count - 1 for count in counts.values() if count > 1)
    return lost, duplicated


# ----------------------------------------------------------------- ingest


def ingest_command(trace: Path, url: str, batch: int) -> list[str]:
    return [sys.executable, "-m", "tandem.adapters.cli", "ingest", str(trace), "--store", url, "--batch", str(batch), "--quiet"]


def spawn(command: list[str], log: Path) -> subprocess.Popen[bytes]:
    """A process in a session of its own (so that a kill reaches all of it),
    stderr appended to `log`."""
    with open(log, "ab") as stderr:
        return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)


def kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=60)


@dataclass(frozen=True)
class Whole:
    """The uninterrupted run's figures the kills are drawn against."""

    events: int  # the store's head after it
    start_s: float  # how long an ingest takes that has nothing left to do
    event_s: float  # the rest of its time, an event


def wait_for_head(process: subprocess.Popen[bytes], url: str, events: int, within_s: float | None = None) -> int:
    """Until the store holds `events` events or the process ended (or,
    with `within_s`, that many seconds passed): the head then."""
    began = time.monotonic()
    while process.poll() is None and head_or_zero(url) < events:
        waited = time.monotonic() - began
        if within_s is not None and waited >= within_s:
            break
        assert waited < run_s_max, f"no progress to {events} events in {run_s_max} s"
        time.sleep(poll_s)
    return head_or_zero(url)


def head_or_zero(url: str) -> int:
    """The store's head, read as a reader does (creating nothing, so never
    racing the writer creating its tables); 0 before the first run made it."""
    try:
        store = open_store(url, read_only=True)
    except StoreError:
        return 0
    try:
        return store.head()
    finally:
        store.close()


def ingest_soak(trace: Path, url: str, kills: int, whole: Whole, seed: int, log: Path, figures: Figures) -> None:
    """SIGKILL `tandem ingest` of `trace` `kills` times, then let it finish.

    Kill k waits until the store holds a threshold of events drawn in
    advance (sorted, over the first 70 % of `whole.events`), then a jitter
    of up to about one batch's work: it lands in the next batch or its commit. When the store holds that
    many already (a big batch passed several thresholds), the kill lands at
    a random moment of the run's start (up to `whole.start_s`: the
    interpreter, the lock, the fold, the resume check), or after the run's
    first commit. Batches and jitters are drawn small enough that the work
    outlasts the kills (`_kill_plan`)."""
    rng = random.Random(seed)
    ids = trace_ids(trace.read_bytes())
    thresholds = sorted(rng.randrange(whole.events * 7 // 10) for _ in range(kills))
    for number, threshold in enumerate(thresholds, 1):
        before = head_or_zero(url)
        where, batch, share = _kill_plan(rng, before, threshold, len(ids) * (whole.events - before) // whole.events, kills - number + 1)
        process = spawn(ingest_command(trace, url, batch), log)
        if where == "kills in a start":
            # A moment of its start: the drawn delay, or its first commit if
            # that comes first (a start with work is shorter than the run
            # with nothing left that measured it).
            wait_for_head(process, url, before + 1, within_s=rng.uniform(0, whole.start_s))
        else:
            head = wait_for_head(process, url, threshold if where == "kills after a threshold" else before + 1)
            batch_s = batch * whole.events / len(ids) * whole.event_s  # about one batch's work
            time.sleep(rng.uniform(0, min(kill_jitter_s_max, batch_s, (whole.events - head) * whole.event_s * share)))
        if process.poll() is not None:
            assert process.returncode == 0, f"ingest exited {process.returncode} (seed {seed}):\n{log.read_text()}"
            break  # it finished before this kill: the remaining kills cannot happen (the test says so)
        kill_group(process)
        figures.kills += 1
        figures.count(where)
        recorded(url).check_prefix(ids, f"after kill {number} ({where}, threshold {threshold} events, seed {seed})")
        figures.restarts += 1  # the next run (or the last one, below)
    final = spawn(ingest_command(trace, url, rng.choice(ingest_batches)), log)
    assert final.wait(timeout=run_s_max) == 0, f"the last ingest exited {final.returncode} (seed {seed}):\n{log.read_text()}"


def _kill_plan(rng: random.Random, head: int, threshold: int, inputs_left: int, kills_left: int) -> tuple[str, int, float]:
    """Where the next kill lands, the run's --batch, and the share of the
    rest of the work its jitter may take. Whatever the place, a batch small
    enough that the kills left cannot use up what is left (a run may commit
    a batch or more before its kill lands: a threshold is passed by a whole
    batch, a start is shorter than the run measured). After a threshold: a
    third of the rest (the thresholds keep the last 30 % free); after the
    first commit, a share as small as the batch."""
    sizes = [size for size in ingest_batches if size * (kills_left + 2) <= inputs_left] or list(ingest_batches[:1])
    if head < threshold:
        where, share = "kills after a threshold", 1 / 3
    elif rng.random() < 0.5:
        where, share = "kills in a start", 0.0
    else:
        where, share = "kills after a run's first commit", 1 / (kills_left + 2)
    return where, rng.choice(sizes), share


# ------------------------------------------------------------------ serve


def requests_of(inputs: list[dict[str, Any]], rng: random.Random) -> list[list[dict[str, Any]]]:
    """The inputs cut into requests: runs of one actor (a batch speaks for
    one token), of 1 to `serve_batch_inputs_max` inputs, sizes drawn at random."""
    requests: list[list[dict[str, Any]]] = []
    size = 0
    for value in inputs:
        if requests and requests[-1][0]["actor"] == value["actor"] and len(requests[-1]) < size:
            requests[-1].append(value)
        else:
            requests.append([value])
            size = rng.randint(1, serve_batch_inputs_max)
    return requests


class SoakClient(threading.Thread):
    """Sends each request until it is answered, the same body every time (one
    input as JSON, several as NDJSON: one transaction)."""

    def __init__(self, requests: list[list[dict[str, Any]]], tokens: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.requests = requests
        self.inputs = sum(len(request) for request in requests)
        self.tokens = tokens
        self.url = ""
        self.generation = 0  # bumped by every restart: the clients are rebuilt
        self.changed = threading.Condition()
        self.answered = 0  # inputs
        self.resent = 0  # sends of a request after its first
        self.duplicates = 0  # inputs answered `duplicate_input`: committed before, their answer lost
        self.failure: BaseException | None = None
        self._clients: dict[str, Client] = {}
        self._generation = 0

    def serve_at(self, url: str) -> None:
        with self.changed:
            self.url = url
            self.generation += 1
            self.changed.notify_all()

    def run(self) -> None:
        try:
            for request in self.requests:
                self._send(request)
                self.answered += len(request)
        except BaseException as error:  # noqa: BLE001 - reported by the test
            self.failure = error

    def _send(self, request: list[dict[str, Any]]) -> None:
        first = True
        while True:
            with self.changed:
                generation, url = self.generation, self.url
            if not first:
                self.resent += 1
            first = False
            client = self._client(generation, url, request[0]["actor"])
            try:
                answer = client.submit(request[0]) if len(request) == 1 else client.submit_batch(request)
            except (OSError, ValueError) as error:  # refused, cut, timed out, half an answer
                client.close()
                self._wait_for_restart(generation, error)
                continue
            except ApiError as error:
                if error.status == 503:
                    time.sleep(restart_pause_s)
                    continue
                raise
            outcomes = {(result["accepted"], result["reason"]) for result in answer["results"]}
            # All or nothing: a request is applied whole, or answered a duplicate whole.
            assert outcomes in ({(True, None)}, {(False, "duplicate_input")}), f"{request[0]['id']}...: {answer}"
            if outcomes == {(False, "duplicate_input")}:
                self.duplicates += len(request)
            return

    def _client(self, generation: int, url: str, actor: str) -> Client:
        """One kept-alive client per actor and server run."""
        if generation != self._generation:
            for client in self._clients.values():
                client.close()
            self._clients, self._generation = {}, generation
        if actor not in self._clients:
            self._clients[actor] = Client(url, self.tokens[actor], timeout_s=client_timeout_s)
        return self._clients[actor]

    def _wait_for_restart(self, generation: int, error: BaseException) -> None:
        """Until the server was restarted (or a moment, if this was the
        server going away before the kill was noticed)."""
        with self.changed:
            if self.generation == generation:
                self.changed.wait(timeout=run_s_max)
            if self.generation == generation and isinstance(error, ConnectionRefusedError):
                raise AssertionError(f"the server was not restarted after {error!r}")


def start_server(server: Served, figures: Figures) -> None:
    """Start (again) on the same store; a start refused is tried again."""
    for attempt in range(1, restart_attempts_max + 1):
        try:
            server.start()
            return
        except AssertionError:
            if attempt == restart_attempts_max:
                raise
            figures.count("starts refused")
            time.sleep(restart_pause_s)


def wait_for_answers(client: SoakClient, answers: int) -> None:
    deadline = time.monotonic() + run_s_max
    while client.is_alive() and client.answered < answers:
        assert time.monotonic() < deadline, f"no progress to {answers} answers in {run_s_max} s"
        time.sleep(poll_s / 10)


def serve_soak(trace: Path, url: str, kills: int, seed: int, directory: Path, figures: Figures) -> SoakClient:
    """SIGKILL `tandem serve` `kills` times while the client sends `trace`:
    after a random number of answers (drawn in advance, sorted) and a jitter;
    and, one restart in `serve_start_kill_share`, at a random moment of the
    restart itself, before it listens (taking the place of the next kill)."""
    rng = random.Random(seed)
    ids = trace_ids(trace.read_bytes())
    server = Served(directory, url, "--no-runtime-inputs", name="soak-serve")
    client = SoakClient(requests_of(token_actors_in_trace(trace.read_bytes()), rng), server.tokens)
    began = time.monotonic()
    start_server(server, figures)
    start_s = time.monotonic() - began
    client.serve_at(server.url)
    client.start()
    thresholds = iter(sorted(rng.randrange(client.inputs * 9 // 10) for _ in range(kills)))
    try:
        while figures.kills < kills:
            threshold = next(thresholds)
            wait_for_answers(client, threshold)
            delay = rng.uniform(0, serve_jitter_s_max)
            time.sleep(delay)
            if not client.is_alive():
                break  # the work was done before this kill
            server.kill()
            figures.kills += 1
            recorded(url).check_prefix(ids, f"after kill {figures.kills}, {delay:.3f} s after {threshold} answers (seed {seed})")
            while figures.kills < kills and rng.random() < serve_start_kill_share:
                kill_in_start(server, rng.uniform(0, start_s), figures)
                recorded(url).check_prefix(ids, f"after kill {figures.kills}, in a start (seed {seed})")
                next(thresholds)
            start_server(server, figures)
            figures.restarts += 1
            client.serve_at(server.url)
        client.join(timeout=run_s_max * 4)
        assert not client.is_alive(), f"the client did not finish (seed {seed})"
        assert client.failure is None, f"the client failed (seed {seed}): {client.failure!r}"
        assert server.stop() == 0, server.log()
    finally:
        server.kill()
    assert "Traceback" not in server.log(), server.log()
    return client


def kill_in_start(server: Served, delay_s: float, figures: Figures) -> None:
    """Start the server again and SIGKILL it `delay_s` into its start (if it
    was listening by then, the kill still counts: it came just after)."""
    killed = server.process

    def start() -> None:
        try:
            server.start()
        except AssertionError:
            pass  # "did not start": killed

    starting = threading.Thread(target=start, daemon=True)
    starting.start()
    while server.process is killed:
        time.sleep(poll_s / 10)
    time.sleep(delay_s)
    assert server.process is not None
    alive = server.process.poll() is None
    server.kill()
    starting.join(timeout=run_s_max)
    assert not starting.is_alive(), "a start killed did not end"
    assert alive, f"a start ended before its kill:\n{server.log()}"
    figures.kills += 1
    figures.restarts += 1
    figures.count("kills in a start")


# --------------------------------------------------------------- takeover


class TakeoverClient(SoakClient):
    """A SoakClient that knows both servers of a writer and a standby and
    sends each request to whichever answers: a refused or cut connection, a
    409 `read_only` (the standby) or a 503 moves it to the other. It keeps
    the time of every answer, for the outage a takeover shows a client."""

    def __init__(self, requests: list[list[dict[str, Any]]], tokens: dict[str, str]) -> None:
        super().__init__(requests, tokens)
        self.urls: list[str] = []
        self.answered_at: list[tuple[float, str]] = []  # (when, by which server)
        self.paused = False  # set while the killed server starts again: no request sent meanwhile

    def pause(self, paused: bool) -> None:
        with self.changed:
            self.paused = paused
            self.changed.notify_all()

    def serve_at_all(self, urls: list[str]) -> None:
        with self.changed:
            self.urls = list(urls)
            self.generation += 1

    def _send(self, request: list[dict[str, Any]]) -> None:
        while True:
            with self.changed:
                while self.paused:
                    self.changed.wait()
                generation, urls = self.generation, list(self.urls)
            for url in urls:
                client = self._client(generation, url, request[0]["actor"], url)
                try:
                    answer = client.submit(request[0]) if len(request) == 1 else client.submit_batch(request)
                except (OSError, ValueError):
                    client.close()
                    continue
                except ApiError as error:
                    if error.status in (409, 503) and error.code in ("read_only", "store_unavailable", "commit_unknown"):
                        continue
                    raise
                self._answered(request, answer, url)
                return
            self.resent += 1
            time.sleep(poll_s)

    def _answered(self, request: list[dict[str, Any]], answer: dict[str, Any], url: str) -> None:
        outcomes = {(result["accepted"], result["reason"]) for result in answer["results"]}
        assert outcomes in ({(True, None)}, {(False, "duplicate_input")}), f"{request[0]['id']}...: {answer}"
        if outcomes == {(False, "duplicate_input")}:
            self.duplicates += len(request)
        self.answered_at.append((time.monotonic(), url))

    def _client(self, generation: int, url: str, actor: str, key: str = "") -> Client:  # type: ignore[override]
        """One kept-alive client per server, actor and list of servers."""
        if generation != self._generation:
            for client in self._clients.values():
                client.close()
            self._clients, self._generation = {}, generation
        if (key, actor) not in self._clients:
            self._clients[(key, actor)] = Client(url, self.tokens[actor], timeout_s=client_timeout_s)  # type: ignore[index]
        return self._clients[(key, actor)]  # type: ignore[index]

    def outage_after(self, moment: float, url: str) -> float | None:
        """Seconds from `moment` (a kill) to the first answer after it from
        the server at `url` (the standby taking over)."""
        later = [at for at, by in self.answered_at if at > moment and by == url]
        return later[0] - moment if later else None


takeover_wait_s = 60  # a standby that has not taken over by then fails the soak


def is_writer(server: Served) -> bool:
    try:
        return Client(server.url, "", timeout_s=client_timeout_s).health().get("writer") is True
    except (OSError, ApiError, ValueError):
        return False


def takeover_soak(trace: Path, url: str, takeovers: int, seed: int, directory: Path, figures: Figures) -> TakeoverClient:
    """A writer and a standby (`tandem serve --standby`, both) on one store;
    the writer SIGKILLed `takeovers` times while the client sends `trace`
    (after a random number of answers, drawn in advance, and a jitter), the
    standby taking over each time, the killed one restarted as the new
    standby. The longest outage a client saw (a kill to its next answer)
    goes into the figures."""
    rng = random.Random(seed)
    ids = trace_ids(trace.read_bytes())
    options = ("--standby", "--no-runtime-inputs", "--interval", "0.1")
    servers = [Served(directory, url, *options, name=f"takeover-{side}") for side in "ab"]
    servers[1].tokens, servers[1].tokens_file = servers[0].tokens, servers[0].tokens_file
    client = TakeoverClient(requests_of(token_actors_in_trace(trace.read_bytes()), rng), servers[0].tokens)
    start_server(servers[0], figures)
    start_server(servers[1], figures)
    writer = 0
    client.serve_at_all([server.url for server in servers])
    client.start()
    outages: list[float] = []
    try:
        for number in range(takeovers):
            # The next kill after a random share of what is left for this one
            # and those after it (a restart runs while the client goes on).
            left = client.inputs - client.answered
            wait_for_answers(client, client.answered + rng.randrange(max(1, left // (takeovers - number + 1))))
            time.sleep(rng.uniform(0, serve_jitter_s_max))
            if not client.is_alive():
                break
            killed_at, taking_over = time.monotonic(), servers[1 - writer].url
            servers[writer].kill()
            figures.kills += 1
            deadline = time.monotonic() + takeover_wait_s
            while not is_writer(servers[1 - writer]):
                assert time.monotonic() < deadline, f"the standby did not take over (seed {seed}):\n{servers[1 - writer].log()}"
                time.sleep(poll_s)
            figures.count("takeovers")
            deadline = time.monotonic() + takeover_wait_s
            while client.is_alive() and client.outage_after(killed_at, taking_over) is None:
                assert time.monotonic() < deadline, f"no answer after takeover {figures.kills} (seed {seed})"
                time.sleep(poll_s)
            outage = client.outage_after(killed_at, taking_over)
            if outage is not None:
                outages.append(outage)
            recorded(url).check_prefix(ids, f"after takeover {figures.kills} (seed {seed})")
            # The killed one starts again as the new standby. The client waits
            # meanwhile: the takeovers' count does not depend on how fast it sends.
            client.pause(True)
            start_server(servers[writer], figures)
            figures.restarts += 1
            writer = 1 - writer
            client.serve_at_all([server.url for server in servers])
            client.pause(False)
        client.join(timeout=run_s_max * 4)
        assert not client.is_alive(), f"the client did not finish (seed {seed})"
        assert client.failure is None, f"the client failed (seed {seed}): {client.failure!r}"
        for server in servers:
            assert server.stop() == 0, server.log()
    finally:
        for server in servers:
            server.kill()
    for server in servers:
        assert "Traceback" not in server.log(), server.log()
    if outages:
        figures.notes["longest outage ms"] = round(max(outages) * 1000)
        figures.notes["median outage ms"] = round(statistics.median(outages) * 1000)
    return client
