"""Who may send each input kind (contract, "A trace": "the first is the
default"; a kind that says nothing accepts only `human`) is written three times:
in the contract's tables of every kind (docs/contract/README.md), under each
kind's heading in its area's file (docs/contract/AREA.md), and on each kind's
class (`actors`, gathered in `ACTORS` of domain/inputs.py). Here they are
compared, kind by kind, so that neither a kind left out of a table, or left at
the default by mistake, nor a misspelt actor goes unnoticed."""

from __future__ import annotations

import re
import typing
from pathlib import Path

from tandem.domain.inputs import ACTORS, AnyInput, accepted_actors

CONTRACT = Path(__file__).resolve().parents[2] / "docs" / "contract"
KINDS = {cls.__struct_config__.tag for cls in typing.get_args(AnyInput)}
TABLES = ("### Every kind at a glance", "### Kinds added in v1.2")


def _table(heading: str) -> dict[str, tuple[str, ...]]:
    """One of docs/contract/README.md's tables of kinds: kind -> actors, in order."""
    text = (CONTRACT / "README.md").read_text(encoding="utf-8")
    table = text.split(heading + "\n", 1)[1].split("\n#", 1)[0]
    found = {}
    for kind, actors in re.findall(r"^\| \[`([a-z_.]+)`\]\([^)]*\) \| ([^|]+) \|", table, re.M):
        found[kind] = ("human",) if actors.strip() == "human only" else tuple(re.findall(r"`(\w+)`", actors))
    return found


def _tables() -> dict[str, tuple[str, ...]]:
    return {kind: actors for heading in TABLES for kind, actors in _table(heading).items()}


def _headings() -> dict[str, tuple[str, ...]]:
    """Each area file: the "Actor ..." or "**Human only.**" line that follows a
    kind's heading, before the next heading."""
    found = {}
    for page in sorted(CONTRACT.glob("*.md")):
        kind = None
        for line in page.read_text(encoding="utf-8").splitlines():
            heading = re.match(r"#{2,5} `([a-z_.]+)`(?: / `[a-z_.]+`)?$", line)
            if line.startswith("#"):
                kind = heading.group(1) if heading else None
            elif kind is not None and line.startswith("Actor "):
                found[kind] = tuple(re.findall(r"`(\w+)`", line.split(".", 1)[0]))
                kind = None
            elif kind is not None and line.startswith("**Human only.**"):
                found[kind] = ("human",)
                kind = None
    return found


def test_every_key_of_the_actors_table_is_an_input_kind() -> None:
    assert set(ACTORS) <= KINDS, sorted(set(ACTORS) - KINDS)


def test_the_contract_and_the_actors_table_agree_kind_by_kind() -> None:
    assert len(_table(TABLES[0])) >= 45, "the contract's table was not read"
    assert len(_table(TABLES[1])) >= 12, "the table of v1.2's kinds was not read"
    for written in (_tables(), _headings()):
        missing = sorted(KINDS - set(written))
        differ = {kind: (actors, accepted_actors(kind)) for kind, actors in written.items() if accepted_actors(kind) != actors}
        assert not differ, f"contract vs ACTORS: {differ}"
        assert not missing or set(missing) <= _PAIRED, f"kinds whose actors the contract does not state: {missing}"


def test_every_kind_has_its_row_in_a_table_of_kinds() -> None:
    """The tables list every kind, `host.resume` included."""
    assert set(_tables()) == KINDS, sorted(KINDS ^ set(_tables()))


# Kinds documented under one heading with another (`host.suspend` / `host.resume`):
# their actors are the first one's, checked here too.
_PAIRED = {"host.resume"}


def test_paired_kinds_take_their_partners_actors() -> None:
    assert accepted_actors("host.resume") == accepted_actors("host.suspend")
