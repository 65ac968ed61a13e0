"""`tandem export` / `tandem import`: the event log as JSON Lines, byte for
byte, between SQLite and PostgreSQL; a bad file or a store holding other
events writes nothing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tandem.adapters.cli import main
from tandem.adapters.ingest import ingest
from tandem.adapters.store import open_store
from tandem.adapters.trace import parse_trace, read_trace
from tandem.replay.engine import Engine
from tandem.replay.verify import verify
from bench.workload import observation_inputs

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "fixtures" / "gates" / "02_prerequisite_user_away.jsonl"


def second_trace(folder: Path) -> Path:
    """Observations after the example's last input (a second trace file)."""
    path = folder / "observations.jsonl"
    if not path.exists():
        values = [dict(value, at=f"2026-03-01T10:00:{index:02d}Z") for index, value in enumerate(observation_inputs(40, 3))]
        path.write_bytes(b"".join(json.dumps(value).encode() + b"\n" for value in values))
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def sqlite_url(tmp_path: Path, name: str) -> str:
    return f"sqlite:///{tmp_path / name}"


def filled(url: str, folder: Path) -> bytes:
    """Two traces ingested, a snapshot written; the stored bytes, as lines."""
    store = open_store(url)
    engine = Engine(store, snapshot_every=0)
    ingest(engine, read_trace(str(EXAMPLE)), batch_inputs=4)
    ingest(engine, read_trace(str(second_trace(folder))), batch_inputs=1000)
    engine.write_snapshot()
    data = b"".join(data + b"\n" for _, data in store.read_encoded())
    store.close()
    return data


@pytest.fixture
def postgres_url(store_url: str) -> str:
    """A fresh PostgreSQL table (conftest's store_url with store_kind=postgres)."""
    return store_url


both_ways = pytest.mark.parametrize("store_kind", [pytest.param("postgres", marks=pytest.mark.postgres)])


@both_ways
def test_sqlite_to_postgres_and_back_round_trips_byte_for_byte(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = sqlite_url(tmp_path, "source.db")
    stored = filled(source, tmp_path)
    exported = tmp_path / "log.jsonl"
    code, out, err = run_cli(capsys, "export", "--store", source, "--output", str(exported))
    assert code == 0 and out == "" and f"exported {len(stored.splitlines())} event(s)" in err
    assert exported.read_bytes() == stored

    code, _, err = run_cli(capsys, "import", str(exported), "--store", postgres_url, "--batch", "25")
    assert code == 0, err
    code, out, _ = run_cli(capsys, "export", "--store", postgres_url)
    assert code == 0
    assert out.encode() == stored
    code, out, _ = run_cli(capsys, "verify", "--store", postgres_url)
    assert code == 0 and out.startswith("verify: clean: ")
    imported = open_store(postgres_url)
    assert imported.list_snapshots() == []  # snapshots are not exported
    assert Engine(imported).views.document() == Engine(open_store(source)).views.document()  # type: ignore[union-attr]
    imported.close()

    # And back into SQLite.
    again = tmp_path / "again.jsonl"
    assert run_cli(capsys, "export", "--store", postgres_url, "-o", str(again))[0] == 0
    target = sqlite_url(tmp_path, "target.db")
    assert run_cli(capsys, "import", str(again), "--store", target)[0] == 0
    assert run_cli(capsys, "export", "--store", target)[1].encode() == stored
    assert run_cli(capsys, "verify", "--store", target)[0] == 0


@both_ways
def test_postgres_to_sqlite_round_trips_byte_for_byte(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stored = filled(postgres_url, tmp_path)
    exported = tmp_path / "pg.jsonl"
    assert run_cli(capsys, "export", "--store", postgres_url, "--output", str(exported))[0] == 0
    assert exported.read_bytes() == stored
    target = sqlite_url(tmp_path, "from-pg.db")
    code, _, err = run_cli(capsys, "import", str(exported), "--store", target)
    assert code == 0, err
    again = tmp_path / "again.jsonl"
    assert run_cli(capsys, "export", "--store", target, "--output", str(again))[0] == 0
    assert again.read_bytes() == stored
    code, out, _ = run_cli(capsys, "verify", "--store", target, "--json")
    assert code == 0 and json.loads(out)["ok"] is True


def test_a_bad_line_is_named_and_nothing_is_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = filled(sqlite_url(tmp_path, "source.db"), tmp_path).splitlines(keepends=True)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(
        b"".join(good[:3])
        + b'{"event": "NoSuchEvent"}\n'
        + b"\n"
        + b"not json\n"
        + b'{"event":"TaskCompleted","cause":1}\n'  # a known event, its fields missing
        + b" " + good[4]
        + b"".join(good[5:])
    )
    target = tmp_path / "target.db"
    code, out, err = run_cli(capsys, "import", str(bad), "--store", f"sqlite:///{target}")
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert lines[0].startswith("line 4: not an event: ")
    assert lines[1] == "line 5: empty (an event log has one event on every line)"
    assert lines[2].startswith("line 6: not JSON: ")
    assert lines[3].startswith("line 7: not an event: ")
    assert lines[4].startswith("line 8: leading or trailing whitespace")
    assert lines[-1] == f"tandem: {bad} is not an event log; nothing was written"
    assert not target.exists()  # the store is not even opened

    # An existing store is left as it was.
    existing = sqlite_url(tmp_path, "existing.db")
    open_store(existing).close()
    assert run_cli(capsys, "import", str(bad), "--store", existing)[0] == 2
    assert open_store(existing).head() == 0


def test_a_store_holding_other_events_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(filled(sqlite_url(tmp_path, "source.db"), tmp_path))
    other = sqlite_url(tmp_path, "other.db")
    ingest(Engine(open_store(other)), read_trace(str(second_trace(tmp_path))))
    head = open_store(other).head()
    code, _, err = run_cli(capsys, "import", str(log), "--store", other)
    assert code == 1
    assert f"the store is not empty: it holds {head} event(s), and its event at position 1 differs from line 1 of {log};" in err
    assert open_store(other).head() == head


def test_an_interrupted_import_continues_where_the_store_stands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = filled(sqlite_url(tmp_path, "source.db"), tmp_path)
    lines = data.splitlines(keepends=True)
    part = tmp_path / "part.jsonl"
    part.write_bytes(b"".join(lines[:40]))
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(data)
    target = sqlite_url(tmp_path, "target.db")
    assert run_cli(capsys, "import", str(part), "--store", target)[0] == 0
    code, _, err = run_cli(capsys, "import", str(whole), "--store", target)
    assert code == 0 and "already holds the first 40 event(s)" in err
    assert run_cli(capsys, "export", "--store", target)[1].encode() == data
    # Importing the whole file again changes nothing.
    assert run_cli(capsys, "import", str(whole), "--store", target)[0] == 0
    assert open_store(target).head() == len(lines)
    # A longer store than the file is another log.
    code, _, err = run_cli(capsys, "import", str(part), "--store", target)
    assert code == 1 and f"and {part} has only 40;" in err


def test_an_import_into_an_empty_store_removes_leftover_snapshots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(filled(sqlite_url(tmp_path, "source.db"), tmp_path))
    target = open_store(sqlite_url(tmp_path, "target.db"))
    target.append([e for _, e in open_store(sqlite_url(tmp_path, "source.db")).read(until=3)], expected_head=0)
    target.write_snapshot(3, "leftover", b"x")
    target.close()
    with sqlite3.connect(tmp_path / "target.db") as connection:  # emptied behind the store's back
        connection.execute("DELETE FROM tandem_events")
    assert run_cli(capsys, "import", str(log), "--store", sqlite_url(tmp_path, "target.db"))[0] == 0
    assert open_store(sqlite_url(tmp_path, "target.db")).list_snapshots() == []


def test_export_of_an_empty_store_and_to_an_unwritable_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = sqlite_url(tmp_path, "empty.db")
    code, _, err = run_cli(capsys, "export", "--store", empty)
    assert code == 1 and "does not exist" in err  # a reader creates no store (issue 15)
    open_store(empty).close()  # a writer's open creates it, empty
    code, out, err = run_cli(capsys, "export", "--store", empty)
    assert code == 0 and out == "" and "exported 0 event(s)" in err
    code, _, err = run_cli(capsys, "export", "--store", empty, "--output", str(tmp_path / "missing" / "x.jsonl"))
    assert code == 1 and "cannot write" in err
    code, _, err = run_cli(capsys, "export", "--store", empty, "--output", str(tmp_path))
    assert code == 1 and "is a directory" in err
    code, _, err = run_cli(capsys, "import", str(tmp_path / "nope.jsonl"), "--store", empty)
    assert code == 1 and "cannot read" in err


def test_an_event_nested_too_deep_is_a_line_error_not_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An event holds its input one level down: the events of the deepest
    input the edge accepts import; one level more, or so deep that decoding
    would exhaust the stack, is `line N: ...` (exit 2), and nothing is written."""
    from tandem.adapters.commands.import_log import event_nesting_depth_max
    from tandem.domain.inputs import nesting_depth_max
    from tests.unit.test_nesting import LISTS_AT_THE_LIMIT, delegate_line, nested_lists

    source = sqlite_url(tmp_path, "source.db")
    engine = Engine(open_store(source))
    ingest(engine, parse_trace((delegate_line(LISTS_AT_THE_LIMIT) + "\n").encode(), "deep.jsonl"))
    engine.store.close()
    log = tmp_path / "log.jsonl"
    assert run_cli(capsys, "export", "--store", source, "--output", str(log))[0] == 0
    lines = log.read_bytes().splitlines(keepends=True)
    deepest = nested_lists(LISTS_AT_THE_LIMIT).encode()
    (number,) = [n for n, data in enumerate(lines, 1) if data.startswith(b'{"event":"InputRejected"') or data.startswith(b'{"event":"InputAccepted"')]
    assert deepest in lines[number - 1]
    code, _, err = run_cli(capsys, "import", str(log), "--store", sqlite_url(tmp_path, "at-the-limit.db"))
    assert code == 0, err
    assert event_nesting_depth_max == nesting_depth_max + 1

    for lists in (LISTS_AT_THE_LIMIT + 1, 1_000, 100_000):
        bad = tmp_path / f"deeper-{lists}.jsonl"
        bad.write_bytes(b"".join(lines).replace(deepest, nested_lists(lists).encode()))
        target = tmp_path / f"target-{lists}.db"
        code, out, err = run_cli(capsys, "import", str(bad), "--store", f"sqlite:///{target}")
        assert (code, out) == (2, ""), err
        assert "Traceback" not in err and "RecursionError" not in err
        assert err.splitlines()[0] == (
            f"line {number}: not an event: nested deeper than {event_nesting_depth_max} levels - at `$.input.constraints.a[0]…`"
        )
        assert err.splitlines()[-1] == f"tandem: {bad} is not an event log; nothing was written"
        assert not target.exists()


def test_an_event_with_a_repeated_key_is_a_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Imported events are stored byte for byte: one with a key twice in an
    object would read one way here and another way elsewhere (issue 15)."""
    source = sqlite_url(tmp_path, "source.db")
    filled(source, tmp_path)
    log = tmp_path / "log.jsonl"
    assert run_cli(capsys, "export", "--store", source, "--output", str(log))[0] == 0
    lines = log.read_bytes().splitlines(keepends=True)
    assert b'"cause":' in lines[1]
    lines[1] = lines[1].replace(b'"cause":', b'"cause":7,"cause":', 1)  # decodes: the last wins
    bad = tmp_path / "repeated.jsonl"
    bad.write_bytes(b"".join(lines))
    target = tmp_path / "target.db"
    code, out, err = run_cli(capsys, "import", str(bad), "--store", f"sqlite:///{target}")
    assert (code, out) == (2, ""), err
    assert err.splitlines()[0] == "line 2: not an event: duplicate key (JSON readers disagree on which value wins) - at `$.cause`"
    assert not target.exists()
