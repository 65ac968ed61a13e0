"""What the client's calls return, typed: the answers of docs/api.md as
msgspec Structs (a key the server adds later is ignored, never an error).

`Result` is one input's, `BatchResult` a batch's; `View`, `Views`,
`EventPage`, `Explained`, `Health` the reads'; `Message` one message of the
live stream. `ROW_KEYS` names the fields that key each view's rows
(docs/contract/views.md), for `row(view, key)`.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

import msgspec
from msgspec import Struct

from tandem.client.errors import BatchRejected, Rejected

# The fields that key a view's rows (docs/contract/views.md: sorted by them).
# `rejections` has no key (its rows are in input order); `health` and `usage`
# are a value, not rows.
ROW_KEYS: dict[str, tuple[str, ...]] = {
    "tasks": ("task_id",),
    "actions": ("operation_id",),
    "inbox": ("cause_key",),
    "questions": ("task_id", "question_key"),
    "alerts": ("alert_id",),
    "conversations": ("conversation_id",),
    "consumers": ("consumer_id",),
    "cards": ("card_id",),
    "runtimes": ("runtime_id",),
    "investigations": ("investigation_id",),
}


class EventRef(Struct, frozen=True):
    """An event an input caused: its position in the log and its type."""

    position: int
    type: str


class Result(Struct, frozen=True, kw_only=True):
    """One input's result. `position`: the head after the commit that
    recorded it (a batch's: the batch's); `at`: the recorded `at` (the
    server's stamp when the input had none); `events`: every event it caused,
    its record first. `resent`: an earlier try of this call recorded it (its
    answer was lost, or the commit's outcome unknown) and the resend was
    answered `duplicate_input`; what is shown is that earlier record's."""

    id: str | None
    line: int | None
    position: int
    at: datetime.datetime
    accepted: bool
    reason: str | None
    events: tuple[EventRef, ...]
    resent: bool = False


class BatchResult(Struct, frozen=True, kw_only=True):
    """A batch's results, one per input in line order (`inputs`, as sent,
    each with its `id`). A batch is one transaction: `position` is the head
    after it. Rejected inputs are in `results` (accepted false) and in
    `rejected`; `raise_for_rejections()` raises BatchRejected if any."""

    position: int
    results: tuple[Result, ...]
    inputs: tuple[Any, ...]

    @property
    def rejected(self) -> list[Rejected]:
        return [
            Rejected(result.reason or "unknown", sent, result)
            for sent, result in zip(self.inputs, self.results)
            if not result.accepted
        ]

    def raise_for_rejections(self) -> None:
        rejected = self.rejected
        if rejected:
            raise BatchRejected(rejected, self)


class View(Struct, frozen=True, kw_only=True):
    """One view (`GET /v1/views/{name}`): `rows`, or `value` for `health`
    and `usage`; `position`: the input boundary it is as of."""

    name: str
    position: int
    rows: list[dict[str, Any]] | None = None
    value: dict[str, Any] | None = None


class Views(Struct, frozen=True):
    """Every view (`GET /v1/views`): `views` by name, in the document's order."""

    position: int
    views: dict[str, Any]


class InputRef(Struct, frozen=True):
    """The input whose transaction holds an event: its file (`http@P` for
    an HTTP request), line and id."""

    file: str | None
    line: int | None
    id: str | None


class Event(Struct, frozen=True):
    """One event of the log (`GET /v1/events`): `body` is the event as stored."""

    position: int
    type: str
    input: InputRef | None
    body: dict[str, Any]


class EventPage(Struct, frozen=True):
    """A page of events; `next_after` is None once the page reaches the head."""

    events: list[Event]
    next_after: int | None


class Explained(Struct, frozen=True, kw_only=True):
    """`tandem explain --json` (docs/explain.md): one explanation in
    `matches` per kind the id names."""

    id: str
    position: int
    files: list[str]
    matches: list[dict[str, Any]]
    other_files: bool = False


class Health(Struct, frozen=True, kw_only=True):
    """`GET /v1/health`: `status` is "ok", or the 503's code
    (`store_unavailable`) with nothing else; a follower's or standby's keys
    and `degraded` are there when the server sends them (docs/api.md);
    `stores` for a server of several stores asked without a token."""

    status: str
    position: int | None = None
    writer: bool | None = None
    role: str | None = None
    store_head: int | None = None
    lag_events: int | None = None
    caught_up_s_ago: float | None = None
    looked_s_ago: float | None = None
    listening: bool | None = None
    writer_holder: str | None = None
    degraded: list[dict[str, Any]] | None = None
    stores: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Message:
    """One Server-Sent Events message: `id` (the position after the commit),
    `event` (`change` or `reset`) and `data` (decoded JSON)."""

    id: int | None
    event: str
    data: dict[str, Any]


# ------------------------------------------------------------------ decoding


class AnswerLine(Struct, frozen=True):
    """One line of `POST /v1/inputs`'s answer, as sent."""

    line: int | None
    at: datetime.datetime
    accepted: bool
    reason: str | None
    events: tuple[EventRef, ...]


class Answer(Struct, frozen=True):
    """`POST /v1/inputs`'s answer, as sent."""

    position: int
    results: list[AnswerLine]


def decoded(data: bytes, kind: type[Any]) -> Any:
    """An answer's body as `kind`; a body that is not one is a ValueError
    naming the route's type (a server of another version, or not Tandem)."""
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.DecodeError as error:
        raise ValueError(f"the server's answer is not a {kind.__name__}: {error}") from None


def view_of(name: str, data: bytes) -> View:
    body = decoded(data, dict)
    return View(name=name, position=body["position"], rows=body.get("rows"), value=body.get("value"))


def views_of(data: bytes) -> Views:
    body = decoded(data, dict)
    position = body.pop("position")
    return Views(position, body)


def row_of(view: View, key: str | tuple[str, ...]) -> dict[str, Any] | None:
    """The row of `view` whose key (ROW_KEYS) is `key` (a tuple for a key
    of several fields), or None."""
    names = ROW_KEYS.get(view.name)
    if names is None:
        raise ValueError(f"view {view.name!r} has no rows by key; those that do: {', '.join(ROW_KEYS)}")
    wanted = (key,) if isinstance(key, str) else tuple(key)
    if len(wanted) != len(names):
        raise ValueError(f"view {view.name!r} is keyed by {', '.join(names)}: give {len(names)} value(s), not {wanted!r}")
    for row in view.rows or ():
        if tuple(row.get(name) for name in names) == wanted:
            return row
    return None


# ------------------------------------------------------------ the work queue


class Envelope(Struct, frozen=True, kw_only=True):
    """An attempt's frozen envelope (docs/contract/views.md, "What an
    executor reads"): what to do, on what, the only paths it may write, and
    the revisions it was validated under. Times are RFC 3339 strings."""

    operation: str
    target: str
    resource: str
    write_paths: list[str]
    task_revision: int | None
    grant_revision: int
    policy_revision: int
    intent_revision: int | None
    source_revision: int | None = None
    target_sha: str | None = None
    deadline_at: str | None = None
    runtime_id: str | None = None
    tool_policy_revision: int | None = None


class WorkReply(Struct, frozen=True, kw_only=True):
    """An input the engine accepts for the attempt now: of kind `type`, with
    `operation_id` (and `attempt_id` unless None), and `choose` set to one
    of `values` (docs/api.md, "The work queue")."""

    type: str
    operation_id: str
    attempt_id: str | None
    choose: str
    values: list[str]


class WorkItem(Struct, frozen=True, kw_only=True):
    """An attempt out with the executor (`GET /v1/work`): what to do
    (`envelope`) and what to send back (`replies`, the awaited one first)."""

    operation_id: str
    attempt_id: str
    action_state: str
    attempt_state: str
    stop: bool  # cancel_requested: stop the work, then report how it ended
    awaits: str  # the kind the engine waits for: replies[0].type
    task_id: str | None
    rule_id: str | None
    cause_key: str
    envelope: Envelope
    replies: list[WorkReply]

    def reply(self, choice: str, kind: str | None = None, **fields: Any) -> Any:
        """The input answering this item: of `kind` (default: what it
        awaits), with `choice` for the field it chooses (one of its
        `values`) and any optional `fields` (an outcome's
        `artifact_revision`, `evidence_ref`, an `id`); a typed input."""
        from tandem.client.inputs import parse

        kind = self.awaits if kind is None else kind
        wanted = next((reply for reply in self.replies if reply.type == kind), None)
        if wanted is None:
            raise ValueError(f"{self.attempt_id} takes no {kind} now; it takes: {', '.join(r.type for r in self.replies)}")
        if choice not in wanted.values:
            raise ValueError(f"{kind} for {self.attempt_id}: {wanted.choose} must be one of {wanted.values}, not {choice!r}")
        body = {"type": kind, "operation_id": wanted.operation_id, wanted.choose: choice, **fields}
        if wanted.attempt_id is not None:
            body["attempt_id"] = wanted.attempt_id
        return parse(body)


class Work(Struct, frozen=True, kw_only=True):
    """`GET /v1/work`: the attempts out with the executor at `position`, oldest claim first."""

    position: int
    items: list[WorkItem]
