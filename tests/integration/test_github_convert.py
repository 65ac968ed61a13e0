"""`tandem github convert` and the mapping under it (adapters/github.py,
docs/sources.md), on the payloads vendored from octokit/webhooks
(fixtures/github/).

1. every vendored payload maps (or is recorded as ignored, saying why), and a few
   field by field;
2. fan-out: one check run naming two pull requests, two inputs;
3. bad deliveries: each named (file, line, guid, event, action), the rest
   converted, exit 3; an unreadable file or output: exit 1 and no output,
   not even a part;
4. text cut to the engine's limits, then `truncated`;
5. determinism, ordering, bare payloads;
6. fixtures/github/deliveries.jsonl converts to fixtures/traces/github_sources.jsonl
   byte for byte, and that trace's views show what the issue asks; so does
   fixtures/github/events.jsonl to fixtures/traces/github_events.jsonl (its
   views: tests/integration/test_github_events.py).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tandem.adapters.github import (
    Delivery,
    DeliveryInvalid,
    bare_delivery,
    convert,
    fingerprint,
    map_delivery,
)
from tandem.domain.inputs import decode_input, text_chars_max
from tandem.replay.traces import line_bytes_max

ROOT = Path(__file__).resolve().parents[2]
GITHUB = ROOT / "fixtures" / "github"
DELIVERIES = GITHUB / "deliveries.jsonl"
TRACE = ROOT / "fixtures" / "traces" / "github_sources.jsonl"
PAYLOADS = sorted([*(GITHUB / "payload-examples").rglob("*.json"), *(GITHUB / "derived").rglob("*.json")])
PR2 = "https://github.com/Codertocat/Hello-World/pull/2"
GUID = "4b1d2c00-15ef-11f1-8f6a-0e4f3503ccbe"

# What each vendored payload gives: (kind, inputs) or the start of its note.
EXPECTED: dict[str, tuple[str, int] | str] = {
    "payload-examples/check_run/completed.1.payload.json": ("ci", 1),
    "payload-examples/check_run/completed.payload.json": ("ci", 1),
    "payload-examples/check_run/created.payload.json": ("ci", 1),
    "payload-examples/check_run/requested_action.payload.json": ("request", 1),
    "payload-examples/check_run/rerequested.payload.json": "names no pull request",
    "payload-examples/check_suite/completed.payload.json": ("ci", 1),
    "payload-examples/check_suite/requested.payload.json": "names no pull request",
    "payload-examples/check_suite/rerequested.payload.json": ("ci", 1),
    "payload-examples/installation/created.payload.json": ("installation", 1),
    "payload-examples/installation/deleted.payload.json": ("installation", 1),
    "payload-examples/installation/suspend.payload.json": ("installation", 1),
    "payload-examples/issue_comment/created.payload.json": ("comment", 1),
    "payload-examples/issue_comment/deleted.payload.json": ("comment", 1),
    "payload-examples/issue_comment/edited.payload.json": ("comment", 1),
    "payload-examples/issues/deleted.payload.json": ("issue", 1),
    "payload-examples/issues/edited.payload.json": ("issue", 1),
    "payload-examples/issues/labeled.payload.json": ("issue", 1),
    "payload-examples/issues/opened.payload.json": ("issue", 1),
    "payload-examples/issues/reopened.payload.json": ("issue", 1),
    "payload-examples/issues/unlabeled.payload.json": ("issue", 1),
    "payload-examples/ping/payload.json": "ping",
    "payload-examples/pull_request/assigned.payload.json": "not mapped: action 'assigned' of pull_request",
    "payload-examples/pull_request/closed.payload.json": ("pull_request", 1),
    "payload-examples/pull_request/converted_to_draft.payload.json": ("pull_request", 1),
    "payload-examples/pull_request/labeled.payload.json": ("pull_request", 1),
    "payload-examples/pull_request/opened.payload.json": ("pull_request", 1),
    "payload-examples/pull_request/ready_for_review.payload.json": ("pull_request", 1),
    "payload-examples/pull_request/reopened.payload.json": ("pull_request", 1),
    "payload-examples/pull_request/synchronize.payload.json": ("pull_request", 1),
    "payload-examples/pull_request/unlabeled.payload.json": ("pull_request", 1),
    "payload-examples/pull_request_review/dismissed.payload.json": ("review", 1),
    "payload-examples/pull_request_review/submitted.payload.json": ("review", 1),
    "payload-examples/pull_request_review_comment/created.payload.json": ("comment", 1),
    "payload-examples/pull_request_review_comment/deleted.payload.json": ("comment", 1),
    "payload-examples/pull_request_review_comment/edited.payload.json": ("comment", 1),
    "payload-examples/pull_request_review_thread/resolved.payload.json": ("thread", 1),
    "payload-examples/pull_request_review_thread/unresolved.payload.json": ("thread", 1),
    "payload-examples/push/payload.json": ("push", 1),
    "payload-examples/push/with-new-branch.payload.json": ("push", 1),
    "payload-examples/status/payload.json": ("ci", 1),
    "payload-examples/workflow_job/completed.success.with-organization.payload.json": ("ci", 1),
    "payload-examples/workflow_job/in_progress.payload.json": ("ci", 1),
    "payload-examples/workflow_job/queued.payload.json": ("ci", 1),
    "payload-examples/workflow_job/waiting.payload.json": ("ci", 1),
    "payload-examples/workflow_run/completed.payload.json": ("ci", 1),
    "payload-examples/workflow_run/completed.with-pull-requests.payload.json": ("ci", 1),
    "payload-examples/workflow_run/requested.payload.json": ("ci", 1),
    "derived/issues/closed.payload.json": ("issue", 1),
    "derived/pull_request/edited.payload.json": ("pull_request", 1),
    "derived/pull_request_review/edited.payload.json": ("review", 1),
}
# Deletions: the `deleted` actions, and a push deleting its ref (a tag).
DELETING = {"payload-examples/push/payload.json"}


def event_of(path: Path) -> str:
    return path.parent.name


def example(relative: str) -> dict[str, Any]:
    return json.loads((GITHUB / relative).read_bytes())


def one(event: str, payload: Any, guid: str = GUID, at: str | None = "2026-03-02T10:00:00Z") -> dict[str, Any]:
    mapped = map_delivery(Delivery(guid, event, at, payload))
    assert mapped.note is None and len(mapped.inputs) == 1, mapped
    return mapped.inputs[0]


def delivery_line(event: str, payload: Any, guid: str = GUID, at: str = "2026-03-02T10:00:00Z") -> bytes:
    row = {"id": 1, "guid": guid, "delivered_at": at, "event": event, "action": None, "request": {"headers": {}, "payload": payload}}
    return json.dumps(row).encode() + b"\n"


def tandem(*arguments: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "tandem.adapters.cli", *arguments], cwd=ROOT, capture_output=True, timeout=120)


# ------------------------------------------------------ every vendored payload


def test_every_vendored_payload_is_expected() -> None:
    assert sorted(str(p.relative_to(GITHUB)) for p in PAYLOADS) == sorted(EXPECTED)


@pytest.mark.parametrize("path", PAYLOADS, ids=[str(p.relative_to(GITHUB)) for p in PAYLOADS])
def test_each_vendored_payload_maps_to_valid_inputs_or_says_why_not(path: Path) -> None:
    delivery = bare_delivery(path.read_bytes(), event_of(path), str(path))
    mapped = map_delivery(delivery)
    expected = EXPECTED[str(path.relative_to(GITHUB))]
    if isinstance(expected, str):  # recorded as one ignored observation, the note says why
        (line,) = mapped.inputs
        assert mapped.note is not None and mapped.note.endswith(": recorded as ignored"), mapped
        assert f"delivery {delivery.guid} ({event_of(path)}" in mapped.note and expected in mapped.note, mapped.note
        value = decode_input(msgspec.json.encode(line))  # what the engine takes
        assert value.ignored is True and line["kind"] == "github" and expected in line["text"]
        assert line["subject"] == (event_of(path) if delivery.action is None else f"{event_of(path)}.{delivery.action}")
        return
    kind, count = expected
    assert mapped.note is None and len(mapped.inputs) == count
    for line in mapped.inputs:
        value = decode_input(msgspec.json.encode(line))  # what the engine takes
        assert value.input_type == "observe" and value.actor == "source" and line["kind"] == kind
        assert line["source_id"].startswith("github:") and line["fingerprint"].startswith("sha256:")
        deleting = path.name.startswith("deleted") or str(path.relative_to(GITHUB)) in DELETING
        assert line["deleted"] is True if deleting else "deleted" not in line


def test_an_issue_comment_field_by_field() -> None:
    line = one("issue_comment", example("payload-examples/issue_comment/edited.payload.json"))
    observed = {key: line[key] for key in ("source_id", "kind", "scope", "complete", "source_time", "evidence_ref")}
    assert line["type"] == "observe" and line["id"] == GUID and line["at"] == "2026-03-02T10:00:00Z" and line["actor"] == "source"
    assert observed == {
        "source_id": "github:Codertocat/Hello-World:issue_comment:492700400",
        "kind": "comment",
        "scope": "https://github.com/Codertocat/Hello-World/issues/1",  # an issue's comment: the issue's page
        "complete": True,
        "source_time": "2019-05-15T15:20:22Z",  # updated_at
        "evidence_ref": "https://github.com/Codertocat/Hello-World/issues/1#issuecomment-492700400",
    }
    assert line["text"] == "You are totally right! I'll get this fixed today."
    assert not {"subject", "status", "deleted", "truncated", "cause_key", "source_version"} & set(line)
    text = line["text"]
    assert line["fingerprint"] == fingerprint({k: v for k, v in line.items() if k not in ("type", "id", "at", "actor", "fingerprint", "text")}, text)


def test_a_deleted_review_comment_keeps_its_last_edit_time() -> None:
    payload = example("payload-examples/pull_request_review_comment/deleted.payload.json")
    line = one("pull_request_review_comment", payload)
    assert line["deleted"] is True and line["kind"] == "comment"
    assert line["source_id"] == "github:Codertocat/Hello-World:review_comment:284312630"
    assert line["scope"] == PR2 and line["source_time"] == payload["comment"]["updated_at"]
    assert line["commit_sha"] == "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
    assert line["evidence_ref"] == f"{PR2}#discussion_r284312630"


def test_checks_reviews_statuses_and_threads_field_by_field() -> None:
    failed = one("check_run", example("payload-examples/check_run/completed.1.payload.json"))
    assert (failed["kind"], failed["subject"], failed["status"], failed["complete"]) == ("ci", "Octocoders-linter", "failure", True)
    assert failed["scope"] == PR2 and failed["source_time"] == "2019-05-15T15:21:12Z"  # completed_at
    queued = one("check_run", example("payload-examples/check_run/created.payload.json"))
    assert (queued["status"], queued["complete"], queued["source_time"]) == ("queued", False, "2019-05-15T15:21:12Z")  # started_at
    suite = one("check_suite", example("payload-examples/check_suite/completed.payload.json"))
    assert (suite["subject"], suite["status"], suite["source_time"]) == ("suite:octocoders-linter", "success", "2019-05-15T15:21:14Z")
    assert "evidence_ref" not in suite  # a suite has no page of its own
    review = one("pull_request_review", example("payload-examples/pull_request_review/submitted.payload.json"))
    assert (review["kind"], review["subject"], review["status"]) == ("review", "237895671", "commented")
    assert review["source_time"] == "2019-05-15T15:20:38Z" and "text" not in review  # body null
    status = one("status", example("payload-examples/status/payload.json"))
    sha = "6113728f27ae82c7b1a177c8d03f9e96e0adf246"
    assert status["scope"] == f"https://github.com/Codertocat/Hello-World/commit/{sha}" and status["subject"] == "default"
    assert (status["status"], status["complete"], status["source_time"]) == ("success", True, "2019-05-15T15:20:55Z")
    thread = one("pull_request_review_thread", example("payload-examples/pull_request_review_thread/unresolved.payload.json"))
    assert (thread["kind"], thread["status"], thread["scope"]) == ("thread", "unresolved", PR2)
    assert "source_time" not in thread  # a thread's payload has no time of its resolution
    assert thread["subject"] == thread["source_id"].rsplit(":", 1)[1] == "PRRT_kwDOFd42Pc4rQOUv"  # one cause per thread


def test_a_pending_status_is_not_complete() -> None:
    payload = example("payload-examples/status/payload.json") | {"state": "pending"}
    assert one("status", payload)["complete"] is False


# ---------------------------------------------------------------- fan-out


def test_a_check_run_naming_two_pull_requests_is_observed_once_per_pull_request() -> None:
    payload = example("payload-examples/check_run/completed.payload.json")
    first = payload["check_run"]["pull_requests"][0]
    payload["check_run"]["pull_requests"] = [first, {**first, "number": 7}]
    mapped = map_delivery(Delivery(GUID, "check_run", "2026-03-02T10:00:00Z", payload))
    assert [line["id"] for line in mapped.inputs] == [f"{GUID}#1", f"{GUID}#2"]
    assert [line["scope"] for line in mapped.inputs] == [PR2, "https://github.com/Codertocat/Hello-World/pull/7"]
    assert len({line["source_id"] for line in mapped.inputs}) == 1
    assert mapped.inputs[0]["fingerprint"] != mapped.inputs[1]["fingerprint"]


# ------------------------------------------------------------- bad input

GOOD = delivery_line("issue_comment", example("payload-examples/issue_comment/created.payload.json"), guid="good-1")
LATER = delivery_line("issue_comment", example("payload-examples/issue_comment/edited.payload.json"), guid="good-2", at="2026-03-02T11:00:00Z")


def _without(relative: str, *path: str) -> dict[str, Any]:
    payload = example(relative)
    node = payload
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return payload


BAD: dict[str, tuple[bytes, str]] = {
    "payload not an object": (delivery_line("issue_comment", [1, 2], guid="bad-list"), "delivery bad-list (issue_comment): the payload is a list, not an object"),
    "no pull_request": (
        delivery_line("pull_request_review", _without("payload-examples/pull_request_review/submitted.payload.json", "pull_request"), guid="bad-pr"),
        "delivery bad-pr (pull_request_review.submitted): payload.pull_request is missing",
    ),
    "no check_run": (
        delivery_line("check_run", _without("payload-examples/check_run/completed.payload.json", "check_run"), guid="bad-run"),
        "delivery bad-run (check_run.completed): payload.check_run is missing",
    ),
    "no head sha": (
        delivery_line("pull_request", _without("payload-examples/pull_request/synchronize.payload.json", "pull_request", "head", "sha"), guid="bad-head"),
        "delivery bad-head (pull_request.synchronize): payload.pull_request.head.sha is missing",
    ),
    "a push without its ref": (
        delivery_line("push", _without("payload-examples/push/with-new-branch.payload.json", "ref"), guid="bad-ref"),
        "delivery bad-ref (push): payload.ref is missing",
    ),
    "a mistyped id": (
        delivery_line("issue_comment", example("payload-examples/issue_comment/created.payload.json") | {"comment": {"id": True}}, guid="bad-id"),
        "delivery bad-id (issue_comment.created): payload.comment.id is true or false, not an id",
    ),
    "no event": (json.dumps({"guid": "bad-event", "delivered_at": "2026-03-02T10:00:00Z", "request": {"payload": {}}}).encode() + b"\n", ":3: delivery bad-event: no `event`"),
    "a bad delivered_at": (delivery_line("ping", {}, guid="bad-time", at="yesterday"), ":3: delivery bad-time (ping): `delivered_at` 'yesterday' is not an RFC 3339 time"),
    "not UTF-8": (b'{"guid": "bad-utf8", "event": "ping", "x": "\xff"}\n', ":3: delivery bad-utf8 (ping): not UTF-8 at byte 44"),
    "a lone surrogate": (
        delivery_line("issue_comment", {"action": "created"}, guid="bad-surrogate").replace(b'"created"', b'"\\ud800created"'),
        ":3: delivery bad-surrogate (issue_comment): a lone surrogate escape (\\ud800) in a string: not a Unicode character",
    ),
    "not JSON": (b'{"guid": "bad-json", \n', ":3: not JSON"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_delivery_is_named_and_the_rest_is_converted(case: str, tmp_path: Path) -> None:
    line, expected = BAD[case]
    source = tmp_path / "deliveries.jsonl"
    source.write_bytes(LATER + GOOD + line)
    out = tmp_path / "trace.jsonl"
    done = tandem("github", "convert", str(source), "--out", str(out))
    stderr = done.stderr.decode()
    assert done.returncode == 3, stderr
    assert f"tandem github: bad delivery: {source}" in stderr and expected in stderr, stderr
    assert "1 bad delivery (listed above); the other deliveries were converted" in stderr
    written = [json.loads(row) for row in out.read_bytes().splitlines()]
    assert [row["id"] for row in written] == ["good-1", "good-2"]  # in delivered_at order
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tandem-github-")]


def test_unmapped_events_and_actions_are_recorded_as_ignored_and_listed(tmp_path: Path) -> None:
    star = delivery_line("star", {"action": "created", "starred_at": "2026-03-02T10:00:00Z"}, guid="unmapped-star")
    pinned = delivery_line("issue_comment", {"action": "pinned"}, guid="unmapped-pinned")
    source = tmp_path / "deliveries.jsonl"
    source.write_bytes(GOOD + star + pinned)
    done = tandem("github", "convert", str(source))
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    assert f"ignored: {source}:2: delivery unmapped-star (star.created): not mapped: event 'star'" in stderr
    assert f"ignored: {source}:3: delivery unmapped-pinned (issue_comment.pinned): not mapped: action 'pinned' of issue_comment" in stderr
    assert "3 deliveries: 3 input(s) to stdout, 2 of them ignored, 0 bad" in stderr
    rows = [json.loads(row) for row in done.stdout.splitlines()]
    assert [(row["id"], row.get("ignored")) for row in rows] == [("good-1", None), ("unmapped-star", True), ("unmapped-pinned", True)]
    # No repository named: the cause is GitHub's; the text says why it is ignored.
    assert rows[1]["source_id"] == "github:github:star" and rows[1]["scope"] == "https://github.com"
    assert rows[1]["subject"] == "star.created" and rows[1]["text"].startswith("not mapped: event 'star'")


def test_notes_and_errors_on_stderr_are_escaped(tmp_path: Path) -> None:
    source = tmp_path / "deliveries.jsonl"
    source.write_bytes(delivery_line("evil\x1b]8;;x\x07", {}, guid="g\x1b[2J"))
    done = tandem("github", "convert", str(source))
    stderr = done.stderr.decode()
    assert "\x1b" not in stderr and "\x07" not in stderr
    assert "delivery g\\x1b[2J (evil\\x1b]8;;x\\x07): not mapped" in stderr


def test_an_unreadable_file_writes_nothing_and_leaves_the_old_trace(tmp_path: Path) -> None:
    source = tmp_path / "deliveries.jsonl"
    source.write_bytes(GOOD)
    out = tmp_path / "trace.jsonl"
    out.write_bytes(b"the old trace\n")
    done = tandem("github", "convert", str(source), str(tmp_path / "missing.jsonl"), "--out", str(out))
    assert done.returncode == 1, done.stderr
    assert b"missing.jsonl" in done.stderr and b"nothing was written" in done.stderr
    assert out.read_bytes() == b"the old trace\n"
    unwritable = tandem("github", "convert", str(source), "--out", str(tmp_path / "no" / "such" / "dir.jsonl"))
    assert unwritable.returncode == 1 and b"cannot write" in unwritable.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["deliveries.jsonl", "trace.jsonl"]


# ------------------------------------------------------------- text limits


@pytest.mark.parametrize(
    "body",
    ["x" * (text_chars_max + 10), "😀" * text_chars_max, "\x1b" * 200_000],
    ids=["over the characters", "emoji: over the line's bytes", "escapes: over the line's bytes"],
)
def test_a_long_body_is_cut_to_the_engines_limits_then_truncated(body: str) -> None:
    payload = example("payload-examples/issue_comment/created.payload.json")
    payload["comment"]["body"] = body
    line = one("issue_comment", payload)
    encoded = msgspec.json.encode(line)
    assert line["truncated"] is True and body.startswith(line["text"]) and len(line["text"]) <= text_chars_max
    assert len(encoded) <= line_bytes_max
    # As long as it can be: one more character and the line, with the longest `at` there is, would not fit.
    longest_at = "2026-03-02T10:00:00.000001Z"
    longer = {**line, "at": longest_at, "text": body[: len(line["text"]) + 1]}
    assert len(msgspec.json.encode(longer)) > line_bytes_max or len(line["text"]) == text_chars_max
    assert len(msgspec.json.encode({**line, "at": longest_at})) <= line_bytes_max
    decode_input(encoded)
    assert line["fingerprint"] != one("issue_comment", payload | {"comment": {**payload["comment"], "body": body + "!"}})["fingerprint"]


def test_a_body_within_the_limits_is_whole() -> None:
    payload = example("payload-examples/issue_comment/created.payload.json")
    payload["comment"]["body"] = "y" * 1000
    line = one("issue_comment", payload)
    assert line["text"] == "y" * 1000 and "truncated" not in line


# ---------------------------------------------------- determinism, ordering


def test_the_same_bytes_convert_to_the_same_trace(tmp_path: Path) -> None:
    data = DELIVERIES.read_bytes()
    assert convert([("a", data)]).lines == convert([("a", data)]).lines
    first, second = tmp_path / "1.jsonl", tmp_path / "2.jsonl"
    assert tandem("github", "convert", str(DELIVERIES), "--out", str(first)).returncode == 0
    assert tandem("github", "convert", str(DELIVERIES), "--out", str(second)).returncode == 0
    assert first.read_bytes() == second.read_bytes()


def test_deliveries_are_ordered_by_delivered_at_stably() -> None:
    payload = example("payload-examples/issue_comment/created.payload.json")
    lines = [
        delivery_line("issue_comment", payload, guid="c", at="2026-03-02T10:00:02Z"),
        delivery_line("issue_comment", payload, guid="a", at="2026-03-02T10:00:01Z"),
        delivery_line("issue_comment", payload, guid="b", at="2026-03-02T10:00:01+00:00"),
    ]
    result = convert([("one", b"".join(lines[:2])), ("two", lines[2])])
    assert [json.loads(line)["id"] for line in result.lines] == ["a", "b", "c"]
    assert [json.loads(line)["at"] for line in result.lines] == ["2026-03-02T10:00:01Z"] * 2 + ["2026-03-02T10:00:02Z"]


def test_a_bare_payload_gets_its_guid_and_time_from_itself(tmp_path: Path) -> None:
    path = GITHUB / "payload-examples" / "issue_comment" / "created.payload.json"
    data = path.read_bytes()
    delivery = bare_delivery(data, "issue_comment", "x")
    assert delivery.guid == "bare-" + hashlib.sha256(data).hexdigest()[:32]
    assert delivery.delivered_at == "2019-05-23T07:00:00Z"  # the payload's latest time
    out = tmp_path / "bare.jsonl"
    done = tandem("github", "convert", "--event", "issue_comment", str(path), "--out", str(out))
    assert done.returncode == 0, done.stderr
    (line,) = [json.loads(row) for row in out.read_bytes().splitlines()]
    assert (line["id"], line["at"]) == (delivery.guid, delivery.delivered_at)
    with pytest.raises(DeliveryInvalid, match="x: not JSON"):
        bare_delivery(b"{", "issue_comment", "x")


# -------------------------------------------------------------- the fixture


# Each fixture's deliveries, the module that builds them, its trace and what converting it says.
FIXTURES = {
    "deliveries": (DELIVERIES, "build_deliveries", TRACE, "28 deliveries: 29 input(s)", "3 of them ignored, 0 bad"),
    "events": (GITHUB / "events.jsonl", "build_events", ROOT / "fixtures" / "traces" / "github_events.jsonl", "16 deliveries: 16 input(s)", "0 of them ignored, 0 bad"),
}


@pytest.mark.parametrize("fixture", list(FIXTURES))
def test_the_fixture_deliveries_convert_to_the_fixture_trace_byte_for_byte(tmp_path: Path, fixture: str) -> None:
    deliveries, _, trace, converted, noted = FIXTURES[fixture]
    out = tmp_path / "trace.jsonl"
    done = tandem("github", "convert", str(deliveries.relative_to(ROOT)), "--out", str(out))
    assert done.returncode == 0, done.stderr
    stderr = done.stderr.decode()
    assert converted in stderr and noted in stderr, stderr
    fixture_bytes = trace.read_bytes()
    header = b"".join(line + b"\n" for line in fixture_bytes.splitlines() if line.startswith(b"//"))
    assert fixture_bytes.startswith(header)
    assert fixture_bytes[len(header) :] == out.read_bytes()


@pytest.mark.parametrize("fixture", list(FIXTURES))
def test_the_fixture_deliveries_are_built_from_the_vendored_payloads(fixture: str) -> None:
    deliveries, builder, _, _, _ = FIXTURES[fixture]
    sys.path.insert(0, str(GITHUB))
    try:
        module = importlib.import_module(builder)
    finally:
        sys.path.remove(str(GITHUB))
    assert module.build() == deliveries.read_bytes()


def _inbox() -> dict[str, dict[str, Any]]:
    views = json.loads(TRACE.with_suffix(".views.json").read_text(encoding="utf-8"))
    return {row["cause_key"]: row for row in views["inbox"]}


def test_the_fixture_views_show_every_behaviour() -> None:
    inbox = _inbox()
    comment = f"comment:{PR2}:github:Codertocat/Hello-World"

    def row(key: str) -> tuple[Any, ...]:
        found = inbox[key]
        return found["revision"], found["repeats"], found["out_of_order"], found["partial"]

    # Two comments on one PR: two causes. The first edited twice, the older edit delivered last.
    edited = inbox[f"{comment}:issue_comment:492700400"]
    assert row(f"{comment}:issue_comment:492700400") == (2, 0, 1, False)
    assert edited["latest"]["excerpt"] == "You are totally right! I'll get this fixed today (second edit)."
    hostile = inbox[f"{comment}:issue_comment:492700401"]["latest"]["excerpt"]
    assert "\x1b]8;;https://evil.example/\x07" in hostile and "修正" in hostile and "👨\u200d👩\u200d👧" in hostile
    # Edited then deleted: revisions; an edit delivered after the delete does not bring it back.
    assert row(f"{comment}:review_comment:284312630") == (3, 0, 1, False)
    assert inbox[f"{comment}:review_comment:284312630"]["latest"]["deleted"] is True
    # Lint: queued, failed, passed, failed: all kept; unit-tests its own cause.
    assert row(f"ci:{PR2}:lint") == (4, 0, 0, False) and inbox[f"ci:{PR2}:lint"]["latest"]["status"] == "failure"
    assert row(f"ci:{PR2}:unit-tests") == (1, 0, 0, False)
    # One check run naming two pull requests: once per pull request, neither a repeat.
    assert row(f"ci:{PR2}:build") == row("ci:https://github.com/Codertocat/Hello-World/pull/3:build") == (1, 0, 0, False)
    # A check suite rerequested with nothing new: a repeat.
    assert row(f"ci:{PR2}:suite:octocoders-linter") == (2, 1, 0, False)
    # Two reviewers: two causes; an edit and a dismissal: new revisions.
    assert row(f"review:{PR2}:237895671") == (2, 0, 0, False) and inbox[f"review:{PR2}:237895671"]["latest"]["status"] == "dismissed"
    assert row(f"review:{PR2}:237895672") == (2, 0, 0, False)
    thread = f"thread:{PR2}:PRRT_kwDOFd42Pc4rQOUv"  # one cause per thread (docs/sources.md: an extension)
    assert row(thread) == (2, 0, 0, False) and inbox[thread]["latest"]["status"] == "unresolved"
    views = json.loads(TRACE.with_suffix(".views.json").read_text(encoding="utf-8"))
    assert views["rejections"] == [{"line": 42, "type": "observe", "reason": "duplicate_input"}]  # the redelivery
    # ping and two checks naming no pull request: recorded as ignored, rows of their own, nothing to triage.
    ignored = {key: (row["revision"], row["triage_state"], row["ignored"], row["retained"]) for key, row in inbox.items() if row["ignored"]}
    assert ignored == {
        "github:https://github.com/Octocoders/Hello-World:ping": (0, None, 1, False),
        "github:http://github.com/github/hello-world:check_run.rerequested": (0, None, 1, False),
        "github:https://github.com/electron/electron:check_run.requested_action": (0, None, 1, False),
    }
    assert len(inbox) == 15


def test_the_same_content_under_another_guid_is_a_repeat(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    payload = example("payload-examples/issue_comment/created.payload.json")
    lines = [one("issue_comment", payload, guid=guid, at=at) for guid, at in (("g1", "2026-03-02T10:00:00Z"), ("g2", "2026-03-02T10:00:05Z"))]
    trace.write_bytes(b"".join(msgspec.json.encode(line) + b"\n" for line in lines))
    done = tandem("replay", str(trace), "--json")
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["inbox"]
    assert (row["revision"], row["repeats"]) == (1, 1)


def test_webhook_and_trace_cut_a_text_the_same_way() -> None:
    payload = example("payload-examples/issue_comment/created.payload.json")
    payload["comment"]["body"] = "\x1b" * 200_000
    with_at = one("issue_comment", payload)
    without = one("issue_comment", payload, at=None)
    assert "at" not in without and without["text"] == with_at["text"] and without["fingerprint"] == with_at["fingerprint"]


def test_an_observation_too_big_for_a_line_even_without_text_is_a_bad_delivery() -> None:
    payload = example("payload-examples/issue_comment/created.payload.json")
    payload["issue"]["html_url"] = "https://github.com/" + "😀" * 262_100  # a scope of over 1 MiB, within the characters
    with pytest.raises(DeliveryInvalid, match=r"delivery .* \(issue_comment.created\): the observation it maps to is over the 1048576-byte line limit"):
        map_delivery(Delivery(GUID, "issue_comment", "2026-03-02T10:00:00Z", payload))
