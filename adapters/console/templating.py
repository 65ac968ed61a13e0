"""The console's pages: Jinja2 templates, escaped by construction.

Autoescaping is on for every template, and every value a template prints
goes through `printable` first (adapters/terminal.py): text that came from an
input — a goal, an answer, a comment — is shown as text, its control
characters and bidirectional overrides visibly escaped (`\\x1b`, `\\u202e`),
never as markup and never as an invisible reordering. Values are never put
in an `href` unless they went through `part` (percent-encoded path part) and
the link is built by the template from a fixed prefix (or by `href`, from a
fixed prefix per kind of link, each part encoded: adapters/console/holds.py).
Times are shown as they are kept (ISO 8601 UTC) with their age beside, by
the engine's clock (`ago`), never the browser's.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import jinja2
from markupsafe import Markup, escape

from tandem.adapters.console.figures import GLOBALS as FIGURES
from tandem.adapters.console.holds import Link, href
from tandem.adapters.terminal import printable, printable_lines
from tandem.domain.inputs import format_at
from tandem.domain.reasons import BLOCK_WORDS, HOLD_WORDS  # blocked_by codes and task holds in words, the domain's

TEMPLATES = Path(__file__).resolve().parent / "templates"



def _finalize(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, Markup):
        return value  # made by a macro or the template itself, already escaped
    if isinstance(value, str):
        return printable(value)
    return value


def pretty_json(value: Any) -> Markup:
    """A value as indented JSON, for a <pre>: escaped as every text is (its
    control characters and bidi overrides visibly, its newlines kept)."""
    return escape(printable_lines(json.dumps(value, indent=2, ensure_ascii=False)))


def parse_time(text: str | None) -> datetime.datetime | None:
    if not text:
        return None
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def age(seconds: float | None) -> str:
    """A duration for people: `45 s`, `3 min`, `3 h 12 min`, `2 d 3 h`."""
    if seconds is None:
        return "?"
    total = max(0, int(seconds))
    days, rest = divmod(total, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} min"
    return f"{secs} s"


def by_priority(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Inbox rows by notification priority (highest first, none last), then age."""
    return sorted(rows, key=lambda r: (r["notification_priority"] is None, -(r["notification_priority"] or 0), r["first_seen_at"]))


def since(at: str | None, now: datetime.datetime | None) -> str:
    """How long before the engine's clock `now` the time `at` was."""
    moment = parse_time(at)
    if moment is None or now is None:
        return "?"
    return age((now - moment).total_seconds())


def ago(at: str | None, now: datetime.datetime | None) -> str:
    """`at` from the engine's clock `now`, in words: `3 d 2 h ago`, `in 5 min`, `now`."""
    moment = parse_time(at)
    if moment is None or now is None:
        return "?"
    seconds = (now - moment).total_seconds()
    if seconds == 0:
        return "now"
    return f"{age(seconds)} ago" if seconds > 0 else f"in {age(-seconds)}"


def link_href(link: Link, seen: Any) -> str:
    """A hold's link (adapters/console/holds.py), as of the page's position."""
    return href(link, seen.position if seen.past else None)


def part(value: Any) -> str:
    """A path part, percent-encoded (ids hold `/`, `:` and `//`)."""
    return quote(str(value), safe="")


def query(**parameters: Any) -> str:
    given = {name: value for name, value in parameters.items() if value not in (None, "")}
    return "?" + urlencode(given) if given else ""


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        finalize=_finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(age=age, part=part, block_words=BLOCK_WORDS.__getitem__)
    env.filters.update(hold_words=HOLD_WORDS.__getitem__, by_priority=by_priority, href=link_href)
    env.filters.update(pretty_json=pretty_json, instant=format_at)
    env.globals.update(since=since, ago=ago, query=query)
    env.globals.update(FIGURES)  # the task graph, the lifecycles' current state
    return env


ENVIRONMENT = environment()


def render(template: str, **context: Any) -> str:
    return ENVIRONMENT.get_template(template).render(**context)
