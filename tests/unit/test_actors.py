"""Who may send each input kind (contract section 1: "the first is the
default"; a kind that says nothing accepts only `human`) is written twice,
in the contract and on each kind's class (`actors`, gathered in `ACTORS` of
domain/inputs.py): here they are compared, kind by kind, so that neither a
kind left at the default by mistake nor a misspelt actor goes unnoticed."""

from __future__ import annotations

import re
import typing
from pathlib import Path

from tandem.domain.inputs import ACTORS, accepted_actors
from tandem.domain.inputs import AnyInput

DOCS = Path(__file__).resolve().parents[2] / "docs"
KINDS = {cls.__struct_config__.tag for cls in typing.get_args(AnyInput)}


def _v1_table() -> dict[str, tuple[str, ...]]:
    """docs/contract.md's "Every kind at a glance": kind -> actors, in order."""
    text = (DOCS / "contract.md").read_text(encoding="utf-8")
    table = text.split("### Every kind at a glance", 1)[1].split("\n### ", 1)[0]
    found = {}
    for kind, actors in re.findall(r"^\| \[`([a-z_.]+)`\]\([^)]*\) \| ([^|]+) \|", table, re.M):
        found[kind] = ("human",) if actors.strip() == "human only" else tuple(re.findall(r"`(\w+)`", actors))
    return found


def _v12_actors() -> dict[str, tuple[str, ...]]:
    """docs/contract-v1.2.md: the first "Actor ..." line after each kind's heading."""
    found = {}
    kind = None
    for line in (DOCS / "contract-v1.2.md").read_text(encoding="utf-8").splitlines():
        heading = re.match(r"#{3,4} (?:[\d.]+ )?`([a-z_.]+)`(?: / `[a-z_.]+`)?$", line)
        if heading:
            kind = heading.group(1)
        elif kind is not None and line.startswith("Actor "):
            found[kind] = tuple(re.findall(r"`(\w+)`", line.split(".", 1)[0]))
            kind = None
    return found


def test_every_key_of_the_actors_table_is_an_input_kind() -> None:
    assert set(ACTORS) <= KINDS, sorted(set(ACTORS) - KINDS)


def test_the_contract_and_the_actors_table_agree_kind_by_kind() -> None:
    written = {**_v1_table(), **_v12_actors()}
    assert len(_v1_table()) >= 45, "the contract's table was not read"
    missing = sorted(KINDS - set(written))
    differ = {kind: (actors, accepted_actors(kind)) for kind, actors in written.items() if accepted_actors(kind) != actors}
    assert not differ, f"contract vs ACTORS: {differ}"
    assert not missing or set(missing) <= _PAIRED, f"kinds whose actors the contract does not state: {missing}"


# Kinds documented under one heading with another (`host.suspend` / `host.resume`):
# their actors are the first one's, checked here too.
_PAIRED = {"host.resume"}


def test_paired_kinds_take_their_partners_actors() -> None:
    assert accepted_actors("host.resume") == accepted_actors("host.suspend")
