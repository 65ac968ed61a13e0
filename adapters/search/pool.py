"""A few database connections kept for the search index's reads and its
keeper's writes: taken, used by one thread at a time, given back; one that
failed is closed, not given back (the next use opens a new one). With
`check`, an idle connection is checked when taken (a PostgreSQL session
may have ended meanwhile: a server restart, a terminated backend), and
replaced by a new one if it fails."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

idle_connections_max = 4


class Pool:
    def __init__(self, open_connection: Callable[[], Any], check: Callable[[Any], None] | None = None) -> None:
        self._open = open_connection
        self._check = check
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self._closed = False

    @contextmanager
    def connection(self) -> Iterator[Any]:
        with self._lock:
            connection = self._idle.pop() if self._idle else None
        if connection is not None and self._check is not None:
            try:
                self._check(connection)
            except Exception:  # its session ended: a new one
                connection.close()
                connection = None
        if connection is None:
            connection = self._open()
        try:
            yield connection
        except BaseException:
            connection.close()
            raise
        with self._lock:
            if self._closed or len(self._idle) >= idle_connections_max:
                connection.close()
            else:
                self._idle.append(connection)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
