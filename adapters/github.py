"""GitHub webhook deliveries as `observe` inputs (docs/sources.md; contract
section 10, "GitHub"). Pure: bytes and values in, input dicts and messages
out; no file, no clock, no network.

`map_delivery` maps one delivery (its guid, event, `delivered_at` and
payload) to the inputs it observes, one per pull request it concerns, or to
one ignored observation with a note why (ping, an event or action not
mapped, a check naming no pull request: recorded, never dropped). `convert` does it for whole files (JSON Lines of
hook-deliveries API objects, or bare payloads) and puts the inputs in
`delivered_at` order. What cannot be read is a `DeliveryInvalid` whose
message names the delivery (where it is, its guid, event and action as far
as they are known); the other deliveries are still converted.

Each event is a row of `EVENTS` (adapters/github_events.py: its actions and
the function reading its object; the payload's reading is
adapters/github_payload.py); the rest is here, shared: ids (`guid`, `guid#n`
on fan-out), the fingerprint (SHA-256 of the observation as mapped, its whole
text included), the text cut to the engine's limits, and a last check of
every input through the engine's own decoder, so nothing written is refused
later. The names of those two modules that callers use are importable from
here too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from tandem.adapters.github_events import EVENTS, PING, EventMap
from tandem.adapters.github_payload import Delivery, DeliveryInvalid, Facts, Payload, parse_time, type_name
from tandem.domain.inputs import decode_input, format_at, text_chars_max
from tandem.domain.nesting import lone_surrogate_error, repeated_key_error
from tandem.replay.traces import line_bytes_max

__all__ = [
    "EVENTS",
    "PING",
    "Conversion",
    "Delivery",
    "DeliveryInvalid",
    "EventMap",
    "Facts",
    "Mapped",
    "bare_delivery",
    "convert",
    "decode_json",
    "delivery_of",
    "fingerprint",
    "map_delivery",
    "parse_time",
    "payload_bytes_max",
]

payload_bytes_max = 25 * 1_048_576  # GitHub delivers no payload over 25 MB
delivery_line_bytes_max = 32 * 1_048_576  # a hook-deliveries object: the payload, headers, response
bare_guid_hex_chars = 32
# The `at` a line is measured with (the longest format_at writes), so that a
# text is cut the same with any `at` or none (the webhook's: the server stamps it).
_at_placeholder = "0000-00-00T00:00:00.000000Z"
_epoch = "1970-01-01T00:00:00Z"


@dataclass(frozen=True, slots=True)
class Mapped:
    """What one delivery observes: its inputs (trace lines as dicts, `at`
    left out when the delivery has no `delivered_at`), and `note`, why it is
    recorded as ignored when it is (**extension**, docs/sources.md: ping, an
    event or action not mapped, a check naming no pull request: one ignored
    observation, never nothing). `unmapped`: its event or action is not one
    this module maps."""

    inputs: list[dict[str, Any]]
    note: str | None = None
    unmapped: bool = False


# --------------------------------------------------------------- mapping


def map_delivery(delivery: Delivery) -> Mapped:
    """The inputs one delivery observes (see the module's docstring)."""
    payload = Payload(delivery)
    if delivery.event == PING:
        return _ignored(delivery, payload, f"ping (hook {payload.value.get('hook_id')})")
    mapping = EVENTS.get(delivery.event)
    if mapping is None:
        return _ignored(delivery, payload, f"not mapped: event {delivery.event!r} (mapped: {', '.join(sorted(EVENTS))})", True)
    if delivery.action not in mapping.mapped:
        actions = ", ".join(sorted(action for action in mapping.mapped if action is not None))
        return _ignored(delivery, payload, f"not mapped: action {delivery.action!r} of {delivery.event} (mapped: {actions})", True)
    facts = mapping.reader(delivery.action)(payload)
    if not facts.scopes:
        return _ignored(delivery, payload, "names no pull request")
    deleted = facts.deleted or delivery.action in mapping.deleting
    source_id = f"github:{facts.owner or payload.repo}:{facts.object_type}:{facts.object_id}"
    ids = [delivery.guid] if len(facts.scopes) == 1 else [f"{delivery.guid}#{n}" for n in range(1, len(facts.scopes) + 1)]
    inputs = [_input(delivery, facts, source_id, scope, identifier, deleted) for identifier, scope in zip(ids, facts.scopes)]
    return Mapped(inputs)


def _ignored(delivery: Delivery, payload: Payload, reason: str, unmapped: bool = False) -> Mapped:
    """A delivery nothing acts on, recorded all the same (**extension**): one
    observation `ignored: true` of kind `github`, its cause
    `github:{owner's page}:{event}.{action}`, its text the reason."""
    owner, page = _owner(payload.value)
    what = delivery.event if delivery.action is None else f"{delivery.event}.{delivery.action}"
    facts = Facts(object_type=delivery.event, object_id="", kind="github", scopes=[page], subject=what, text=reason)
    line = _input(delivery, facts, f"github:{owner}:{delivery.event}", page, delivery.guid, False, ignored=True)
    return Mapped([line], f"{delivery.name}: {reason}: recorded as ignored", unmapped)


def _owner(value: Any) -> tuple[str, str]:
    """(the repository's full name or the account's login, its page), read
    leniently (an event this module does not map may have any shape)."""
    def text(*path: str) -> str | None:
        found = value
        for key in path:
            found = found.get(key) if isinstance(found, dict) else None
        return found if isinstance(found, str) and found else None

    repo, page = text("repository", "full_name"), text("repository", "html_url")
    if repo is not None and page is not None:
        return repo, page.rstrip("/")
    for path in (("organization", "login"), ("installation", "account", "login"), ("sender", "login")):
        login = text(*path)
        if login is not None:
            return login, f"https://github.com/{login}"
    return "github", "https://github.com"


def _input(
    delivery: Delivery, facts: Facts, source_id: str, scope: str, identifier: str, deleted: bool, ignored: bool = False
) -> dict[str, Any]:
    observed: dict[str, Any] = {"source_id": source_id, "kind": facts.kind, "scope": scope}
    optional = {
        "subject": facts.subject,
        "status": facts.status,
        "complete": facts.complete,
        "deleted": True if deleted else None,
        "source_time": facts.source_time,
        "commit_sha": facts.commit_sha,
        "evidence_ref": facts.evidence_ref,
        "ignored": True if ignored else None,
    }
    observed.update((key, value) for key, value in optional.items() if value is not None)
    head: dict[str, Any] = {"type": "observe", "id": identifier}
    if delivery.delivered_at is not None:
        head["at"] = delivery.delivered_at
    head["actor"] = "source"
    line = {**head, **observed, "fingerprint": fingerprint(observed, facts.text, facts.labels)}
    if facts.text is not None:
        _fit_text(line, facts.text)
    _check(line, delivery)
    return line


def fingerprint(observed: dict[str, Any], text: str | None, labels: list[str] | None = None) -> str:
    """`sha256:` + the SHA-256 of the observation as mapped (its keys sorted,
    compact JSON, UTF-8; the whole text, before any cut): the same object in
    the same state is the same fingerprint, whichever delivery brought it.
    A pull request's or an issue's sorted label names are hashed too (as
    `labels`), so that labelling it is a new revision, never a repeat."""
    body = {**observed, "text": text} if labels is None else {**observed, "text": text, "labels": labels}
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
        raise DeliveryInvalid(f"{where}: a delivery is an object, not {type_name(value)}")
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
    was recorded as ignored, and why) and errors (bad deliveries), in file order."""

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
