"""End to end: the real CLI, in a subprocess, against the fixture traces.

Every `fixtures/traces/NAME.jsonl` and `fixtures/gates/NN_NAME.jsonl` (the
RFC's release gates, mapped in docs/release-gates.md) with a `.views.json`
beside it must replay (`tandem replay NAME.jsonl --json`) to exactly those
views. The expected files say what spec/TRACE.md requires, not what the engine
happens to print: a fixture fails until the engine agrees with the contract.
"""

from __future__ import annotations

import difflib
import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TRACES = REPO / "fixtures" / "traces"
GATES = REPO / "fixtures" / "gates"
FIXTURE_DIRS = (TRACES, GATES)
ALL_TRACES = sorted(p for folder in FIXTURE_DIRS for p in folder.glob("*.jsonl"))
FIXTURES = [p for p in ALL_TRACES if p.with_suffix(".views.json").exists()]
FIXTURE_IDS = [f"{p.parent.name}/{p.stem}" for p in FIXTURES]
GATE_DOC = REPO / "docs" / "release-gates.md"

VIEW_KEYS = ("tasks", "actions", "inbox", "questions", "alerts", "conversations", "consumers", "health", "usage", "cards", "rejections")


def tandem(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tandem.adapters.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def replay_json(path: Path | str, *extra: str) -> dict:
    result = tandem("replay", str(path), "--json", *extra)
    assert result.returncode == 0, f"tandem replay {path} exited {result.returncode}\n{result.stderr}"
    return json.loads(result.stdout)


def _pretty(value: object) -> list[str]:
    return json.dumps(value, indent=2, sort_keys=False, ensure_ascii=False).splitlines()


def views_diff(expected: dict, actual: dict) -> str:
    """A readable diff, one section per view that differs."""
    parts: list[str] = []
    for key in sorted(set(expected) | set(actual), key=lambda k: (k not in VIEW_KEYS, VIEW_KEYS.index(k) if k in VIEW_KEYS else 0, k)):
        if expected.get(key) == actual.get(key):
            continue
        diff = difflib.unified_diff(
            _pretty(expected.get(key)),
            _pretty(actual.get(key)),
            fromfile=f"expected {key}",
            tofile=f"actual {key}",
            lineterm="",
            n=4,
        )
        parts.append("\n".join(diff))
    return "\n\n".join(parts)


def test_fixtures_exist() -> None:
    assert len(FIXTURES) >= 12, [p.name for p in FIXTURES]
    assert len([p for p in FIXTURES if p.parent == GATES]) >= 21, [p.name for p in FIXTURES]


def test_every_trace_has_its_expected_views() -> None:
    missing = [f"{p.parent.name}/{p.name}" for p in ALL_TRACES if not p.with_suffix(".views.json").exists()]
    assert not missing, f"traces without a .views.json: {missing}"
    orphans = [
        f"{folder.name}/{p.name}"
        for folder in FIXTURE_DIRS
        for p in folder.glob("*.views.json")
        if not p.with_name(p.name.removesuffix(".views.json") + ".jsonl").exists()
    ]
    assert not orphans, f".views.json without a trace: {orphans}"


def test_gate_fixtures_are_named_nn_short_name() -> None:
    for path in GATES.iterdir():
        stem = path.name.removesuffix(".views.json").removesuffix(".jsonl")
        assert path.name.endswith((".jsonl", ".views.json")), path.name
        assert len(stem) > 3 and stem[:2].isdigit() and stem[2] == "_", path.name


def _gate_doc_rows(section: str) -> list[list[str]]:
    """The table rows (cells) of one `## ` section of docs/release-gates.md."""
    text = GATE_DOC.read_text(encoding="utf-8")
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in body.splitlines() if line.startswith("|")]
    cells = [[cell.strip() for cell in row.strip().strip("|").split("|")] for row in rows]
    return [row for row in cells[2:]]  # past the header and its --- line


def test_release_gates_doc_maps_every_gate_and_every_gate_fixture() -> None:
    """docs/release-gates.md: one row per RFC release gate (21), each naming its fixture; every
    fixture in fixtures/gates is named there, and every fixture it names exists."""
    text = GATE_DOC.read_text(encoding="utf-8")
    gate_rows = _gate_doc_rows("Release gates")
    assert len(gate_rows) >= 21, len(gate_rows)
    for row in gate_rows:
        assert "fixtures/gates/" in " ".join(row), row
    named = set(re.findall(r"fixtures/gates/([0-9A-Za-z_.-]+\.jsonl)", text))
    on_disk = {p.name for p in GATES.glob("*.jsonl")}
    assert on_disk - named == set(), f"gate fixtures not in docs/release-gates.md: {sorted(on_disk - named)}"
    assert named - on_disk == set(), f"docs/release-gates.md names missing fixtures: {sorted(named - on_disk)}"
    for path in GATES.glob("*.views.json"):
        assert path.with_name(path.name.removesuffix(".views.json") + ".jsonl").name in named, path.name


def test_release_gates_doc_says_gate_by_gate_what_v1_2_proves() -> None:
    """docs/release-gates.md's v1.2 table: the 21 gates in order, each with its v1 fixture, what
    v1.2 adds (fixture numbers that exist) and what a trace still cannot express; every v1.2
    fixture (37 and up) strengthens at least one gate there."""
    rows = _gate_doc_rows("Contract v1.2 (issue 14): gate by gate")
    assert [row[0] for row in rows] == [str(n) for n in range(1, 22)], [row[0] for row in rows]
    numbers = {p.name[:2] for p in GATES.glob("*.jsonl")}
    for row in rows:
        assert len(row) == 5 and row[2] == f"{int(row[0]):02d}" and row[4], row
        named = set(re.findall(r"\b([3-9][0-9])\b", row[3]))
        assert named <= numbers, (row[0], named - numbers)
    v12 = {n for n in numbers if n >= "37"}
    in_table = {n for row in rows for n in re.findall(r"\b([3-9][0-9])\b", row[3])}
    assert v12 <= in_table, sorted(v12 - in_table)


@pytest.mark.parametrize("trace", FIXTURES, ids=FIXTURE_IDS)
def test_fixture_views(trace: Path) -> None:
    expected = json.loads(trace.with_suffix(".views.json").read_text(encoding="utf-8"))
    result = tandem("replay", str(trace.relative_to(REPO)), "--json")
    assert result.returncode == 0, f"tandem replay {trace.name} exited {result.returncode}\n{result.stderr[-4000:]}"
    actual = json.loads(result.stdout)
    if actual != expected:
        pytest.fail(f"{trace.name}: views differ from {trace.with_suffix('.views.json').name}\n{views_diff(expected, actual)}", pytrace=False)


@pytest.mark.parametrize("trace", FIXTURES, ids=FIXTURE_IDS)
def test_fixture_is_documented(trace: Path) -> None:
    """Each fixture opens with `//` lines saying what it proves, and uses full RFC 3339 times."""
    lines = trace.read_text(encoding="utf-8").splitlines()
    assert lines and lines[0].startswith("//"), f"{trace.name} must start with // comment lines"
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("//"):
            continue
        at = json.loads(line)["at"]
        assert len(at) == 20 and at[10] == "T" and at.endswith("Z"), f"{trace.name} line {number}: `at` {at!r}"


RESTART_MARK = b"// restart"
RESTART_FIXTURES = [p for p in FIXTURES if RESTART_MARK in (line.strip() for line in p.read_bytes().splitlines())]


def _inputs(data: bytes) -> int:
    """How many inputs some trace bytes hold (not blank, not a `//` line)."""
    return sum(1 for line in data.splitlines() if line.strip() and not line.strip().startswith(b"//"))


def test_restart_fixtures_exist() -> None:
    names = {p.stem for p in RESTART_FIXTURES}
    assert {"22_comment_regression_restart", "06_restart_empty_pruned_log"} <= names, names


@pytest.mark.parametrize("trace", RESTART_FIXTURES, ids=[f"{p.parent.name}/{p.stem}" for p in RESTART_FIXTURES])
def test_fixture_views_across_a_restart(trace: Path, tmp_path: Path) -> None:
    """A fixture with a `// restart` line: the part before it is ingested into an SQLite store by
    one process, then the whole trace (same name, so ingest resumes after that part) by another;
    `show` must then print exactly the expected views."""
    expected = json.loads(trace.with_suffix(".views.json").read_text(encoding="utf-8"))
    data = trace.read_bytes()
    lines = data.splitlines(keepends=True)
    cut = next(n for n, line in enumerate(lines) if line.strip() == RESTART_MARK)
    prefix = b"".join(lines[:cut])
    first, whole = tmp_path / "tmp_dir_a" / trace.name, tmp_path / "tmp_dir_b" / trace.name
    for path, body in ((first, prefix), (whole, data)):
        path.parent.mkdir()
        path.write_bytes(body)
    url = f"sqlite:///{tmp_path / 'store.db'}"
    before, total = _inputs(prefix), _inputs(data)
    assert 0 < before < total

    result = tandem("ingest", str(first), "--store", url)
    assert result.returncode == 0, result.stderr[-4000:]
    assert f"{trace.name}: {before} input(s) applied" in result.stderr, result.stderr
    result = tandem("ingest", str(whole), "--store", url)
    assert result.returncode == 0, result.stderr[-4000:]
    assert f"{trace.name}: {total - before} input(s) applied" in result.stderr, result.stderr
    assert f"), {before} already in the store" in result.stderr, result.stderr

    shown = tandem("show", "--store", url, "--json")
    assert shown.returncode == 0, shown.stderr[-4000:]
    actual = json.loads(shown.stdout)
    if actual != expected:
        pytest.fail(f"{trace.name} across a restart: views differ\n{views_diff(expected, actual)}", pytrace=False)


def test_email_signup_completes() -> None:
    views = replay_json("fixtures/gates/02_prerequisite_user_away.jsonl")
    tasks = {task["task_id"]: task for task in views["tasks"]}
    assert tasks["signup"]["state"] == "completed"
    assert tasks["signup"]["actions"] == ["op-api", "op-form", "op-it"]
    actions = {action["operation_id"]: action for action in views["actions"]}
    assert {op: actions[op]["state"] for op in ("op-api", "op-form", "op-it")} == {
        "op-api": "succeeded",
        "op-form": "succeeded",
        "op-it": "succeeded",
    }
    assert actions["op-form"]["prerequisites"] == ["op-api"]
    assert actions["op-it"]["prerequisites"] == ["op-api", "op-form"]


# ------------------------------------------------------------ schema errors

GOOD_FIRST = b'{"type":"policy.set","at":"2026-03-01T09:00:00Z","actor":"daemon","allowed_operations":["worker.start"],"write_roots":["/repo"]}'


def _tick(second: int, extra: bytes = b"") -> bytes:
    return b'{"type":"tick","at":"2026-03-01T09:00:%02dZ","actor":"daemon"%s}' % (second, extra)


def bad_trace(tmp_path: Path) -> Path:
    lines = [
        GOOD_FIRST,  # 1 fine
        b'{"type":"tick","at":"2026-03-01T09:00:01Z",',  # 2 bad JSON
        b'{"type":"no.such.kind","at":"2026-03-01T09:00:02Z"}',  # 3 unknown type
        _tick(3, b',"bogus":1'),  # 4 unknown field
        _tick(10),  # 5 fine
        _tick(5),  # 6 `at` goes backwards
        _tick(11, b',"x":"\xff\xfe"'),  # 7 invalid UTF-8
        b"// a comment still counts as a line",  # 8
        _tick(12),  # 9 fine
    ]
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _reported_lines(stderr: str) -> list[int]:
    return [int(line.split(":", 1)[0].removeprefix("line ")) for line in stderr.splitlines() if line.startswith("line ")]


def test_bad_trace_exits_2_and_names_each_bad_line(tmp_path: Path) -> None:
    result = tandem("replay", str(bad_trace(tmp_path)), "--json")
    assert result.returncode == 2, result.stderr
    assert _reported_lines(result.stderr) == [2, 3, 4, 6, 7], result.stderr
    assert result.stdout == ""


def test_bad_trace_writes_nothing_to_the_store(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    url = f"sqlite:///{db}"  # sqlite:////abs/path.db
    result = tandem("replay", str(bad_trace(tmp_path)), "--json", "--store", url)
    assert result.returncode == 2, result.stderr
    assert not db.exists()  # checked before the store is opened: none is made (issue 26)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("// nothing\n")
    assert tandem("ingest", str(empty), "--store", url).returncode == 0  # an existing store, no event in it
    result = tandem("replay", str(bad_trace(tmp_path)), "--json", "--store", url)
    assert result.returncode == 2, result.stderr
    if db.exists():
        with sqlite3.connect(db) as connection:
            tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for table in tables:
                assert connection.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0] == 0, table
    shown = tandem("show", "--store", url, "--json")
    assert shown.returncode == 0, shown.stderr
    views = json.loads(shown.stdout)
    for key, value in views.items():
        if isinstance(value, list):
            assert value == [], (key, value)
    assert views["health"]["last_heartbeat_at"] is None
    assert all(role["reports"] == 0 for role in views["usage"].values())


def test_ingest_of_a_bad_trace_exits_2(tmp_path: Path) -> None:
    result = tandem("ingest", str(bad_trace(tmp_path)), "--store", f"sqlite:///{tmp_path / 'y.db'}")
    assert result.returncode == 2, result.stderr
    assert _reported_lines(result.stderr) == [2, 3, 4, 6, 7], result.stderr


def test_at_most_20_bad_lines_are_printed(tmp_path: Path) -> None:
    lines = [GOOD_FIRST] + [b'{"type":"no.such.kind","at":"2026-03-01T09:00:01Z"}'] * 25
    path = tmp_path / "many.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    result = tandem("replay", str(path), "--json")
    assert result.returncode == 2
    reported = _reported_lines(result.stderr)
    assert reported == list(range(2, 22)), result.stderr


@pytest.mark.parametrize("command", ["replay", "ingest", "show", "demo"])
def test_help(command: str) -> None:
    result = tandem(command, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage:"), result.stdout
    assert command in result.stdout.splitlines()[0]


def test_top_level_help() -> None:
    result = tandem("--help")
    assert result.returncode == 0
    for command in ("replay", "ingest", "show", "demo"):
        assert command in result.stdout
