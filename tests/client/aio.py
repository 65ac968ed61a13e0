"""Running the async client's checks from a sync test.

`asyncio.run` refuses to start where an event loop already runs in the
thread, and a test session may hold one in its main thread for its whole
length (the browser tests' Playwright, whose sync API keeps a loop running
there). So each check runs in a thread of its own, with its own loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` in a new thread; its result, or its exception."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = asyncio.run(main)
        except BaseException as error:  # handed to the caller's thread
            outcome["error"] = error

    thread = threading.Thread(target=target, name="async-client-check")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]
