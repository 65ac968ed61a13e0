"""What the long-running commands (`tandem daemon`, `tandem serve`,
`tandem watchdog`) share: their error, their log line, option parsers and the
one-process-per-file lock."""

from __future__ import annotations

import argparse
import fcntl
import os
import sys
from pathlib import Path


class ProcessError(Exception):
    """A long-running command cannot start or had to stop; `code` is its exit
    code (1: a store, folder or file could not be used; 2: bad usage)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def log(message: str) -> None:
    """One line on stderr, as the long-running commands write them."""
    print(f"tandem: {message}", file=sys.stderr, flush=True)


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("must be more than 0 seconds")
    return value


def batch_size(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("the batch size is at least 1")
    return value


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
        self.file.seek(0)
        self.file.truncate()
        self.file.write(f"{os.getpid()}\n" if record is None else record)
        self.file.flush()

    def release(self) -> None:
        self.file.close()
