"""The one-process-per-file lock: an exclusive `flock` that the kernel drops
when its process dies (the spool's, the watchdog's file, SQLite's writer lock)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class LockHeld(Exception):
    """Another process holds the lock (or the lock file cannot be opened).

    `holder` is what the holder wrote into the lock file (stripped; perhaps
    empty if it has only just taken the lock), or None when the file could
    not be opened at all."""

    def __init__(self, message: str, holder: str | None = None) -> None:
        super().__init__(message)
        self.holder = holder


class ExclusiveLock:
    """An exclusive, non-blocking `flock` on `path`, holding a record of its
    owner (`record`, by default the owner's pid and a newline). The kernel
    drops it when the process dies, even by SIGKILL."""

    def __init__(self, path: Path, held_by: str, record: str | None = None) -> None:
        try:
            self.file = open(path, "a+")
        except OSError as error:
            raise LockHeld(f"cannot open the lock file {path}: {error.strerror}") from error
        try:
            fcntl.flock(self.file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.file.seek(0)
            holder = self.file.read().strip()
            self.file.close()
            raise LockHeld(f"{held_by} (pid {holder or '?'}; lock {path})", holder) from None
        self.write(f"{os.getpid()}\n" if record is None else record)

    def write(self, record: str) -> None:
        """Replace the record in the lock file (while holding the lock)."""
        self.file.seek(0)
        self.file.truncate()
        self.file.write(record)
        self.file.flush()

    def release(self) -> None:
        self.file.close()
