"""Checks of `tandem ingest` beyond the schema (issue 15). `--name` (ingest,
replay --store): the identity a trace's inputs are keyed
by in the store. An empty or blank name, a control character or a name over
1,024 characters is a usage error (exit 2) naming the problem, and nothing is
written: no store is created (issue 15, "`--name ''` is accepted")."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from tandem.domain.inputs import format_at
from tests.e2e.serving import stored_inputs, tandem

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO / "fixtures" / "gates" / "01_user_chats_ci_fails.jsonl"


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("", "the name is empty"),
        ("   ", "the name is empty"),
        ("a\x1b[31mb", "the name holds the control character U+001B"),
        ("x" * 1025, "the name is 1,025 characters, over 1,024"),
    ],
    ids=["empty", "blank", "escape", "too-long"],
)
@pytest.mark.parametrize("command", ["ingest", "replay"])
def test_a_bad_name_is_a_usage_error_and_writes_nothing(tmp_path: Path, command: str, name: str, says: str) -> None:
    store = tmp_path / "t.db"
    result = tandem(command, str(TRACE), "--name", name, "--store", f"sqlite:///{store}")
    assert result.returncode == 2, result
    assert f"argument --name: {says}" in result.stderr
    assert "\x1b" not in result.stderr  # the name itself is never echoed
    assert not store.exists()


def test_a_good_name_keys_the_inputs(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 't.db'}"
    first = tandem("ingest", str(TRACE), "--name", "ci-trace", "--store", url)
    again = tandem("ingest", str(TRACE), "--name", "ci-trace", "--store", url)
    assert first.returncode == 0 and again.returncode == 0, (first.stderr, again.stderr)
    assert "20 already in the store" in again.stdout + again.stderr


def test_ingest_warns_of_an_input_a_day_ahead_and_applies_it(tmp_path: Path) -> None:
    """Issue 15: an `at` far in the future is valid (the contract allows any
    later time) but stops every real-time input after it: `tandem ingest`
    says so on stderr, even with --quiet, and applies the trace."""
    trace = tmp_path / "leap.jsonl"
    trace.write_text(
        '{"type":"conversation.open","at":"2026-03-01T09:00:00Z","actor":"daemon","conversation_id":"fg",'
        '"role":"foreground","context_limit":1000,"reserve":10}\n'
        '{"type":"tick","at":"2026-03-02T09:00:00Z","actor":"daemon"}\n'
        '{"type":"tick","at":"9999-12-31T00:00:00Z","actor":"daemon"}\n',
        encoding="utf-8",
    )
    store = f"sqlite:///{tmp_path / 't.db'}"
    # 9999 is far ahead of the clock too: refused unless --allow-future (issue 22, below).
    result = tandem("ingest", str(trace), "--store", store, "--quiet", "--allow-future")
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert warnings == [
        "tandem: warning: leap.jsonl line 3: `at` 9999-12-31T00:00:00Z is 2,912,381.6 days after the input before it "
        "(2026-03-02T09:00:00Z); later inputs, live ones too, must come after it"
    ]  # exactly a day (line 2) is no leap
    shown = tandem("show", "--store", store, "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["conversations"][0]["conversation_id"] == "fg"


def test_ingest_refuses_an_at_far_ahead_of_the_clock_unless_allowed(tmp_path: Path) -> None:
    """Issue 22, point 7: an `at` of 9999-12-31 was ingested with a warning,
    and then every live input of the store was stamped 9999, for good. An
    `at` more than 300 s (`at_ahead_max_s`, as for live inputs) ahead of the
    machine's clock is a schema error naming the line (exit 2, nothing
    written), unless --allow-future says it is meant; `tandem replay --store`
    appends to a store as ingest does, and refuses it too. A trace in the
    past keeps its one-day-leap warning only."""
    now = datetime.datetime.now(datetime.timezone.utc)
    soon = now + datetime.timedelta(seconds=200)  # within the 300 s
    later = now + datetime.timedelta(seconds=3600)
    trace = tmp_path / "future.jsonl"
    trace.write_text(
        "".join(
            json.dumps({"type": "tick", "at": at, "actor": "daemon"}) + "\n"
            for at in ("2026-03-01T09:00:00Z", format_at(soon), format_at(later), "9999-12-31T00:00:00Z")
        ),
        encoding="utf-8",
    )
    database = tmp_path / "t.db"
    store = f"sqlite:///{database}"
    for command in (("ingest",), ("replay", "--json")):
        refused = tandem(*command, str(trace), "--store", store)
        assert refused.returncode == 2, refused.stderr
        errors = refused.stderr.splitlines()
        assert errors[0].startswith(f"line 3: `at` {format_at(later)} is more than 300 s ahead of this machine's clock ("), errors
        assert errors[1].startswith("line 4: `at` 9999-12-31T00:00:00Z is more than 300 s ahead of this machine's clock ("), errors
        assert "--allow-future" in errors[0] and "live ones too" in errors[0]
        assert errors[2:] == [f"tandem: {trace} is not a valid trace; nothing was written"], errors
        assert stored_inputs(database) == 0
    # The memory store of a plain replay keeps nothing: a trace of any time is fine there.
    assert tandem("replay", str(trace), "--json").returncode == 0

    allowed = tandem("ingest", str(trace), "--store", store, "--allow-future", "--quiet")
    assert allowed.returncode == 0, allowed.stderr
    assert "line 4: `at` 9999-12-31T00:00:00Z is" in allowed.stderr  # the leap is still said
    assert stored_inputs(database) == 4


def test_the_far_future_check_reports_at_most_20_lines(tmp_path: Path) -> None:
    trace = tmp_path / "future.jsonl"
    trace.write_text(
        "".join(json.dumps({"type": "tick", "at": f"9999-12-31T00:00:{n:02d}Z", "actor": "daemon"}) + "\n" for n in range(25)),
        encoding="utf-8",
    )
    refused = tandem("ingest", str(trace), "--store", f"sqlite:///{tmp_path / 't.db'}")
    assert refused.returncode == 2, refused.stderr
    errors = refused.stderr.splitlines()
    assert [line.split(":", 1)[0] for line in errors[:20]] == [f"line {n}" for n in range(1, 21)]
    assert errors[20:] == ["... and 5 more bad line(s)", f"tandem: {trace} is not a valid trace; nothing was written"]
