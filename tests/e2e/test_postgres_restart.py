"""A PostgreSQL restart mid-run (issue 15, Faults), on a private server of
our own (initdb in a temporary folder, its own port), so that stopping it
disturbs nobody else's: the writer refuses cleanly while the server is away
(`tandem serve`: 503 `store_unavailable`, fast, and stays up; `tandem
ingest`: exit 1 naming the store), nothing is half-written, and it resumes
once the server is back (serve on its own, with its writer lock taken again;
ingest when run again), to the views of an uninterrupted run, verify clean.

The server binaries are Debian's (/usr/lib/postgresql/N/bin). Missing, these
tests skip, unless TANDEM_REQUIRE_POSTGRES=1, where they fail.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tandem.adapters.client import ApiError
from tandem.adapters.store import open_store
from tandem.replay.port import StoreError
from tests.e2e.serving import ROOT, Served, tandem
from tests.e2e.test_serve_faults import message, open_conversation, recorded, until
from tests.unit.helpers import tick_trace

pytestmark = pytest.mark.postgres
server_start_timeout_s = 30
readers_at_once = 8


class PrivatePostgres:
    """A PostgreSQL server in `directory`, on a free loopback port, run as
    the `postgres` user when we are root (initdb refuses root)."""

    def __init__(self, directory: Path) -> None:
        self.bin = _postgres_bin()
        self.directory = directory
        self.data = directory / "data"
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        if os.geteuid() == 0:
            shutil.chown(directory, "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres")

    def _run(self, program: str, *arguments: str) -> None:
        command = [str(self.bin / program), *arguments]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=server_start_timeout_s, cwd="/")
        assert done.returncode == 0, f"{program} failed: {done.stdout}{done.stderr}"

    def start(self) -> None:
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.directory / "log"), "-w", "start")

    def stop(self) -> None:
        """As a crash does: connections cut, nothing flushed politely."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")


def _postgres_bin() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not found or shutil.which("runuser") is None and os.geteuid() == 0:
        message_text = "no PostgreSQL server binaries (/usr/lib/postgresql/N/bin) to run a private server"
        if os.environ.get("TANDEM_REQUIRE_POSTGRES") == "1":
            pytest.fail(message_text + " (TANDEM_REQUIRE_POSTGRES=1)", pytrace=False)
        pytest.skip(message_text)
    return found[-1].parent


@pytest.fixture
def private_postgres() -> Iterator[PrivatePostgres]:
    # Not under pytest's folders: they are private to root, and the server runs as postgres.
    directory = Path(tempfile.mkdtemp(prefix="tandem-pg-"))
    try:
        server = PrivatePostgres(directory)
        server.start()
        try:
            yield server
        finally:
            try:
                server.stop()
            except AssertionError:
                pass  # already stopped
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _refused(client, value) -> ApiError:  # type: ignore[no-untyped-def]
    with pytest.raises(ApiError) as caught:
        client.submit(value)
    return caught.value


def test_serve_refuses_while_postgresql_is_away_and_resumes_on_its_own(tmp_path: Path, private_postgres: PrivatePostgres) -> None:
    url = private_postgres.url + "?table=restart"
    with Served(tmp_path, url, "--no-runtime-inputs", "--interval", "0.2") as server:
        open_conversation(server)
        client = server.client("human")
        for n in range(3):
            client.submit(message(f"pg-{n}", id=f"pg-{n}"))
        private_postgres.stop()
        started = time.monotonic()
        refusal = _refused(client, message("pg-3", id="pg-3"))
        assert (refusal.status, refusal.code) == (503, "store_unavailable")
        assert "cannot connect to PostgreSQL" in refusal.message and "nothing was recorded" in refusal.message
        assert time.monotonic() - started < 10  # not a minute of retries (a bound, not a figure)
        assert client.health()["status"] == "store_unavailable"
        time.sleep(1)  # five rounds with the server away: still serving
        assert server.process.poll() is None, server.log()
        private_postgres.start()
        until(lambda: client.health().get("status") == "ok", 15, "health once the server is back", pause_s=0.1)
        # The readers' pool died with the server: readers at once each try
        # once more, on one new pool (renewed by the first to find it broken).
        with concurrent.futures.ThreadPoolExecutor(readers_at_once) as pool:
            answers = list(pool.map(lambda _: server.client("human").events(0)["events"], range(readers_at_once)))
        assert all(len(events) == len(answers[0]) > 0 for events in answers)
        answer = client.submit(message("pg-3", id="pg-3"))  # the refused input, its id again
        assert answer["results"][0]["accepted"]
        client.submit(message("pg-4", id="pg-4"))
        assert "writer lock taken again" in server.log()
        assert server.stop() == 0
    accepted, rejected = recorded(url, "pg-")
    assert accepted == {f"pg-{n}": 1 for n in range(5)} and not rejected
    verified = tandem("verify", "--store", url)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_ingest_exits_1_when_postgresql_goes_away_and_resumes_when_run_again(
    tmp_path: Path, private_postgres: PrivatePostgres
) -> None:
    url = private_postgres.url + "?table=ingested"
    trace = tick_trace(tmp_path / "ticks.jsonl", 3_000)
    command = [sys.executable, "-m", "tandem.adapters.cli", "ingest", str(trace), "--store", url, "--batch", "20"]
    running = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    until(lambda: _head_or_zero(url) > 0 or running.poll() is not None, 60, "the first batches", pause_s=0.01)
    private_postgres.stop()
    _, stderr = running.communicate(timeout=60)
    assert running.returncode == 1, stderr
    assert "Traceback" not in stderr and "postgresql://postgres@127.0.0.1" in stderr, stderr
    private_postgres.start()
    resumed = tandem("ingest", str(trace), "--store", url, "--batch", "20")
    assert resumed.returncode == 0, resumed.stderr
    assert "already in the store" in resumed.stderr and " 0 already" not in resumed.stderr, resumed.stderr
    whole = f"sqlite:///{tmp_path / 'whole.db'}"
    assert tandem("ingest", str(trace), "--store", whole).returncode == 0
    mine, theirs = (tandem("show", "--store", u, "--json") for u in (url, whole))
    assert mine.returncode == 0 and json.loads(mine.stdout) == json.loads(theirs.stdout)
    verified = tandem("verify", "--store", url)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def _head_or_zero(url: str) -> int:
    """The head, read as a reader reads (creating nothing: no race with the writer's tables)."""
    try:
        store = open_store(url, read_only=True)
    except StoreError:  # the table is not there yet
        return 0
    try:
        return store.head()
    finally:
        store.close()
