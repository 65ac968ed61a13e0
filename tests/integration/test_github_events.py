"""The events an orchestrator acts on, mapped (adapters/github_events.py,
docs/sources.md "The mapping"), on the payloads vendored from octokit/webhooks
(fixtures/github/): pull requests, pushes, workflow runs and jobs, issues, a
check run's requested action and installations.

1. each event field by field, and the cause the engine gives it;
2. what makes a new revision: a synchronize's head, a label;
3. bad payloads: what each event needs, named;
4. fixtures/github/events.jsonl, converted (fixtures/traces/github_events.jsonl):
   its views show the story.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tandem.adapters.github import Delivery, DeliveryInvalid, map_delivery
from tandem.domain.inputs import decode_input
from tandem.domain.inbox.rules import default_cause_key

ROOT = Path(__file__).resolve().parents[2]
GITHUB = ROOT / "fixtures" / "github"
TRACE = ROOT / "fixtures" / "traces" / "github_events.jsonl"
REPO = "https://github.com/Codertocat/Hello-World"
PR2 = f"{REPO}/pull/2"
ISSUE1 = f"{REPO}/issues/1"
GUID = "4b1d2c00-15ef-11f1-8f6a-0e4f3503ccbe"
HEAD = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
# What a line says of the object; not its delivery (type, id, at, actor) nor its fingerprint.
DELIVERY_KEYS = ("type", "id", "at", "actor", "fingerprint")


def example(relative: str) -> dict[str, Any]:
    return json.loads((GITHUB / relative).read_bytes())


def pull(action: str = "opened") -> dict[str, Any]:
    return example(f"payload-examples/pull_request/{action}.payload.json")


def mapped(event: str, payload: Any) -> list[dict[str, Any]]:
    result = map_delivery(Delivery(GUID, event, "2026-03-02T10:00:00Z", payload))
    assert result.note is None, result.note
    for line in result.inputs:
        decode_input(msgspec.json.encode(line))  # what the engine takes
    return result.inputs


def one(event: str, payload: Any) -> dict[str, Any]:
    (line,) = mapped(event, payload)
    return line


def observed(line: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in line.items() if key not in DELIVERY_KEYS}


def cause(line: dict[str, Any]) -> str:
    return default_cause_key(decode_input(msgspec.json.encode(line)))  # type: ignore[arg-type]


# ------------------------------------------------------------ pull requests


def test_a_pull_request_field_by_field() -> None:
    line = one("pull_request", pull())
    assert observed(line) == {
        "source_id": "github:Codertocat/Hello-World:pull_request:2",
        "kind": "pull_request",
        "scope": PR2,
        "status": "open",
        "complete": True,
        "source_time": "2019-05-15T15:20:33Z",  # updated_at
        "commit_sha": HEAD,  # head.sha
        "evidence_ref": PR2,
        "text": "Update the README with new information.\n\nThis is a pretty simple change that we need to pull into master.",
    }
    assert cause(line) == f"pull_request:{PR2}"  # no subject: one cause per pull request


@pytest.mark.parametrize(
    ("action", "changes", "status"),
    [
        ("closed", {"merged": True}, "merged"),
        ("closed", {"merged": False}, "closed"),
        ("closed", {"merged": False, "draft": True}, "closed"),  # a closed draft is closed
        ("converted_to_draft", {}, "draft"),
        ("opened", {"draft": True}, "draft"),
        ("ready_for_review", {}, "open"),
        ("reopened", {}, "open"),
    ],
)
def test_a_pull_requests_status(action: str, changes: dict[str, Any], status: str) -> None:
    payload = pull(action)
    payload["pull_request"].update(changes)
    assert one("pull_request", payload)["status"] == status


def test_every_action_of_a_pull_request_is_a_revision_of_one_cause() -> None:
    payloads = [pull(action) for action in ("opened", "synchronize", "labeled", "unlabeled", "closed", "reopened", "ready_for_review", "converted_to_draft")]
    payloads.append(example("derived/pull_request/edited.payload.json"))
    lines = [one("pull_request", payload) for payload in payloads]
    assert {cause(line) for line in lines} == {f"pull_request:{PR2}"}
    assert {line["source_id"] for line in lines} == {"github:Codertocat/Hello-World:pull_request:2"}


def test_a_synchronize_moves_the_commit_and_so_the_fingerprint() -> None:
    before = one("pull_request", pull("synchronize"))
    moved = pull("synchronize")
    moved["pull_request"]["head"]["sha"] = "b7d0d0b6c3c9d0b7e6f4d5d6b0a8a9e4d0c1f2a3"
    after = one("pull_request", moved)
    assert (before["commit_sha"], after["commit_sha"]) == (HEAD, "b7d0d0b6c3c9d0b7e6f4d5d6b0a8a9e4d0c1f2a3")
    assert cause(before) == cause(after) and before["fingerprint"] != after["fingerprint"]


def test_labels_are_in_the_fingerprint_and_nowhere_else() -> None:
    plain = pull("labeled")
    labelled = copy.deepcopy(plain)
    label = labelled["pull_request"]["labels"][0]
    labelled["pull_request"]["labels"] = [dict(label, name="urgent"), label]
    reordered = copy.deepcopy(labelled)
    reordered["pull_request"]["labels"].reverse()
    first, second, third = (one("pull_request", payload) for payload in (plain, labelled, reordered))
    assert observed(first) == observed(second)  # a label is no field of the observation
    assert first["fingerprint"] != second["fingerprint"]  # but a new revision
    assert second["fingerprint"] == third["fingerprint"]  # sorted: their order is no change
    issue = example("payload-examples/issues/labeled.payload.json")
    unlabelled = copy.deepcopy(issue)
    unlabelled["issue"]["labels"] = []
    assert one("issues", issue)["fingerprint"] != one("issues", unlabelled)["fingerprint"]


def test_a_pull_request_without_a_body_is_its_title() -> None:
    payload = pull()
    payload["pull_request"]["body"] = None
    assert one("pull_request", payload)["text"] == "Update the README with new information."


def test_a_pull_request_action_not_in_the_row_is_recorded_as_ignored() -> None:
    result = map_delivery(Delivery(GUID, "pull_request", None, pull("assigned")))
    reason = (
        "not mapped: action 'assigned' of pull_request "
        "(mapped: closed, converted_to_draft, edited, labeled, opened, ready_for_review, reopened, synchronize, unlabeled)"
    )
    assert result.unmapped and result.note == f"delivery {GUID} (pull_request.assigned): {reason}: recorded as ignored"
    (line,) = result.inputs
    assert observed(line) == {
        "source_id": "github:Codertocat/Hello-World:pull_request",
        "kind": "github",
        "scope": REPO,
        "subject": "pull_request.assigned",
        "complete": True,
        "ignored": True,
        "text": reason,
    }


# ------------------------------------------------------------------ pushes


def test_a_push_to_a_branch_field_by_field() -> None:
    line = one("push", example("payload-examples/push/with-new-branch.payload.json"))
    assert observed(line) == {
        "source_id": "github:Codertocat/Hello-World:push:refs/heads/master",
        "kind": "push",
        "scope": f"{REPO}/tree/master",
        "status": "pushed",
        "complete": True,
        "source_time": "2019-05-15T15:19:25Z",  # head_commit.timestamp
        "commit_sha": "6113728f27ae82c7b1a177c8d03f9e96e0adf246",  # after
        "evidence_ref": f"{REPO}/commit/6113728f27ae82c7b1a177c8d03f9e96e0adf246",  # compare
        "text": "Initial commit",
    }
    assert cause(line) == f"push:{REPO}/tree/master"


def test_a_tag_deleted_and_a_forced_push() -> None:
    deleted = one("push", example("payload-examples/push/payload.json"))
    assert (deleted["scope"], deleted["status"], deleted["deleted"]) == (f"{REPO}/releases/tag/simple-tag", "deleted", True)
    assert "source_time" not in deleted and "text" not in deleted  # no head commit
    assert deleted["commit_sha"] == "0" * 40
    forced = example("payload-examples/push/with-new-branch.payload.json") | {"forced": True, "ref": "refs/heads/feature/x"}
    line = one("push", forced)
    assert (line["status"], line["scope"]) == ("forced", f"{REPO}/tree/feature/x") and "deleted" not in line


# ----------------------------------------------------------- workflows


def test_a_workflow_run_on_a_pull_request_and_on_a_commit() -> None:
    payload = example("payload-examples/workflow_run/completed.with-pull-requests.payload.json")
    payload["workflow_run"]["name"] = "CI"
    line = one("workflow_run", payload)
    octo = "https://github.com/octo-org/octo-repo"
    assert observed(line) == {
        "source_id": "github:octo-org/octo-repo:workflow_run:289782451",
        "kind": "ci",
        "scope": f"{octo}/pull/2",  # as a check run's: {repository.html_url}/pull/{number}
        "subject": "workflow:CI",
        "status": "success",
        "complete": True,
        "source_time": "2020-10-05T16:33:49Z",
        "commit_sha": "3484a3fb816e0859fd6e1cea078d76385ff50625",
        "evidence_ref": f"{octo}/actions/runs/289782451",
        "text": "ci(action): update actions/setup-node digest to 8c91899",  # display_title
    }
    assert cause(line) == f"ci:{octo}/pull/2:workflow:CI"
    requested = one("workflow_run", example("payload-examples/workflow_run/requested.payload.json"))
    assert requested["scope"] == f"{octo}/commit/3484a3fb816e0859fd6e1cea078d76385ff50625"  # none named: the commit
    assert (requested["status"], requested["complete"]) == ("queued", False)
    fanned = copy.deepcopy(payload)
    fanned["workflow_run"]["pull_requests"].append(dict(fanned["workflow_run"]["pull_requests"][0], number=3))
    assert [line["id"] for line in mapped("workflow_run", fanned)] == [f"{GUID}#1", f"{GUID}#2"]


def test_a_workflow_job_field_by_field() -> None:
    line = one("workflow_job", example("payload-examples/workflow_job/completed.success.with-organization.payload.json"))
    sha = "3484a3fb816e0859fd6e1cea078d76385ff50625"
    assert observed(line) == {
        "source_id": "github:Codertocat/Hello-World:workflow_job:289782451",
        "kind": "ci",
        "scope": f"{REPO}/commit/{sha}",  # a job names no pull request
        "subject": "job:CodeQL/linters",
        "status": "success",
        "complete": True,
        "source_time": "2021-08-05T10:38:16Z",  # completed_at
        "commit_sha": sha,
        "evidence_ref": "https://github.com/octo-org/octo-repo/runs/1291536064",
    }
    running = one("workflow_job", example("payload-examples/workflow_job/in_progress.payload.json"))
    assert (running["status"], running["complete"], running["source_time"]) == ("in_progress", False, "2021-09-13T02:21:13Z")  # started_at
    waiting = one("workflow_job", example("payload-examples/workflow_job/waiting.payload.json"))
    assert (waiting["status"], waiting["subject"]) == ("waiting", "job:Env Test/test")
    old = example("payload-examples/workflow_job/queued.payload.json")
    del old["workflow_job"]["workflow_name"]  # old payloads have none
    assert one("workflow_job", old)["subject"] == "job:update"


# ------------------------------------------------------------------- issues


def test_an_issue_field_by_field() -> None:
    line = one("issues", example("payload-examples/issues/opened.payload.json"))
    assert observed(line) == {
        "source_id": "github:Codertocat/Hello-World:issue:1",
        "kind": "issue",
        "scope": ISSUE1,
        "status": "open",
        "complete": True,
        "source_time": "2019-05-15T15:20:18Z",
        "evidence_ref": ISSUE1,
        "text": "Spelling error in the README file\n\nIt looks like you accidently spelled 'commit' with two 't's.",
    }
    assert cause(line) == f"issue:{ISSUE1}"
    deleted = one("issues", example("payload-examples/issues/deleted.payload.json"))
    assert deleted["deleted"] is True and deleted["status"] == "closed" and deleted["text"] == "Spelling error in the README file"  # body ""
    closed = one("issues", example("derived/issues/closed.payload.json"))
    assert closed["status"] == "closed" and "deleted" not in closed


def test_a_comment_on_an_issue_is_on_the_issues_page_a_cause_of_its_own() -> None:
    comment = one("issue_comment", example("payload-examples/issue_comment/created.payload.json"))
    issue = one("issues", example("payload-examples/issues/opened.payload.json"))
    assert comment["scope"] == issue["scope"] == ISSUE1
    assert cause(comment) == f"comment:{ISSUE1}:github:Codertocat/Hello-World:issue_comment:492700400" != cause(issue)


# ------------------------------------------------------ requested actions


def test_a_requested_action_field_by_field() -> None:
    line = one("check_run", example("payload-examples/check_run/requested_action.payload.json"))
    electron = "https://github.com/electron/electron"
    assert observed(line) == {
        "source_id": "github:electron/electron:check_run:1494503112",
        "kind": "request",
        "scope": f"{electron}/pull/26764",
        "subject": "API Review:lgtm|26764",
        "status": "lgtm|26764",  # the button's identifier
        "complete": True,
        "commit_sha": "5bd5f196a46b8222fb7484f05faba41a73cf34bd",
        "evidence_ref": f"{electron}/runs/1494503112",
    }
    assert cause(line) == f"request:{electron}/pull/26764:API Review:lgtm|26764"


def test_a_requested_action_naming_no_pull_request_is_ignored_and_the_check_actions_are_as_before() -> None:
    payload = example("payload-examples/check_run/requested_action.payload.json")
    payload["check_run"]["pull_requests"] = []
    result = map_delivery(Delivery(GUID, "check_run", None, payload))
    assert not result.unmapped and [line["ignored"] for line in result.inputs] == [True]
    assert result.note == f"delivery {GUID} (check_run.requested_action): names no pull request: recorded as ignored"
    created = one("check_run", example("payload-examples/check_run/created.payload.json"))
    assert (created["kind"], created["subject"]) == ("ci", "Octocoders-linter")
    unknown = map_delivery(Delivery(GUID, "check_run", None, {"action": "pinned"}))
    assert unknown.unmapped and unknown.note is not None
    assert unknown.note.endswith("(mapped: completed, created, requested, requested_action, rerequested): recorded as ignored")


# ------------------------------------------------------------ installations


def test_an_installation_field_by_field() -> None:
    line = one("installation", example("payload-examples/installation/created.payload.json"))
    assert observed(line) == {
        "source_id": "github:Codertocat:installation:957387",  # no repository: the account's login
        "kind": "installation",
        "scope": "https://github.com/settings/installations/957387",
        "status": "created",
        "complete": True,
        "source_time": "2019-05-15T15:19:51Z",  # 1557933591 seconds since the epoch
        "text": "Codertocat/Hello-World",
    }
    assert cause(line) == "installation:https://github.com/settings/installations/957387"
    deleted = one("installation", example("payload-examples/installation/deleted.payload.json"))
    assert (deleted["status"], deleted["deleted"], deleted["source_id"]) == ("deleted", True, "github:octocat:installation:2")
    suspended = one("installation", example("payload-examples/installation/suspend.payload.json"))
    assert suspended["source_time"] == "2021-04-29T02:32:50Z"  # "2021-04-28T22:32:50.000-04:00", in UTC
    assert "text" not in suspended  # no repositories given


def test_an_installation_without_a_page_is_its_accounts() -> None:
    payload = example("payload-examples/installation/created.payload.json")
    del payload["installation"]["html_url"]
    payload["repositories"].append({"full_name": "Codertocat/Other"})
    line = one("installation", payload)
    assert line["scope"] == "https://github.com/Codertocat" and line["text"] == "Codertocat/Hello-World\nCodertocat/Other"


# ---------------------------------------------------------- bad payloads


def _without(relative: str, path: str) -> dict[str, Any]:
    payload = example(relative)
    *parents, last = path.split(".")
    node = payload
    for key in parents:
        node = node[key]
    del node[last]
    return payload


def _with(relative: str, path: str, value: Any) -> dict[str, Any]:
    payload = example(relative)
    *parents, last = path.split(".")
    node = payload
    for key in parents:
        node = node[key]
    node[last] = value
    return payload


PR = "payload-examples/pull_request/synchronize.payload.json"
BAD: dict[str, tuple[str, dict[str, Any], str]] = {
    "pull request head": ("pull_request", _without(PR, "pull_request.head.sha"), "(pull_request.synchronize): payload.pull_request.head.sha is missing"),
    "pull request number": ("pull_request", _with(PR, "pull_request.number", "2"), "payload.pull_request.number is a string, not a number"),
    "pull request title": ("pull_request", _without(PR, "pull_request.title"), "payload.pull_request.title is missing"),
    "a label's name": ("pull_request", _with(PR, "pull_request.labels", [{"id": 1}]), "payload.pull_request.labels[0].name is missing"),
    "push ref": ("push", _without("payload-examples/push/with-new-branch.payload.json", "ref"), "(push): payload.ref is missing"),
    "push after": ("push", _without("payload-examples/push/with-new-branch.payload.json", "after"), "payload.after is missing"),
    "push to a ref neither branch nor tag": (
        "push",
        _with("payload-examples/push/with-new-branch.payload.json", "ref", "refs/notes/x"),
        "payload.ref 'refs/notes/x' names neither a branch (refs/heads/NAME) nor a tag (refs/tags/NAME)",
    ),
    "workflow run head": ("workflow_run", _without("payload-examples/workflow_run/requested.payload.json", "workflow_run.head_sha"), "payload.workflow_run.head_sha is missing"),
    "workflow run name": ("workflow_run", _without("payload-examples/workflow_run/requested.payload.json", "workflow_run.name"), "payload.workflow_run.name is missing"),
    "workflow job name": ("workflow_job", _without("payload-examples/workflow_job/queued.payload.json", "workflow_job.name"), "(workflow_job.queued): payload.workflow_job.name is missing"),
    "issue number": ("issues", _without("payload-examples/issues/opened.payload.json", "issue.number"), "(issues.opened): payload.issue.number is missing"),
    "issue state": ("issues", _without("payload-examples/issues/opened.payload.json", "issue.state"), "payload.issue.state is missing"),
    "requested action": ("check_run", _without("payload-examples/check_run/requested_action.payload.json", "requested_action"), "payload.requested_action is missing"),
    "installation account": ("installation", _without("payload-examples/installation/created.payload.json", "installation.account"), "payload.installation.account is missing"),
    "installation time": (
        "installation",
        _with("payload-examples/installation/created.payload.json", "installation.updated_at", [1]),
        "payload.installation.updated_at is a list, not a time (RFC 3339 with a zone, or seconds since the epoch)",
    ),
    "installation time out of range": (
        "installation",
        _with("payload-examples/installation/created.payload.json", "installation.updated_at", 10**20),
        "payload.installation.updated_at 100000000000000000000 is not a time: out of range as seconds since the epoch",
    ),
    "installation time as text": (
        "installation",
        _with("payload-examples/installation/created.payload.json", "installation.updated_at", "yesterday"),
        "payload.installation.updated_at 'yesterday' is not an RFC 3339 time with a zone",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_payload_without_what_its_event_needs_is_named(case: str) -> None:
    event, payload, expected = BAD[case]
    with pytest.raises(DeliveryInvalid) as raised:
        map_delivery(Delivery(GUID, event, None, payload))
    assert str(raised.value).startswith(f"delivery {GUID} ({event}") and expected in str(raised.value), str(raised.value)


# ------------------------------------------------------------ the fixture


def test_the_events_fixture_views_show_the_story() -> None:
    views = json.loads(TRACE.with_suffix(".views.json").read_text(encoding="utf-8"))
    inbox = {row["cause_key"]: row for row in views["inbox"]}

    def row(key: str) -> tuple[Any, ...]:
        found = inbox[key]
        return found["revision"], found["repeats"], found["out_of_order"], found["partial"], found["latest"]["status"]

    head, new_head = HEAD, "9f3c1e5b7d2a4c6e8f0a1b3d5c7e9a2b4d6f8e01"
    # Opened as a draft, labelled, a new head, edited, ready, merged: six revisions of one cause.
    assert row(f"pull_request:{PR2}") == (6, 0, 0, False, "merged")
    assert inbox[f"pull_request:{PR2}"]["latest"]["excerpt"].startswith("Update the README with new information and a contributing guide.\n\n")
    assert row(f"ci:{PR2}:workflow:CI") == (2, 0, 0, False, "failure")  # requested (partial), then failed
    assert row(f"ci:{REPO}/commit/{head}:job:CI/test") == (1, 0, 0, False, "failure")  # a job: the commit's page
    assert row(f"request:{PR2}:lint:fix-lint") == (1, 0, 0, False, "fix-lint")
    assert row(f"push:{REPO}/tree/master") == (1, 0, 0, False, "pushed")
    assert row(f"issue:{ISSUE1}") == (3, 0, 0, False, "closed")  # opened, labelled, closed
    assert inbox[f"comment:{ISSUE1}:github:Codertocat/Hello-World:issue_comment:492700500"]["latest"]["excerpt"] == "Fixed in #2."
    assert row("installation:https://github.com/settings/installations/957387") == (1, 0, 0, False, "created")
    assert len(inbox) == 8 and views["rejections"] == []
    # The synchronize moved the pull request's commit: the trace says which head each revision is of.
    lines = [json.loads(line) for line in TRACE.read_bytes().splitlines() if not line.startswith(b"//")]
    heads = [line["commit_sha"] for line in lines if line["kind"] == "pull_request"]
    assert heads == [head, head, new_head, new_head, new_head, new_head]
