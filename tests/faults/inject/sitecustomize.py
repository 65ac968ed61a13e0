"""Fault injection for the fault tests' child processes (never imported by Tandem).

A test that starts `tandem serve` (or any command) with this folder first on
PYTHONPATH and TANDEM_FAULTS set gets the faults it names, patched in at the
interpreter's start (Python imports `sitecustomize` by itself):

    TANDEM_FAULTS='[{"target": "tandem.adapters.store.recorder:RecorderStore._insert",
                     "sleep_after_s": 0.2}]'

Each fault wraps one function or method (`module:attribute.path`):
`sleep_before_s` / `sleep_after_s` widen a race's window deterministically
(issue 22: "make the race reproducible first (inject the delay)");
`report_overlap` prints `tandem-faults: overlap in TARGET` on standard
error when a call starts while another thread is inside the function (two
commits at once in one process); `fail_after` raises the named exception (`module:Class`, built with the
message `injected fault`) after the call returned, so its effect stands but
its answer is lost, as when a connection is cut at COMMIT; `fail_before`
raises it instead of the call; `times` bounds how often it fires (default:
always), `skip` lets that many calls through first, `armed_by` (another
fault's target) keeps it from firing until that fault has fired, and only
in the thread it fired in (a server's other threads, a search keeper or a
stream asking the same method meanwhile, do not use the fault up).
`touch_file` (a path) is created when a firing call starts, and
`wait_for_file` holds a firing call until that path exists (at most
`wait_max_s`, default 60): a test sees a call under way, does what must
happen meanwhile, then lets it go (no timing); `report_calls` prints
`tandem-faults: call TARGET` on standard error at every call.
Production code holds no hook: this file is only ever on a test's PYTHONPATH.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import sys
import threading
import time
from typing import Any


def _resolve(path: str) -> tuple[Any, str, Any]:
    module_name, _, attributes = path.partition(":")
    owner: Any = importlib.import_module(module_name)
    *parents, name = attributes.split(".")
    for parent in parents:
        owner = getattr(owner, parent)
    return owner, name, getattr(owner, name)


def _exception(path: str) -> type[BaseException]:
    owner, name, found = _resolve(path)
    assert isinstance(found, type) and issubclass(found, BaseException), path
    return found


def _wrapped(fault: dict[str, Any], original: Any) -> Any:
    before = float(fault.get("sleep_before_s", 0))
    after = float(fault.get("sleep_after_s", 0))
    failure = _exception(fault["fail_after"]) if "fail_after" in fault else None
    refusal = _exception(fault["fail_before"]) if "fail_before" in fault else None
    armed_by = fault.get("armed_by")
    counts = {"calls": 0, "fired": 0, "inside": 0}
    overlap = bool(fault.get("report_overlap", False))
    calls = bool(fault.get("report_calls", False))
    touch, gate = fault.get("touch_file"), fault.get("wait_for_file")
    wait_max_s = float(fault.get("wait_max_s", 60))
    skip, times = int(fault.get("skip", 0)), fault.get("times")
    lock = threading.Lock()

    def firing() -> bool:
        if armed_by is not None and _fired.get(armed_by) != threading.get_ident():
            return False
        with lock:
            counts["calls"] += 1
            if counts["calls"] <= skip or (times is not None and counts["fired"] >= int(times)):
                return False
            counts["fired"] += 1
            _fired[fault["target"]] = threading.get_ident()
            return True

    def enter() -> None:
        with lock:
            counts["inside"] += 1
            crowded = counts["inside"] > 1
        if crowded and overlap:
            print(f"tandem-faults: overlap in {fault['target']}", file=sys.stderr, flush=True)

    def leave() -> None:
        with lock:
            counts["inside"] -= 1

    def gated() -> None:
        if touch is not None:
            with open(touch, "w"):
                pass
        deadline = time.monotonic() + wait_max_s
        while gate is not None and not os.path.exists(gate) and time.monotonic() < deadline:
            time.sleep(0.005)

    @functools.wraps(original)
    def wrapper(*arguments: Any, **options: Any) -> Any:
        fire = firing()
        if calls:
            print(f"tandem-faults: call {fault['target']}", file=sys.stderr, flush=True)
        enter()
        try:
            if fire:
                gated()
            if fire and before:
                time.sleep(before)
            if fire and refusal is not None:
                print(f"tandem-faults: {fault['target']} refused with {refusal.__name__}", file=sys.stderr, flush=True)
                raise refusal("injected fault")
            result = original(*arguments, **options)
            if fire and after:
                time.sleep(after)
        finally:
            leave()
        if fire and failure is not None:
            print(f"tandem-faults: {fault['target']} done, then {failure.__name__} raised", file=sys.stderr, flush=True)
            raise failure("injected fault")
        return result

    return wrapper


_fired: dict[str, int] = {}  # the targets whose fault has fired, and the thread it fired in (`armed_by`)


def _install() -> None:
    faults = json.loads(os.environ.get("TANDEM_FAULTS") or "[]")
    for fault in faults:
        owner, name, original = _resolve(fault["target"])
        setattr(owner, name, _wrapped(fault, original))


_install()
