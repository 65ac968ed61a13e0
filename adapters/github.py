"""GitHub webhook deliveries as `observe` inputs (docs/sources.md; contract
section 10, "GitHub"). Pure: bytes and values in, input dicts and messages
out; no file, no clock, no network.

`map_delivery` maps one delivery (its guid, event, `delivered_at` and
payload) to the inputs it observes, one per pull request it concerns, with a
note when it observes nothing (ping, an event or action not mapped, a check
naming no pull request). `convert` does it for whole files (JSON Lines of
hook-deliveries API objects, or bare payloads) and puts the inputs in
`delivered_at` order. What cannot be read is a `DeliveryInvalid` whose
message names the delivery (where it is, its guid, event and action as far
as they are known); the other deliveries are still converted.

Each event is a row of `EVENTS` (its actions and the function reading its
object); the rest is shared: ids (`guid`, `guid#n` on fan-out), the
fingerprint (SHA-256 of the observation as mapped, its whole text
included), the text cut to the engine's limits, and a last check of every
input through the engine's own decoder, so nothing written is refused later.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from tandem.domain.inputs import decode_input, format_at, text_chars_max
from tandem.domain.nesting import lone_surrogate_error, repeated_key_error
from tandem.replay.traces import line_bytes_max

payload_bytes_max = 25 * 1_048_576  # GitHub delivers no payload over 25 MB
delivery_line_bytes_max = 32 * 1_048_576  # a hook-deliveries object: the payload, headers, response
bare_guid_hex_chars = 32
# The `at` a line is measured with (the longest format_at writes), so that a
# text is cut the same with any `at` or none (the webhook's: the server stamps it).
_at_placeholder = "0000-00-00T00:00:00.000000Z"
_epoch = "1970-01-01T00:00:00Z"
_TYPE_NAMES = {str: "a string", int: "a number", dict: "an object", list: "a list", bool: "true or false"}


class DeliveryInvalid(ValueError):
    """A delivery that cannot be mapped; the message names it."""


@dataclass(frozen=True, slots=True)
class Delivery:
    """One webhook delivery. `delivered_at`: RFC 3339 UTC as format_at
    writes it, or None (the webhook: the server stamps `at`). `where`: where
    it was read (`FILE:LINE`, or empty), for messages."""

    guid: str
    event: str
    delivered_at: str | None
    payload: Any
    where: str = ""

    @property
    def action(self) -> str | None:
        action = self.payload.get("action") if isinstance(self.payload, dict) else None
        return action if isinstance(action, str) else None

    @property
    def name(self) -> str:
        """`FILE:LINE: delivery GUID (EVENT.ACTION)`, as far as known."""
        what = self.event if self.action is None else f"{self.event}.{self.action}"
        return f"{self.where + ': ' if self.where else ''}delivery {self.guid} ({what})"


@dataclass(frozen=True, slots=True)
class Mapped:
    """What one delivery observes: its inputs (trace lines as dicts, `at`
    left out when the delivery has no `delivered_at`), and `note`, why it
    observes nothing when it does not. `unmapped`: its event or action is not
    one this module maps (ping and a check naming no pull request are)."""

    inputs: list[dict[str, Any]]
    note: str | None = None
    unmapped: bool = False


# ------------------------------------------------------------ the payload


class _Payload:
    """The payload, read by dotted paths (`comment.user.login`); a missing
    or mistyped value is a DeliveryInvalid naming the delivery and the path."""

    def __init__(self, delivery: Delivery) -> None:
        if not isinstance(delivery.payload, dict):
            raise DeliveryInvalid(f"{delivery.name}: the payload is {_type_name(delivery.payload)}, not an object")
        self.delivery = delivery
        self.value: dict[str, Any] = delivery.payload

    def get(self, path: str, kind: type, required: bool = True, within: Any = None, prefix: str = "") -> Any:
        node: Any = self.value if within is None else within
        walked = prefix
        for part in path.split("."):
            if not isinstance(node, dict):
                raise self.invalid(f"payload.{walked} is {_type_name(node)}, not an object")
            walked = f"{walked}.{part}" if walked else part
            node = node.get(part)
            if node is None:
                if required:
                    raise self.invalid(f"payload.{walked} is missing")
                return None
        if not isinstance(node, kind) or (kind is int and isinstance(node, bool)):
            raise self.invalid(f"payload.{walked} is {_type_name(node)}, not {_TYPE_NAMES[kind]}")
        return node

    def ident(self, path: str) -> str:
        """An object's id: a number or a string (a node id)."""
        value = self.get(path, object)
        if type(value) not in (int, str) or value == "":
            raise self.invalid(f"payload.{path} is {_type_name(value)}, not an id (a number or a string)")
        return str(value)

    def time(self, path: str, required: bool = False) -> str | None:
        text = self.get(path, str, required)
        if text is None:
            return None
        moment = parse_time(text)
        if moment is None:
            raise self.invalid(f"payload.{path} {text[:40]!r} is not an RFC 3339 time with a zone")
        return format_at(moment)

    def invalid(self, message: str) -> DeliveryInvalid:
        return DeliveryInvalid(f"{self.delivery.name}: {message}")

    @property
    def repo(self) -> str:
        return self.get("repository.full_name", str)

    @property
    def repo_url(self) -> str:
        return self.get("repository.html_url", str).rstrip("/")


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    for kind, name in _TYPE_NAMES.items():
        if type(value) is kind:
            return name
    return type(value).__name__


def parse_time(text: str) -> datetime.datetime | None:
    """An RFC 3339 time with a zone (`Z` or an offset), in UTC; else None."""
    if len(text) < 20 or text[10] not in "Tt":
        return None
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.astimezone(datetime.timezone.utc)


# ------------------------------------------------------- what each event says


@dataclass(frozen=True, slots=True)
class Facts:
    """One object as observed, before fan-out: `scopes` (one input each)."""

    object_type: str  # the `{type}` of `github:{repo}:{type}:{id}`
    object_id: str
    kind: str
    scopes: list[str]
    subject: str | None = None
    status: str | None = None
    complete: bool = True
    source_time: str | None = None
    commit_sha: str | None = None
    evidence_ref: str | None = None
    text: str | None = None


def _comment(payload: _Payload, object_type: str, scope_path: str) -> Facts:
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


def _issue_comment(payload: _Payload) -> Facts:
    return _comment(payload, "issue_comment", "issue.html_url")


def _review_comment(payload: _Payload) -> Facts:
    return _comment(payload, "review_comment", "pull_request.html_url")


def _review(payload: _Payload) -> Facts:
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


def _pull_scopes(payload: _Payload, path: str) -> list[str]:
    """`{repository.html_url}/pull/{number}` of each pull request listed."""
    scopes = []
    for number, item in enumerate(payload.get(path, list)):
        pull = payload.get("number", int, within=item, prefix=f"{path}[{number}]")
        scopes.append(f"{payload.repo_url}/pull/{pull}")
    return scopes


def _ci_status(payload: _Payload, path: str) -> tuple[str, bool]:
    """(the conclusion once there is one, else the status; complete)."""
    status = payload.get(f"{path}.status", str)
    conclusion = payload.get(f"{path}.conclusion", str, required=False)
    return conclusion if conclusion is not None else status, status == "completed"


def _check_run(payload: _Payload) -> Facts:
    status, complete = _ci_status(payload, "check_run")
    output = [payload.get(f"check_run.output.{part}", str, required=False) for part in ("title", "summary")]
    text = "\n\n".join(part for part in output if part) or None
    return Facts(
        object_type="check_run",
        object_id=payload.ident("check_run.id"),
        kind="ci",
        scopes=_pull_scopes(payload, "check_run.pull_requests"),
        subject=payload.get("check_run.name", str),
        status=status,
        complete=complete,
        source_time=payload.time("check_run.completed_at") or payload.time("check_run.started_at"),
        commit_sha=payload.get("check_run.head_sha", str, required=False),
        evidence_ref=payload.get("check_run.html_url", str, required=False),
        text=text,
    )


def _check_suite(payload: _Payload) -> Facts:
    status, complete = _ci_status(payload, "check_suite")
    return Facts(
        object_type="check_suite",
        object_id=payload.ident("check_suite.id"),
        kind="ci",
        scopes=_pull_scopes(payload, "check_suite.pull_requests"),
        subject=f"suite:{payload.get('check_suite.app.name', str)}",  # never a check run's name
        status=status,
        complete=complete,
        source_time=payload.time("check_suite.updated_at"),
        commit_sha=payload.get("check_suite.head_sha", str, required=False),
    )


def _status(payload: _Payload) -> Facts:
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


def _thread(payload: _Payload) -> Facts:
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
    read: Callable[[_Payload], Facts]
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


# --------------------------------------------------------------- mapping


def map_delivery(delivery: Delivery) -> Mapped:
    """The inputs one delivery observes (see the module's docstring)."""
    payload = _Payload(delivery)
    if delivery.event == PING:
        return Mapped([], f"{delivery.name}: ping (hook {payload.value.get('hook_id')}): nothing to observe")
    mapping = EVENTS.get(delivery.event)
    if mapping is None:
        return Mapped([], f"{delivery.name}: not mapped: event {delivery.event!r} (mapped: {', '.join(sorted(EVENTS))})", True)
    if delivery.action not in mapping.actions:
        actions = ", ".join(sorted(action for action in mapping.actions if action is not None))
        return Mapped([], f"{delivery.name}: not mapped: action {delivery.action!r} of {delivery.event} (mapped: {actions})", True)
    facts = mapping.read(payload)
    if not facts.scopes:
        return Mapped([], f"{delivery.name}: names no pull request: nothing to observe")
    deleted = delivery.action in mapping.deleting
    source_id = f"github:{payload.repo}:{facts.object_type}:{facts.object_id}"
    ids = [delivery.guid] if len(facts.scopes) == 1 else [f"{delivery.guid}#{n}" for n in range(1, len(facts.scopes) + 1)]
    inputs = [_input(delivery, facts, source_id, scope, identifier, deleted) for identifier, scope in zip(ids, facts.scopes)]
    return Mapped(inputs)


def _input(delivery: Delivery, facts: Facts, source_id: str, scope: str, identifier: str, deleted: bool) -> dict[str, Any]:
    observed: dict[str, Any] = {"source_id": source_id, "kind": facts.kind, "scope": scope}
    optional = {
        "subject": facts.subject,
        "status": facts.status,
        "complete": facts.complete,
        "deleted": True if deleted else None,
        "source_time": facts.source_time,
        "commit_sha": facts.commit_sha,
        "evidence_ref": facts.evidence_ref,
    }
    observed.update((key, value) for key, value in optional.items() if value is not None)
    head: dict[str, Any] = {"type": "observe", "id": identifier}
    if delivery.delivered_at is not None:
        head["at"] = delivery.delivered_at
    head["actor"] = "source"
    line = {**head, **observed, "fingerprint": fingerprint(observed, facts.text)}
    if facts.text is not None:
        _fit_text(line, facts.text)
    _check(line, delivery)
    return line


def fingerprint(observed: dict[str, Any], text: str | None) -> str:
    """`sha256:` + the SHA-256 of the observation as mapped (its keys sorted,
    compact JSON, UTF-8; the whole text, before any cut): the same object in
    the same state is the same fingerprint, whichever delivery brought it."""
    body = {**observed, "text": text}
    return "sha256:" + hashlib.sha256(msgspec.json.encode(body, order="sorted")).hexdigest()


def _line_bytes(line: dict[str, Any]) -> int:
    """The line's size with the longest `at` there is, whatever its own (or
    none): a text is cut the same in a trace and through the webhook."""
    return len(msgspec.json.encode({**line, "at": _at_placeholder}))


def _fit_text(line: dict[str, Any], text: str) -> None:
    """`text` into `line`, cut to `text_chars_max` characters and so that the
    line (with an `at`) stays within `line_bytes_max`, then `truncated`."""
    line["text"] = text
    if len(text) <= text_chars_max and _line_bytes(line) <= line_bytes_max:
        return
    line["truncated"] = True
    low, high = 0, min(len(text), text_chars_max)  # the longest prefix that fits
    while low < high:
        middle = (low + high + 1) // 2
        line["text"] = text[:middle]
        if _line_bytes(line) <= line_bytes_max:
            low = middle
        else:
            high = middle - 1
    line["text"] = text[:low]


def _check(line: dict[str, Any], delivery: Delivery) -> None:
    """The engine's own decoder on the input: what it would refuse is the
    delivery's fault, said now, not a bad trace line later."""
    measured = line if "at" in line else {**line, "at": _epoch}
    if _line_bytes(line) > line_bytes_max:  # not the text's fault: it was cut to fit
        raise DeliveryInvalid(f"{delivery.name}: the observation it maps to is over the {line_bytes_max}-byte line limit")
    try:
        decode_input(msgspec.json.encode(measured))
    except (msgspec.ValidationError, msgspec.DecodeError, ValueError) as error:
        raise DeliveryInvalid(f"{delivery.name}: the observation it maps to is not a valid input: {error}") from None


# ------------------------------------------------------------- reading JSON


def decode_json(data: bytes, what: str) -> Any:
    """JSON text (UTF-8, no lone surrogate escape, no key repeated in an
    object): its value; else a DeliveryInvalid starting with `what`. A
    repeated key is refused as in an input (domain/nesting.py): readers
    disagree on which value wins, so GitHub, this mapping and any other tool
    reading the delivery could see different payloads."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DeliveryInvalid(f"{what}: not UTF-8 at byte {error.start}") from None
    try:
        value = msgspec.json.decode(data)
        repeated = repeated_key_error(data)
    except RecursionError:
        raise DeliveryInvalid(f"{what}: JSON nested too deep") from None
    except msgspec.DecodeError as error:
        raise DeliveryInvalid(f"{what}: {_json_problem(data, error)}") from None
    if repeated is not None:
        raise DeliveryInvalid(f"{what}: {repeated}")
    return value


def _json_problem(data: bytes, error: msgspec.DecodeError) -> str:
    """What is wrong: msgspec says "truncated" of a lone surrogate escape
    (`\\ud800`); the engine's own helper names it, and where, as for inputs."""
    named = lone_surrogate_error(data)
    return str(named) if named is not None else f"not JSON: {error}"


def _header(headers: Any, name: str) -> str | None:
    """A header of a hook-deliveries object's request (any case)."""
    if not isinstance(headers, dict):
        return None
    for key, value in headers.items():
        if isinstance(key, str) and key.lower() == name.lower() and isinstance(value, str):
            return value
    return None


def delivery_of(value: Any, where: str) -> Delivery:
    """A hook-deliveries API object (`guid`, `event`, `delivered_at`,
    `request: {headers, payload}`) as a Delivery. `event` and `guid` may
    instead be the request's `X-GitHub-Event` and `X-GitHub-Delivery`."""
    if not isinstance(value, dict):
        raise DeliveryInvalid(f"{where}: a delivery is an object, not {_type_name(value)}")
    request = value.get("request")
    headers = request.get("headers") if isinstance(request, dict) else None
    guid = value.get("guid") if value.get("guid") is not None else _header(headers, "X-GitHub-Delivery")
    if not isinstance(guid, str) or not guid:
        raise DeliveryInvalid(f"{where}: the delivery has no `guid`")
    event = value.get("event") if value.get("event") is not None else _header(headers, "X-GitHub-Event")
    named = f"{where}: delivery {guid}"
    if not isinstance(event, str) or not event:
        raise DeliveryInvalid(f"{named}: no `event`")
    delivered = value.get("delivered_at")
    moment = parse_time(delivered) if isinstance(delivered, str) else None
    if moment is None:
        raise DeliveryInvalid(f"{named} ({event}): `delivered_at` {delivered!r:.60} is not an RFC 3339 time with a zone")
    if not isinstance(request, dict) or "payload" not in request:
        raise DeliveryInvalid(f"{named} ({event}): no `request.payload`")
    return Delivery(guid, event, format_at(moment), request["payload"], where)


def bare_delivery(data: bytes, event: str, where: str) -> Delivery:
    """One bare payload of `event` (a file as GitHub posts it). Its guid:
    `bare-` + the first 32 hex digits of the SHA-256 of its bytes; its
    `delivered_at`: the latest RFC 3339 time with a zone in it (a delivery
    is sent after all it tells), else 1970-01-01T00:00:00Z."""
    payload = decode_json(data, where)
    guid = "bare-" + hashlib.sha256(data).hexdigest()[:bare_guid_hex_chars]
    times = [moment for moment in (parse_time(text) for text in _strings(payload)) if moment is not None]
    return Delivery(guid, event, format_at(max(times)) if times else _epoch, payload, where)


def _strings(value: Any) -> list[str]:
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            found.append(item)
    return found


# ------------------------------------------------------------ whole files


@dataclass
class Conversion:
    """A conversion's trace lines (in `delivered_at` order), its notes (what
    was not observed, and why) and errors (bad deliveries), in file order."""

    lines: list[bytes] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    deliveries: int = 0


def convert(files: Sequence[tuple[str, bytes]], event: str | None = None) -> Conversion:
    """Every delivery of `files` ((name, bytes) pairs: JSON Lines of delivery
    objects, or with `event` one bare payload each) mapped; the inputs sorted
    by `delivered_at`, stable (file order, then line order, then fan-out)."""
    result = Conversion()
    timed: list[tuple[str, int, list[dict[str, Any]]]] = []
    for name, data in files:
        for delivery in _deliveries(name, data, event, result):
            result.deliveries += 1
            try:
                mapped = map_delivery(delivery)
            except DeliveryInvalid as invalid:
                result.errors.append(str(invalid))
                continue
            if mapped.note is not None:
                result.notes.append(mapped.note)
            if mapped.inputs:
                assert delivery.delivered_at is not None
                timed.append((delivery.delivered_at, len(timed), mapped.inputs))
    timed.sort(key=lambda item: (parse_time(item[0]), item[1]))
    result.lines = [msgspec.json.encode(line) for _, _, inputs in timed for line in inputs]
    return result


def _deliveries(name: str, data: bytes, event: str | None, result: Conversion) -> list[Delivery]:
    """The deliveries of one file; what cannot be read goes to result.errors."""
    if event is not None:
        try:
            if len(data) > payload_bytes_max:
                raise DeliveryInvalid(f"{name}: {len(data)} bytes, over the {payload_bytes_max}-byte limit of a payload")
            return [bare_delivery(data, event, name)]
        except DeliveryInvalid as invalid:
            result.deliveries += 1
            result.errors.append(str(invalid))
            return []
    found: list[Delivery] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        where = f"{name}:{number}"
        try:
            if len(raw) > delivery_line_bytes_max:
                raise DeliveryInvalid(f"{where}: {len(raw)} bytes, over the {delivery_line_bytes_max}-byte limit of a delivery")
            found.append(delivery_of(_decoded(raw, where), where))
        except DeliveryInvalid as invalid:
            result.deliveries += 1
            result.errors.append(str(invalid))
    return found


def _decoded(raw: bytes, where: str) -> Any:
    """One delivery line's value; when it cannot be read, the error names
    the delivery as far as a lenient reading finds its guid and event."""
    try:
        return decode_json(raw, where)
    except DeliveryInvalid:
        pass
    try:
        value = json.loads(raw.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        value = None
    known = value if isinstance(value, dict) else {}
    guid, event = known.get("guid"), known.get("event")
    named = where + (f": delivery {guid}" if isinstance(guid, str) else "") + (f" ({event})" if isinstance(event, str) else "")
    return decode_json(raw, named)  # raises, now naming it
