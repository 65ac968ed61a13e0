"""Issue 26 (points 7 and 8): a schema error says what a writer can act on.

Every door (trace files, spool files, HTTP bodies) parses through
replay/traces.py, which words its errors with replay/input_errors.py: an
unknown `type` or field names the closest known ones ("did you mean"), and a
JSON syntax error says what happened, where (the byte; for a body of several
lines its line and column) and the likely cause. msgspec's own start of each
message is kept (tests and docs quote it). The CLI's unknown commands and
views, and HTTP's `unknown_view`, name the closest names too."""

from __future__ import annotations

import argparse

import pytest

from tandem.adapters.cli import main
from tandem.adapters.commands.common import view_name
from tandem.replay.edge import LiveEdge, TokenActor
from tandem.replay.input_errors import did_you_mean
from tandem.replay.traces import TraceInvalid, parse_single, parse_trace

AT = '"at":"2026-01-01T00:00:00Z"'
MESSAGE = '{"type":"human.message",' + AT + ',"conversation_id":"c","message_id":"m","text":"hi"'


def errors_of(*lines: str) -> list[str]:
    with pytest.raises(TraceInvalid) as invalid:
        parse_trace("\n".join(lines).encode(), "t.jsonl")
    return [str(error) for error in invalid.value.errors]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"type":"human.mesage",' + AT + "}", "line 1: unknown type 'human.mesage' (did you mean `human.message`?)"),
        ('{"type":"human.message",' + AT + ',"conversation":"c","message_id":"m","text":"hi"}',
         "line 1: Object contains unknown field `conversation` (did you mean `conversation_id`?)"),
        ('{"type":"action.propose",' + AT + ',"prerequisites":[{"operation_idd":"x"}]}',
         "line 1: Object contains unknown field `operation_idd` - at `$.prerequisites[0]` (did you mean `operation_id`?)"),
        # Nothing close: the message as it was, no hint.
        ('{"type":"no.such",' + AT + "}", "line 1: unknown type 'no.such'"),
        (MESSAGE + ',"zzzzzz":1}', "line 1: Object contains unknown field `zzzzzz`"),
    ],
    ids=["type", "field", "nested-field", "no-close-type", "no-close-field"],
)
def test_an_unknown_name_gets_the_closest_known_ones(line: str, message: str) -> None:
    assert errors_of(line) == [message]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (MESSAGE[:57],
         'line 1: bad JSON: it ends too soon, at byte 57: a line cut short, or a closing `"`, `}` or `]` missing?'),
        (MESSAGE + "}}",
         "line 1: bad JSON: more follows the input's end, at byte 104: one input per line (two on one line, or a `}` too many?)"),
        (MESSAGE.replace('"hi"', '"a\\q"') + "}",
         ('line 1: bad JSON: invalid escape `\\q` in a string, at byte 102: after a backslash JSON allows only '
          '" \\ / b f n r t or uXXXX (write `\\\\` for a backslash itself)')),
        (MESSAGE.replace('"hi"', '"h\ti"') + "}",
         "line 1: bad JSON: a control character (U+0009) in a string, at byte 100: write it escaped (`\\n`, `\\t`, `\\u00XX`)"),
        # Already clear: msgspec's words and its byte, as before.
        ('{"type" "tick"}', "line 1: bad JSON: expected ':' (byte 8)"),
    ],
    ids=["truncated", "trailing", "escape", "control-character", "other"],
)
def test_a_json_syntax_error_says_what_where_and_why(line: str, message: str) -> None:
    assert errors_of(line) == [message]


def test_the_line_prefix_counts_the_trace_s_lines() -> None:
    good = MESSAGE + "}"
    assert errors_of(good, "// a comment", good[:20]) == [
        'line 3: bad JSON: it ends too soon, at byte 20: a line cut short, or a closing `"`, `}` or `]` missing?'
    ]


def test_a_body_of_several_lines_says_the_line_and_column() -> None:
    """HTTP's `application/json` body may be pretty-printed: it is line 1 of
    the batch, so the place in it is its own line and column."""
    import datetime

    live = LiveEdge(datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC), None, TokenActor("human"))
    cases = {
        b'{\n  "type": "human.message",\n  "text": "a\\q"\n}': "invalid escape `\\q` in a string, at byte 43 (line 3, column 15)",
        b'{\n  "type": "human.message",\n': "it ends too soon, at byte 29 (line 3, column 1)",
        b'{\n  "type": "human.message"\n  "text": "x"}': "expected ',' or '}' (byte 30, line 3, column 3)",
    }
    for body, says in cases.items():
        with pytest.raises(TraceInvalid) as invalid:
            parse_single(body, "body", live)
        assert invalid.value.errors[0].line == 1
        assert invalid.value.errors[0].message.startswith("bad JSON: " + says), invalid.value.errors[0].message


def test_did_you_mean() -> None:
    assert did_you_mean("taks", ["tasks", "actions"]) == " (did you mean `tasks`?)"
    assert did_you_mean("deamon", ["daemon", "demo", "serve"]) == " (did you mean `daemon` or `demo`?)"
    assert did_you_mean("zzz", ["tasks", "actions"]) == ""


def test_an_unknown_view_on_the_command_line_names_the_closest() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"^unknown view 'taks' \(did you mean `tasks`\?\); views: tasks, "):
        view_name("taks")


def test_an_unknown_command_names_the_closest(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["deamon"])
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert "argument COMMAND: invalid choice: 'deamon' (did you mean `daemon` or `demo`?) (choose from 'replay', " in error
    with pytest.raises(SystemExit):
        main(["xyzzy"])
    assert "invalid choice: 'xyzzy' (choose from " in capsys.readouterr().err
