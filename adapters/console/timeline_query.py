"""What the console's timeline is asked (docs/api.md, "The console"): its
filters, read from the query and checked (a bad one is `400 invalid_query`,
naming it), and the position its scrubber asks for.

The scrubber is a form of two fields both named `at`, a slider and a
number box, and `was`, the position the page showed. With the page's script
they are kept equal (and the script sends `at` alone); without it a person
moves one of them and the form sends both: the one that differs from `was`
is the one moved (the box, when both differ)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from tandem.adapters.console.reading import position_query
from tandem.adapters.service import ApiError
from tandem.replay.input_timeline import Chosen

text_chars_max = 512  # a filter's text: longer is no id, type or actor of this engine


@dataclass(frozen=True)
class Asked:
    """The timeline's filters as given (shown again in the form) and as read."""

    given: dict[str, str]  # type, actor, id, from, to: the text given, "" when not
    chosen: Chosen

    @property
    def filtered(self) -> bool:
        return any(self.given.values())


FIELDS = ("type", "actor", "id", "from", "to")


def asked(parameters: Any) -> Asked:
    given = {name: _text(parameters.get(name), name) for name in FIELDS}
    chosen = Chosen(
        kind=given["type"] or None,
        actor=given["actor"] or None,
        identifier=given["id"] or None,
        since=_time(given["from"], "from"),
        until=_time(given["to"], "to"),
    )
    return Asked(given, chosen)


def _text(value: str | None, name: str) -> str:
    text = (value or "").strip()
    if len(text) > text_chars_max:
        raise ApiError(400, "invalid_query", f"?{name}=: at most {text_chars_max} characters")
    return text


def _time(text: str, name: str) -> datetime.datetime | None:
    """An instant: RFC 3339 (or ISO 8601, a date alone being its midnight);
    without an offset, UTC."""
    if not text:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise ApiError(400, "invalid_query", f"?{name}={text[:40]!r}: a time, like 2026-03-01T09:00:00Z") from None
    return moment.replace(tzinfo=datetime.UTC) if moment.tzinfo is None else moment.astimezone(datetime.UTC)


def scrubbed(parameters: Any) -> int | None:
    """The position `?at=` asks for; from the scrubber, the field moved
    (see the module's docstring)."""
    values = [value for value in parameters.getall("at", []) if value != ""]
    if len(set(values)) > 1:
        moved = [value for value in values if value != parameters.get("was")]
        values = moved[-1:] or values[-1:]
    return position_query(values[0] if values else None)
