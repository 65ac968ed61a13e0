"""Snapshots written beside the writer, by a process of their own.

A snapshot written inside a commit call costs that call the views' fold and
the pickling of the state (a fifth of `tandem ingest`'s time at 50,000 events,
bench/PROFILE.md). `SnapshotsBeside` gives that work to a second process, as
Redis's BGSAVE does, so the writer goes on with its inputs meanwhile:

- the writer starts one (`start`) when a snapshot is due, and at most one at a
  time; it keeps no views for it;
- the process (`python -m tandem.adapters.snapshots_beside`, this module) opens
  the store by its URL, folds it from its newest usable snapshot as a restart
  does (`Engine`), writes a snapshot at the head it reached, and prints what
  it wrote as one JSON line;
- the writer reads that line when it next looks (`collect`), or waits for it
  (`wait`, at the end of `tandem ingest`); a stopping `tandem serve` stops it
  (`cancel`) and writes its own snapshot at the head; a process running over
  `snapshot_process_s_max` (a store that stopped answering) is stopped.

Why a new process, not `os.fork()`: a forked child may not use, nor open, an
SQLite database its parent has open (https://sqlite.org/howtocorrupt.html,
section 2.6), and it would hold the parent's writer lock and PostgreSQL
sessions open after the parent died.

What it changes: nothing in the log, and nothing a reader sees but when a
snapshot appears. A snapshot is a cache (replay/snapshot.py): written or not,
its fold is the one a restart does, and the process takes no writer lock
(like `tandem snapshot`), since it writes only the snapshot table. The
process refuses to write when its code's fingerprint is not the writer's (it
would prune the writer's snapshots as other code's). Its URL goes through
its standard input, never its command line (a PostgreSQL URL may hold a
password). A failure is logged as a warning: the commits stand.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from tandem.replay import snapshot as snapshots

snapshot_wait_s_max = 600.0  # how long `wait` waits for the process (then it is left to finish alone)
snapshot_process_s_max = 900.0  # a process running longer is stopped (a store that stopped answering, say)
cancel_wait_s = 5.0  # after SIGTERM, before SIGKILL
report_chars_max = 2_000  # of a failed process's stderr, in the warning

log = logging.getLogger("tandem.snapshots")


def snapshots_beside_for(url: str) -> SnapshotsBeside | None:
    """A `SnapshotsBeside` for the store at `url`; None for a memory store,
    which no other process can open."""
    from tandem.adapters.store.url import parse_store_url

    return None if parse_store_url(url).kind == "memory" else SnapshotsBeside(url)


class SnapshotsBeside:
    """The writer's side: at most one snapshot process at a time."""

    def __init__(self, url: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.url = url
        self.clock = clock
        self.process: subprocess.Popen[bytes] | None = None
        self.said: Any = None  # the running process's standard error: a file, never a pipe that could fill and block it
        self.started_at_s = 0.0  # `clock` when it started
        self.started_at_position = 0  # the head when the running (or last) process started
        self.started = 0  # processes started, for tests and reports
        self.failed = 0

    def busy(self) -> bool:
        """Whether a process is running; one running for more than
        `snapshot_process_s_max` is stopped, and then is not."""
        if self.process is None or self.process.poll() is not None:
            return False
        if self.clock() - self.started_at_s <= snapshot_process_s_max:
            return True
        log.warning("snapshot process %d ran over %.0f s: stopped", self.process.pid, snapshot_process_s_max)
        self.cancel()
        self.failed += 1
        return False

    def cancel(self) -> None:
        """Stop the running process, if any (what it had not written is not
        written: a snapshot is one transaction)."""
        process, self.process = self.process, None
        self._take_said()
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.communicate(timeout=cancel_wait_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()

    def _take_said(self) -> str:
        """The end of what the last process wrote on its standard error; its file closed."""
        said, self.said = self.said, None
        if said is None:
            return ""
        with said:
            said.seek(0)
            return said.read().decode(errors="replace").strip()[-report_chars_max:]

    def start(self, position: int) -> None:
        """Start a process that writes the snapshot at `position` (at the
        store's head if that is lower)."""
        assert self.process is None, "one snapshot process at a time; a finished one is collected first"
        assert position >= 1, position
        request = {"store": self.url, "position": position, "fingerprint": snapshots.code_fingerprint()}
        self.said = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tandem.adapters.snapshots_beside"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,  # one JSON line
            stderr=self.said,
        )
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(request).encode() + b"\n")
        self.process.stdin.close()
        self.process.stdin = None  # communicate() would flush it
        self.started_at_position = position
        self.started_at_s = self.clock()
        self.started += 1

    def collect(self) -> snapshots.Written | None:
        """What a finished process wrote (None: none finished, or it failed,
        which is logged); the process is then forgotten."""
        if self.process is None or self.process.poll() is None:
            return None
        return self.wait()

    def wait(self, timeout_s: float = snapshot_wait_s_max) -> snapshots.Written | None:
        """Wait for the running process, if any, and take what it wrote."""
        process = self.process
        if process is None:
            return None
        try:
            out, _ = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            log.warning("snapshot process %d still running after %.0f s: left to finish", process.pid, timeout_s)
            self.process = None
            self._take_said()
            return None
        self.process = None
        said = self._take_said()
        if process.returncode == 0:
            try:
                report = json.loads(out)
                if report.get("keys_error"):
                    log.warning("key table not brought up to date by process %d: %s", process.pid, report["keys_error"])
                return _written(report)
            except (ValueError, TypeError, KeyError) as error:
                reason = f"unreadable report {out[:200]!r} ({error})"
        else:
            reason = said or f"exit {process.returncode}"
        self.failed += 1
        log.warning("snapshot not written by process %d: %s", process.pid, reason)
        return None


def _written(report: Any) -> snapshots.Written | None:
    """The process's report: a Written, or None when there was nothing to write."""
    if report.get("written") is False:
        return None
    return snapshots.Written(
        position=int(report["position"]),
        fingerprint=str(report["fingerprint"]),
        size=int(report["size"]),
        state_bytes=int(report["state_bytes"]),
        views_bytes=int(report["views_bytes"]),
        seconds=float(report["seconds"]),
    )


# --------------------------------------------------------------- the process


def snapshot_at(url: str, position: int, fingerprint: str) -> dict[str, Any]:
    """Fold the first `position` events of the store at `url` and write a
    snapshot there (at its head if that is lower), then bring the store's
    key table up to there (replay/key_table.py): what was written."""
    from tandem.adapters.store import open_store
    from tandem.replay.engine import Engine

    if snapshots.code_fingerprint() != fingerprint:
        raise RuntimeError(
            f"this process's code (fingerprint {snapshots.code_fingerprint()[:12]}) is not the writer's "
            f"({fingerprint[:12]}): no snapshot written"
        )
    store = open_store(url)
    try:
        engine = Engine(store, snapshot_every=0, until=position)
        if engine.state.position == 0 or engine.snapshot_position == engine.state.position:
            report: dict[str, Any] = {"written": False, "position": engine.state.position}
        else:
            written = engine.write_snapshot()
            report = {
                "written": True,
                "position": written.position,
                "fingerprint": written.fingerprint,
                "size": written.size,
                "state_bytes": written.state_bytes,
                "views_bytes": written.views_bytes,
                "seconds": written.seconds,
            }
        return report | _keys_upkept(store, engine.state.position, fingerprint)
    finally:
        store.close()


def _keys_upkept(store: Any, position: int, fingerprint: str) -> dict[str, Any]:
    """The key table brought up to `position`: how far, or why not (the
    snapshot stands either way: both are caches)."""
    from tandem.replay.key_table import index_keys

    started = time.perf_counter()
    try:
        indexed = index_keys(store, fingerprint, until=position)
    except Exception as error:  # reported, logged by the writer
        return {"keys_error": f"{type(error).__name__}: {error}"[:report_chars_max]}
    return {"keys_indexed": indexed, "keys_through": store.keys_through(fingerprint), "keys_seconds": time.perf_counter() - started}


def main() -> int:
    started = time.perf_counter()
    try:
        request = json.loads(sys.stdin.readline())
        report = snapshot_at(str(request["store"]), int(request["position"]), str(request["fingerprint"]))
    except Exception as error:  # reported to the writer, which logs it: a snapshot is a cache
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        return 1
    report["process_seconds"] = time.perf_counter() - started
    sys.stdout.write(json.dumps(report) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
