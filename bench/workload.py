"""Synthetic, deterministic traces: for benchmarks, soak runs and restart tests.

`synthetic_trace(n)` is a realistic steady state: one delegated task whose
background session proposes actions that are claimed, accepted and succeed,
with watchdog heartbeats along the way. `live_actions` adds that many actions
first which stay live (pending behind a prerequisite that never finishes),
to measure that the per-input cost does not grow with the live set.
"""

from __future__ import annotations

import datetime
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[1]
START = datetime.datetime(2026, 3, 1, 9, 0, tzinfo=datetime.timezone.utc)
heartbeat_every_inputs = 40


def _time(second: int) -> str:
    return (START + datetime.timedelta(seconds=second)).strftime("%Y-%m-%dT%H:%M:%SZ")


def synthetic_inputs(actions: int, live_actions: int = 0) -> Iterator[dict[str, Any]]:
    clock = 0

    def stamp(value: dict[str, Any]) -> dict[str, Any]:
        nonlocal clock
        value["at"] = _time(clock)
        clock += 1
        return value

    yield stamp({"type": "policy.set", "actor": "daemon", "allowed_operations": ["worker.start"], "write_roots": ["/repo"]})
    yield stamp({"type": "conversation.open", "actor": "daemon", "conversation_id": "fg", "role": "foreground", "context_limit": 200000, "reserve": 20000})
    yield stamp({"type": "conversation.open", "actor": "daemon", "conversation_id": "bg", "role": "background", "foreground_id": "fg", "context_limit": 100000, "reserve": 10000})
    yield stamp({"type": "background.bind", "actor": "daemon", "conversation_id": "bg", "foreground_id": "fg", "generation": 1})
    yield stamp({"type": "watchdog.heartbeat", "actor": "watchdog", "generation": 1})
    yield stamp({
        "type": "task.delegate", "task_id": "work", "conversation_id": "fg", "message_refs": [], "goal": "synthetic work",
        "done_when": ["every action succeeded"],
        "grant": {"grant_id": "g-work", "allowed_operations": ["worker.start"], "write_roots": ["/repo"]},
    })  # fmt: skip
    emitted = 0

    def propose(operation_id: str, prerequisites: list[dict[str, Any]]) -> dict[str, Any]:
        return stamp({
            "type": "action.propose", "actor": "background", "generation": 1, "operation_id": operation_id,
            "cause_key": f"cause:{operation_id}", "operation": "worker.start", "target": operation_id,
            "resource": f"wt-{operation_id}", "write_paths": [f"/repo/{operation_id}"], "task_id": "work",
            "grant_id": "g-work", "prerequisites": prerequisites, "input_revisions": {"task": 1, "grant": 1},
        })  # fmt: skip

    if live_actions:
        # A gate that is claimed and accepted but never finishes: everything
        # behind it stays pending (live) for the whole run.
        yield propose("gate", [])
        yield stamp({"type": "executor.receipt", "actor": "executor", "operation_id": "gate", "attempt_id": "gate/a1", "result": "accepted"})
        for index in range(live_actions):
            yield propose(f"live-{index}", [{"operation_id": "gate", "outcome": "succeeded"}])
            emitted += 1
            if emitted % heartbeat_every_inputs == 0:
                yield stamp({"type": "watchdog.heartbeat", "actor": "watchdog", "generation": 1})
    for index in range(actions):
        operation_id = f"op-{index}"
        steps = (
            lambda: propose(operation_id, []),
            lambda: stamp({"type": "executor.receipt", "actor": "executor", "operation_id": operation_id, "attempt_id": f"{operation_id}/a1", "result": "accepted"}),
            lambda: stamp({"type": "executor.outcome", "actor": "executor", "operation_id": operation_id, "outcome": "succeeded", "artifact_revision": f"{operation_id}@1"}),
        )  # fmt: skip
        for step in steps:  # stamped one at a time, so the clock follows the order
            yield step()
            emitted += 1
            if emitted % heartbeat_every_inputs == 0:
                yield stamp({"type": "watchdog.heartbeat", "actor": "watchdog", "generation": 1})


def synthetic_trace(actions: int, live_actions: int = 0) -> bytes:
    """The trace as JSON Lines bytes."""
    encode = msgspec.json.encode
    return b"".join(encode(value) + b"\n" for value in synthetic_inputs(actions, live_actions))


def observation_inputs(observations: int, causes: int, repeat_every: int = 3) -> Iterator[dict[str, Any]]:
    """A burst of CI observations spread over `causes` PRs: each source flips
    between failing and passing, and every `repeat_every`-th observation of a
    source repeats its latest fingerprint (a poll that saw nothing new)."""
    seen = [0] * causes  # observations of each source so far
    changes = [0] * causes  # of those, the ones that changed something
    for index in range(observations):
        cause = index % causes
        count = seen[cause]
        seen[cause] = count + 1
        if count % repeat_every == repeat_every - 1:
            serial = changes[cause] - 1  # a repeat of the latest fingerprint
        else:
            serial = changes[cause]
            changes[cause] += 1
        status = "failed" if serial % 2 == 0 else "passed"
        yield {
            "type": "observe",
            "at": _time(index // 10),
            "actor": "source",
            "source_id": f"ci-{cause}",
            "kind": "ci",
            "scope": f"https://scm/pr/{cause}",
            "fingerprint": f"{status}#{serial}",
            "status": status,
            "complete": True,
            "text": f"CI {status} on PR {cause}",
        }


def observation_trace(observations: int, causes: int, repeat_every: int = 3) -> bytes:
    encode = msgspec.json.encode
    return b"".join(encode(value) + b"\n" for value in observation_inputs(observations, causes, repeat_every))


def alternate(first: Callable[[], float], second: Callable[[], float], repetitions: int) -> tuple[list[float], list[float]]:
    """A B, B A, A B...: neither side always gets the warmer (or noisier) slot.
    The figures of each side, in the order taken."""
    a_values: list[float] = []
    b_values: list[float] = []
    for repetition in range(repetitions):
        order = ((first, a_values), (second, b_values))
        for function, values in order[::-1] if repetition % 2 else order:
            values.append(function())
    return a_values, b_values


def started_serve(options: list[str], python: str = sys.executable) -> tuple[subprocess.Popen[str], str]:
    """A real `tandem serve` with `options` (its store and tokens at least),
    on a free loopback port: the process and its URL, once it listens."""
    process = subprocess.Popen(
        [python, "-m", "tandem.adapters.cli", "serve", *options, "--listen", "127.0.0.1:0", "--no-runtime-inputs"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    line = process.stdout.readline() if process.stdout else ""
    if not line.startswith("listening on "):
        process.kill()
        raise RuntimeError(f"tandem serve did not start: {line!r}")
    return process, line.split()[-1]


class SideBySide:
    """One row of a side-by-side bench: the large side's milliseconds over
    the small side's (medians), against the goal."""

    large_ms: list[float]
    small_ms: list[float]
    goal_ratio_max = 2.0

    @property
    def ratio(self) -> float:
        return statistics.median(self.large_ms) / statistics.median(self.small_ms)

    @property
    def met(self) -> bool:
        return self.ratio <= self.goal_ratio_max

    @property
    def verdict(self) -> str:
        return "MET" if self.met else "MISSED"


def bench_main(
    doc: str, run: Callable[..., Any], full: Any, quick: Any, quick_help: str, argv: Any = None,
    flags: dict[str, str] | None = None, options: dict[str, str] | None = None,
) -> int:  # fmt: skip
    """A benchmark's command line: `--quick` (small sizes), `--tmp DIR` (where
    the scratch stores go), the on/off `flags` and the `options` taking a
    DIR given (name: help), passed to `run` as keywords; runs `run(sizes,
    tmp, ...)` and prints how long it took."""
    import argparse
    import time

    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--tmp", default=None, help="parent of the scratch directory (default: system temp dir)")
    for name, text in (flags or {}).items():
        parser.add_argument(f"--{name}", action="store_true", help=text)
    for name, text in (options or {}).items():
        parser.add_argument(f"--{name}", metavar="DIR", default=None, help=text)
    arguments = parser.parse_args(argv)
    started = time.perf_counter()
    keywords = {name: getattr(arguments, name) for name in [*(flags or {}), *(options or {})]}
    run(quick if arguments.quick else full, arguments.tmp, **keywords)
    print(f"\n({time.perf_counter() - started:,.0f} s)")
    return 0
