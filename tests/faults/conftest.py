"""Fixtures of the fault tests (issue 22: trust under faults).

Each test here starts from a defect seen by an operator (a lost lock
session, a commit cut at COMMIT, a symlinked store, a full volume, a spool
race...), reproduces it against real processes and real servers, and
asserts what must hold instead. PostgreSQL cases fail rather than skip
under TANDEM_REQUIRE_POSTGRES=1, as everywhere."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.serving import postgres_store_url, small_tmpfs

full_disk_kib = 64
full_disk_chunk_bytes = 4096


@pytest.fixture
def postgres_store() -> Iterator[str]:
    """A PostgreSQL store on a table of its own, dropped after."""
    yield from postgres_store_url()


class FullDisk:
    """A tiny tmpfs mounted at `mount`, filled by `filler` so that any write
    there fails with ENOSPC (creating an empty file still works); `free()`
    removes the filler, and writes work again."""

    def __init__(self, mount: Path) -> None:
        self.mount = mount
        self.filler = mount / "filler"

    def fill(self) -> None:
        descriptor = os.open(self.filler, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            while True:
                os.write(descriptor, b"\0" * full_disk_chunk_bytes)
        except OSError as error:
            assert error.errno == errno.ENOSPC, error
        finally:
            os.close(descriptor)

    def free(self) -> None:
        self.filler.unlink()


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[FullDisk]:
    """A full disk, for real: a tiny tmpfs (tests/e2e/serving.py), filled."""
    with small_tmpfs(tmp_path / "full", full_disk_kib) as mount:
        disk = FullDisk(mount)
        disk.fill()
        yield disk
