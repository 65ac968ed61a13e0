"""CLI tables that fit (issue 26, point 6): without --wide, every table
`tandem show`, `replay` and `demo` print fits the terminal's width (COLUMNS
here) in display cells, showing each view's default columns
(adapters/render.py `DEFAULT_COLUMNS`) that fit; an identifier is never cut
(wider than its column, it folds over the next lines of its column); `--wide`
prints every column as before; `--columns a,b` those, in that order; an
unknown column is refused (exit 2, nothing written), naming the known ones.

Every fixture runs through the CLI in process (`tandem.adapters.cli.main`:
ingest into an SQLite store, then `show`), at 100 and at 60 cells."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import wcwidth

from tandem.adapters.cli import main
from tandem.adapters.render import DEFAULT_COLUMNS, FREE_TEXT, known_columns, render_document
from tandem.adapters.terminal import fold, printable
from tandem.projections import VIEW_NAMES
from tandem.replay.engine import project
from tests.integration.test_event_digests import name, traces
from tests.integration.test_explain_digests import stored
from tests.integration.test_rendering_safe import LONG_CAUSE, OPERATION, assert_no_raw, assert_tables_aligned, hostile  # noqa: F401 (a fixture)

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "fixtures" / "gates" / "02_prerequisite_user_away.jsonl"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def cells_of(line: str) -> int:
    return sum(wcwidth.wcswidth(cluster) for cluster in wcwidth.iter_graphemes(line))


def assert_fits(text: str, width: int, where: str) -> None:
    for line in text.split("\n"):
        assert cells_of(line) <= width, f"{where}: a line of {cells_of(line)} cells, over {width}: {line!r}"


def column_texts(text: str) -> dict[str, dict[str, str]]:
    """Each table's columns (by view, then head), each the text of its
    column on every line of the table joined: a folded value reads whole."""
    lines = text.split("\n")
    found: dict[str, dict[str, str]] = {}
    for number, rule in enumerate(lines):
        if not (number > 1 and rule and set(rule) <= {"-", " "}):
            continue
        view = lines[number - 2].split(" ")[0]
        spans = [(m.start(), m.end()) for m in re.finditer(r"-+", rule)]
        end = next((i for i in range(number + 1, len(lines)) if not lines[i]), len(lines))
        columns: dict[str, str] = {}
        for start, stop in spans:
            head = "".join(piece for cell, piece in placed(lines[number - 1]) if start <= cell < stop).strip()
            body = ["".join(piece for cell, piece in placed(line) if start <= cell < stop).rstrip() for line in lines[number + 1 : end]]
            columns[head] = "".join(body)
        found[view] = columns
    return found


def placed(line: str) -> list[tuple[int, str]]:
    out, cell = [], 0
    for cluster in wcwidth.iter_graphemes(line):
        out.append((cell, cluster))
        cell += wcwidth.wcswidth(cluster)
    return out


def assert_ids_whole(views: dict[str, Any], text: str, where: str) -> None:
    """Each list view's first column (its id) shows every row's value whole."""
    tables = column_texts(text)
    for view, rows in views.items():
        if not isinstance(rows, list) or not rows:
            continue
        first = DEFAULT_COLUMNS[view][0]
        shown = tables[view][first]
        for row in rows:
            assert printable(str(row[first])).replace(" ", "") in shown.replace(" ", ""), (where, view, row[first])


@pytest.mark.parametrize("path", traces(), ids=name)
def test_show_fits_100_and_60_cells_on_every_fixture(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:  # fmt: skip
    url = f"sqlite:///{tmp_path / 'store.db'}"
    assert run(capsys, "ingest", str(path), "--store", url)[0] == 0
    views = project(stored(path), use_snapshots=False).document()
    for width in (100, 60):
        monkeypatch.setenv("COLUMNS", str(width))
        code, out, err = run(capsys, "show", "--store", url)
        assert code == 0, err
        assert_fits(out, width, f"{name(path)} at {width}")
        assert_ids_whole(views, out, f"{name(path)} at {width}")
        assert_tables_aligned(out, f"{name(path)} at {width}")
    monkeypatch.setenv("COLUMNS", "60")
    code, wide, _ = run(capsys, "show", "--store", url, "--wide")
    assert code == 0 and wide == render_document(views), "--wide: every column, as before the tables fitted"


def test_demo_fits_and_hides_the_rest_behind_wide(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = run(capsys, "demo", "--store", url)
    assert code == 0
    assert_fits(out, 100, "tandem demo")
    assert max(cells_of(line) for line in out.split("\n")) > 80  # it uses the room it has
    assert "\nactions  (19 more column(s): --wide, or --columns)\noperation_id  task_id  operation     state      blocked_by  prerequisites    outcome\n" in out
    code, wide, _ = run(capsys, "demo", "--store", url, "--wide")
    assert code == 0 and max(cells_of(line) for line in wide.split("\n")) > 600  # the conversations' deliveries
    assert "artifact_revision" in wide and "envelope" in wide and "(19 more" not in wide
    code, as_json, _ = run(capsys, "demo", "--store", url, "--json")
    assert code == 0 and as_json.startswith("{\n") and '"envelope"' in as_json


def test_the_readme_example_is_what_replay_prints_at_100_cells(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("### Example\n\n```console\n", 1)[1].split("```", 1)[0]
    command, shown = block.split("\n", 1)
    assert command.startswith("$ tandem replay ")
    monkeypatch.setenv("COLUMNS", "100")
    code, out, err = run(capsys, *command.removeprefix("$ tandem ").split())
    assert code == 0, err
    assert out == shown


def test_columns_picks_those_in_that_order(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    code, out, err = run(capsys, "replay", str(DEMO), "--view", "actions", "--columns", "state, operation_id,input_revisions")
    assert code == 0, err
    lines = out.split("\n")
    assert lines[0] == "actions"  # named columns: no note of the others
    assert re.split(r"  +", lines[1]) == ["state", "operation_id", "input_revisions"]
    assert lines[3:6] == ["succeeded  op-api        task=1,", " " * 25 + "grant=1,", " " * 25 + "intent=1"]  # folded after spaces
    assert_fits(out, 40, "--columns")
    assert column_texts(out)["actions"]["input_revisions"] == "task=1,grant=1,intent=1" * 3
    monkeypatch.setenv("COLUMNS", "100")
    code, out, err = run(capsys, "replay", str(DEMO), "--view", "usage", "--columns", "reports")
    assert code == 0 and out.split("\n")[1].split() == ["reports"], err  # a role's totals: the roles stay
    code, out, err = run(capsys, "replay", str(DEMO), "--view", "health", "--columns", "host,backlog")
    assert code == 0 and out == "health\nhost     running\nbacklog  untriaged=0, oldest_untriaged_at=-, deliverable=2\n", err


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["--view", "actions", "--columns", "operation_id,stat"], "actions has no column 'stat' (did you mean 'state'?); its columns: operation_id, task_id, rule_id,"),
        (["--view", "tasks", "--columns", "zzz"], "tasks has no column 'zzz'; its columns: task_id, revision, state, goal,"),
        (["--columns", "state"], "--columns names the columns of one view: name the view too"),
    ],
)
def test_an_unknown_column_is_refused_and_nothing_is_written(
    arguments: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:  # fmt: skip
    database = tmp_path / "store.db"
    code, out, err = run(capsys, "replay", str(DEMO), "--store", f"sqlite:///{database}", *arguments)
    assert code == 2 and out == "" and said in err, err
    assert not database.exists() or sqlite3.connect(database).execute("SELECT name FROM sqlite_master").fetchall() == []


@pytest.mark.parametrize("arguments", [["--json", "--wide"], ["--wide", "--columns", "state"], ["--json", "--columns", "state"], ["--columns", "a,,b"], ["--columns", "a,a"]])
def test_the_table_options_refuse_nonsense(arguments: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["replay", str(DEMO), "--view", "actions", *arguments])
    assert exit_.value.code == 2
    assert "--" in capsys.readouterr().err


def test_every_default_column_is_a_column_of_its_view() -> None:
    assert set(DEFAULT_COLUMNS) == set(VIEW_NAMES)
    for view, columns in DEFAULT_COLUMNS.items():
        assert set(columns) <= set(known_columns(view)), (view, set(columns) - set(known_columns(view)))
        assert len(set(columns)) == len(columns), view
        assert columns[0] not in FREE_TEXT, view


def test_hostile_text_fits_60_cells_and_stays_data(hostile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setenv("COLUMNS", "60")
    code, out, err = run(capsys, "replay", str(hostile))
    assert code == 0, err
    assert_no_raw(out, "hostile at 60")
    assert_fits(out, 60, "hostile at 60")
    assert_tables_aligned(out, "hostile at 60")
    tables = column_texts(out)
    assert LONG_CAUSE in tables["inbox"]["cause_key"]  # 100 cells: folded, never cut
    assert printable(OPERATION) in tables["actions"]["operation_id"]
    assert re.search(r"\n[^\n]*…", out), "free text cut with …"


@pytest.mark.parametrize(("text", "width"), [("abcdefg", 3), ("a漢字b", 3), ("untriaged=0, oldest", 14), ("漢字", 1), ("", 4)])
def test_fold_keeps_every_character(text: str, width: int) -> None:
    pieces = fold(text, width)
    assert "".join(pieces) == text
    assert all(cells_of(piece) <= width or len(list(wcwidth.iter_graphemes(piece))) == 1 for piece in pieces)


def test_without_columns_and_a_terminal_the_width_is_100() -> None:
    """stdout a pipe, COLUMNS unset: 100 cells, as the README's example shows."""
    import os
    import subprocess
    import sys

    env = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES")}
    shown = subprocess.run(
        [sys.executable, "-m", "tandem.adapters.cli", "replay", str(DEMO), "--view", "actions"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "\n" + shown.stdout + "```" in readme
