"""Text on a terminal (contract section 10): what `tandem replay`, `tandem
show` and `tandem explain` print without --json holds no raw control
character, escape sequence or bidi override, its tables' columns line up in
display cells (East Asian wide characters and emoji count 2), identifiers are
never cut and free text is cut with `…`.

Checked on every fixture (its views as tables, and `explain` of every id
tests/integration/test_explain_digests.py collects) and on a hostile trace of
our own: ESC sequences (`\\x1b[2J`, an OSC title `\\x1b]0;title\\x07`), a C1
CSI (`\\x9b`), bidi overrides and isolates, CJK, emoji (a ZWJ family) and a
combining mark, in a task's goal, a comment's text, a card's summary, a
question's blocking reason, an incident's and an approval's detail, in the
ids (a task, an operation, a question key; another key starts with a spacing
mark) and in the trace file's name; its cause key is 100 characters long. Most of it runs in process (what the
commands call); the CLI runs as a subprocess for a few cases.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
import wcwidth

from tandem.adapters.render import FREE_TEXT, free_text_cells_max, render_document
from tandem.adapters.terminal import printable
from tandem.replay.engine import project
from tandem.replay.explain import ExplainError, document, render_text
from tests.integration.test_event_digests import name, traces
from tests.integration.test_explain_digests import identifiers, stored

ROOT = Path(__file__).resolve().parents[2]
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # never printed as is

FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
WIDE = f"漢字 🙂 {FAMILY} e\u0301"  # CJK, an emoji, a ZWJ family, é as e + a combining accent
HOSTILE = f"{WIDE} \x1b[2J\x1b]0;title\x07 \x9b31m \u202eevil\u202c \u2066iso\u2069 \x00\x08\x7f"
LONG_CAUSE = "ci:https://scm.example/org/repo/pull/1234/checks/" + "k" * 51  # an identifier: never cut
TASK, OPERATION, QUESTION = "任务-🙂", "op-🙂\u202e", "q-漢\x1b[1m"
MARKED = "\u093eq"  # a spacing mark first: it would join the column gap before it
COMMENT_CAUSE = "comment:https://scm.example/pr/1:src-1"
FILE = "hostile \x1b[31m\u202e trace.jsonl"


def at(second: int) -> str:
    return f"2026-03-01T09:00:{second:02d}Z"


def hostile_trace() -> list[dict[str, Any]]:
    grant = {"grant_id": "g1", "allowed_operations": ["worker.start"], "write_roots": ["/repo"]}
    return [
        {"type": "policy.set", "at": at(0), "actor": "daemon", "allowed_operations": ["worker.start"], "write_roots": ["/repo"]},
        {"type": "conversation.open", "at": at(0), "actor": "daemon", "conversation_id": "fg", "role": "foreground", "context_limit": 200000, "reserve": 20000},
        {"type": "conversation.open", "at": at(0), "actor": "daemon", "conversation_id": "bg", "role": "background", "foreground_id": "fg", "context_limit": 100000, "reserve": 10000},
        {"type": "background.bind", "at": at(0), "actor": "daemon", "conversation_id": "bg", "foreground_id": "fg", "generation": 1},
        {"type": "watchdog.heartbeat", "at": at(0), "actor": "watchdog", "generation": 1},
        {"type": "task.delegate", "at": at(1), "actor": "human", "task_id": TASK, "conversation_id": "fg", "message_refs": [],
         "goal": f"goal {HOSTILE} and a long tail {'長' * 40}", "done_when": [f"done {HOSTILE}"], "grant": grant},
        {"type": "observe", "at": at(2), "actor": "source", "source_id": "src-1", "kind": "comment", "scope": "https://scm.example/pr/1",
         "fingerprint": "F1", "complete": True, "text": f"comment {HOSTILE}"},
        {"type": "observe", "at": at(3), "actor": "source", "source_id": "src-2", "kind": "ci", "scope": "https://scm.example/pr/1",
         "fingerprint": "F2", "complete": True, "cause_key": LONG_CAUSE, "status": "failure", "text": f"ci {WIDE}",
         "evidence_ref": "https://scm.example/org/repo/pull/1234/checks/" + "e" * 80},
        {"type": "action.propose", "at": at(4), "actor": "background", "generation": 1, "operation_id": OPERATION, "cause_key": LONG_CAUSE,
         "operation": "worker.start", "target": f"target {HOSTILE}", "resource": "res", "task_id": TASK, "grant_id": "g1",
         "input_revisions": {"task": 1, "grant": 1}},
        {"type": "question.raise", "at": at(5), "actor": "background", "task_id": TASK, "question_key": QUESTION, "recipient": "human",
         "blocking_reason": f"reason {HOSTILE}", "affected": [OPERATION], "evidence_revision": 1},
        {"type": "question.raise", "at": at(5), "actor": "background", "task_id": TASK, "question_key": MARKED, "recipient": "human",
         "blocking_reason": "why?", "affected": "task", "evidence_revision": 1},
        {"type": "card.propose", "at": at(6), "actor": "background", "card_id": "card-1", "cause_key": LONG_CAUSE, "summary": f"summary {HOSTILE}", "generation": 1},
        {"type": "card.propose", "at": at(6), "actor": "background", "card_id": "card-2", "cause_key": COMMENT_CAUSE, "summary": WIDE, "generation": 1},
        {"type": "health.incident", "at": at(7), "actor": "watchdog", "incident_id": "inc-1", "kind": "stalled", "detail": f"detail {HOSTILE}"},
        {"type": "approval.required", "at": at(8), "actor": "daemon", "conversation_id": "fg", "request_id": "req-1", "detail": f"approval {HOSTILE}"},
    ]  # fmt: skip


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hostile") / FILE
    path.write_text("".join(json.dumps(line) + "\n" for line in hostile_trace()))
    return path


def tandem(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tandem.adapters.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


# ------------------------------------------------------------------ checks


def assert_no_raw(text: str, where: str) -> None:
    found = sorted(set(RAW.findall(text)))
    assert not found, f"{where}: raw {found!r}"


def clusters(line: str) -> list[tuple[int, str]]:
    """(the cell it starts at, the grapheme cluster) for each cluster of `line`, by wcwidth."""
    out, cell = [], 0
    for cluster in wcwidth.iter_graphemes(line):
        out.append((cell, cluster))
        cell += wcwidth.wcswidth(cluster)
    return out


def line_cells(line: str) -> int:
    return sum(wcwidth.wcswidth(cluster) for _, cluster in clusters(line))


def assert_aligned(lines: list[str], starts: list[int], width: int, where: str) -> None:
    """Each line's columns start at `starts` (display cells), right after
    the two-space gap, and no line is wider than the table. (No cell of
    these traces starts with a space: a space there is an empty cell.)"""
    for line in lines:
        at, end = dict(clusters(line)), line_cells(line)
        for start, following in zip(starts[1:], [*starts[2:], width + 2]):
            if start >= end:
                break  # the trailing empty columns were stripped
            assert start in at, f"{where}: no column starts at cell {start} in {line!r}"
            assert at.get(start - 1) == at.get(start - 2) == " ", f"{where}: no gap before cell {start} in {line!r}"
            empty = all(at.get(cell, " ") == " " for cell in range(start, following - 2))
            assert at[start] != " " or empty, f"{where}: the column at cell {start} starts later in {line!r}"
        assert end <= width, f"{where}: wider than its table: {line!r}"


def tables(text: str) -> list[list[str]]:
    """Each table of a rendering: its header, its rule of dashes and its rows."""
    lines = text.split("\n")
    found = []
    for number, rule in enumerate(lines):
        if number and rule and set(rule) <= {"-", " "}:
            end = next((i for i in range(number + 1, len(lines)) if not lines[i]), len(lines))
            found.append(lines[number - 1 : end])
    return found


def assert_tables_aligned(text: str, where: str) -> None:
    for header, rule, *rows in tables(text):
        starts = [match.start() for match in re.finditer(r"-+", rule)]
        assert_aligned([header, *rows], starts, len(rule), where)


def assert_views_shown_safely(views: dict[str, Any], text: str, where: str) -> None:
    assert_no_raw(text, where)
    assert_tables_aligned(text, where)
    for row in views["inbox"]:
        assert printable(row["cause_key"]) in text, (where, row["cause_key"])  # identifiers whole
    for row in views["actions"]:
        assert printable(row["operation_id"]) in text and printable(row["cause_key"]) in text, where
    for row in views["tasks"]:
        assert printable(row["task_id"]) in text and printable(row["goal"].replace("\n", " "))[:20] in text, where


# ---------------------------------------------------------------- fixtures


@pytest.mark.parametrize("path", traces(), ids=name)
def test_every_fixture_renders_safely_and_in_line(path: Path) -> None:
    store = stored(path)
    views = project(store, use_snapshots=False).document()
    assert_views_shown_safely(views, render_document(views), name(path))
    for identifier in identifiers(store):
        try:
            text = render_text(document(store, identifier), printable)
        except ExplainError:
            continue
        assert_no_raw(text, f"{name(path)} explain {identifier}")
        assert text == render_text(document(store, identifier)), "fixtures hold nothing to escape: the text is as before"


# ------------------------------------------------------------ hostile text


def test_the_hostile_views_render_safely_and_in_line(hostile: Path) -> None:
    store = stored(hostile)
    views = project(store, use_snapshots=False).document()
    assert views["tasks"][0]["goal"].startswith(f"goal {HOSTILE}"), "the trace was taken as written"
    text = render_document(views)
    assert_views_shown_safely(views, text, "hostile")
    assert len(tables(text)) >= 7
    for escaped in ("\\x1b[2J", "\\x1b]0;title\\x07", "\\x9b31m", "\\u202e"):
        assert escaped in text, escaped
    assert f"\n{TASK}  1  " in text and printable(OPERATION) in text and printable(QUESTION) in text
    assert text.count(LONG_CAUSE) == 3  # inbox, actions, cards: never cut
    assert "https://scm.example/org/repo/pull/1234/checks/" + "e" * 80 in text  # a URL is an identifier too
    assert f"  {WIDE}\n" in text  # card-2's summary fits: whole
    assert "  \\u093eq  " in text  # escaped where it would have joined the gap


def test_free_text_is_cut_to_its_width_in_cells(hostile: Path) -> None:
    views = project(stored(hostile), use_snapshots=False).document()
    text = render_document(views)
    goal = printable(views["tasks"][0]["goal"])
    shown = next(cell for cell in re.split(r"  +", text) if cell.startswith("goal \\x1b") or cell.startswith(f"goal {WIDE[:2]}"))
    assert shown.endswith("…") and goal.startswith(shown[:-1])
    assert line_cells(shown) <= free_text_cells_max < line_cells(goal)
    excerpt = re.search(r'excerpt="([^"]*)"', text)
    assert excerpt is not None and line_cells(excerpt.group(1)) <= free_text_cells_max


def test_free_text_keys_are_view_keys() -> None:
    """Each key FREE_TEXT names is one the views have (a stale entry would
    hide that a renamed key is no longer cut)."""
    views = project(stored(ROOT / "fixtures" / "traces" / "cards.jsonl"), use_snapshots=False).document()
    keys: set[str] = set()

    def collect(value: Any) -> None:
        if isinstance(value, dict):
            keys.update(value)
            for item in value.values():
                collect(item)
        elif isinstance(value, list):
            for item in value:
                collect(item)

    collect(views)
    questions = project(stored(ROOT / "fixtures" / "traces" / "question_holds.jsonl"), use_snapshots=False).document()
    collect(questions)
    assert FREE_TEXT <= keys, FREE_TEXT - keys


def test_the_hostile_explanations_are_escaped_and_whole(hostile: Path) -> None:
    store = stored(hostile)
    named = identifiers(store)
    assert {TASK, OPERATION, f"{TASK}/{QUESTION}", LONG_CAUSE, COMMENT_CAUSE} <= set(named)
    for identifier in named:
        try:
            explained = document(store, identifier)
        except ExplainError:
            continue
        text = render_text(explained, printable)
        assert_no_raw(text, f"explain {identifier!r}")
        assert text.count("\n") == render_text(explained).count("\n"), "one line per item, as before"
    text = render_text(document(store, OPERATION), printable)
    assert f"operation {printable(OPERATION)}: submitting" in text
    assert LONG_CAUSE in text and f"target {printable(HOSTILE)}" in text  # nothing cut


# -------------------------------------------------------------- the commands


def test_replay_prints_tables_safely_and_json_as_before(hostile: Path) -> None:
    shown = tandem("replay", str(hostile))
    assert shown.returncode == 0, shown.stderr
    assert_no_raw(shown.stdout + shown.stderr, "tandem replay")
    assert_tables_aligned(shown.stdout, "tandem replay")
    wide = tandem("replay", str(hostile), "--wide")  # without it, the tables fit the terminal (test_tables_fit.py)
    assert wide.returncode == 0, wide.stderr
    assert wide.stdout == render_document(project(stored(hostile), use_snapshots=False).document())
    as_json = tandem("replay", str(hostile), "--json")
    assert as_json.returncode == 0, as_json.stderr
    views = project(stored(hostile), use_snapshots=False).document()
    assert as_json.stdout == msgspec.json.format(msgspec.json.encode(views), indent=2).decode() + "\n"
    assert json.loads(as_json.stdout)["tasks"][0]["goal"].startswith(f"goal {HOSTILE}")  # --json keeps the text as it is


def test_show_and_explain_print_safely(hostile: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'hostile.db'}"
    ingested = tandem("ingest", str(hostile), "--store", url)
    assert ingested.returncode == 0, ingested.stderr
    assert ingested.stderr.startswith(printable(FILE) + ": 15 input(s) applied")  # the file's name escaped
    shown = tandem("show", "cards", "--store", url)
    assert shown.returncode == 0 and shown.stdout.startswith("cards\n"), shown.stderr
    assert_no_raw(shown.stdout, "tandem show cards")
    assert_tables_aligned(shown.stdout, "tandem show cards")
    for identifier in (TASK, OPERATION, f"{TASK}/{QUESTION}", "card:card-1", "incident:inc-1"):
        explained = tandem("explain", identifier, "--store", url)
        assert explained.returncode == 0, explained.stderr
        assert_no_raw(explained.stdout + explained.stderr, f"tandem explain {identifier!r}")
        assert printable(identifier) in explained.stdout
    as_json = tandem("explain", OPERATION, "--store", url, "--json")
    assert json.loads(as_json.stdout)["id"] == OPERATION
    missing = tandem("explain", "nothing \x1b[2J\u202e", "--store", url)
    assert missing.returncode == 1 and "nothing in the store is named" in missing.stderr
    assert_no_raw(missing.stderr, "tandem explain: the error")
