"""Issue 26 (point 8): a refused command creates no file.

Every command that opens a store for writing (ingest, replay --store,
import, daemon, serve, demo) checks what it was given before it opens or
makes the store; what fails after (a spool refused, a port busy) removes
what this run created (the SQLite file, its -wal and -shm, its writer lock
file) when the store holds no event. `tandem demo --serve` never replaces a
tokens file: a busy port fails before any file is written, a file already
there is refused (named, with the ways on), and its own file goes when it
stops. Each case checks the message and the folder's files."""

from __future__ import annotations

import signal
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.e2e.serving import ROOT, Served, tandem

GOOD = ROOT / "fixtures" / "gates" / "02_prerequisite_user_away.jsonl"
BAD_LINE = '{"type":"human.mesage","at":"2026-01-01T00:00:00Z"}\n'
start_timeout_s = 60


def files(folder: Path) -> set[str]:
    return {path.name for path in folder.iterdir()}


@contextmanager
def busy_port() -> Iterator[int]:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def bad_trace(folder: Path) -> Path:
    path = folder / "inputs" / "bad.jsonl"
    path.parent.mkdir()
    path.write_text(BAD_LINE)
    return path


def test_ingest_and_replay_of_a_bad_or_missing_trace_create_no_store(tmp_path: Path) -> None:
    bad = bad_trace(tmp_path)
    for command in ("ingest", "replay"):
        result = tandem(command, str(bad), "--store", f"sqlite:///{tmp_path / 'x.db'}")
        assert result.returncode == 2, result
        assert "line 1: unknown type 'human.mesage' (did you mean `human.message`?)" in result.stderr
        assert "is not a valid trace; nothing was written" in result.stderr
        missing = tandem(command, str(tmp_path / "missing.jsonl"), "--store", f"sqlite:///{tmp_path / 'x.db'}")
        assert missing.returncode == 2, missing
        assert "cannot read trace" in missing.stderr and "No such file or directory" in missing.stderr
    assert files(tmp_path) == {"inputs"}


def test_a_refused_ingest_changes_no_file_of_an_existing_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    assert tandem("ingest", str(GOOD), "--store", url).returncode == 0
    before = {name: (tmp_path / name).read_bytes() for name in files(tmp_path)}
    result = tandem("ingest", str(bad_trace(tmp_path)), "--store", url)
    assert result.returncode == 2 and "unknown type 'human.mesage'" in result.stderr, result
    assert files(tmp_path) - {"inputs"} == set(before)
    assert {name: (tmp_path / name).read_bytes() for name in before} == before


def test_import_of_a_bad_or_missing_file_creates_no_store(tmp_path: Path) -> None:
    bad = bad_trace(tmp_path)
    result = tandem("import", str(bad), "--store", f"sqlite:///{tmp_path / 'x.db'}")
    assert result.returncode == 2, result
    assert "line 1: not an event: " in result.stderr and "is not an event log; nothing was written" in result.stderr
    missing = tandem("import", str(tmp_path / "missing.jsonl"), "--store", f"sqlite:///{tmp_path / 'x.db'}")
    assert missing.returncode == 1 and "cannot read" in missing.stderr, missing
    cut = tmp_path / "inputs" / "cut.jsonl"
    cut.write_text('{"event":\n')
    result = tandem("import", str(cut), "--store", f"sqlite:///{tmp_path / 'x.db'}")
    assert result.returncode == 2, result
    assert result.stderr.startswith(
        'line 1: not JSON: it ends too soon, at byte 9: a line cut short, or a closing `"`, `}` or `]` missing?\n'
    )
    assert files(tmp_path) == {"inputs"}


def _open_spool(folder: Path) -> Path:
    spool = folder / "spool"
    spool.mkdir()
    spool.chmod(0o777)  # writable by others: refused
    assert stat.S_IMODE(spool.stat().st_mode) == 0o777
    return spool


def test_daemon_with_a_refused_spool_creates_no_store(tmp_path: Path) -> None:
    spool = _open_spool(tmp_path)
    result = tandem("daemon", "--store", f"sqlite:///{tmp_path / 'x.db'}", "--spool", str(spool), timeout_s=60)
    assert result.returncode == 1, result
    assert "is writable by group or others" in result.stderr
    assert files(tmp_path) == {"spool"}


def test_serve_on_a_busy_port_or_with_a_refused_spool_creates_no_store(tmp_path: Path) -> None:
    served = Served(tmp_path, f"sqlite:///{tmp_path / 'x.db'}")  # writes its tokens file only
    before = files(tmp_path)
    with busy_port() as port:
        result = tandem("serve", *served.store_options(), "--listen", f"127.0.0.1:{port}", timeout_s=60)
    assert result.returncode == 1, result
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert files(tmp_path) == before
    spool = _open_spool(tmp_path)
    result = tandem("serve", *served.store_options(), "--listen", "127.0.0.1:0", "--spool", str(spool), timeout_s=60)
    assert result.returncode == 1 and "is writable by group or others" in result.stderr, result
    assert files(tmp_path) == before | {"spool"}


def demo(folder: Path, *options: str) -> list[str]:
    return ["demo", "--serve", "--store", f"sqlite:///{folder / 'demo.db'}", "--tokens-file", str(folder / "tokens.json"), *options]


def test_demo_serve_on_a_busy_port_writes_no_file(tmp_path: Path) -> None:
    with busy_port() as port:
        result = tandem(*demo(tmp_path, "--listen", f"127.0.0.1:{port}"), timeout_s=60)
    assert result.returncode == 1, result
    assert f"tandem: cannot listen on 127.0.0.1:{port}: " in result.stderr
    assert files(tmp_path) == set()


def test_demo_serve_never_replaces_a_tokens_file(tmp_path: Path) -> None:
    """A tokens file already there is another run's (perhaps serving now):
    refused before the store is touched, the file as it was."""
    tokens = tmp_path / "tokens.json"
    tokens.write_text('{"tokens": []}\n')
    result = tandem(*demo(tmp_path, "--listen", "127.0.0.1:0"), timeout_s=60)
    assert result.returncode == 1, result
    assert f"tandem: {tokens} exists: another `tandem demo --serve` may be serving with its tokens" in result.stderr
    assert "or give --tokens-file OTHER" in result.stderr
    assert tokens.read_text() == '{"tokens": []}\n'
    assert files(tmp_path) == {"tokens.json"}


def test_demo_serve_removes_its_own_tokens_file_when_it_stops(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "tandem.adapters.cli", *demo(tmp_path, "--listen", "127.0.0.1:0")],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("listening on http://"), (first, process.stderr.read() if process.stderr else "")
        assert (tmp_path / "tokens.json").exists()
        second = subprocess.run(
            [sys.executable, "-m", "tandem.adapters.cli", *demo(tmp_path, "--listen", "127.0.0.1:0")],
            cwd=ROOT, capture_output=True, text=True, timeout=start_timeout_s,
        )  # fmt: skip
        assert second.returncode == 1 and "tokens.json exists" in second.stderr, second
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=start_timeout_s) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert not (tmp_path / "tokens.json").exists()
    assert "demo.db" in files(tmp_path)  # the store stays: it holds the example
