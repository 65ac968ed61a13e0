"""An exclusive `flock` on a file itself, so that every name of the file
(a symlink, a hard link, a new name after a rename) meets the same lock:
the kernel keeps `flock`s on the inode, whatever path opened it.

Used by the SQLite writer lock (adapters/writer_lock.py) on the database
file. The file's descriptor is opened once per file per process and stays
open while the process lives; releasing only unlocks it. Closing any
descriptor of a file drops every POSIX (`fcntl`) lock the process holds on
that file, and SQLite's locks are POSIX locks: a descriptor opened and
closed beside an open store (a standby's attempts every half second, a
service taking its lock again) would silently drop its connections' locks,
the "POSIX advisory locking" corruption of SQLite's "How To Corrupt" page.
`flock` and `fcntl` locks do not meet on Linux's local file systems, so
this lock and SQLite's ignore each other (on NFS, where the kernel emulates
`flock` with `fcntl`, they would not: SQLite's WAL mode, which tandem uses,
does not work there anyway).

Two locks in one process on one file conflict here as they would between
processes (`flock` on one descriptor would not: a process re-locking its own
descriptor succeeds), so a second writer in the same process is refused too.
"""

from __future__ import annotations

import fcntl
import os
import threading
from typing import NamedTuple

Identity = tuple[int, int]  # a file's (st_dev, st_ino): the same under every name that reaches it
created_file_mode = 0o644  # a file the lock creates (SQLite's own default for a new database)


def identity_of(status: os.stat_result) -> Identity:
    return status.st_dev, status.st_ino


class Attempt(NamedTuple):
    """One try: the file's identity, whether this try created it, whether it is now held."""

    identity: Identity
    created: bool
    taken: bool


class IdentityLocks:
    """This process's descriptors of the files it locked, and which it holds."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._open: dict[Identity, int] = {}
        self._held: set[Identity] = set()

    def try_lock(self, path: str) -> Attempt:
        """Lock the file at `path` (created empty if missing), without
        waiting. Raises OSError when it cannot be opened or created."""
        with self._guard:
            identity, descriptor, created = self._descriptor(path)
            if identity in self._held:
                return Attempt(identity, created, False)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return Attempt(identity, created, False)
            self._held.add(identity)
            return Attempt(identity, created, True)

    def unlock(self, identity: Identity, remove: str | None = None, written_too: bool = False) -> None:
        """Release the lock on `identity`. With `remove`: if that path still
        names the file and the file is empty with no `-wal` beside it, remove
        it and close its descriptor: nothing was ever written to it (SQLite
        leaves a database it wrote non-empty, or its `-wal` beside it). With
        `written_too`, remove it even so (the caller knows it holds nothing
        worth keeping)."""
        with self._guard:
            descriptor = self._open[identity]
            if remove is not None and (written_too or _unwritten(remove, identity)) and _same(remove, identity) and _removed(remove):
                del self._open[identity]
                os.close(descriptor)
            else:
                fcntl.flock(descriptor, fcntl.LOCK_UN)
            self._held.discard(identity)

    def _descriptor(self, path: str) -> tuple[Identity, int, bool]:
        try:
            known: Identity | None = identity_of(os.stat(path))
        except FileNotFoundError:
            known = None
        if known in self._open:
            return known, self._open[known], False  # type: ignore[index]
        descriptor, created = _open_or_create(path)
        identity = identity_of(os.fstat(descriptor))
        # Replaced between stat and open by a file already known here: keep
        # the known descriptor for locking; the new one stays open, unused.
        return identity, self._open.setdefault(identity, descriptor), created


def _open_or_create(path: str) -> tuple[int, bool]:
    flags = os.O_RDONLY | os.O_CLOEXEC
    try:
        return os.open(path, flags), False
    except FileNotFoundError:
        pass
    try:
        return os.open(path, flags | os.O_CREAT | os.O_EXCL, created_file_mode), True
    except FileExistsError:
        return os.open(path, flags), False  # another process made it meanwhile


def _removed(path: str) -> bool:
    try:
        os.unlink(path)
    except OSError:
        return False  # left as it is: an empty database, which its next writer fills
    return True


def _same(path: str, identity: Identity) -> bool:
    try:
        return identity_of(os.stat(path)) == identity
    except OSError:
        return False


def _unwritten(path: str, identity: Identity) -> bool:
    try:
        status = os.stat(path)
    except OSError:
        return False
    return identity_of(status) == identity and status.st_size == 0 and not os.path.exists(path + "-wal")


identity_locks = IdentityLocks()  # one per process: the descriptors and holds are the process's
