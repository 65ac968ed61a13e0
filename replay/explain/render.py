"""An explanation as text (`tandem explain`) and as JSON (`--json`)."""

from __future__ import annotations

from typing import Any

import msgspec

from tandem.replay.explain.model import Document, Explanation, Fact, InputRef, Source


def to_json(value: Document | Explanation | list[Explanation]) -> Any:
    """The JSON value (dicts and lists), as the other `to_json`s return."""
    return msgspec.to_builtins(value)


def encode_json(value: Document | Explanation | list[Explanation]) -> bytes:
    """The JSON document's bytes, indented (what `--json` and the HTTP API send)."""
    return msgspec.json.format(msgspec.json.encode(value), indent=2)


def _where(reference: InputRef | None, files: int) -> str:
    if reference is None:
        return "no input"
    if reference.line is not None:
        place = f"{reference.file}:{reference.line}" if files > 1 and reference.file else f"line {reference.line}"
    else:
        place = f"input {reference.seq}"
    text = f"{place} {reference.type}"
    if reference.id is not None:
        text += f" id={reference.id}"
    if reference.rejected is not None:
        text += f" (rejected {reference.rejected})"
    return text


def _source_text(source: Source | None, files: int) -> str:
    if source is None:
        return ""
    return f"{source.event} #{source.position}, {_where(source.input, files)}"


def _fact_text(fact: Fact, files: int) -> str:
    text = fact.text
    if fact.source is not None:
        text += f" [{_source_text(fact.source, files)}]"
    if fact.now is not None:
        now = f"now {fact.now.state}"
        if fact.now.source is not None and (fact.source is None or fact.now.source.position != fact.source.position):
            now += f" since {_where(fact.now.source.input, files)}"
        text += f"; {now}"
    return text


def _explanation_text(explanation: Explanation, files: int) -> list[str]:
    out = [f"{explanation.kind} {explanation.id}: {explanation.state}", f"  {explanation.summary}"]
    if explanation.steps_omitted:
        out.append(f"  ({explanation.steps_omitted} earlier steps omitted)")
    for link in explanation.steps:
        state = f" -> {link.state}" if link.state else ""
        times = f" x{link.count}" if link.count > 1 else ""
        cause = f"input {link.input.seq}, {_where(link.input, files)}" if link.input is not None else "no input"
        out.append(f"  #{link.position} {link.event}{times}{state}   ({cause})")
        out.append(f"      {link.summary}")
        out.extend(f"      - {_fact_text(fact, files)}" for fact in link.facts)
    if explanation.waiting:
        out.append("  waiting for:")
        for waiting in explanation.waiting:
            since = f" [since {_source_text(waiting.since, files)}]" if waiting.since is not None else ""
            out.append(f"    {waiting.code}: {waiting.text}{since}")
            out.extend(f"      - {_fact_text(fact, files)}" for fact in waiting.facts)
    if explanation.related:
        out.append(f"  see also: {', '.join(explanation.related)}")
    return out


def render_text(explained: Document) -> str:
    """Readable text: a header per match, one line per link of its chain
    (with its input) and its facts below it, then what it waits for. When
    the store holds several traces, each input's file is named beside its line."""
    files = len(explained.files) + (1 if explained.other_files else 0)  # > 1: name each input's file
    out: list[str] = []
    for number, explanation in enumerate(explained.matches):
        out.extend([""] if number else [])
        out.extend(_explanation_text(explanation, files))
    return "\n".join(out) + "\n"
