"""Side files: what the runtime writes beside its store for others to read
(the health snapshot, for the watchdog; a refused spool file's reasons, for
whoever dropped it). None of them is the log, so none may stop the engine:
a side file that cannot be written (a full volume, no permission, a
read-only file system, a quota, its folder gone) is a fact, not an exit.
It is said on stderr (a warning with the reason, at most once every
`side_file_warning_interval_s` while it lasts), listed in `degraded` of
`GET /v1/health` (docs/api.md) from its first failure until it is written
again, and its recovery is said once.

Only OSError is taken so: anything else is a bug, and is raised as before.
A side file of another kind reports the same way under a name of its own
(`side_file_names`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tandem.adapters.process import log
from tandem.adapters.terminal import printable

side_file_warning_interval_s = 60.0
# What each side file is called in `degraded` (the key) and in the log (the value).
side_file_names = {"health_file": "the health file", "spool_reasons": "the reasons of a refused spool file"}


@dataclass(frozen=True, slots=True)
class _Failing:
    path: str
    reason: str
    since: str  # RFC 3339 UTC: its first failure in this run of failures
    said_at: float  # monotonic: when the warning was last said


class SideFiles:
    """The side files that cannot be written now. `clock` gives the wall
    clock as RFC 3339 (for `since`), `monotonic` paces the warnings. Writes
    come from the runtime's thread; `degraded` may be read from any."""

    def __init__(self, clock: Callable[[], str], monotonic: Callable[[], float]) -> None:
        self.clock = clock
        self.monotonic = monotonic
        self._guard = threading.Lock()
        self._failing: dict[str, _Failing] = {}

    def write(self, what: str, path: Path, write: Callable[[], None]) -> bool:
        """Run `write`, which writes the side file `what` at `path`: False
        when it raised OSError (recorded and said, never raised)."""
        try:
            write()
        except OSError as error:
            self._failed(what, path, error.strerror or type(error).__name__)
            return False
        self._written(what, path)
        return True

    def degraded(self) -> list[dict[str, str]]:
        """The facts of `GET /v1/health`'s `degraded`, by name: what, path, reason, since."""
        with self._guard:
            failing = sorted(self._failing.items())
        return [{"what": what, "path": fact.path, "reason": fact.reason, "since": fact.since} for what, fact in failing]

    def _failed(self, what: str, path: Path, reason: str) -> None:
        now = self.monotonic()
        with self._guard:
            before = self._failing.get(what)
            due = before is None or now - before.said_at >= side_file_warning_interval_s
            since = before.since if before is not None else self.clock()
            said_at = now if due or before is None else before.said_at
            self._failing[what] = _Failing(str(path), reason, since, said_at)
        if due:
            log(
                f"warning: cannot write {side_file_names[what]} {printable(str(path))}: {printable(reason)}; the engine"
                f" goes on (said again at most every {side_file_warning_interval_s:g} s while it lasts)"
            )

    def _written(self, what: str, path: Path) -> None:
        with self._guard:
            before = self._failing.pop(what, None)
        if before is not None:
            log(f"{side_file_names[what]} {printable(str(path))} is written again (it could not be since {before.since})")
