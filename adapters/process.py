"""What the long-running commands (`tandem daemon`, `tandem serve`,
`tandem watchdog`) share: their error and their log line. (Their option
types are in `adapters/commands/common.py`, their one-process-per-file lock
in `adapters/file_lock.py`.)"""

from __future__ import annotations

import sys

from tandem.adapters.commands.common import EXIT_FAILED, CliError


class ProcessError(CliError):
    """A long-running command cannot start or had to stop; `code` is its exit
    code (EXIT_FAILED: a store, folder or file could not be used; EXIT_USAGE:
    bad usage). A CliError: `tandem` prints it and exits with its code."""

    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message, code)


def log(message: str) -> None:
    """One line on stderr, as the long-running commands write them."""
    print(f"tandem: {message}", file=sys.stderr, flush=True)
