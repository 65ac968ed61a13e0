"""Issue 22, point 7: a GitHub delivery with a key repeated in one object is
refused, as an input with one is (docs/replay-tools.md, "A bad trace writes nothing").

JSON leaves a repeated key to the reader: msgspec and Python keep the last
value, other readers the first or refuse. A delivery whose comment says
`"body": "ship it", "body": "do not ship"` was converted and recorded with
the last body, while another tool reading the same delivery sees the first.
Both doors now refuse it, naming the delivery and the repeated key's JSON
path (domain/nesting.py's walk, the one inputs use): `tandem github convert`
lists it as a bad delivery (exit 3, the other deliveries converted, none of
it in the trace), and `POST /v1/sources/github` answers 400
`invalid_delivery`, nothing recorded."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.serving import Served
from tests.e2e.test_github_webhook import deliver, head, secret_file
from tests.integration.test_github_convert import GOOD, delivery_line, example, tandem

PAYLOAD = example("payload-examples/issue_comment/created.payload.json")
SAYS = "duplicate key (JSON readers disagree on which value wins) - at `{}`"


def repeated(text: bytes) -> bytes:
    """`text` (JSON holding the payload's comment) with the comment's `body` given twice, the first one added."""
    opening = b'"comment": {'
    assert text.count(opening) == 1 and b'"body": ' in text
    return text.replace(opening, opening + b'"body": "an earlier body, which other readers keep", ', 1)


def test_convert_lists_a_delivery_with_a_repeated_key_as_bad_and_converts_the_rest(tmp_path: Path) -> None:
    source = tmp_path / "deliveries.jsonl"
    source.write_bytes(GOOD + repeated(delivery_line("issue_comment", PAYLOAD, guid="dup-1")))
    out = tmp_path / "trace.jsonl"
    done = tandem("github", "convert", str(source), "--out", str(out))
    stderr = done.stderr.decode()
    assert done.returncode == 3, stderr
    where = SAYS.format("$.request.payload.comment.body")
    assert f"tandem github: bad delivery: {source}:2: delivery dup-1 (issue_comment): {where}" in stderr, stderr
    assert [json.loads(row)["id"] for row in out.read_bytes().splitlines()] == ["good-1"]


def test_convert_refuses_a_bare_payload_with_a_repeated_key(tmp_path: Path) -> None:
    payload = tmp_path / "comment.json"
    payload.write_bytes(repeated(json.dumps(PAYLOAD).encode()))
    done = tandem("github", "convert", str(payload), "--event", "issue_comment")
    stderr = done.stderr.decode()
    assert done.returncode == 3, stderr
    assert f"tandem github: bad delivery: {payload}: {SAYS.format('$.comment.body')}" in stderr, stderr
    assert done.stdout == b""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Served]:
    options = ("--github-secret-file", str(secret_file(tmp_path)), "--no-runtime-inputs")
    with Served(tmp_path, f"sqlite:///{tmp_path / 'events.db'}", *options) as served:
        yield served


def test_the_webhook_refuses_a_delivery_with_a_repeated_key_and_records_nothing(server: Served) -> None:
    before = head(server)
    body = json.dumps(PAYLOAD).encode()
    reply = deliver(server, "issue_comment", "dup-2", repeated(body))
    assert reply.status == 400, reply
    assert reply.body["error"] == {
        "code": "invalid_delivery",
        "message": f"delivery dup-2 (issue_comment): {SAYS.format('$.comment.body')}",
    }
    assert head(server) == before
    # The control: the same delivery with its key once is recorded.
    accepted = deliver(server, "issue_comment", "dup-3", body)
    assert accepted.status == 200, accepted
    assert head(server) > before
