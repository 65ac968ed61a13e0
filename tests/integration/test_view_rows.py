"""The row Structs of projections/rows.py describe the views exactly: every
row of every fixture's views (the `.views.json` files, which
tests/e2e/test_fixtures.py holds to what the engine prints) converts to its
view's Struct, refusing any key the Struct does not name, and back to the
same keys, in the same order, with the same values; each state `Literal` is
its lifecycle's states. So `/openapi.json`, built from the Structs, cannot
drift from what the views say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import msgspec
import pytest

from tandem.adapters.runtime import LiveEngine
from tandem.adapters.store import open_store
from tandem.adapters.trace import read_trace
from tandem.domain import lifecycles
from tandem.projections import VIEW_NAMES
from tandem.projections.rows import STATE_LITERALS, VALUE_VIEWS, VIEW_ROWS
from tests.integration.fixture_traces import VALID_TRACES

ROOT = Path(__file__).resolve().parents[2]
VIEWS = sorted((ROOT / "fixtures").glob("*/*.views.json"))


def _rows(name: str, value: Any) -> list[Any]:
    return [value] if name in VALUE_VIEWS else value


def _check(name: str, row: Any, where: str) -> None:
    struct = msgspec.convert(row, VIEW_ROWS[name])  # strict: no coercion, no unknown key
    # The same bytes: every key, in the same order, with the same value (and no key the Struct adds).
    back = msgspec.json.encode(struct)
    assert back == msgspec.json.encode(row), f"{where}: {name} row as its Struct gives {back!r}"


def test_there_are_fixture_views_with_every_view_shown() -> None:
    assert len(VIEWS) >= 60
    shown = {name for path in VIEWS for name, value in json.loads(path.read_text()).items() if value}
    assert shown == set(VIEW_NAMES), set(VIEW_NAMES) - shown


@pytest.mark.parametrize("path", VIEWS, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_every_row_converts_exactly_to_its_view_s_struct(path: Path) -> None:
    document = json.loads(path.read_text())
    assert tuple(document) == VIEW_NAMES == tuple(VIEW_ROWS)
    for name, value in document.items():
        for index, row in enumerate(_rows(name, value)):
            _check(name, row, f"{path.name} {name}[{index}]")


def test_a_key_the_struct_does_not_name_is_refused() -> None:
    row = json.loads((ROOT / "fixtures" / "gates" / "02_prerequisite_user_away.views.json").read_text())["actions"][0]
    with pytest.raises(msgspec.ValidationError, match="unknown field `surprise`"):
        msgspec.convert({**row, "surprise": 1}, VIEW_ROWS["actions"])
    with pytest.raises(msgspec.ValidationError, match="missing required field `envelope`"):
        msgspec.convert({key: value for key, value in row.items() if key != "envelope"}, VIEW_ROWS["actions"])


def test_each_state_literal_is_its_lifecycle_s_states() -> None:
    for name, literal in STATE_LITERALS.items():
        assert get_args(literal) == getattr(lifecycles, name).states, name


TRACES = [Path(path) for path in VALID_TRACES]


@pytest.mark.parametrize("path", TRACES, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_every_row_after_every_input_converts_exactly_too(path: Path) -> None:
    """Not only the final views: what each view shows on the way (a deferral
    with its time, a delivery with its payload, an action out with its envelope)."""
    engine = LiveEngine(open_store("memory:"))
    assert engine.views is not None
    for line in read_trace(str(path)).lines:
        engine.submit(line.item)
        for name, value in engine.views.document().items():
            for index, row in enumerate(_rows(name, value)):
                _check(name, row, f"{path.name} line {line.item.line} {name}[{index}]")


def test_a_rejection_names_its_file_when_the_store_holds_several() -> None:
    row = {"line": 3, "type": "task.cancel", "reason": "not_authorized", "file": "http@71"}
    _check("rejections", row, "several files")
    _check("rejections", {key: value for key, value in row.items() if key != "file"}, "one file")
