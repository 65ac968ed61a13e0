"""The guarded spool, in process, with injected clocks (adapters/spool.py,
replay/edge.py, adapters/runtime.py): who a spool file may speak for, what
it may never say, the `at` it may leave out or give, the folders and files it
refuses, the names it logs, and the order the runtime keeps between waiting
files and its own inputs.

Every refusal is checked three ways: where the file went (rejected/, with its
`.error`), what its `.error` says, and that the store holds nothing of it.
The two attacks of the issue are replayed twice: through the spool (refused)
and, as a control, straight into the engine past the edge (where they work),
so that each test would fail if the edge stopped refusing them."""

from __future__ import annotations

import datetime
import json
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from tandem.adapters.daemon import Daemon, Settings
from tandem.replay.edge import SPOOL_ACTORS_DEFAULT
from tandem.adapters.ingest import ingest
from tandem.adapters.tokens import ACTORS
from tandem.adapters.trace import parse_trace
from tandem.adapters.watchdog import WatchdogStore
from tandem.domain import events as ev

UTC = datetime.timezone.utc
T0 = datetime.datetime(2026, 3, 1, 9, 0, 0, tzinfo=UTC)  # a whole second: the 300 s boundary is exact
ALL_ACTORS = tuple(ACTORS)
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another uid needs root")


class Clocks:
    def __init__(self, wall: datetime.datetime = T0) -> None:
        self.wall = wall
        self.mono = 0.0

    def advance(self, s: float) -> None:
        self.wall += datetime.timedelta(seconds=s)
        self.mono += s


def runtime_on(tmp_path: Path, clocks: Clocks, store_url: str = "memory:", **options: Any) -> Daemon:
    """A runtime on `store_url` with its spool in tmp_path/spool, opened (not started)."""
    settings = Settings(
        store_url=store_url,
        spool=tmp_path / "spool",
        health=tmp_path / "health.json",
        watchdog_db=tmp_path / "wd.db",
        **options,
    )
    runtime = Daemon(settings, clock=lambda: clocks.wall, monotonic=lambda: clocks.mono)
    assert runtime.spool is not None
    runtime.spool.prepare()
    runtime.open()
    return runtime


def started(tmp_path: Path, clocks: Clocks, **options: Any) -> Daemon:
    """A running runtime on a store that already holds an input (so its
    daemon.start is recorded at start, not deferred)."""
    runtime = runtime_on(tmp_path, clocks, **options)
    drop(tmp_path, "0-first.jsonl", [observe(1)])
    runtime.start()
    assert kinds(runtime)[0] == "observe" and kinds(runtime)[-1] == "daemon.start"
    return runtime


def records(runtime: Daemon) -> list[ev.InputAccepted | ev.InputRejected]:
    assert runtime.engine is not None and runtime.engine.store is not None
    return [
        event
        for page in runtime.engine.store.read_pages()
        for event in page
        if isinstance(event, (ev.InputAccepted, ev.InputRejected))
    ]


def kinds(runtime: Daemon) -> list[str]:
    return [event.input.input_type for event in records(runtime)]


def view(runtime: Daemon, name: str) -> Any:
    assert runtime.engine is not None and runtime.engine.views is not None
    return runtime.engine.views.view(name)


def alerts(runtime: Daemon) -> dict[str, str]:
    return {alert["alert_id"]: alert["state"] for alert in view(runtime, "alerts")}


def drop(tmp_path: Path, name: str, lines: list[dict[str, Any] | str]) -> Path:
    """What a writer does: a hidden temporary name, then a rename."""
    spool = tmp_path / "spool"
    text = "".join((item if isinstance(item, str) else json.dumps(item)) + "\n" for item in lines)
    temporary = spool / f".{name}.tmp"
    temporary.write_text(text)
    os.replace(temporary, spool / name)
    return spool / name


def observe(n: int, at: datetime.datetime | None = T0, scope: str = "s") -> dict[str, Any]:
    value: dict[str, Any] = {
        "type": "observe", "actor": "source", "source_id": scope, "kind": "ci", "scope": scope,
        "fingerprint": f"{scope}-{n}", "complete": True,
    }  # fmt: skip
    if at is not None:
        value["at"] = rfc3339(at)
    return value


def rfc3339(moment: datetime.datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rejected(tmp_path: Path) -> list[str]:
    return sorted(path.name for path in (tmp_path / "spool" / "rejected").iterdir())


def done(tmp_path: Path) -> list[str]:
    return sorted(path.name for path in (tmp_path / "spool" / "done").iterdir())


def error_of(tmp_path: Path, name: str) -> str:
    return (tmp_path / "spool" / "rejected" / f"{name}.error").read_text()


def assert_refused_whole(runtime: Daemon, tmp_path: Path, name: str, before: int) -> str:
    """`name` moved to rejected/ with its .error, and nothing of it in the store."""
    assert rejected(tmp_path) == sorted([name, f"{name}.error"])
    assert not (tmp_path / "spool" / name).exists()
    assert len(records(runtime)) == before
    assert all(event.file != name for event in records(runtime))
    return error_of(tmp_path, name)


# ------------------------------------------------------------ 1. folders


def test_done_or_rejected_swapped_for_a_symlink_while_running_moves_nothing_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clocks = Clocks()
    runtime = started(tmp_path, clocks)
    spool, outside = tmp_path / "spool", tmp_path / "outside"
    outside.mkdir()
    capsys.readouterr()
    for role in ("done", "rejected"):
        real = tmp_path / f"real-{role}"
        os.rename(spool / role, real)
        os.symlink(outside, spool / role)
        before = len(records(runtime))
        good = drop(tmp_path, f"good-{role}.jsonl", [observe(2, None, role)])
        bad = drop(tmp_path, f"bad-{role}.jsonl", ["{oops"])
        for _ in range(3):
            clocks.advance(1)
            runtime.round()
        # Nothing applied, nothing moved: both files wait where they were.
        assert good.exists() and bad.exists()
        assert list(outside.iterdir()) == []
        assert len(records(runtime)) == before
        logged = capsys.readouterr().err
        refusal = f"spool refused until fixed: {role}/ {spool / role} is a symlink; give the real folder"
        assert logged.count(refusal) == 1, logged  # said once, not every round
        # Fixed: the files go their ways, and it says so once.
        os.unlink(spool / role)
        os.rename(real, spool / role)
        runtime.round()
        assert not good.exists() and not bad.exists()
        assert (spool / "done" / good.name).exists() and (spool / "rejected" / bad.name).exists()
        assert capsys.readouterr().err.count("spool folder is safe again") == 1
        assert list(outside.iterdir()) == []


def test_done_swapped_for_a_symlink_mid_file_leaves_the_file_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The swap lands after the file's inputs are committed, before its move:
    the file stays in the spool (not followed out), the log does not claim it
    was moved, and once done/ is real again it moves there, applied once."""
    clocks = Clocks()
    runtime = started(tmp_path, clocks)
    spool, outside = tmp_path / "spool", tmp_path / "outside"
    outside.mkdir()

    def swap(commit: Any) -> None:
        if not (spool / "done").is_symlink():
            os.rename(spool / "done", tmp_path / "real-done")
            os.symlink(outside, spool / "done")

    assert runtime.engine is not None
    runtime.engine.listeners.append(swap)
    path = drop(tmp_path, "x.jsonl", [observe(2, None)])
    capsys.readouterr()
    runtime.round()
    runtime.engine.listeners.remove(swap)
    assert path.exists() and list(outside.iterdir()) == []
    assert kinds(runtime)[-1] == "observe"
    logged = capsys.readouterr().err
    assert "x.jsonl: left in the spool, not moved: done/" in logged
    assert "moved to done/" not in logged, logged
    assert "x.jsonl: 1 input(s) applied (0 rejected), 0 already in the store; left in the spool until done/ is safe" in logged
    runtime.round()
    assert path.exists() and capsys.readouterr().err.count("spool refused until fixed") == 1

    os.unlink(spool / "done")
    os.rename(tmp_path / "real-done", spool / "done")
    applied = len(records(runtime))
    runtime.round()
    assert not path.exists() and "x.jsonl" in done(tmp_path)
    assert len(records(runtime)) == applied  # the resumable ingest knew it: nothing twice
    assert "x.jsonl: 0 input(s) applied (0 rejected), 1 already in the store; moved to done/" in capsys.readouterr().err


@pytest.mark.parametrize("mode", [0o775, 0o757])
def test_a_spool_made_writable_by_others_while_running_is_refused_until_fixed(
    tmp_path: Path, mode: int, capsys: pytest.CaptureFixture[str]
) -> None:
    clocks = Clocks()
    runtime = started(tmp_path, clocks)
    spool = tmp_path / "spool"
    before = len(records(runtime))
    os.chmod(spool, mode)
    path = drop(tmp_path, "x.jsonl", [observe(2, None)])
    runtime.round()
    runtime.round()
    assert path.exists() and len(records(runtime)) == before
    logged = capsys.readouterr().err
    assert logged.count(f"is writable by group or others (mode {mode:04o})") == 1
    assert f"run: chmod go-w {spool}" in logged
    os.chmod(spool, 0o700)
    runtime.round()
    assert "x.jsonl" in done(tmp_path) and len(records(runtime)) == before + 1


@needs_root
def test_a_spool_subfolder_given_to_another_user_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clocks = Clocks()
    runtime = started(tmp_path, clocks)
    before = len(records(runtime))
    os.chown(tmp_path / "spool" / "done", 12345, 12345)
    path = drop(tmp_path, "x.jsonl", [observe(2, None)])
    runtime.round()
    assert path.exists() and len(records(runtime)) == before
    logged = capsys.readouterr().err
    assert f"done/ {tmp_path / 'spool' / 'done'} is owned by uid 12345, not this runtime's user" in logged


# -------------------------------------------------------------- 2. files


def test_a_symlink_to_a_trace_outside_is_moved_as_the_link_and_never_followed(tmp_path: Path) -> None:
    clocks = Clocks()
    runtime = started(tmp_path, clocks)
    target = tmp_path / "elsewhere.jsonl"
    content = json.dumps(observe(7, None, "outside")) + "\n"
    target.write_text(content)
    before = len(records(runtime))
    os.symlink(target, tmp_path / "spool" / "link.jsonl")
    runtime.round()
    reason = assert_refused_whole(runtime, tmp_path, "link.jsonl", before)
    assert reason.startswith("refused unread: a symlink")
    moved = tmp_path / "spool" / "rejected" / "link.jsonl"
    assert moved.is_symlink() and os.readlink(moved) == str(target)  # the link itself, not a copy
    assert target.read_text() == content and not target.is_symlink()  # its target untouched, where it was
    assert all(getattr(event.input, "scope", None) != "outside" for event in records(runtime))


@needs_root
def test_a_file_owned_by_another_uid_is_refused_unread(tmp_path: Path) -> None:
    clocks = Clocks()
    runtime = started(tmp_path, clocks)
    before = len(records(runtime))
    spool = tmp_path / "spool"
    temporary = spool / ".theirs.tmp"
    temporary.write_text(json.dumps(observe(2, None)) + "\n")
    os.chown(temporary, 12345, 12345)
    os.replace(temporary, spool / "theirs.jsonl")
    runtime.round()
    reason = assert_refused_whole(runtime, tmp_path, "theirs.jsonl", before)
    assert reason == f"refused unread: owned by uid 12345, not this runtime's user ({os.geteuid()})\n"
    assert (spool / "rejected" / "theirs.jsonl").lstat().st_uid == 12345  # moved as it is


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    clocks = Clocks()
    runtime = started(tmp_path, clocks)
    before = len(records(runtime))
    os.mkfifo(tmp_path / "spool" / "x.jsonl")
    worker = threading.Thread(target=runtime.round, daemon=True)  # a blocking open would hang here
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "the round blocked on a FIFO"
    reason = assert_refused_whole(runtime, tmp_path, "x.jsonl", before)
    assert reason == "refused unread: not a regular file\n"
    assert stat.S_ISFIFO((tmp_path / "spool" / "rejected" / "x.jsonl").lstat().st_mode)


def test_a_name_that_is_not_utf8_is_refused_and_the_runtime_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file name the store cannot keep as text (bytes that are not UTF-8)
    is refused; it used to stop the runtime at every start."""
    clocks = Clocks()
    runtime = started(tmp_path, clocks)
    before = len(records(runtime))
    spool = os.fsencode(tmp_path / "spool")
    with open(spool + b"/bad\xff.jsonl", "w") as handle:
        handle.write(json.dumps(observe(2, None)) + "\n")
    drop(tmp_path, "z-good.jsonl", [observe(3, None)])
    runtime.round()
    assert sorted(os.listdir(spool + b"/rejected")) == [b"bad\xff.jsonl", b"bad\xff.jsonl.error"]
    reason = Path(os.fsdecode(spool + b"/rejected/bad\xff.jsonl.error")).read_text()
    assert reason.startswith("refused unread: its name is not valid UTF-8")
    assert [event.file for event in records(runtime)[before:]] == ["z-good.jsonl"]
    # Logged with the odd byte escaped (capsys, like any strict stream, would refuse it raw).
    assert "tandem: bad\\udcff.jsonl: rejected, nothing of it applied" in capsys.readouterr().err


# -------------------------------------------------------------- 3. names


HOSTILE = "a\x1b[31mred\u202e"


def test_names_with_controls_and_bidi_overrides_are_logged_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clocks = Clocks()
    runtime = started(tmp_path, clocks)
    spool = tmp_path / "spool"
    capsys.readouterr()
    drop(tmp_path, f"{HOSTILE}.jsonl", [observe(2, None)])  # applied
    drop(tmp_path, f"{HOSTILE}-bad.jsonl", [{"type": "\x1b]0;owned\x07", "at": rfc3339(T0)}])  # rejected
    os.symlink(tmp_path / "nowhere", spool / f"{HOSTILE}-link.jsonl")  # refused unread
    runtime.round()
    # and a done/ that is a symlink: "left in the spool" / "refused until fixed"
    os.rename(spool / "done", tmp_path / "real-done")
    os.symlink(tmp_path, spool / "done")
    drop(tmp_path, f"{HOSTILE}-later.jsonl", [observe(3, None)])
    runtime.round()
    logged = capsys.readouterr().err
    assert "\x1b" not in logged and "\u202e" not in logged and "\x07" not in logged
    escaped = "a\\x1b[31mred\\u202e"
    assert f"{escaped}.jsonl: 1 input(s) applied" in logged
    assert f"{escaped}-bad.jsonl: rejected, nothing of it applied" in logged
    assert "\\x1b]0;owned\\x07" in logged  # the bad type, quoted from the line, escaped too
    assert f"{escaped}-link.jsonl: rejected, nothing of it applied; moved to rejected/ (refused unread: a symlink" in logged
    assert "spool refused until fixed: done/" in logged
    assert all(line.startswith("tandem: ") for line in logged.splitlines())  # one line per message
    # The files keep their real names: only what is shown is escaped.
    os.unlink(spool / "done")
    os.rename(tmp_path / "real-done", spool / "done")
    assert f"{HOSTILE}.jsonl" in done(tmp_path)
    assert [event.file for event in records(runtime)][-1] == f"{HOSTILE}.jsonl"


def test_a_spool_folder_with_controls_in_its_name_is_logged_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clocks = Clocks()
    folder = tmp_path / f"sp{HOSTILE}"
    folder.mkdir(mode=0o700)
    runtime = Daemon(Settings(store_url="memory:", spool=folder), clock=lambda: clocks.wall, monotonic=lambda: clocks.mono)
    assert runtime.spool is not None
    runtime.spool.prepare()
    runtime.open()
    runtime.start()
    os.chmod(folder, 0o777)
    runtime.round()
    logged = capsys.readouterr().err
    assert "\x1b" not in logged and "\u202e" not in logged
    shown = f"{tmp_path}/spa\\x1b[31mred\\u202e"
    assert f"started: pid {os.getpid()}, store memory:, spool {shown}, writer generation 1\n" in logged
    assert f"spool refused until fixed: spool folder {shown} is writable by group or others" in logged
    assert f"run: chmod go-w {shown}\n" in logged


# ----------------------------------------------------------- 4. --spool-actors


@pytest.mark.parametrize(
    "value, sender, decided",
    [
        # `decided`: what the domain then says once the spool may speak for the
        # sender (a reason after not_authorized: the actor was authorised).
        ({"type": "task.delegate"}, "human", "unknown_conversation"),  # no actor: the kind's default, human
        ({"type": "task.delegate", "actor": "human"}, "human", "unknown_conversation"),
        ({"type": "watchdog.heartbeat", "actor": "watchdog", "generation": 1}, "watchdog", None),
        ({"type": "alert.seen", "alert_id": "card:c1"}, "human", "unknown_alert"),
    ],
)
def test_the_spool_speaks_only_for_its_actors(
    tmp_path: Path, value: dict[str, Any], sender: str, decided: str | None
) -> None:
    delegate = {
        "task_id": "t1", "conversation_id": "fg", "message_refs": [], "goal": "g", "done_when": ["d"],
        "grant": {"grant_id": "g1", "allowed_operations": ["worker.start"], "write_roots": ["/repo"]},
    }  # fmt: skip
    value = {**value, **(delegate if value["type"] == "task.delegate" else {})}
    clocks = Clocks()
    runtime = started(tmp_path, clocks)
    before = len(records(runtime))
    drop(tmp_path, "mixed.jsonl", [observe(2, None), observe(3, None), value])  # the bad line is the third
    runtime.round()
    reason = assert_refused_whole(runtime, tmp_path, "mixed.jsonl", before)
    assert reason.startswith(f"line 3: {value['type']} from {sender!r}: the spool speaks only for ")
    assert ", ".join(SPOOL_ACTORS_DEFAULT) + " (--spool-actors)" in reason
    assert "actor_not_spooled" in reason

    # Allowed when --spool-actors names the actor.
    (tmp_path / "second").mkdir()
    allowed = runtime_on(tmp_path / "second", Clocks(), spool_actors=(*SPOOL_ACTORS_DEFAULT, sender))
    drop(tmp_path / "second", "0-first.jsonl", [observe(1)])
    allowed.start()
    drop(tmp_path / "second", "mixed.jsonl", [observe(2, None), observe(3, None), value])
    allowed.round()
    assert rejected(tmp_path / "second") == []
    assert kinds(allowed)[-3:] == ["observe", "observe", value["type"]]
    last = records(allowed)[-1]
    assert (last.input.sender, getattr(last, "reason", None)) == (sender, decided)


def test_the_default_spool_actors_leave_out_human_and_watchdog() -> None:
    assert set(SPOOL_ACTORS_DEFAULT) == set(ALL_ACTORS) - {"human", "watchdog"}
    assert Settings(store_url="memory:").spool_actors == SPOOL_ACTORS_DEFAULT


# --------------------------------------------------------------- 5. reserved


@pytest.mark.parametrize(
    "value, says",
    [
        ({"type": "daemon.stop", "actor": "daemon", "expected": True}, "line 2: daemon.stop is recorded by the runtime"),
        ({"type": "daemon.stop", "expected": False}, "line 2: daemon.stop is recorded by the runtime"),
        ({"type": "daemon.start", "actor": "daemon"}, "line 2: daemon.start is recorded by the runtime"),
        ({"type": "tick", "actor": "daemon", "id": "watchdog/incident/daemon_dead-1"}, "line 2: input ids starting 'watchdog/'"),
        ({"type": "watchdog.heartbeat", "actor": "watchdog", "generation": 5, "id": "watchdog/heartbeat/5/1"}, "line 2: input ids starting 'watchdog/'"),  # fmt: skip
        ({**observe(9, None), "id": "watchdog/anything"}, "line 2: input ids starting 'watchdog/'"),
    ],
)
def test_what_the_runtime_records_about_itself_is_refused_whole_even_for_a_spool_of_every_actor(
    tmp_path: Path, value: dict[str, Any], says: str
) -> None:
    clocks = Clocks()
    runtime = started(tmp_path, clocks, spool_actors=ALL_ACTORS)  # even a spool that speaks for everyone
    before = len(records(runtime))
    drop(tmp_path, "forged.jsonl", [observe(2, None), value])
    runtime.round()
    reason = assert_refused_whole(runtime, tmp_path, "forged.jsonl", before)
    assert reason.startswith(says) and "(reserved)" in reason
    # An id that merely contains the word is anyone's.
    drop(tmp_path, "fine.jsonl", [{**observe(3, None), "id": "my/watchdog/3"}])
    runtime.round()
    assert "fine.jsonl" in done(tmp_path)


FORGED_CRASH_ERASER: list[dict[str, Any]] = [
    {"type": "daemon.stop", "actor": "daemon", "expected": True},
    {"type": "tick", "actor": "daemon", "id": "watchdog/incident/daemon_dead-1"},
]


def crash_then_restart(tmp_path: Path, clocks: Clocks, forge: str) -> Daemon:
    """A runtime records its start and dies without a stop; the watchdog
    notices (incident daemon_dead-1 in its file); the forged two lines wait
    for the next start — in the spool (`forge="spool"`), or, as the control,
    applied straight to the engine past the live edge (`forge="engine"`).
    Then a new runtime starts on the same store."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    first = runtime_on(tmp_path, clocks, store_url=url)
    drop(tmp_path, "0-first.jsonl", [observe(1)])
    first.start()
    assert kinds(first) == ["observe", "daemon.start"]
    first.close()  # a crash: no daemon.stop
    clocks.advance(10)
    WatchdogStore(tmp_path / "wd.db").open_incident("daemon_dead", "pid 7 is not running", clocks.wall)
    clocks.advance(1)
    if forge == "spool":
        drop(tmp_path, "forged.jsonl", FORGED_CRASH_ERASER)
    second = runtime_on(tmp_path, clocks, store_url=url)
    if forge == "engine":
        assert second.engine is not None
        lines = "".join(json.dumps({**value, "at": second.stamp()}) + "\n" for value in FORGED_CRASH_ERASER)
        ingest(second.engine, parse_trace(lines.encode(), "forged.jsonl"))
    second.start()
    return second


def test_attack_a_a_forged_stop_and_incident_id_no_longer_erase_a_crash(tmp_path: Path) -> None:
    # The control: past the edge, the two lines erase both alerts.
    (tmp_path / "control").mkdir()
    control = crash_then_restart(tmp_path / "control", Clocks(), forge="engine")
    assert "incident:daemon_crash/1" not in alerts(control)  # the stop "expected" the crash
    assert "incident:daemon_dead-1" not in alerts(control)  # the watchdog's row was taken as recorded
    assert view(control, "health")["open_incidents"] == []
    control.close()

    # Through the spool: refused whole, both alerts raised.
    clocks = Clocks()
    runtime = crash_then_restart(tmp_path, clocks, forge="spool")
    assert rejected(tmp_path) == ["forged.jsonl", "forged.jsonl.error"]
    reason = error_of(tmp_path, "forged.jsonl")
    assert reason.startswith("line 1: daemon.stop is recorded by the runtime itself, never sent") and "reserved" in reason
    assert kinds(runtime) == ["observe", "daemon.start", "health.incident", "daemon.start"]
    assert all(event.file != "forged.jsonl" for event in records(runtime))
    assert alerts(runtime) == {"incident:daemon_crash/1": "raised", "incident:daemon_dead-1": "raised"}
    assert sorted(view(runtime, "health")["open_incidents"]) == ["daemon_crash/1", "daemon_dead-1"]

    # The same file dropped again while it runs: refused again, the alerts stay.
    clocks.advance(5)
    drop(tmp_path, "forged-again.jsonl", FORGED_CRASH_ERASER)
    runtime.round()
    assert "forged-again.jsonl.error" in rejected(tmp_path)
    assert alerts(runtime) == {"incident:daemon_crash/1": "raised", "incident:daemon_dead-1": "raised"}
    # Only the real stop is recorded, and the next start raises nothing new.
    runtime.stop(expected=True)
    runtime.close()
    clocks.advance(5)
    again = runtime_on(tmp_path, clocks, store_url=f"sqlite:///{tmp_path / 'store.db'}")
    again.start()
    assert kinds(again)[-2:] == ["daemon.stop", "daemon.start"]
    assert alerts(again) == {"incident:daemon_crash/1": "raised", "incident:daemon_dead-1": "raised"}
    again.close()


FORGED_HEARTBEAT = {"type": "watchdog.heartbeat", "actor": "watchdog", "generation": 999_999_999}


@pytest.mark.parametrize(
    "forged, spool_actors, says",
    [
        (FORGED_HEARTBEAT, SPOOL_ACTORS_DEFAULT, "actor_not_spooled"),
        ({**FORGED_HEARTBEAT, "id": "watchdog/heartbeat/999999999/1"}, ALL_ACTORS, "reserved"),
    ],
)
def test_attack_b_a_forged_heartbeat_no_longer_fences_the_real_watchdog(
    tmp_path: Path, forged: dict[str, Any], spool_actors: tuple[str, ...], says: str
) -> None:
    watchdog = WatchdogStore(tmp_path / "wd.db")
    watchdog.heartbeat(1, 1, T0)
    clocks = Clocks()
    runtime = started(tmp_path, clocks, spool_actors=spool_actors)
    assert view(runtime, "health")["watchdog_generation"] == 1
    before = len(records(runtime))
    drop(tmp_path, "forged.jsonl", [forged])
    runtime.round()
    reason = assert_refused_whole(runtime, tmp_path, "forged.jsonl", before)
    assert reason.startswith("line 1: ") and says in reason

    # The real watchdog, restarted (generation 2), through its file.
    clocks.advance(2)
    watchdog.heartbeat(2, 1, clocks.wall)
    runtime.round()
    last = records(runtime)[-1]
    assert type(last) is ev.InputAccepted and last.input.id == "watchdog/heartbeat/2/1"
    assert view(runtime, "health")["watchdog_generation"] == 2 and view(runtime, "health")["watchdog_fresh"] is True
    assert view(runtime, "rejections") == []

    # The control: the forged heartbeat past the edge fences generation 2 out.
    (tmp_path / "control").mkdir()
    control = runtime_on(tmp_path / "control", Clocks())
    assert control.engine is not None
    body = json.dumps({**FORGED_HEARTBEAT, "at": control.stamp()}) + "\n"
    ingest(control.engine, parse_trace(body.encode(), "forged.jsonl"))
    control.submit([{"type": "watchdog.heartbeat", "actor": "watchdog", "generation": 2, "id": "watchdog/heartbeat/2/1"}])
    assert [row["reason"] for row in view(control, "rejections")] == ["stale_generation"]


# -------------------------------------------------------------------- 6. at


def test_a_left_out_at_is_stamped_in_whole_utc_seconds_never_before_the_store(tmp_path: Path) -> None:
    plus_two = datetime.timezone(datetime.timedelta(hours=2))
    clocks = Clocks(datetime.datetime(2026, 3, 1, 11, 0, 0, 700_000, tzinfo=plus_two))  # 09:00:00.7 UTC
    runtime = started(tmp_path, clocks)
    clocks.advance(60)
    drop(tmp_path, "a.jsonl", [observe(2, None)])
    runtime.round()
    stamped = records(runtime)[-1].input.at
    assert stamped == datetime.datetime(2026, 3, 1, 9, 1, 0, tzinfo=UTC) and stamped.utcoffset() == datetime.timedelta(0)

    # The store's last input is ahead of the clock (a writer's clock 200 s
    # fast, within the limit): a left-out `at` is stamped with it, not earlier.
    ahead = datetime.datetime(2026, 3, 1, 9, 4, 20, tzinfo=UTC)
    drop(tmp_path, "b.jsonl", [observe(3, ahead)])
    runtime.round()
    drop(tmp_path, "c.jsonl", [observe(4, None)])
    runtime.round()
    assert records(runtime)[-1].input.at == ahead
    # Within a file: a left-out `at` follows the line before it, not the clock.
    later = ahead + datetime.timedelta(seconds=30)
    drop(tmp_path, "d.jsonl", [observe(5, later), observe(6, None)])
    runtime.round()
    assert [event.input.at for event in records(runtime)[-2:]] == [later, later]
    assert rejected(tmp_path) == []
    assert [type(event) for event in records(runtime)] == [ev.InputAccepted] * len(records(runtime))


def test_an_at_more_than_300_s_ahead_is_refused_whole_and_300_s_is_accepted(tmp_path: Path) -> None:
    clocks = Clocks()  # 09:00:00 exactly
    runtime = started(tmp_path, clocks)
    before = len(records(runtime))
    for name, ahead in (("a.jsonl", 301.0), ("b.jsonl", 300.000_001)):
        drop(tmp_path, name, [observe(2, None), observe(3, T0 + datetime.timedelta(seconds=ahead))])
        runtime.round()
        assert f"{name}.error" in rejected(tmp_path)
        reason = error_of(tmp_path, name)
        assert reason.startswith("line 2: `at` 2026-03-01T09:05:0") and "more than 300 s ahead" in reason
        assert "at_in_future" in reason
    assert len(records(runtime)) == before
    drop(tmp_path, "c.jsonl", [observe(2, None), observe(3, T0 + datetime.timedelta(seconds=300))])
    runtime.round()
    assert "c.jsonl" in done(tmp_path)
    assert records(runtime)[-1].input.at == datetime.datetime(2026, 3, 1, 9, 5, 0, tzinfo=UTC)
    # The limit follows the clock: what was too far ahead is fine a minute later.
    clocks.advance(60)
    drop(tmp_path, "d.jsonl", [observe(4, T0 + datetime.timedelta(seconds=301))])
    runtime.round()
    assert "d.jsonl" in done(tmp_path)


# ---------------------------------------------------------- 7. waiting files first


def test_a_file_waiting_when_a_tick_falls_due_goes_before_the_tick(tmp_path: Path) -> None:
    clocks = Clocks()
    runtime = started(tmp_path, clocks, tick_s=30.0)
    clocks.advance(29.5)
    written_at = clocks.wall  # the writer stamps its own clock
    drop(tmp_path, "late.jsonl", [observe(2, written_at)])
    clocks.advance(1)  # the tick is due now, and no round ran in between
    runtime.tick_if_idle()
    assert "late.jsonl" in done(tmp_path) and rejected(tmp_path) == []
    tail = records(runtime)[-2:]
    assert [(event.input.input_type, event.file) for event in tail] == [("observe", "late.jsonl"), ("tick", None)]
    assert tail[1].input.at >= tail[0].input.at
    assert all(type(event) is ev.InputAccepted for event in tail)


def test_a_file_waiting_when_a_watchdog_row_arrives_goes_first(tmp_path: Path) -> None:
    clocks = Clocks()
    runtime = started(tmp_path, clocks)
    clocks.advance(3)
    drop(tmp_path, "late.jsonl", [observe(2, clocks.wall)])
    clocks.advance(2)
    WatchdogStore(tmp_path / "wd.db").heartbeat(1, 1, clocks.wall)
    runtime.import_watchdog()
    assert "late.jsonl" in done(tmp_path) and rejected(tmp_path) == []
    assert kinds(runtime)[-2:] == ["observe", "watchdog.heartbeat"]


# ------------------------------------------------------- 8. daemon.start deferred


def configure(at: datetime.datetime | None = None) -> dict[str, Any]:
    value: dict[str, Any] = {"type": "engine.configure", "actor": "daemon", "fallback_after_s": 300}
    if at is not None:
        value["at"] = rfc3339(at)
    return value


def test_on_an_empty_store_the_first_spool_input_may_be_engine_configure(tmp_path: Path) -> None:
    clocks = Clocks()
    runtime = runtime_on(tmp_path, clocks)
    runtime.start()
    assert records(runtime) == [] and runtime.start_deferred
    clocks.advance(1)
    drop(tmp_path, "config.jsonl", [configure()])
    runtime.round()
    assert [(type(event).__name__, event.input.input_type) for event in records(runtime)] == [
        ("InputAccepted", "engine.configure"),  # not too_late
        ("InputAccepted", "daemon.start"),
    ]
    assert view(runtime, "rejections") == []


def test_files_waiting_together_on_an_empty_store_all_go_before_the_deferred_start(tmp_path: Path) -> None:
    """The deferred daemon.start, stamped with the clock, used to be recorded
    right after the first file, so a second file waiting in the same scan
    (written a moment before, with its own `at`) was refused at_before_head."""
    clocks = Clocks(T0 + datetime.timedelta(microseconds=100_000))
    runtime = runtime_on(tmp_path, clocks)
    runtime.start()
    drop(tmp_path, "a.jsonl", [configure(clocks.wall + datetime.timedelta(microseconds=500_000))])
    drop(tmp_path, "b.jsonl", [observe(2, clocks.wall + datetime.timedelta(microseconds=600_000))])
    clocks.advance(1.5)
    runtime.round()
    assert rejected(tmp_path) == [], error_of(tmp_path, "b.jsonl")
    assert done(tmp_path) == ["a.jsonl", "b.jsonl"]
    assert kinds(runtime) == ["engine.configure", "observe", "daemon.start"]


def test_on_a_store_with_inputs_daemon_start_is_recorded_at_start(tmp_path: Path) -> None:
    clocks = Clocks()
    url = f"sqlite:///{tmp_path / 'store.db'}"
    first = runtime_on(tmp_path, clocks, store_url=url, runtime_inputs=False)  # a store fed before, no start
    drop(tmp_path, "config.jsonl", [configure(T0)])
    first.start()
    assert kinds(first) == ["engine.configure"]
    first.close()
    clocks.advance(5)
    runtime = runtime_on(tmp_path, clocks, store_url=url)
    runtime.start()
    assert kinds(runtime) == ["engine.configure", "daemon.start"] and not runtime.start_deferred
    assert records(runtime)[-1].input.at == T0 + datetime.timedelta(seconds=5)
    # ...so an engine.configure now comes too late, and is recorded as rejected.
    drop(tmp_path, "late-config.jsonl", [configure()])
    runtime.round()
    assert [row["reason"] for row in view(runtime, "rejections")] == ["too_late"]
    runtime.close()
