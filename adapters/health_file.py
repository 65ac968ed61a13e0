"""The daemon's health snapshot: the one thing the daemon and the watchdog share.

The daemon rewrites a small JSON file every few seconds; the watchdog reads it
and nothing else of the daemon's. The file is replaced atomically (written to
a temporary file in the same folder, flushed, fsync'ed, then `os.replace`d),
so a reader sees the previous snapshot or the next one, never half of one.

Times here are the wall clock: this module is an adapter, the domain never
reads it. They are RFC 3339 UTC strings with microseconds, so a reader can
judge freshness to well under a second.
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile
from pathlib import Path
from typing import Any

snapshot_format = "tandem-health/1"
snapshot_bytes_max = 1_048_576  # a reader refuses anything bigger (bounded reads)

# States the daemon publishes. "starting": replaying its store or draining the
# spool backlog before `daemon.start` is recorded; "running": the loop;
# "stopped": it left the loop (see `expected_stop`).
STATES = ("starting", "running", "stopped")


class SnapshotUnreadable(Exception):
    """The file exists but does not hold a snapshot we understand."""


def utc_now() -> datetime.datetime:
    """The wall clock, in UTC. Adapters only: the domain's clock is `at`."""
    return datetime.datetime.now(datetime.timezone.utc)


def format_time(value: datetime.datetime | None) -> str | None:
    if value is None:
        return None
    text = value.astimezone(datetime.timezone.utc).isoformat()
    return text.replace("+00:00", "Z")


def parse_time(text: str) -> datetime.datetime:
    value = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        raise ValueError(f"time without a zone: {text!r}")
    return value.astimezone(datetime.timezone.utc)


def write_atomically(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that readers never see a partial file.

    The temporary file starts with "." and lives in the same folder (same
    filesystem, so `os.replace` is a rename)."""
    directory = path.parent
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, 0o644)  # the watchdog may run as another user
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def write_snapshot(path: Path, snapshot: dict[str, Any]) -> None:
    body = dict(snapshot)
    body.setdefault("format", snapshot_format)
    assert body["state"] in STATES, body["state"]
    write_atomically(path, (json.dumps(body, indent=2, sort_keys=True) + "\n").encode())


def read_snapshot(path: Path) -> dict[str, Any] | None:
    """The snapshot at `path`; None when there is no file.

    Raises SnapshotUnreadable for a file that is not a snapshot (bad JSON, a
    missing field, another format), so the watchdog can say what it saw."""
    try:
        with open(path, "rb") as file:
            data = file.read(snapshot_bytes_max + 1)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise SnapshotUnreadable(f"cannot read {path}: {error.strerror}") from error
    if len(data) > snapshot_bytes_max:
        raise SnapshotUnreadable(f"{path} is over {snapshot_bytes_max} bytes")
    try:
        body = json.loads(data)
    except ValueError as error:
        raise SnapshotUnreadable(f"{path} is not JSON: {error}") from error
    if not isinstance(body, dict) or body.get("format") != snapshot_format:
        raise SnapshotUnreadable(f"{path} is not a {snapshot_format} snapshot")
    try:
        if not isinstance(body["pid"], int) or body["state"] not in STATES:
            raise ValueError("bad pid or state")
        parse_time(body["written_at"])
        if not isinstance(body["expected_stop"], bool):
            raise ValueError("bad expected_stop")
    except (KeyError, TypeError, ValueError) as error:
        raise SnapshotUnreadable(f"{path} has a missing or bad field: {error}") from error
    return body
