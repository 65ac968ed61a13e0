"""`POST /v1/whatif` on a real `tandem serve` (docs/api.md, "What if"): the
answer is what `tandem whatif --store URL ... --json` prints for the same
store and edits, byte for byte (but its final newline); any token may ask;
a bad edit is 422 `bad_edit` naming it, a bad body 400 `invalid_body`
naming the field; the store is never written; an edited input's authority
is the engine's to check, as in a trace (a background cannot widen a grant
in a fork either).
"""

from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tandem.adapters.commands.demo import EXAMPLE
from tests.e2e.serving import Served, store_head, tandem

timeout_s = 120


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    directory = tmp_path_factory.mktemp("whatif")
    url = f"sqlite:///{directory / 'example.db'}"
    done = tandem("ingest", "--store", url, str(EXAMPLE))
    assert done.returncode == 0, done.stderr
    with Served(directory, url, "--no-runtime-inputs") as server:
        yield server


def post(server: Served, body: Any, actor: str | None = "human", content_type: str = "application/json") -> tuple[int, bytes]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": content_type}
    if actor is not None:
        headers["Authorization"] = f"Bearer {server.tokens[actor]}"
    request = urllib.request.Request(f"{server.url}/v1/whatif", data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def error_of(answer: tuple[int, bytes]) -> tuple[int, str, str]:
    status, body = answer
    error = json.loads(body)["error"]
    return status, error["code"], error["message"]


def database(server: Served) -> Path:
    return Path(server.store_url.removeprefix("sqlite:///"))


def fingerprint(server: Served) -> tuple[int, str]:
    """The store's head as the store has it, and its database file's digest."""
    return store_head(server.store_url), hashlib.sha256(database(server).read_bytes()).hexdigest()


BEAT = {"type": "watchdog.heartbeat", "at": "2026-03-01T09:19:45Z", "actor": "watchdog", "generation": 1}
SAME = [  # (the body's edits and until, the command line's words)
    ([{"op": "drop", "input": 5}], None, ["--drop", "5"]),
    (
        [
            {"op": "set", "input": 16, "field": "evidence_ref", "value": "ev/other <b>"},
            {"op": "shift", "input": 20, "seconds": -30},
            {"op": "insert_after", "input": 15, "value": BEAT},
            {"op": "replace", "input": 14, "value": {**BEAT, "at": "2026-03-01T09:19:30Z", "generation": 1}},
        ],
        20,
        [
            "--set", '16.evidence_ref="ev/other <b>"', "--shift", "20=-30",
            "--insert-after", "15=" + json.dumps(BEAT, separators=(",", ":")),
            "--replace", "14=" + json.dumps({**BEAT, "at": "2026-03-01T09:19:30Z", "generation": 1}, separators=(",", ":")),
            "--until", "20",
        ],
    ),
    ([{"op": "set", "input": 11, "field": "write_paths", "value": ["/repo/backend", "/etc/x"]},
      {"op": "set", "input": 12, "field": "input_revisions.task", "value": 2}], None,
     ["--set", '11.write_paths=["/repo/backend","/etc/x"]', "--set", "12.input_revisions.task=2"]),
    ([], None, []),
]  # fmt: skip


@pytest.mark.parametrize(("edits", "until", "words"), SAME, ids=["drop", "every-op-until", "set-deep", "none"])
def test_the_answer_is_the_commands_json_byte_for_byte(served: Served, edits: list[Any], until: int | None, words: list[str]) -> None:
    before = fingerprint(served)
    status, body = post(served, {"edits": edits, "until": until}, actor="background")  # any token may ask
    assert status == 200, body
    done = tandem("whatif", "--store", served.store_url, *words, "--json")
    assert done.returncode == (1 if edits else 0), done.stderr
    assert body + b"\n" == done.stdout.encode()
    assert fingerprint(served) == before  # nothing written, by the server or the command


def test_a_request_without_a_valid_token_is_401(served: Served) -> None:
    body = {"edits": [{"op": "drop", "input": 5}]}
    assert error_of(post(served, body, actor=None))[:2] == (401, "unauthenticated")
    served.tokens["nobody"] = "x" * 43
    assert error_of(post(served, body, actor="nobody"))[:2] == (401, "unauthenticated")


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        ([{"op": "drop", "input": 99}], "--drop 99: the store has no input 99"),
        ([{"op": "drop", "input": 5}, {"op": "set", "input": 5, "field": "generation", "value": 2}],
         "--set 5.generation=2: input 5 was dropped by an earlier edit (--drop 5)"),
        ([{"op": "set", "input": 5, "field": "type", "value": "watchdog.hartbeat"}],
         'the edited inputs are not valid: input 5 (after --set 5.type="watchdog.hartbeat"): unknown type '
         "'watchdog.hartbeat' (did you mean `watchdog.heartbeat`?)"),
        ([{"op": "set", "input": 5, "field": "a=b", "value": 1}], "--set 5.a=b: 'a=b' is not a field path (names joined by '.', no '=')"),
    ],
)  # fmt: skip
def test_a_bad_edit_is_422_naming_it_and_nothing_is_written(served: Served, edits: list[Any], message: str) -> None:
    before = fingerprint(served)
    assert error_of(post(served, {"edits": edits})) == (422, "bad_edit", message)
    assert fingerprint(served) == before


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"edits": [{"op": "drop", "input": "5"}]}, "edits[0].input: Expected `int`, got `str`"),
        ({"edits": [{"op": "drop", "input": 0}]}, "edits[0].input: Expected `int` >= 1"),
        ({"edits": [{"op": "remove", "input": 5}]}, "edits[0].op: Invalid value 'remove' (an op is one of drop, replace, insert_after, shift, set)"),
        ({"edits": [{"op": "drop", "input": 5, "seconds": 3}]}, "edits[0]: Object contains unknown field `seconds`"),
        ({"edits": [{"op": "shift", "input": 5}]}, "edits[0]: Object missing required field `seconds`"),
        ({"edits": [{"op": "shift", "input": 5, "seconds": 1e12}]}, "edits[0].seconds: Expected `float` <= 315360000.0"),
        ({"edits": [{"op": "replace", "input": 5, "value": [1]}]}, "edits[0].value: Expected `object`, got `array`"),
        ({"edits": [{"op": "drop", "input": 5}] * 101}, "edits: Expected `array` of length <= 100"),
        ({"edit": []}, "the body: Object contains unknown field `edit`"),
        ({"edits": [], "until": 0}, "until: Expected `int` >= 1"),
        (b"{not json", "the body: JSON is malformed: object keys must be strings (byte 1)"),
    ],
)  # fmt: skip
def test_a_bad_body_is_400_naming_the_field(served: Served, body: Any, message: str) -> None:
    assert error_of(post(served, body)) == (400, "invalid_body", message)


def test_a_body_that_is_not_json_is_415(served: Served) -> None:
    status, code, _ = error_of(post(served, b"drop=5", content_type="application/x-www-form-urlencoded"))
    assert (status, code) == (415, "unsupported_media_type")


def revise(actor: str) -> dict[str, Any]:
    """A grant.revise widening signup's grant to scm.push (the task's constraints say: do not push)."""
    return {
        "type": "grant.revise", "at": "2026-03-01T09:55:40Z", "actor": actor, "grant_id": "g-signup", "expected_revision": 1,
        "allowed_operations": ["worker.start", "worker.test", "scm.push"],
    }  # fmt: skip


@pytest.mark.parametrize("op", ["insert_after", "replace"])
def test_a_background_cannot_widen_a_grant_in_a_fork_and_the_human_can(served: Served, op: str) -> None:
    before = fingerprint(served)
    edit = {"op": op, "input": 22 if op == "insert_after" else 23}  # after op-it's outcome / in task.complete's place

    status, body = post(served, {"edits": [{**edit, "value": revise("background")}]})
    assert status == 200, body
    refused = json.loads(body)
    assert refused["first_divergence"]["fork"] == "rejected: not_authorized"
    rejections = [view for view in refused["views"] if view["view"] == "rejections"]
    assert [(row["type"], row["reason"]) for row in rejections[0]["added"]] == [("grant.revise", "not_authorized")]
    grants = [thing["fork"] for thing in refused["decisions"] if thing["kind"] == "grant" and thing["fork"] is not None]
    assert not [record for side in grants for record in side["records"] if record["event"] == "GrantRevised"]

    status, body = post(served, {"edits": [{**edit, "value": revise("human")}]})
    assert status == 200, body
    accepted = json.loads(body)
    assert accepted["first_divergence"]["fork"] == "accepted"
    assert not [row for view in accepted["views"] if view["view"] == "rejections" for row in view["added"] if row["type"] == "grant.revise"]
    (grant,) = [thing for thing in accepted["decisions"] if thing["kind"] == "grant"]
    assert [record["event"] for record in grant["fork"]["records"]][0] == "GrantRevised"
    assert fingerprint(served) == before


def test_the_documented_body_is_answered_as_the_command_answers_it(served: Served) -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    section = text[text.index("## What if: `POST /v1/whatif`") :]
    body = json.loads(section[section.index("```json\n") + 8 : section.index("\n```", section.index("```json\n"))])
    status, answer = post(served, body)
    assert status == 200, answer
    words = json.loads(answer)["edits"]
    assert words[-1] == '--set 19.evidence_ref="ev/other"'
    arguments = [part for word in words for part in word.split(" ", 1)] + ["--until", str(body["until"])]
    done = tandem("whatif", "--store", served.store_url, *arguments, "--json")
    assert done.returncode == 1 and answer + b"\n" == done.stdout.encode(), done.stderr
