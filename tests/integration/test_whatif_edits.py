"""What-if edits (replay/whatif/edits.py, docs/whatif.md): each edit on a
trace's lines, by the original numbering, composed in order; and every bad
edit named, exit 2, nothing written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tandem.replay.whatif.edits import PARSERS, EditInvalid, apply

ROOT = Path(__file__).resolve().parents[2]
TRACE = b"\n".join(
    [
        b"// a comment",
        b'{"type":"watchdog.heartbeat","at":"2026-03-01T09:00:00Z","actor":"watchdog","generation":1}',
        b'{"type":"watchdog.heartbeat","at":"2026-03-01T09:01:00Z","actor":"watchdog","generation":1}',
        b"",
        b'{"type":"watchdog.heartbeat","at":"2026-03-01T09:02:00Z","actor":"watchdog","generation":1}',
    ]
) + b"\n"


def edit(op: str, text: str):  # type: ignore[no-untyped-def]
    return PARSERS[op](text)


def lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")[:-1]


def test_drop_and_insert_name_lines_by_the_original_numbering() -> None:
    beat = '{"type":"watchdog.heartbeat","at":"2026-03-01T09:01:30Z","actor":"watchdog","generation":1}'
    data, entries = apply(TRACE, [edit("drop", "2"), edit("insert_after", f"3={beat}"), edit("insert_after", f"3={beat}")])
    assert [(e.origin, e.after) for e in entries] == [(1, 0), (3, 0), (None, 3), (None, 3), (4, 0), (5, 0)]
    assert lines(data)[2] == beat.encode()


def test_shift_moves_the_at_and_the_line_after_the_last_input_not_later() -> None:
    data, entries = apply(TRACE, [edit("shift", "2=90")])
    assert [e.origin for e in entries] == [1, 3, 2, 4, 5]
    assert json.loads(lines(data)[2])["at"] == "2026-03-01T09:01:30Z"
    data, entries = apply(TRACE, [edit("shift", "5=-3600")])  # earlier than every input: before the first
    assert [e.origin for e in entries] == [1, 5, 2, 3, 4]


def test_set_changes_one_field_into_objects_and_reads_json_or_text() -> None:
    data, _ = apply(TRACE, [edit("set", "3.generation=2"), edit("set", "3.extra.note=hello there")])
    value = json.loads(lines(data)[2])
    assert value["generation"] == 2 and value["extra"] == {"note": "hello there"}


def test_replace_takes_json_or_a_file(tmp_path: Path) -> None:
    replacement = tmp_path / "input.json"
    replacement.write_text('{\n "type": "watchdog.heartbeat", "at": "2026-03-01T09:01:00Z", "actor": "watchdog", "generation": 3\n}\n')
    data, entries = apply(TRACE, [edit("replace", f"3=@{replacement}")])
    assert json.loads(lines(data)[2])["generation"] == 3 and entries[2].edited == [f"--replace 3=@{replacement}"]


@pytest.mark.parametrize(
    ("op", "text", "message"),
    [
        ("drop", "9", "--drop 9: no line 9 (the trace has 5 line(s))"),
        ("drop", "1", "--drop 1: line 1 is a comment, not an input"),
        ("drop", "4", "--drop 4: line 4 is blank, not an input"),
        ("drop", "x", "--drop 'x': not a line number (lines count from 1)"),
        ("replace", "2={not json", "--replace 2: not JSON (Expecting property name enclosed in double quotes at byte 1)"),
        ("replace", "2=[1]", "--replace 2: an input is a JSON object, not list"),
        ("replace", "2=@/nonexistent/file.json", "--replace 2: cannot read '/nonexistent/file.json': No such file or directory"),
        ("shift", "2=soon", "--shift '2=soon': 'soon' is not a number of seconds (say 3600 or -90)"),
        ("shift", "2=nan", "--shift '2=nan': at most 315360000 seconds either way"),
        ("set", "2=true", "--set '2=true': expected LINE.FIELD=VALUE (say 12.push=true)"),
        ("set", "2..x=1", "--set '2..x=1': '.x' is not a field path (names joined by '.')"),
    ],
)
def test_a_bad_edit_says_which_and_why(op: str, text: str, message: str) -> None:
    with pytest.raises(EditInvalid) as raised:
        apply(TRACE, [edit(op, text)])
    assert str(raised.value) == message


def test_an_edit_on_a_dropped_line_names_the_drop() -> None:
    with pytest.raises(EditInvalid, match=r"^--set 2.generation=2: line 2 was dropped by an earlier edit \(--drop 2\)$"):
        apply(TRACE, [edit("drop", "2"), edit("set", "2.generation=2")])


def tandem(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tandem.adapters.cli", *arguments], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--drop", "1"], "tandem: --drop 1: line 1 is a comment, not an input; nothing was written"),
        (
            ["--set", "3.at=2020-01-01T00:00:00Z"],
            "tandem: the edited trace is not valid: line 3 (after --set 3.at=2020-01-01T00:00:00Z): `at` 2020-01-01T00:00:00Z "
            "is earlier than the previous input's (2026-03-01T09:00:00Z); nothing was written",
        ),
        (
            ["--set", "2.type=watchdog.hartbeat"],
            "tandem: the edited trace is not valid: line 2 (after --set 2.type=watchdog.hartbeat): unknown type "
            "'watchdog.hartbeat' (did you mean `watchdog.heartbeat`?); nothing was written",
        ),
    ],
)
def test_a_bad_edit_on_the_command_line_exits_2_and_writes_nothing(tmp_path: Path, arguments: list[str], message: str) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_bytes(TRACE)
    before = sorted(p.name for p in tmp_path.iterdir())
    done = tandem("whatif", "trace.jsonl", *arguments, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == message
    assert done.stdout == "" and sorted(p.name for p in tmp_path.iterdir()) == before
    assert trace.read_bytes() == TRACE


def test_hostile_text_in_an_edit_is_escaped_on_the_terminal(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_bytes(TRACE)
    done = tandem("whatif", "trace.jsonl", "--set", "3.generation=\x1b[2J\u202e", cwd=tmp_path)
    assert done.returncode in (1, 2) and "\x1b" not in done.stdout + done.stderr and "\u202e" not in done.stdout + done.stderr
