"""What-if edits (replay/whatif/edits.py, docs/whatif.md): each edit on a
trace's lines, by the original numbering, composed in order; and every bad
edit named, exit 2, nothing written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tandem.replay.whatif import edits as made
from tandem.replay.whatif.edits import PARSERS, Edit, EditInvalid, apply

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


BEAT = {"type": "watchdog.heartbeat", "at": "2026-03-01T09:01:30Z", "actor": "watchdog", "generation": 1}
FROM_VALUES = [
    (made.drop(12), "--drop 12"),
    (made.replace(12, BEAT), '--replace 12={"type":"watchdog.heartbeat","at":"2026-03-01T09:01:30Z","actor":"watchdog","generation":1}'),
    (made.insert_after(0, {"type": "x", "text": "é <b>"}), '--insert-after 0={"type":"x","text":"é <b>"}'),
    (made.shift(12, 30), "--shift 12=30"),
    (made.shift(12, -1.5), "--shift 12=-1.5"),
    (made.set_field(12, "grant.allowed_operations", ["worker.start"]), '--set 12.grant.allowed_operations=["worker.start"]'),
    (made.set_field(12, "goal", "true"), '--set 12.goal="true"'),  # the text "true", not the boolean
    (made.set_field(12, "push", made.text_value("true")), "--set 12.push=true"),
    (made.set_field(12, "goal", made.text_value("<script>x</script>")), '--set 12.goal="<script>x</script>"'),
]


@pytest.mark.parametrize(("edit_made", "text"), FROM_VALUES, ids=[text.split("=")[0] for _, text in FROM_VALUES])
def test_an_edit_made_from_values_is_the_edit_its_command_line_words_parse_to(edit_made: Edit, text: str) -> None:
    assert edit_made.text == text
    option, _, argument = text.partition(" ")
    assert PARSERS[option.removeprefix("--").replace("-", "_")](argument) == edit_made


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: made.drop(0), "--drop 0: 0 is not an input's number (they count from 1)"),
        (lambda: made.insert_after(-1, BEAT), "--insert-after -1: -1 is not an input's number (they count from 1, 0: before the first)"),
        (lambda: made.replace(3, [1]), "--replace 3: an input is a JSON object, not list"),  # type: ignore[arg-type]
        (lambda: made.shift(3, 10**10), "--shift 3=10000000000: a number of seconds, at most 315360000 either way"),
        (lambda: made.set_field(3, "a..b", 1), "--set 3.a..b: 'a..b' is not a field path (names joined by '.', no '=')"),
        (lambda: made.set_field(3, "a=b", 1), "--set 3.a=b: 'a=b' is not a field path (names joined by '.', no '=')"),
        (lambda: made.replace(3, {"t": "x" * made.edit_value_bytes_max}), "--replace 3: 1048584 bytes, over the 1048576-byte limit of a trace line"),
    ],
)
def test_an_edit_from_bad_values_says_which_and_why(make, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(EditInvalid) as raised:
        make()
    assert str(raised.value) == message


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
