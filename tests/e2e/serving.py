"""A real `tandem serve` process on a free loopback port, for the e2e tests.

    with Served(tmp_path, store_url) as server:
        server.client("human").submit({...})
        server.url, server.tokens["background"], server.process

Every actor of TRACE.md section 1 has a token (in a 0600 tokens file). The
server is stopped with SIGTERM at the end (SIGKILL if it does not stop), and
its stderr is kept in a file (`server.log()`), never a pipe nobody reads.
"""

from __future__ import annotations

import os
import secrets
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tandem.adapters.store.url import side_table_suffixes
from tandem.adapters.client import Client
from tandem.adapters.store import open_store
from tandem.adapters.tokens import ACTORS, new_token, write_tokens_file

ROOT = Path(__file__).resolve().parents[2]
start_timeout_s = 30
stop_timeout_s = 30


def store_head(url: str) -> int:
    """The head as the store has it (not as the server says)."""
    store = open_store(url)
    try:
        return store.head()
    finally:
        store.close()


def stored_inputs(database: Path) -> int:
    """How many inputs an SQLite store holds (each input's record is one
    event), read with plain sqlite3 while another process writes it."""
    if not database.exists():
        return 0
    with sqlite3.connect(database, timeout=30) as connection:
        try:
            (count,) = connection.execute(
                "SELECT count(*) FROM tandem_events WHERE topic IN ('InputAccepted', 'InputRejected')"
            ).fetchone()
        except sqlite3.OperationalError:  # table not created yet
            return 0
    return count


def tandem(*arguments: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    """Run a `tandem` command to its end."""
    return subprocess.run(
        [sys.executable, "-m", "tandem.adapters.cli", *arguments], cwd=ROOT, capture_output=True, text=True, timeout=timeout_s
    )


class Served:
    def __init__(self, directory: Path, store_url: str, *options: str, name: str = "serve", env: dict[str, str] | None = None) -> None:
        self.directory = directory
        self.env = None if env is None else {**os.environ, **env}  # added to the server's environment
        self.store_url = store_url
        self.options = options
        self.tokens = {actor: new_token() for actor in ACTORS}
        self.tokens_file = directory / f"{name}-tokens.json"
        write_tokens_file(self.tokens_file, self.tokens)
        self.log_file = directory / f"{name}.log"
        self.process: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self) -> Served:
        stderr = open(self.log_file, "a")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tandem.adapters.cli", "serve", *self.store_options(), "--listen", "127.0.0.1:0", *self.options],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr, text=True, env=self.env,
        )  # fmt: skip
        stderr.close()
        assert self.process.stdout is not None
        deadline = time.monotonic() + start_timeout_s
        line = ""
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if line or self.process.poll() is not None:
                break
        if not line.startswith("listening on http://"):
            self.kill()
            raise AssertionError(f"tandem serve did not start: {line!r}\n{self.log()}")
        self.url = line.split()[-1]
        return self

    def store_options(self) -> list[str]:
        return ["--store", self.store_url, "--tokens", str(self.tokens_file)]

    def client(self, actor: str) -> Client:
        return Client(self.url, self.tokens[actor])

    def log(self) -> str:
        return self.log_file.read_text() if self.log_file.exists() else ""

    def stop(self) -> int:
        """SIGTERM, then wait: the exit code."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=stop_timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
                raise AssertionError(f"tandem serve did not stop on SIGTERM\n{self.log()}") from None
        return self.process.returncode

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=stop_timeout_s)

    def __enter__(self) -> Served:
        return self.start()

    def __exit__(self, *exception: object) -> None:
        if self.process is not None and self.process.poll() is None:
            try:
                self.stop()
            finally:
                self.kill()


@contextmanager
def small_tmpfs(mount: Path, kib: int) -> Iterator[Path]:
    """A tmpfs of `kib` KiB mounted at `mount` (a new folder) for the block:
    a small disk, for real. Mounting needs root, as in CI: a test that needs
    one skips when not root, and fails where root cannot mount."""
    if os.geteuid() != 0:
        import pytest

        pytest.skip("mounting a tmpfs needs root")
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={kib}k", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def postgres_store_url() -> Iterator[str]:
    """A PostgreSQL store URL on a table of its own, dropped after (the tests' `postgres_store`)."""
    from tests.integration.conftest import postgres_url, require_postgres

    require_postgres()
    table = f"tandem_test_{secrets.token_hex(6)}"
    separator = "&" if "?" in postgres_url() else "?"
    try:
        yield f"{postgres_url()}{separator}table={table}"
    finally:
        import psycopg
        from psycopg import sql

        with psycopg.connect(postgres_url(), autocommit=True) as connection:
            for name in (table, *(table + suffix for suffix in side_table_suffixes)):
                connection.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(name)))
