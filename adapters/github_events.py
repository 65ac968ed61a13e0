"""What each GitHub event says (docs/sources.md, "The mapping"): one reader
per event, from a payload to the `Facts` of the object it concerns, and the
table `EVENTS` (event -> the actions mapped and the reader) that
adapters/github.py maps deliveries with. Pure: a payload in, Facts out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tandem.adapters.github_payload import Facts, Payload, ci_status, pull_scopes


def _comment(payload: Payload, object_type: str, scope_path: str) -> Facts:
    return Facts(
        object_type=object_type,
        object_id=payload.ident("comment.id"),
        kind="comment",
        scopes=[payload.get(scope_path, str)],
        source_time=payload.time("comment.updated_at"),
        commit_sha=payload.get("comment.commit_id", str, required=False),
        evidence_ref=payload.get("comment.html_url", str, required=False),
        text=payload.get("comment.body", str, required=False),
    )


def _issue_comment(payload: Payload) -> Facts:
    return _comment(payload, "issue_comment", "issue.html_url")


def _review_comment(payload: Payload) -> Facts:
    return _comment(payload, "review_comment", "pull_request.html_url")


def _review(payload: Payload) -> Facts:
    review = payload.ident("review.id")
    return Facts(
        object_type="review",
        object_id=review,
        kind="review",
        scopes=[payload.get("pull_request.html_url", str)],
        subject=review,
        status=payload.get("review.state", str),
        source_time=payload.time("review.submitted_at"),
        commit_sha=payload.get("review.commit_id", str, required=False),
        evidence_ref=payload.get("review.html_url", str, required=False),
        text=payload.get("review.body", str, required=False),
    )



def _check_run(payload: Payload) -> Facts:
    status, complete = ci_status(payload, "check_run")
    output = [payload.get(f"check_run.output.{part}", str, required=False) for part in ("title", "summary")]
    text = "\n\n".join(part for part in output if part) or None
    return Facts(
        object_type="check_run",
        object_id=payload.ident("check_run.id"),
        kind="ci",
        scopes=pull_scopes(payload, "check_run.pull_requests"),
        subject=payload.get("check_run.name", str),
        status=status,
        complete=complete,
        source_time=payload.time("check_run.completed_at") or payload.time("check_run.started_at"),
        commit_sha=payload.get("check_run.head_sha", str, required=False),
        evidence_ref=payload.get("check_run.html_url", str, required=False),
        text=text,
    )


def _check_suite(payload: Payload) -> Facts:
    status, complete = ci_status(payload, "check_suite")
    return Facts(
        object_type="check_suite",
        object_id=payload.ident("check_suite.id"),
        kind="ci",
        scopes=pull_scopes(payload, "check_suite.pull_requests"),
        subject=f"suite:{payload.get('check_suite.app.name', str)}",  # never a check run's name
        status=status,
        complete=complete,
        source_time=payload.time("check_suite.updated_at"),
        commit_sha=payload.get("check_suite.head_sha", str, required=False),
    )


def _status(payload: Payload) -> Facts:
    sha = payload.get("sha", str)
    state = payload.get("state", str)
    commit_url = f"{payload.repo_url}/commit/{sha}"
    return Facts(
        object_type="status",
        object_id=payload.ident("id"),
        kind="ci",
        scopes=[commit_url],  # a status names a commit, never a pull request
        subject=payload.get("context", str),
        status=state,
        complete=state != "pending",
        source_time=payload.time("updated_at"),
        commit_sha=sha,
        evidence_ref=payload.get("target_url", str, required=False) or commit_url,
        text=payload.get("description", str, required=False),
    )


def _thread(payload: Payload) -> Facts:
    comments = payload.get("thread.comments", list, required=False) or []
    first = payload.get("html_url", str, required=False, within=comments[0], prefix="thread.comments[0]") if comments else None
    thread = payload.ident("thread.node_id")
    return Facts(
        object_type="thread",
        object_id=thread,
        kind="thread",
        subject=thread,  # extension (docs/sources.md): one cause per thread, never a pull request's threads merged
        scopes=[payload.get("pull_request.html_url", str)],
        status=payload.get("action", str),  # resolved / unresolved
        evidence_ref=first,
    )


@dataclass(frozen=True, slots=True)
class EventMap:
    actions: frozenset[str | None]  # None: the event has no action (status)
    read: Callable[[Payload], Facts]
    deleting: frozenset[str] = frozenset()


_CHECK_ACTIONS = frozenset({"created", "requested", "rerequested", "completed"})
_COMMENT_ACTIONS = frozenset({"created", "edited", "deleted"})
EVENTS: dict[str, EventMap] = {
    "issue_comment": EventMap(_COMMENT_ACTIONS, _issue_comment, frozenset({"deleted"})),
    "pull_request_review_comment": EventMap(_COMMENT_ACTIONS, _review_comment, frozenset({"deleted"})),
    "pull_request_review": EventMap(frozenset({"submitted", "edited", "dismissed"}), _review),
    "check_run": EventMap(_CHECK_ACTIONS, _check_run),
    "check_suite": EventMap(_CHECK_ACTIONS, _check_suite),
    "status": EventMap(frozenset({None}), _status),
    "pull_request_review_thread": EventMap(frozenset({"resolved", "unresolved"}), _thread),
}
PING = "ping"
