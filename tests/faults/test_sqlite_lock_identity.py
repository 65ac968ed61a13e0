"""One SQLite writer lock per database file, whatever name it is reached by
(issue 22, point 4).

The defect, as an operator found it: the lock file was named after the path
given, so `tandem ingest` through a symlink beside a running `tandem serve`
wrote (the serve's next POST was 503), and through a hard link it wrote a
second WAL: after a checkpoint four events the serve had committed were gone,
and `tandem verify` still said clean. Here a real `tandem serve` holds s.db,
a real `tandem ingest` comes through each alias, and the store must not move.
"""

from __future__ import annotations

import os
import re
import socket
import sqlite3
from pathlib import Path

from tandem.adapters.store import redacted
from tests.e2e.serving import ROOT, Served, tandem

trace = ROOT / "fixtures" / "gates" / "02_prerequisite_user_away.jsonl"
no_runtime = "--no-runtime-inputs"
sqlite_timeout_s = 30
locked = re.compile(r"tandem: store (?P<url>\S+) is locked by pid (?P<pid>\d+) on (?P<host>\S+) since \S+\n")


def later_trace(directory: Path) -> Path:
    """A trace that fits after anything the serve stamps (its `at` is far ahead)."""
    path = directory / "later.jsonl"
    path.write_text('{"type": "tick", "at": "2099-01-01T00:00:00Z", "actor": "daemon"}\n')  # after any input the serve stamps (--allow-future)
    return path


def events_in(database: Path) -> int:
    """How many events the store holds, read with plain sqlite3 beside the writer."""
    with sqlite3.connect(database, timeout=sqlite_timeout_s) as connection:
        (count,) = connection.execute("SELECT count(*) FROM tandem_events").fetchone()
    return count


def test_a_writer_through_a_symlink_or_a_hard_link_is_refused_and_the_serve_goes_on(tmp_path: Path) -> None:
    database = tmp_path / "s.db"
    url = f"sqlite:///{database}"
    made = tandem("ingest", "--quiet", "--allow-future", "--store", url, str(trace))
    assert made.returncode == 0, made.stderr
    (tmp_path / "sym.db").symlink_to("s.db")
    other_trace = later_trace(tmp_path)
    with Served(tmp_path, url, no_runtime) as server:
        assert server.process is not None
        first = server.client("daemon").submit({"type": "tick"})
        count = events_in(database)
        os.link(database, tmp_path / "hard.db")  # made beside the running serve, as the operator did
        for alias in ("sym.db", "hard.db"):
            alias_url = f"sqlite:///{tmp_path / alias}"
            ingest = tandem("ingest", "--allow-future", "--store", alias_url, str(other_trace))
            assert ingest.returncode == 1, (alias, ingest.stderr)
            match = locked.fullmatch(ingest.stderr)
            assert match, (alias, ingest.stderr)
            assert (match["url"], int(match["pid"]), match["host"]) == (redacted(alias_url), server.process.pid, socket.gethostname())
            assert events_in(database) == count, alias
        after = server.client("daemon").submit({"type": "tick"})
        assert after["position"] > first["position"], after
        assert server.stop() == 0, server.log()
    assert "Traceback" not in server.log(), server.log()
    assert not (tmp_path / "hard.db-wal").exists()

    # A file with two names is refused to every writer, the serve's restart
    # included (SQLite would keep one WAL per name), until one name is left.
    for name in ("s.db", "hard.db"):
        refused = tandem("ingest", "--allow-future", "--store", f"sqlite:///{tmp_path / name}", str(other_trace))
        assert refused.returncode == 1 and "has 2 hard links" in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr, refused.stderr
    settled = events_in(database)
    (tmp_path / "hard.db").unlink()
    verify = tandem("verify", "--store", url)
    assert verify.returncode == 0 and "clean" in verify.stdout, verify.stdout + verify.stderr
    assert events_in(database) == settled
    again = tandem("ingest", "--quiet", "--allow-future", "--store", f"sqlite:///{tmp_path / 'sym.db'}", str(other_trace))
    assert again.returncode == 0, again.stderr
    assert events_in(database) > settled
