"""`tandem daemon`: the runtime (adapters/runtime.py) without HTTP.

A live daemon is a replay of inputs as they come (docs/design.md): it opens the
store (taking its writer lock), folds its log, and then applies inputs from
the spool folder (adapters/spool.py), the watchdog's SQLite file, and itself
(daemon.start, daemon.stop, idle ticks), one writer for the store. Every
`--publish-interval` it rewrites the health snapshot
(`adapters/health_file.py`), the only thing the watchdog reads.
`tandem serve --spool DIR` runs this same runtime with HTTP in front.
"""

from __future__ import annotations

import argparse
import signal
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from tandem.adapters.commands.common import EXIT_USAGE
from tandem.adapters.file_lock import ExclusiveLock, LockHeld
from tandem.adapters.process import ProcessError, log
from tandem.adapters.runtime import Runtime, Settings
from tandem.adapters.spool import Spool, SpoolError, is_ready
from tandem.adapters.terminal import printable, printable_lines

lock_name = ".tandem-daemon.lock"

Daemon = Runtime  # the daemon is the runtime, driven by `run` below
__all__ = ["Daemon", "Settings", "is_ready", "run", "settings_from", "spool_lock"]


def _folder_ok(option: str, path: Path, what: str = "file") -> None:
    if not path.parent.is_dir():
        raise ProcessError(f"{option} {path}: folder {path.parent} does not exist")
    if what == "file" and path.is_dir():
        raise ProcessError(f"{option} {path} is a folder", EXIT_USAGE)


def settings_from(args: argparse.Namespace, runtime_inputs: bool = True) -> Settings:
    """Settings from the shared options; the health and watchdog files
    default to the spool's parent folder when there is a spool."""
    spool: Path | None = args.spool.absolute() if args.spool is not None else None
    if spool is not None:
        if spool.exists() and not spool.is_dir():
            raise ProcessError(f"--spool {spool} is not a folder", EXIT_USAGE)
        if not spool.parent.is_dir():
            raise ProcessError(f"cannot create the spool folder {spool}: folder {spool.parent} does not exist")
    health: Path | None = args.health or (spool.parent / "tandem-health.json" if spool else None)
    watchdog_db: Path | None = args.watchdog_db or (spool.parent / "tandem-watchdog.db" if spool else None)
    if health is not None:
        _folder_ok("--health", health)
    return Settings(
        store_url=args.store,
        spool=spool,
        health=health,
        watchdog_db=watchdog_db,
        interval_s=args.interval,
        publish_interval_s=args.publish_interval,
        tick_s=args.tick,
        batch=args.batch,
        spool_actors=args.spool_actors,
        runtime_inputs=runtime_inputs,
    )


def spool_lock(settings: Settings) -> ExclusiveLock | None:
    """Prepare the spool (refusing an unsafe one) and take its lock: two
    runtimes never share a spool, whatever their stores."""
    if settings.spool is None:
        return None
    try:
        Spool(settings.spool, settings.spool_actors).prepare()
    except SpoolError:
        raise
    try:
        return ExclusiveLock(settings.spool / lock_name, "another runtime is running on this spool")
    except LockHeld as error:
        raise ProcessError(str(error)) from None


class _Sleeper:
    """Sleeps between rounds, cut short by a stop: a signal interrupts
    `time.sleep` only to run the handler, so sleep in short slices."""

    slice_s = 0.05

    def __init__(self, daemon: Runtime) -> None:
        self.daemon = daemon

    def __call__(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self.daemon.stopping:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, self.slice_s))


def run_rounds(daemon: Runtime, sleep: Callable[[float], None]) -> None:
    daemon.open()
    if not daemon.stopping:
        daemon.start()
    while not daemon.stopping:
        daemon.round()
        if not daemon.stopping:
            sleep(daemon.settings.interval_s)
    daemon.stop(expected=True)
    log("stopped as asked (daemon.stop expected)")


def run(args: argparse.Namespace) -> None:
    """`tandem daemon`: runs until SIGTERM or SIGINT (returns: exit 0), or
    raises ProcessError (exit 1 or 2)."""
    settings = settings_from(args)
    daemon = Daemon(settings)
    daemon.lock_store()  # one writer per store: refused at once, before the spool is touched
    try:
        lock = spool_lock(settings)
    except ProcessError:
        daemon.close(refused=True)
        raise
    signal.signal(signal.SIGTERM, daemon.ask_to_stop)
    signal.signal(signal.SIGINT, daemon.ask_to_stop)
    failed = True
    try:
        run_rounds(daemon, _Sleeper(daemon))
        failed = False
    except ProcessError:
        stop_after_error(daemon)
        raise
    except Exception as error:
        log("the round raised:\n" + printable_lines(traceback.format_exc().rstrip("\n")))  # it may quote an input
        stop_after_error(daemon)
        raise ProcessError(f"stopped after an error: {type(error).__name__}: {error}") from error
    finally:
        daemon.close(refused=failed)  # failed with no event stored: no store is left behind
        if lock is not None:
            lock.release()


def stop_after_error(daemon: Runtime) -> None:
    """Best effort: record an unexpected `daemon.stop` and say so in the
    snapshot, so the watchdog raises an incident at once."""
    try:
        daemon.stop(expected=False)
    except Exception as error:  # the store may be what failed
        log(f"could not record daemon.stop ({type(error).__name__}: {printable(str(error))})")
        try:
            daemon.publish("stopped", expected_stop=False)
        except Exception:
            pass
