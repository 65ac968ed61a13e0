"""A GitHub delivery and its payload, read (docs/sources.md): the pieces
adapters/github_events.py reads each event with and adapters/github.py maps
with. Pure: values in, values out.

`Payload` reads a payload by dotted paths (`comment.user.login`): a value
missing or of the wrong type is a `DeliveryInvalid` naming the delivery and
the path (`payload.pull_request is missing`). `Facts` is one object as an
event's reader says it, before adapters/github.py makes inputs of it.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from tandem.domain.inputs import format_at

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



# ------------------------------------------------------------ the payload


class Payload:
    """The payload, read by dotted paths (`comment.user.login`); a missing
    or mistyped value is a DeliveryInvalid naming the delivery and the path."""

    def __init__(self, delivery: Delivery) -> None:
        if not isinstance(delivery.payload, dict):
            raise DeliveryInvalid(f"{delivery.name}: the payload is {type_name(delivery.payload)}, not an object")
        self.delivery = delivery
        self.value: dict[str, Any] = delivery.payload

    def get(self, path: str, kind: type, required: bool = True, within: Any = None, prefix: str = "") -> Any:
        node: Any = self.value if within is None else within
        walked = prefix
        for part in path.split("."):
            if not isinstance(node, dict):
                raise self.invalid(f"payload.{walked} is {type_name(node)}, not an object")
            walked = f"{walked}.{part}" if walked else part
            node = node.get(part)
            if node is None:
                if required:
                    raise self.invalid(f"payload.{walked} is missing")
                return None
        if not isinstance(node, kind) or (kind is int and isinstance(node, bool)):
            raise self.invalid(f"payload.{walked} is {type_name(node)}, not {_TYPE_NAMES[kind]}")
        return node

    def ident(self, path: str) -> str:
        """An object's id: a number or a string (a node id)."""
        value = self.get(path, object)
        if type(value) not in (int, str) or value == "":
            raise self.invalid(f"payload.{path} is {type_name(value)}, not an id (a number or a string)")
        return str(value)

    def time(self, path: str, required: bool = False) -> str | None:
        text = self.get(path, str, required)
        if text is None:
            return None
        moment = parse_time(text)
        if moment is None:
            raise self.invalid(f"payload.{path} {text[:40]!r} is not an RFC 3339 time with a zone")
        return format_at(moment)

    def time_or_epoch(self, path: str) -> str | None:
        """A time written either way GitHub writes one: RFC 3339 with a zone,
        or an integer of seconds since the epoch (an installation's times)."""
        value = self.get(path, object, required=False)
        if value is None or type(value) is str:
            return self.time(path)
        if type(value) is not int:
            raise self.invalid(f"payload.{path} is {type_name(value)}, not a time (RFC 3339 with a zone, or seconds since the epoch)")
        try:
            return format_at(datetime.datetime.fromtimestamp(value, datetime.timezone.utc))
        except (OverflowError, OSError, ValueError):
            raise self.invalid(f"payload.{path} {value} is not a time: out of range as seconds since the epoch") from None

    def invalid(self, message: str) -> DeliveryInvalid:
        return DeliveryInvalid(f"{self.delivery.name}: {message}")

    @property
    def repo(self) -> str:
        return self.get("repository.full_name", str)

    @property
    def repo_url(self) -> str:
        return self.get("repository.html_url", str).rstrip("/")


def type_name(value: Any) -> str:
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


# ------------------------------------------------------- what an event says


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
    # Hashed into the fingerprint, never observed: the sorted label names of
    # a pull request or an issue, so that labelling one is a new revision.
    labels: list[str] | None = None
    # The `{repo}` of `github:{repo}:{type}:{id}` for an object of no
    # repository (an installation: its account's login); else the payload's.
    owner: str | None = None
    deleted: bool = False  # deleted, whatever the action (a push deleting its branch)


def pull_scopes(payload: Payload, path: str) -> list[str]:
    """`{repository.html_url}/pull/{number}` of each pull request listed."""
    scopes = []
    for number, item in enumerate(payload.get(path, list)):
        pull = payload.get("number", int, within=item, prefix=f"{path}[{number}]")
        scopes.append(f"{payload.repo_url}/pull/{pull}")
    return scopes


def ci_status(payload: Payload, path: str) -> tuple[str, bool]:
    """(the conclusion once there is one, else the status; complete)."""
    status = payload.get(f"{path}.status", str)
    conclusion = payload.get(f"{path}.conclusion", str, required=False)
    return conclusion if conclusion is not None else status, status == "completed"
