"""An explanation as text (`tandem explain`) and as JSON (`--json`).

Every string of the document the text shows (ids, states, summaries, fact
texts, file names: much of it written by inputs) goes through `shown`, by
default replay/printable.py's `printable` (contract section 10, "Text on a
terminal": control characters and bidi overrides escaped, never raw).
Nothing is cut. The JSON is the document as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from tandem.replay.explain.model import Document, Explanation, Fact, InputRef, Source
from tandem.replay.printable import printable


def to_json(value: Document | Explanation | list[Explanation]) -> Any:
    """The JSON value (dicts and lists), as the other `to_json`s return."""
    return msgspec.to_builtins(value)


def encode_json(value: Document | Explanation | list[Explanation]) -> bytes:
    """The JSON document's bytes, indented (what `--json` and the HTTP API send)."""
    return msgspec.json.format(msgspec.json.encode(value), indent=2)


Shown = Callable[[str], str]


class _Writer:
    """Writes one document's text: `files` > 1 names each input's file,
    `shown` makes each of the document's strings fit to print."""

    def __init__(self, files: int, shown: Shown) -> None:
        self.files = files
        self.shown = shown

    def where(self, reference: InputRef | None) -> str:
        if reference is None:
            return "no input"
        shown = self.shown
        if reference.line is not None:
            many = self.files > 1 and reference.file
            place = f"{shown(reference.file or '')}:{reference.line}" if many else f"line {reference.line}"
        else:
            place = f"input {reference.seq}"
        text = f"{place} {shown(reference.type)}"
        if reference.id is not None:
            text += f" id={shown(reference.id)}"
        if reference.rejected is not None:
            text += f" (rejected {shown(reference.rejected)})"
        return text

    def source(self, source: Source | None) -> str:
        if source is None:
            return ""
        return f"{self.shown(source.event)} #{source.position}, {self.where(source.input)}"

    def fact(self, fact: Fact) -> str:
        text = self.shown(fact.text)
        if fact.source is not None:
            text += f" [{self.source(fact.source)}]"
        if fact.now is not None:
            now = f"now {self.shown(fact.now.state)}"
            if fact.now.source is not None and (fact.source is None or fact.now.source.position != fact.source.position):
                now += f" since {self.where(fact.now.source.input)}"
            text += f"; {now}"
        return text

    def explanation(self, explanation: Explanation) -> list[str]:
        shown = self.shown
        out = [
            f"{shown(explanation.kind)} {shown(explanation.id)}: {shown(explanation.state)}",
            f"  {shown(explanation.summary)}",
        ]
        if explanation.steps_omitted:
            out.append(f"  ({explanation.steps_omitted} earlier steps omitted)")
        for link in explanation.steps:
            state = f" -> {shown(link.state)}" if link.state else ""
            times = f" x{link.count}" if link.count > 1 else ""
            cause = f"input {link.input.seq}, {self.where(link.input)}" if link.input is not None else "no input"
            out.append(f"  #{link.position} {shown(link.event)}{times}{state}   ({cause})")
            out.append(f"      {shown(link.summary)}")
            out.extend(f"      - {self.fact(fact)}" for fact in link.facts)
        if explanation.waiting:
            out.append("  waiting for:")
            for waiting in explanation.waiting:
                since = f" [since {self.source(waiting.since)}]" if waiting.since is not None else ""
                out.append(f"    {shown(waiting.code)}: {shown(waiting.text)}{since}")
                out.extend(f"      - {self.fact(fact)}" for fact in waiting.facts)
        if explanation.related:
            out.append(f"  see also: {', '.join(shown(related) for related in explanation.related)}")
        return out


def render_text(explained: Document, shown: Shown = printable) -> str:
    """Readable text: a header per match, one line per link of its chain
    (with its input) and its facts below it, then what it waits for. When
    the store holds several traces, each input's file is named beside its line.
    Each string of the document goes through `shown` (escaped for a
    terminal unless told otherwise)."""
    files = len(explained.files) + (1 if explained.other_files else 0)  # > 1: name each input's file
    writer = _Writer(files, shown)
    out: list[str] = []
    for number, explanation in enumerate(explained.matches):
        out.extend([""] if number else [])
        out.extend(writer.explanation(explanation))
    return "\n".join(out) + "\n"
