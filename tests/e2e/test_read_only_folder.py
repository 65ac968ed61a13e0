"""A store in a folder, or a store file, its user may not write (issue 15,
Faults): the readers work and change nothing; a writer exits 1 naming the
folder or the file and the cause, writing nothing.

Permissions do not bind root, so as root the commands run without the
capabilities that override them (`setpriv`, util-linux), as any other user
would; as another user they run as they are.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.serving import ROOT, tandem

TRACES = sorted((ROOT / "fixtures" / "traces").glob("*.jsonl"))
_no_override = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search", "--"]


def as_a_user(*arguments: str) -> subprocess.CompletedProcess[str]:
    """A `tandem` command, run so that file permissions bind it."""
    prefix = _no_override if os.geteuid() == 0 else []
    if prefix and shutil.which("setpriv") is None:
        pytest.fail("setpriv (util-linux) is needed to run a command as root without CAP_DAC_OVERRIDE")
    command = [*prefix, sys.executable, "-m", "tandem.adapters.cli", *arguments]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)


def digests(folder: Path) -> dict[str, str]:
    """Each file's SHA-256; the writer lock's file is the record of its last
    holder (docs/operations.md), which a refused writer rewrites: not compared."""
    return {
        path.name: "" if path.name.endswith("-writer.lock") else hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.iterdir())
    }


def later_trace(directory: Path) -> Path:
    """A trace every store of the fixtures can take (after their last input;
    ahead of the clock, so ingested with --allow-future: the trace is checked
    before the store is opened, issue 26, and must be valid for the writer to
    reach the store's refusal)."""
    path = directory / "later.jsonl"
    path.write_text('{"type": "tick", "at": "2027-01-01T00:00:00Z", "actor": "daemon"}\n')
    return path


@pytest.fixture
def store_folder(tmp_path: Path):  # type: ignore[no-untyped-def]
    folder = tmp_path / "store"
    folder.mkdir()
    database = folder / "events.db"
    made = tandem("ingest", str(TRACES[0]), "--store", f"sqlite:///{database}", "--quiet")
    assert made.returncode == 0, made.stderr
    yield folder, database
    folder.chmod(0o755)
    database.chmod(0o644)


def test_in_a_folder_it_may_not_write_readers_work_and_a_writer_is_refused_naming_it(store_folder) -> None:
    folder, database = store_folder
    url = f"sqlite:///{database}"
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    before = digests(folder)
    for reader in (("show", "--store", url, "--json"), ("verify", "--store", url), ("export", "--store", url)):
        done = as_a_user(*reader)
        assert done.returncode == 0, (reader, done.stderr)
    assert "clean" in as_a_user("verify", "--store", url).stdout
    writer = as_a_user("ingest", str(later_trace(folder.parent)), "--allow-future", "--store", url)
    assert writer.returncode == 1, writer.stderr
    assert f"directory {str(folder)!r} is not writable" in writer.stderr and "Traceback" not in writer.stderr, writer.stderr
    assert digests(folder) == before  # nothing created, nothing changed


def test_a_store_file_it_may_not_write_reads_and_refuses_a_writer_naming_the_file(store_folder) -> None:
    folder, database = store_folder
    url = f"sqlite:///{database}"
    database.chmod(0o444)
    log = digests(folder)["events.db"]
    assert as_a_user("show", "--store", url).returncode == 0  # (SQLite's index beside it: a WAL reader's, docs/operations.md)
    before = digests(folder)
    assert before["events.db"] == log
    writer = as_a_user("ingest", str(later_trace(folder.parent)), "--allow-future", "--store", url)
    assert writer.returncode == 1, writer.stderr
    assert f"{str(database)!r} is not writable" in writer.stderr and "Traceback" not in writer.stderr, writer.stderr
    assert digests(folder) == before
