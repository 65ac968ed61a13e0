"""Issue 22, point 7: a lone surrogate escape in an input's JSON is named.

`"\\ud800"` (a JSON escape of half a UTF-16 pair, no character at all) was
refused with msgspec's "Input data was truncated": true that it is refused
(no store can encode it), misleading as to why. Every input door now says
what it is and where, with one helper (domain/nesting.py,
`lone_surrogate_error`), GitHub's deliveries included: a trace line
(`tandem ingest`, `tandem replay`), a spool file's `.error`, and a
`POST /v1/inputs` body, single or batch (400 `invalid_input`, its `errors`
naming the line). Nothing is recorded."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from tandem.domain.inputs import decode_input
from tests.adapters.test_spool_guard import Clocks, assert_refused_whole, drop, records, started
from tests.e2e.serving import ROOT, Served, stored_inputs, tandem
from tests.e2e.test_serve import Head, assert_error, bearer, raw

GOOD = b'{"type":"tick","at":"2026-03-01T09:00:00Z","actor":"daemon"}'
IN_A_VALUE = b'{"type":"tick","at":"2026-03-01T09:00:01Z","actor":"daemon","id":"t-\\ud800"}'
IN_A_KEY = b'{"type":"tick","at":"2026-03-01T09:00:01Z","actor":"daemon","\\udc01":1}'
SAYS_VALUE = "a lone surrogate escape (\\ud800) in a string: not a Unicode character - at `$.id`"
SAYS_KEY = "a lone surrogate escape (\\udc01) in a string: not a Unicode character - at `$[...]`"


@pytest.mark.parametrize(("line", "says"), [(IN_A_VALUE, SAYS_VALUE), (IN_A_KEY, SAYS_KEY)], ids=["value", "key"])
def test_the_decoder_names_a_lone_surrogate_and_where(line: bytes, says: str) -> None:
    with pytest.raises(msgspec.DecodeError) as refused:
        decode_input(line)
    assert str(refused.value) == says
    assert "truncated" not in str(refused.value)


@pytest.mark.parametrize("command", ["ingest", "replay"])
def test_a_trace_line_with_a_lone_surrogate_is_refused_naming_the_line(tmp_path: Path, command: str) -> None:
    trace = tmp_path / "surrogate.jsonl"
    trace.write_bytes(GOOD + b"\n" + IN_A_VALUE + b"\n" + IN_A_KEY + b"\n")
    database = tmp_path / "t.db"
    refused = tandem(command, str(trace), "--store", f"sqlite:///{database}")
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.splitlines() == [
        f"line 2: {SAYS_VALUE}",
        f"line 3: {SAYS_KEY}",
        f"tandem: {trace} is not a valid trace; nothing was written",
    ]
    assert stored_inputs(database) == 0


def test_a_spool_file_with_a_lone_surrogate_is_refused_naming_the_line(tmp_path: Path) -> None:
    runtime = started(tmp_path, Clocks())
    before = len(records(runtime))
    drop(tmp_path, "surrogate.jsonl", [json.loads(GOOD), IN_A_VALUE.decode()])
    runtime.round()
    assert assert_refused_whole(runtime, tmp_path, "surrogate.jsonl", before) == f"line 2: {SAYS_VALUE}\n"
    runtime.close()


def test_an_http_body_with_a_lone_surrogate_is_400_naming_the_line(tmp_path: Path) -> None:
    with Served(tmp_path, f"sqlite:///{tmp_path / 'store.db'}") as server:
        head = Head(server)
        single = raw(server, "POST", "/v1/inputs", IN_A_VALUE, {**bearer(server, "daemon"), "Content-Type": "application/json"})
        body = assert_error(single, 400, "invalid_input")
        assert body["errors"] == [{"line": 1, "message": SAYS_VALUE}]
        batch = raw(
            server, "POST", "/v1/inputs", GOOD + b"\n" + IN_A_VALUE + b"\n",
            {**bearer(server, "daemon"), "Content-Type": "application/x-ndjson"},
        )  # fmt: skip
        body = assert_error(batch, 400, "invalid_input")
        assert body["errors"] == [{"line": 2, "message": SAYS_VALUE}]
        head.unchanged()


def test_an_imported_event_with_a_lone_surrogate_is_refused_naming_the_line(tmp_path: Path) -> None:
    """`tandem import` reads events, not inputs, from outside: the same message."""
    first = (ROOT / "fixtures" / "stores" / "served-2026-12-01.jsonl").read_bytes().split(b"\n", 1)[0]
    assert b'"id":null' in first
    log = tmp_path / "log.jsonl"
    log.write_bytes(first.replace(b'"id":null', b'"id":"\\ud800"', 1) + b"\n")
    database = tmp_path / "t.db"
    refused = tandem("import", str(log), "--store", f"sqlite:///{database}")
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.splitlines()[0] == (
        "line 1: not JSON: a lone surrogate escape (\\ud800) in a string: not a Unicode character - at `$.input.id`"
    )
    assert not database.exists()
