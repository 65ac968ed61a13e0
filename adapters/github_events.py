"""What each GitHub event says (docs/sources.md, "The mapping"): one reader
per event, from a payload to the `Facts` of the object it concerns, and the
table `EVENTS` (event -> the actions mapped and the reader) that
adapters/github.py maps deliveries with. Pure: a payload in, Facts out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

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


def _titled(payload: Payload, path: str) -> str:
    """A pull request's or an issue's title, a blank line and its body (the
    title alone when the body is null or empty)."""
    title = payload.get(f"{path}.title", str)
    body = payload.get(f"{path}.body", str, required=False)
    return f"{title}\n\n{body}" if body else title


def _labels(payload: Payload, path: str) -> list[str]:
    """The sorted names of the labels at `path` (none when it is missing)."""
    labels = payload.get(path, list, required=False) or []
    return sorted(payload.get("name", str, within=label, prefix=f"{path}[{n}]") for n, label in enumerate(labels))


def _pull_request(payload: Payload) -> Facts:
    url = payload.get("pull_request.html_url", str)
    state = payload.get("pull_request.state", str)
    merged = payload.get("pull_request.merged", bool, required=False) is True
    draft = payload.get("pull_request.draft", bool, required=False) is True
    status = "merged" if state == "closed" and merged else "draft" if state == "open" and draft else state
    return Facts(
        object_type="pull_request",
        object_id=str(payload.get("pull_request.number", int)),
        kind="pull_request",
        scopes=[url],  # no subject: one cause per pull request, each action a revision of it
        status=status,
        source_time=payload.time("pull_request.updated_at"),
        commit_sha=payload.get("pull_request.head.sha", str),  # synchronize moves it: repairs for the old head are stale
        evidence_ref=url,
        text=_titled(payload, "pull_request"),
        labels=_labels(payload, "pull_request.labels"),
    )


def _issue(payload: Payload) -> Facts:
    url = payload.get("issue.html_url", str)
    return Facts(
        object_type="issue",
        object_id=str(payload.get("issue.number", int)),
        kind="issue",
        scopes=[url],
        status=payload.get("issue.state", str),
        source_time=payload.time("issue.updated_at"),
        evidence_ref=url,
        text=_titled(payload, "issue"),
        labels=_labels(payload, "issue.labels"),
    )


def _push(payload: Payload) -> Facts:
    ref = payload.get("ref", str)
    page = next((f"{payload.repo_url}/{kind}/{ref.removeprefix(prefix)}" for prefix, kind in _REF_PAGES.items() if ref.startswith(prefix)), None)
    if page is None or page.endswith("/"):
        raise payload.invalid(f"payload.ref {ref[:80]!r} names neither a branch (refs/heads/NAME) nor a tag (refs/tags/NAME)")
    deleted = payload.get("deleted", bool, required=False) is True
    forced = payload.get("forced", bool, required=False) is True
    return Facts(
        object_type="push",
        object_id=ref,
        kind="push",
        scopes=[page],
        status="deleted" if deleted else "forced" if forced else "pushed",
        deleted=deleted,
        source_time=payload.time("head_commit.timestamp"),  # none when it has no head commit (a deletion)
        commit_sha=payload.get("after", str),
        evidence_ref=payload.get("compare", str, required=False),
        text=payload.get("head_commit.message", str, required=False),
    )


def _commit_page(payload: Payload, sha: str) -> str:
    return f"{payload.repo_url}/commit/{sha}"


def _workflow_run(payload: Payload) -> Facts:
    status, complete = ci_status(payload, "workflow_run")
    sha = payload.get("workflow_run.head_sha", str)
    return Facts(
        object_type="workflow_run",
        object_id=payload.ident("workflow_run.id"),
        kind="ci",
        scopes=pull_scopes(payload, "workflow_run.pull_requests") or [_commit_page(payload, sha)],  # none: the commit, as a status
        subject=f"workflow:{payload.get('workflow_run.name', str)}",
        status=status,
        complete=complete,
        source_time=payload.time("workflow_run.updated_at"),
        commit_sha=sha,
        evidence_ref=payload.get("workflow_run.html_url", str, required=False),
        text=payload.get("workflow_run.display_title", str, required=False),
    )


def _workflow_job(payload: Payload) -> Facts:
    status, complete = ci_status(payload, "workflow_job")
    sha = payload.get("workflow_job.head_sha", str)
    name = payload.get("workflow_job.name", str)
    workflow = payload.get("workflow_job.workflow_name", str, required=False)  # missing in old payloads
    return Facts(
        object_type="workflow_job",
        object_id=payload.ident("workflow_job.id"),
        kind="ci",
        scopes=[_commit_page(payload, sha)],  # a job names no pull request
        subject=f"job:{name}" if workflow is None else f"job:{workflow}/{name}",
        status=status,
        complete=complete,
        source_time=payload.time("workflow_job.completed_at") or payload.time("workflow_job.started_at"),
        commit_sha=sha,
        evidence_ref=payload.get("workflow_job.html_url", str, required=False),
    )


def _requested_action(payload: Payload) -> Facts:
    """A person clicked a button a check run offers: a request, one cause per
    check and button, on each of the check run's pull requests."""
    identifier = payload.get("requested_action.identifier", str)
    return Facts(
        object_type="check_run",
        object_id=payload.ident("check_run.id"),
        kind="request",
        scopes=pull_scopes(payload, "check_run.pull_requests"),
        subject=f"{payload.get('check_run.name', str)}:{identifier}",
        status=identifier,
        commit_sha=payload.get("check_run.head_sha", str, required=False),
        evidence_ref=payload.get("check_run.html_url", str, required=False),
    )


def _installation(payload: Payload) -> Facts:
    login = payload.get("installation.account.login", str)
    repositories = payload.get("repositories", list, required=False) or []
    names = [payload.get("full_name", str, within=item, prefix=f"repositories[{n}]") for n, item in enumerate(repositories)]
    return Facts(
        object_type="installation",
        object_id=payload.ident("installation.id"),
        kind="installation",
        owner=login,  # an installation has no repository: its account's
        scopes=[payload.get("installation.html_url", str, required=False) or f"https://github.com/{login}"],
        status=payload.get("action", str),
        source_time=payload.time_or_epoch("installation.updated_at"),
        text="\n".join(names) or None,
    )


Reader = Callable[[Payload], Facts]


@dataclass(frozen=True, slots=True)
class EventMap:
    """An event's row: the actions `read` reads (None: an event without
    actions), those of them that delete, and actions read by a reader of
    their own (`check_run`'s `requested_action`: a click, not a check)."""

    actions: frozenset[str | None]
    read: Reader
    deleting: frozenset[str] = frozenset()
    own: Mapping[str, Reader] = field(default_factory=dict)

    @property
    def mapped(self) -> frozenset[str | None]:
        return self.actions | frozenset(self.own)

    def reader(self, action: str | None) -> Reader:
        return self.own.get(action, self.read) if action is not None else self.read


_CHECK_ACTIONS = frozenset({"created", "requested", "rerequested", "completed"})
_COMMENT_ACTIONS = frozenset({"created", "edited", "deleted"})
_PULL_REQUEST_ACTIONS = frozenset(
    {"opened", "synchronize", "closed", "reopened", "ready_for_review", "edited", "labeled", "unlabeled", "converted_to_draft"}
)
_ISSUE_ACTIONS = frozenset({"opened", "edited", "closed", "reopened", "labeled", "unlabeled", "deleted"})
_INSTALLATION_ACTIONS = frozenset({"created", "deleted", "suspend", "unsuspend", "new_permissions_accepted"})
_DELETED = frozenset({"deleted"})
EVENTS: dict[str, EventMap] = {
    "issue_comment": EventMap(_COMMENT_ACTIONS, _issue_comment, _DELETED),
    "pull_request_review_comment": EventMap(_COMMENT_ACTIONS, _review_comment, _DELETED),
    "pull_request_review": EventMap(frozenset({"submitted", "edited", "dismissed"}), _review),
    "check_run": EventMap(_CHECK_ACTIONS, _check_run, own={"requested_action": _requested_action}),
    "check_suite": EventMap(_CHECK_ACTIONS, _check_suite),
    "status": EventMap(frozenset({None}), _status),
    "pull_request_review_thread": EventMap(frozenset({"resolved", "unresolved"}), _thread),
    "pull_request": EventMap(_PULL_REQUEST_ACTIONS, _pull_request),
    "push": EventMap(frozenset({None}), _push),
    "workflow_run": EventMap(frozenset({"requested", "in_progress", "completed"}), _workflow_run),
    "workflow_job": EventMap(frozenset({"queued", "in_progress", "completed", "waiting"}), _workflow_job),
    "issues": EventMap(_ISSUE_ACTIONS, _issue, _DELETED),
    "installation": EventMap(_INSTALLATION_ACTIONS, _installation, _DELETED),
}
PING = "ping"
# A push's ref and the page its scope is: a branch's tree, a tag's release.
_REF_PAGES = {"refs/heads/": "tree", "refs/tags/": "releases/tag"}
