"""Issue 22, point 6: the spool never loses a file to the runtime's own clock.

The defect, as an operator found it: 1 of 136 files was rejected whole. Its
lines carried their own `at` (22:01:59.64); it was renamed into the spool
while the start was applying the others, so the start's one scan had missed
it; then `daemon.start` was recorded, stamped by the wall clock (22:02:00),
which put the file's `at` behind the store's head (`at_before_head`): the
whole file went to `rejected/`.

What must hold instead, against a real `tandem daemon` and a real `tandem
serve --spool`:

* a file present at start — here renamed in while the start applies a big
  first file, so after the start's first scan — is applied before
  `daemon.start`, its `at` a little in the past taken as written: the start
  scans again until a scan finds nothing new;
* a file that arrives later with lines behind the head is still refused
  whole (a trace is all or nothing: docs/operations.md says why), and the
  runtime says so where a human looks: it records a `health.incident`
  (`spool_file_late/{n}`, the file named), which raises its alert.

The race is made deterministic without a hook in the runtime: the first
file is big and applied in small batches (`--batch`), and the second is
renamed in once some of the first file's inputs are in the store and most
are not (it is there "at start" from the operator's view: before
`daemon.start`, long before the first file is done)."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tandem.adapters.daemon import Daemon, Settings
from tandem.adapters.runtime import start_spool_scans_max
from tandem.domain import events as ev
from tandem.domain.inputs import format_at
from tests.adapters.test_spool_guard import T0, Clocks, alerts, runtime_on, started
from tests.adapters.test_spool_guard import configure as configure_at
from tests.adapters.test_spool_guard import kinds as kinds_of
from tests.adapters.test_spool_guard import observe as observe_at
from tests.adapters.test_spool_guard import records as guard_records
from tests.adapters.test_spool_guard import rejected as guard_rejected
from tests.e2e.serving import ROOT, Served, stored_inputs, tandem
from tests.e2e.test_daemon_watchdog import recorded as records  # the store's input records, in order

UTC = datetime.timezone.utc
big_file_inputs = 4_000
batch_inputs = 10  # small batches: the big file takes seconds to apply, a commit at a time
late_file_inputs = 3
wait_s = 60
poll_s = 0.005


def rfc3339(moment: datetime.datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def observe(n: int, at: datetime.datetime, scope: str) -> dict[str, Any]:
    return {
        "type": "observe", "at": rfc3339(at), "actor": "source", "source_id": scope, "kind": "ci", "scope": scope,
        "fingerprint": f"{scope}-{n}", "complete": True,
    }  # fmt: skip


def drop(spool: Path, name: str, lines: list[dict[str, Any]]) -> None:
    """What a writer does: a hidden temporary name, then a rename."""
    temporary = spool / f".{name}.tmp"
    temporary.write_text("".join(json.dumps(line) + "\n" for line in lines))
    os.replace(temporary, spool / name)


def wait_for(what: str, condition: Any, log: Any) -> None:
    deadline = time.monotonic() + wait_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{log()}"
        time.sleep(poll_s)


@contextmanager
def daemon(tmp_path: Path, url: str, spool: Path) -> Iterator[Any]:
    """A real `tandem daemon`, started now (the caller races its start); yields its log reader."""
    log_file = tmp_path / "daemon.log"
    with open(log_file, "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "tandem.adapters.cli", "daemon", "--store", url, "--spool", str(spool),
             "--batch", str(batch_inputs), "--interval", "0.05", "--publish-interval", "0.2", "--tick", "3600"],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr,
        )  # fmt: skip
    try:
        yield log_file.read_text
    finally:
        process.terminate()
        assert process.wait(timeout=wait_s) == 0, log_file.read_text()


@contextmanager
def server(tmp_path: Path, url: str, spool: Path) -> Iterator[Any]:
    """A real `tandem serve --spool`, its start (which blocks until it
    listens) run in a thread, so the caller can race it; yields its log reader."""
    served = Served(tmp_path, url, "--spool", str(spool), "--batch", str(batch_inputs), "--tick", "3600")
    starting = threading.Thread(target=served.start)
    starting.start()
    try:
        yield served.log
    finally:
        starting.join(timeout=wait_s)
        assert served.stop() == 0, served.log()


RUNTIMES = {"daemon": daemon, "serve": server}


@pytest.mark.parametrize("runtime", list(RUNTIMES))
def test_a_file_renamed_in_during_the_start_goes_before_daemon_start_and_a_late_one_raises_an_alert(
    tmp_path: Path, runtime: str
) -> None:
    database = tmp_path / "store.db"
    url = f"sqlite:///{database}"
    spool = tmp_path / "spool"
    spool.mkdir(mode=0o700)
    started_at = datetime.datetime.now(UTC)
    old = started_at - datetime.timedelta(seconds=120)
    drop(spool, "0001-big.jsonl", [observe(n, old, "big") for n in range(big_file_inputs)])

    with RUNTIMES[runtime](tmp_path, url, spool) as log:
        # The start is applying the big file: its first scan is behind it.
        wait_for("the start to apply some of the big file", lambda: stored_inputs(database) > 0, log)
        assert stored_inputs(database) < big_file_inputs // 2, "the big file went too fast to race its start"
        # A little in the past: earlier than the wall clock at the start, and
        # at every moment after (daemon.start's stamp, if it came first).
        written_at = datetime.datetime.now(UTC) - datetime.timedelta(seconds=1)
        drop(spool, "0002-written-before-the-start.jsonl", [observe(n, written_at, "late") for n in range(late_file_inputs)])
        assert (spool / "0001-big.jsonl").exists(), "the big file was done before the second was renamed in"

        wait_for("daemon.start", lambda: "daemon.start" in [r.input.input_type for r in records(url)], log)
        kinds = [(record.input.input_type, record.file) for record in records(url)]
        assert not (spool / "rejected" / "0002-written-before-the-start.jsonl").exists(), log()
        assert sorted(path.name for path in (spool / "done").iterdir()) == ["0001-big.jsonl", "0002-written-before-the-start.jsonl"]
        assert kinds == [
            *[("observe", "0001-big.jsonl")] * big_file_inputs,
            *[("observe", "0002-written-before-the-start.jsonl")] * late_file_inputs,
            ("daemon.start", None),
        ]
        start = records(url)[-1]
        assert all(type(record) is ev.InputAccepted for record in records(url))
        assert records(url)[-2].input.at == written_at  # its own `at`, as written
        assert start.input.at >= written_at

        # Later, a file behind the head (its `at` before daemon.start's):
        # refused whole, with its reason, and an alert naming it.
        drop(spool, "0003-behind.jsonl", [observe(n, written_at, "behind") for n in range(late_file_inputs)])
        wait_for("the late file to be judged", lambda: (spool / "rejected" / "0003-behind.jsonl.error").exists(), log)
        error = (spool / "rejected" / "0003-behind.jsonl.error").read_text()
        assert error.startswith(f"line 1: `at` {format_at(written_at)} is earlier than the store's last input ("), error
        wait_for("the runtime's incident", lambda: records(url)[-1].input.input_type == "health.incident", log)
        after = records(url)
        assert all(record.file != "0003-behind.jsonl" for record in after)  # nothing of it recorded
        incident = after[-1]
        assert type(incident) is ev.InputAccepted and len(after) == len(kinds) + 1
        assert incident.input.sender == "daemon"
        assert (incident.input.incident_id, incident.input.kind) == ("spool_file_late/1", "spool_file_late")
        assert "0003-behind.jsonl" in incident.input.detail and "rejected/0003-behind.jsonl" in incident.input.detail
        assert "line 1: `at`" in incident.input.detail

    shown = tandem("show", "--store", url, "--json")
    assert shown.returncode == 0, shown.stderr
    raised = {alert["alert_id"]: alert for alert in json.loads(shown.stdout)["alerts"]}
    assert raised["incident:spool_file_late/1"]["state"] == "raised"


# ------------------------------------------- in process: the scans' bound


class Feeding(Daemon):
    """A runtime whose spool a writer keeps feeding: each file it applies,
    the writer renames the next one in meanwhile (`feed` files in all), so
    every scan finds one new file. A fake of the writer's timing, nothing
    of the runtime's replaced: `_apply` runs as it is, then the writer acts."""

    feed: int = 0
    fed: int = 0
    lines: Any = None  # what each fed file holds, by its number

    def _apply(self, path: Path) -> None:
        super()._apply(path)
        if self.fed < self.feed:
            self.fed += 1
            assert self.settings.spool is not None
            drop(self.settings.spool, f"{self.fed:04d}-fed.jsonl", self.lines(self.fed))


def feeding(tmp_path: Path, clocks: Clocks, feed: int, lines: Any) -> Feeding:
    spool = tmp_path / "spool"
    settings = Settings(store_url="memory:", spool=spool, health=tmp_path / "health.json", watchdog_db=tmp_path / "wd.db")
    runtime = Feeding(settings, clock=lambda: clocks.wall, monotonic=lambda: clocks.mono)
    runtime.feed, runtime.lines = feed, lines
    assert runtime.spool is not None
    runtime.spool.prepare()
    runtime.open()
    return runtime


def test_a_spool_that_never_stops_filling_gets_its_start_after_the_named_number_of_scans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clocks = Clocks()
    runtime = feeding(tmp_path, clocks, start_spool_scans_max + 5, lambda n: [observe_at(n, None)])
    drop(tmp_path / "spool", "0000-first.jsonl", [observe_at(0, None)])
    runtime.start()
    # One file per scan: the first and the 99 fed while the scans before were applied.
    assert kinds_of(runtime) == ["observe"] * start_spool_scans_max + ["daemon.start"]
    assert f"the spool still had new files after {start_spool_scans_max} scans" in capsys.readouterr().err
    for _ in range(6):  # what still came is applied after the start, a file a round here, none refused
        runtime.round()
    assert kinds_of(runtime)[start_spool_scans_max + 1 :] == ["observe"] * 6
    assert list((tmp_path / "spool" / "rejected").iterdir()) == []
    runtime.close()


def test_a_deferred_start_goes_after_a_file_renamed_in_while_the_first_input_was_applied(tmp_path: Path) -> None:
    """On an empty store daemon.start waits for the first input; it then went
    after the files of that one scan only, so a file renamed in while the
    first was applied (its `at` before the start's stamp) was refused."""
    clocks = Clocks(T0 + datetime.timedelta(microseconds=100_000))
    written = clocks.wall + datetime.timedelta(microseconds=500_000)
    runtime = feeding(tmp_path, clocks, 1, lambda n: [observe_at(n, written)])
    runtime.start()
    assert runtime.start_deferred and kinds_of(runtime) == []
    drop(tmp_path / "spool", "0000-config.jsonl", [configure_at(T0 + datetime.timedelta(microseconds=200_000))])
    clocks.advance(1.5)  # the start's stamp is now past the fed file's `at`
    runtime.round()
    assert list((tmp_path / "spool" / "rejected").iterdir()) == []
    assert kinds_of(runtime) == ["engine.configure", "observe", "daemon.start"]
    assert sorted(path.name for path in (tmp_path / "spool" / "done").iterdir()) == ["0000-config.jsonl", "0001-fed.jsonl"]
    runtime.close()


def test_each_late_file_raises_an_incident_of_its_own_and_a_store_fed_traces_gets_none(tmp_path: Path) -> None:
    clocks = Clocks()
    runtime = started(tmp_path, clocks)
    clocks.advance(5)
    for name in ("a-late.jsonl", "b-late.jsonl"):
        drop(tmp_path / "spool", name, [observe_at(7, T0 - datetime.timedelta(seconds=1))])  # before daemon.start
        runtime.round()
    assert guard_rejected(tmp_path) == ["a-late.jsonl", "a-late.jsonl.error", "b-late.jsonl", "b-late.jsonl.error"]
    incidents = [record.input for record in guard_records(runtime) if record.input.input_type == "health.incident"]
    assert [(value.incident_id, value.sender) for value in incidents] == [("spool_file_late/1", "daemon"), ("spool_file_late/2", "daemon")]
    assert "spool file a-late.jsonl refused whole" in incidents[0].detail and "b-late.jsonl" in incidents[1].detail
    assert {key: state for key, state in alerts(runtime).items() if "spool" in key} == {
        "incident:spool_file_late/1": "raised", "incident:spool_file_late/2": "raised",
    }  # fmt: skip
    runtime.close()

    # --no-runtime-inputs (a store fed recorded traces): the runtime records
    # nothing of its own, so the file is refused as before, and said in the log only.
    (tmp_path / "fed").mkdir()
    fed = runtime_on(tmp_path / "fed", Clocks(), runtime_inputs=False)
    drop(tmp_path / "fed" / "spool", "0-first.jsonl", [observe_at(1, T0 + datetime.timedelta(seconds=9))])
    fed.start()
    drop(tmp_path / "fed" / "spool", "late.jsonl", [observe_at(2, T0)])
    fed.round()
    assert guard_rejected(tmp_path / "fed") == ["late.jsonl", "late.jsonl.error"]
    assert kinds_of(fed) == ["observe"]
    fed.close()
