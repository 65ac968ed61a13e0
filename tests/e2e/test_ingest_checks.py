"""Checks of `tandem ingest` beyond the schema (issue 15). `--name` (ingest,
replay --store): the identity a trace's inputs are keyed
by in the store. An empty or blank name, a control character or a name over
1,024 characters is a usage error (exit 2) naming the problem, and nothing is
written: no store is created (issue 15, "`--name ''` is accepted")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.serving import tandem

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
    result = tandem("ingest", str(trace), "--store", store, "--quiet")
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert warnings == [
        "tandem: warning: leap.jsonl line 3: `at` 9999-12-31T00:00:00Z is 2,912,381.6 days after the input before it "
        "(2026-03-02T09:00:00Z); later inputs, live ones too, must come after it"
    ]  # exactly a day (line 2) is no leap
    shown = tandem("show", "--store", store, "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["conversations"][0]["conversation_id"] == "fg"
