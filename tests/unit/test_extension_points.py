"""What docs/maintaining.md's checklists would otherwise leave to memory, checked:
every input kind has a fuzz generator; every rejection the domain raises is a
reason code with its words; every blocking and hold code has explain's words and facts and the
provenance of its block; every invariant of the catalog has its row in
docs/invariants.md. Each of these, forgotten, used to fail nowhere."""

from __future__ import annotations

import re
import typing
from pathlib import Path

from tandem.domain import provenance
from tandem.domain.inputs import AnyInput
from tandem.domain.reasons import BLOCKING_CODES, REJECTIONS, TASK_HOLD_CODES
from tandem.replay.explain.blocks import BLOCK_FACTS, WAITING_TEXT
from tandem.replay.proving.generators.kinds import KINDS as GENERATORS
from tandem.replay.proving.invariants import BUILTIN

ROOT = Path(__file__).resolve().parents[2]
INPUT_KINDS = {cls.__struct_config__.tag for cls in typing.get_args(AnyInput)}


def test_every_input_kind_has_a_fuzz_generator() -> None:
    assert INPUT_KINDS - set(GENERATORS) == set(), "kinds the fuzzer never draws"


def test_every_rejection_the_domain_raises_is_a_reason() -> None:
    raised = {
        code
        for path in sorted((ROOT / "domain").rglob("*.py"))
        for code in re.findall(r"Rejected\(\s*\"([a-z_]+)\"", path.read_text(encoding="utf-8"))
    }
    assert len(raised) > 30, "the domain's rejections were not found"
    assert raised - set(REJECTIONS) == set(), "rejections that are not a reason code"


def test_every_blocking_and_hold_code_is_explained_and_has_its_provenance() -> None:
    codes = set(BLOCKING_CODES) | set(TASK_HOLD_CODES)
    assert codes - set(WAITING_TEXT) == set(), "codes explain shows bare"
    assert codes - set(BLOCK_FACTS) == set(), "codes whose facts explain shows raw"
    assert set(BLOCKING_CODES) - set(provenance._ACTION_FACTS) == set(), "a KeyError at the first block"
    assert set(TASK_HOLD_CODES) - set(provenance._TASK_FACTS) == set(), "a KeyError at the first hold"


def test_every_invariant_of_the_catalog_has_its_row_in_the_docs() -> None:
    text = (ROOT / "docs" / "invariants.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `([a-z_0-9]+)` \| (?:event|state) \|", text, re.M))
    names = {invariant.name for invariant in BUILTIN}
    assert names - rows == set(), "invariants without a row"
    assert rows - names == set(), "rows of no invariant"
