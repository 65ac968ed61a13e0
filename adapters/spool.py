"""The spool folder: trace files dropped by writers, applied exactly once.

Writers write a temporary name (starting with "." or not ending in ".jsonl")
and then rename it to `NAME.jsonl`. Ready files are applied in name order
through the resumable ingest (`adapters/ingest.py`: keyed by file name and
SHA-256, progress committed in the same transaction as the inputs), so a
crash at any point, even between applying a file and moving it, applies
nothing twice. An applied file moves to `done/`; a refused one to
`rejected/`, next to `NAME.jsonl.error` (its `line N: ...` messages).

The spool is a door into the engine, so it is kept shut to others:

* it speaks only for the actors it is given (`--spool-actors`; default all
  but `human` and `watchdog`) and never for what the runtime records about
  itself (replay/edge.py): such a file is refused whole;
* a line may leave `at` out (stamped when applied); a far-future `at` is
  refused, as over HTTP; a file whose first line to apply is earlier than
  the store's last input is refused whole (`SpoolLate`: the runtime raises
  an incident naming it);
* a spool folder writable by group or others, or not owned by the runtime's
  user, or whose `done/` or `rejected/` is a symlink, is refused with a
  message; a file that is a symlink, not a regular file, or not owned by the
  runtime's user is refused (moved, as it is, into `rejected/`: nothing is
  followed, nothing moved outside the spool);
* file names reach log lines escaped (adapters/terminal.py).
"""

from __future__ import annotations

import datetime
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tandem.adapters.health_file import format_time, utc_now, write_atomically
from tandem.adapters.ingest import BehindStore, TraceMismatch, ingest
from tandem.adapters.process import ProcessError, log
from tandem.adapters.side_files import SideFiles
from tandem.adapters.terminal import printable
from tandem.replay.edge import EdgeRefused, LiveEdge, SpoolActors
from tandem.replay.engine import Engine
from tandem.replay.port import ConcurrencyError
from tandem.replay.traces import TraceInvalid, parse_trace

spool_suffix = ".jsonl"
error_suffix = ".error"
spool_file_bytes_max = 1_073_741_824  # 1 GiB: a bigger file is refused, not read
folder_mode_new = 0o700


class SpoolError(ProcessError):
    """The spool folder cannot be used (exit 1, or 2 for bad usage)."""


class _Interrupted(Exception):
    """A stop was asked for between two committed batches of a spool file."""


def is_ready(name: str) -> bool:
    """A spool entry to apply: `NAME.jsonl`, not a hidden (temporary) name."""
    return name.endswith(spool_suffix) and not name.startswith(".") and len(name) > len(spool_suffix)


def _free_path(folder: Path, name: str) -> Path:
    """`folder/name`, or `name.2`, `name.3`... if taken: a file dropped again
    under a used name never overwrites the earlier one."""
    candidate, number = folder / name, 1
    while os.path.lexists(candidate):
        number += 1
        candidate = folder / f"{name}.{number}"
    return candidate


@dataclass(frozen=True, slots=True)
class SpoolApplied:
    name: str
    applied: int
    rejected: int
    skipped: int

    def summary(self, at: str | None) -> dict[str, Any]:
        return {
            "file": self.name,
            "at": at,
            "inputs": self.applied,
            "rejected": self.rejected,
            "already_applied": self.skipped,
        }


@dataclass(frozen=True, slots=True)
class SpoolLate:
    """A file refused whole because its first line to apply is earlier than
    the store's last input (the store moved on before it came), now kept in
    rejected/ as `kept`: the runtime raises an incident naming it."""

    name: str
    kept: str
    reason: str

    def detail(self) -> str:
        return (
            f"spool file {self.name} refused whole, nothing of it applied: {self.reason}; "
            f"kept as rejected/{self.kept} beside its {error_suffix} file. To apply it, leave `at` out of its lines "
            "(each is then stamped when applied) and rename it into the spool again"
        )


def folder_problem(folder: Path, role: str) -> str | None:
    """Why `folder` is not a safe spool folder (or subfolder), or None."""
    try:
        status = folder.lstat()
    except OSError as error:
        return f"{role} {printable(str(folder))}: {error.strerror}"
    if stat.S_ISLNK(status.st_mode):
        return f"{role} {printable(str(folder))} is a symlink; give the real folder"
    if not stat.S_ISDIR(status.st_mode):
        return f"{role} {printable(str(folder))} is not a folder"
    if status.st_uid != os.geteuid():
        return f"{role} {printable(str(folder))} is owned by uid {status.st_uid}, not this runtime's user ({os.geteuid()})"
    if status.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (
            f"{role} {printable(str(folder))} is writable by group or others (mode {stat.S_IMODE(status.st_mode):04o}):"
            f" anyone who can write there could speak for the spool's actors; run: chmod go-w {printable(str(folder))}"
        )
    return None


def file_problem(status: os.stat_result) -> str | None:
    """Why a spool entry (its lstat) is refused unread, or None."""
    if stat.S_ISLNK(status.st_mode):
        return "a symlink: the spool takes regular files only, and follows no link"
    if not stat.S_ISREG(status.st_mode):
        return "not a regular file"
    if status.st_uid != os.geteuid():
        return f"owned by uid {status.st_uid}, not this runtime's user ({os.geteuid()})"
    if status.st_size > spool_file_bytes_max:
        return f"{status.st_size} bytes, over the {spool_file_bytes_max}-byte limit"
    return None


class Spool:
    """The spool folder and its `done/` and `rejected/` subfolders."""

    def __init__(self, folder: Path, actors: tuple[str, ...], side_files: SideFiles | None = None) -> None:
        self.folder = folder
        self.actors = actors
        # A refused file's reasons that cannot be written are a fact, not an exit (adapters/side_files.py).
        self.side_files = side_files or SideFiles(lambda: format_time(utc_now()) or "", time.monotonic)
        self.done = folder / "done"
        self.rejected = folder / "rejected"
        self._said: str | None = None  # the last folder problem logged, to log each once

    def prepare(self) -> None:
        """Create what is missing (owner-only), then check all three folders."""
        for folder in (self.folder, self.done, self.rejected):
            try:
                if not os.path.lexists(folder):
                    folder.mkdir(mode=folder_mode_new)
            except OSError as error:
                raise SpoolError(f"cannot use the spool folder {printable(str(folder))}: {error.strerror}") from error
        problem = self.problem()
        if problem is not None:
            raise SpoolError(f"refusing the spool: {problem}")
        if not os.access(self.folder, os.R_OK | os.W_OK | os.X_OK):
            raise SpoolError(f"cannot use the spool folder {printable(str(self.folder))}: it must be readable and writable")

    def problem(self) -> str | None:
        for folder, role in ((self.folder, "spool folder"), (self.done, "done/"), (self.rejected, "rejected/")):
            problem = folder_problem(folder, role)
            if problem is not None:
                return problem
        return None

    def ready(self) -> list[Path]:
        """Files to apply, in name order; none while the folder is unsafe
        (said once, until it is safe again)."""
        problem = self.problem()
        if problem != self._said:
            log(f"spool refused until fixed: {problem}" if problem else "spool folder is safe again")
            self._said = problem
        if problem is not None:
            return []
        with os.scandir(self.folder) as entries:
            names = [entry.name for entry in entries if is_ready(entry.name) and not entry.is_dir(follow_symlinks=False)]
        return [self.folder / name for name in sorted(names)]

    # ---------------------------------------------------------------- apply

    def apply(
        self,
        path: Path,
        engine: Engine,
        batch: int,
        clock: Callable[[], datetime.datetime],
        between: Callable[[], bool],
    ) -> SpoolApplied | SpoolLate | None:
        """Apply one ready file; SpoolLate when it was refused for lines
        behind the store's head (and moved into rejected/); None when it was
        refused otherwise, taken away, or interrupted (the rest is applied at
        the next start). `clock`: the runtime's, read once the file is read
        (what a line without `at` is stamped with)."""
        data = self._read(path)
        if data is None:
            return None
        name = printable(path.name)
        # The store's last input is checked by the resumable ingest, against
        # the first line not applied yet (a file dropped again after a crash
        # holds lines already applied): not by the edge.
        edge = LiveEdge(clock(), None, SpoolActors(self.actors))
        try:
            trace = parse_trace(data, str(path), path.name, live=edge)
            result = ingest(engine, trace, batch_inputs=batch, on_batch=lambda done: self._go_on(between))
        except _Interrupted:
            log(f"{name}: stopping mid-file; the rest is applied at the next start")
            return None
        except BehindStore as late:
            reasons = _reasons(late)
            kept = self.reject(path, reasons)
            return None if kept is None else SpoolLate(path.name, kept.name, reasons[0])
        except TraceInvalid as invalid:
            self.reject(path, _reasons(invalid))
            return None
        except EdgeRefused as refused:
            # The reason code too (as HTTP gives it): `reserved`, `at_in_future`...
            self.reject(path, [f"{refused.message} ({refused.code})"])
            return None
        except TraceMismatch as refused:
            self.reject(path, [str(refused)])
            return None
        except ConcurrencyError as error:
            # The engine reloaded the store; ingest resumes where it stands.
            log(f"{name}: another writer appended to the store meanwhile ({error}); retrying")
            return None
        # Not moved (done/ unsafe, said by _move): it stays, and is moved once
        # done/ is safe again, its inputs already in the store.
        if self.finish(path) is not None:
            where = "moved to done/"
        elif os.path.lexists(path):
            where = "left in the spool until done/ is safe"
        else:
            where = "taken away before it was moved"
        log(
            f"{name}: {result.applied} input(s) applied ({result.rejected} rejected), "
            f"{result.skipped} already in the store; {where}"
        )
        return SpoolApplied(path.name, result.applied, result.rejected, result.skipped)

    @staticmethod
    def _go_on(between: Callable[[], bool]) -> None:
        if not between():
            raise _Interrupted

    def _read(self, path: Path) -> bytes | None:
        """The file's bytes, read without following a link; a file that is
        unsafe to read is refused (moved into rejected/ as it is)."""
        if not _is_utf8(path.name):
            # Inputs are keyed by the file's name in the store, as text: such a
            # name cannot be recorded (it used to fail the commit, and the runtime).
            self.reject(path, ["refused unread: its name is not valid UTF-8; rename it"])
            return None
        try:
            problem = file_problem(path.lstat())
            if problem is None:
                descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                try:
                    problem = file_problem(os.fstat(descriptor))  # the file opened is the file checked
                    data = b"" if problem else _read_all(descriptor)
                finally:
                    os.close(descriptor)
        except FileNotFoundError:
            return None  # taken away meanwhile
        except OSError as error:
            problem = f"cannot read it: {error.strerror}"
        if problem is not None:
            self.reject(path, [f"refused unread: {problem}"])
            return None
        return data

    def finish(self, path: Path) -> Path | None:
        return self._move(path, self.done)

    def reject(self, path: Path, reasons: list[str]) -> Path | None:
        """Move `path` to `rejected/` with its reasons beside it. The reasons
        are written first: a crash in between, or reasons that cannot be
        written (a full disk), leaves the file in the spool, to be judged (and
        rejected) again."""
        problem = folder_problem(self.rejected, "rejected/")
        if problem is not None:
            log(f"{printable(path.name)}: left in the spool, not moved: {problem}")
            return None
        target = _free_path(self.rejected, path.name)
        reasons_file = target.with_name(target.name + error_suffix)
        data = ("\n".join(reasons) + "\n").encode()
        if not self.side_files.write("spool_reasons", reasons_file, lambda: write_atomically(reasons_file, data)):
            return None  # left in the spool, judged again at the next round
        moved = self._move(path, self.rejected, target)
        if moved is not None:
            log(f"{printable(path.name)}: rejected, nothing of it applied; moved to rejected/ ({printable(reasons[0])})")
        return moved

    def _move(self, path: Path, folder: Path, target: Path | None = None) -> Path | None:
        """Rename within the spool (a symlink moves as the link it is)."""
        problem = folder_problem(folder, f"{folder.name}/")
        if problem is not None:
            log(f"{printable(path.name)}: left in the spool, not moved: {problem}")
            return None
        target = target or _free_path(folder, path.name)
        try:
            os.replace(path, target)
        except FileNotFoundError:
            return None
        return target


def _is_utf8(name: str) -> bool:
    """Whether a name from the file system is text (bytes that are not UTF-8
    come back as lone surrogates, which no store can encode)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _read_all(descriptor: int) -> bytes:
    chunks: list[bytes] = []
    while chunk := os.read(descriptor, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _reasons(invalid: TraceInvalid) -> list[str]:
    reasons = [str(error) for error in invalid.errors]
    if invalid.total > len(invalid.errors):
        reasons.append(f"... and {invalid.total - len(invalid.errors)} more bad line(s)")
    return reasons
