"""Nesting is bounded at the edge: free-form JSON (`constraints`) deeper than
`nesting_depth_max` levels is a schema error, never a RecursionError from the
decoder nor a state the snapshot writer cannot pickle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tandem.adapters.cli import main
from tandem.adapters.store import open_store
from tandem.domain.inputs import DelegateTask, ReviseTask, _FREE_FORM_FIELDS, decode_input, nesting_depth_max
from tandem.domain.nesting import repeated_key_error, unbounded_integer_error
from tandem.replay.engine import Engine, Located
from tests.unit.helpers import at, delegate, revise_task, tick, world

# The input object is level 1 and `constraints` level 2: lists under
# `constraints.a` start at level 3.
LISTS_AT_THE_LIMIT = nesting_depth_max - 2
REFUSAL = f"nested deeper than {nesting_depth_max} levels - at `$.constraints.a[0][0]…`"


def nested_lists(depth: int) -> str:
    return "[" * depth + "]" * depth


def delegate_line(lists: int, type_last: bool = False) -> str:
    """A task.delegate line whose `constraints.a` is `lists` nested lists (as
    text: json.dumps itself recurses, and 100,000 levels would crash it)."""
    fields = {k: v for k, v in delegate("t9", constraints={"b": [1, {"x": 2}], "a": "DEEP"}).items() if k != "type"}
    body = json.dumps(fields).removeprefix("{").removesuffix("}").replace('"DEEP"', nested_lists(lists))
    return f'{{{body}, "type": "task.delegate"}}' if type_last else f'{{"type": "task.delegate", {body}}}'


def refusal(line: str) -> str:
    with pytest.raises(msgspec.ValidationError) as caught:
        decode_input(line)
    return str(caught.value)


def test_only_the_kinds_with_free_form_fields_are_walked() -> None:
    assert _FREE_FORM_FIELDS == {DelegateTask: ("constraints",), ReviseTask: ("constraints",)}


@pytest.mark.parametrize("type_last", [False, True])
def test_nesting_at_the_limit_is_accepted(type_last: bool) -> None:
    value = decode_input(delegate_line(LISTS_AT_THE_LIMIT, type_last))
    assert isinstance(value, DelegateTask)
    assert json.dumps(value.constraints["a"]) == nested_lists(LISTS_AT_THE_LIMIT)


@pytest.mark.parametrize("lists", [LISTS_AT_THE_LIMIT + 1, 500, 1_000, 100_000])
@pytest.mark.parametrize("type_last", [False, True])
def test_deeper_nesting_is_refused_with_the_limit_and_where(lists: int, type_last: bool) -> None:
    # 500 levels decode (then walked), 1,000 and more exhaust the decoder's
    # stack (then scanned): the same schema error either way.
    assert refusal(delegate_line(lists, type_last)) == REFUSAL


def test_a_revision_is_bounded_too_and_objects_are_levels() -> None:
    deep: Any = {}
    for _ in range(LISTS_AT_THE_LIMIT - 1):
        deep = {"k": deep}
    decode_input(json.dumps(revise_task(constraints={"k": deep})))  # at the limit
    message = refusal(json.dumps(revise_task(constraints={"k": {"k": deep}})))
    assert message == f"nested deeper than {nesting_depth_max} levels - at `$.constraints.k.k.k…`"


def test_the_path_names_odd_keys_as_msgspec_does_and_strings_are_not_brackets() -> None:
    line = delegate_line(100_000).replace('"a": [', '"a b\\"[{": [').replace('"goal": "', '"goal": "[[[[{{{{')
    message = refusal(line)
    assert message == f"nested deeper than {nesting_depth_max} levels - at `$.constraints[...][0][0]…`"
    walked = refusal(delegate_line(500).replace('"a": [', '"a b\\"[{": ['))
    assert walked == message


def test_a_trace_with_too_deep_a_line_is_a_schema_error_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "deep.jsonl"
    lines = [json.dumps(tick(at=at(0))), delegate_line(1_000), delegate_line(100_000), delegate_line(LISTS_AT_THE_LIMIT)]
    trace.write_text("\n".join(lines) + "\n")
    url = f"sqlite:///{tmp_path / 'events.db'}"
    for command in ("ingest", "replay"):
        code = main([command, str(trace), "--store", url])
        err = capsys.readouterr().err
        assert code == 2, err
        assert f"line 2: {REFUSAL}\nline 3: {REFUSAL}\n" in err
        assert "line 1:" not in err and "line 4:" not in err
        store = open_store(url)
        assert store.head() == 0
        store.close()


def test_a_state_holding_input_nested_at_the_limit_can_be_snapshotted(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'events.db'}")
    engine = Engine(store, snapshot_every=0)
    for number, line in enumerate(world(), start=1):
        engine.submit(Located(decode_input(json.dumps(line)), line=number))
    engine.submit(Located(decode_input(delegate_line(LISTS_AT_THE_LIMIT)), line=len(world()) + 1))
    assert json.dumps(engine.state.tasks.by_id["t9"].constraints["a"]) == nested_lists(LISTS_AT_THE_LIMIT)
    written = engine.write_snapshot()
    assert written.position == store.head()
    reopened = Engine(store)
    assert reopened.snapshot_position == store.head()
    assert reopened.state.tasks.by_id["t9"].constraints == engine.state.tasks.by_id["t9"].constraints
    store.close()


# ------------------------------------------------- bounded integers (issue 15)


def _open(**fields: object) -> bytes:
    line = {"type": "conversation.open", "at": "2026-03-01T09:00:00Z", "actor": "daemon", "conversation_id": "fg",
            "role": "foreground", "context_limit": 1000, "reserve": 10, **fields}  # fmt: skip
    return json.dumps(line).encode()


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"context_limit": 10**30}, "$.context_limit"),
        ({"context_limit": 2**53 + 1}, "$.context_limit"),
    ],
    ids=["10^30", "2^53+1"],
)
def test_an_integer_past_2_53_is_a_schema_error_naming_where(fields: dict, where: str) -> None:
    with pytest.raises(msgspec.ValidationError, match=r"out of range \(at most 2\^53 = 9,007,199,254,740,992 in magnitude\)") as caught:
        decode_input(_open(**fields))
    assert str(caught.value).endswith(f"- at `{where}`")


def test_an_integer_deep_in_free_form_json_is_found_and_cut_when_shown() -> None:
    line = json.dumps(delegate(at=at(0), constraints={"limits": [1, 2, {"n": 10**40}]})).encode()
    with pytest.raises(msgspec.ValidationError) as caught:
        decode_input(line)
    message = str(caught.value)
    assert "integer 10000000000000000000… is out of range" in message and message.endswith("- at `$.constraints.limits[2].n`")
    negative = json.dumps(delegate(at=at(0), constraints={"floor": -(2**53) - 1})).encode()
    with pytest.raises(msgspec.ValidationError, match=r"integer -9007199254740993 is out of range .* at `\$\.constraints\.floor`"):
        decode_input(negative)


def test_2_53_itself_and_long_digit_strings_are_accepted() -> None:
    value = decode_input(_open(context_limit=2**53, provider="12345678901234567890123"))
    assert value.context_limit == 2**53 and value.provider == "12345678901234567890123"
    edge = json.dumps(delegate(at=at(0), constraints={"floor": -(2**53), "ceiling": 2**53})).encode()
    assert unbounded_integer_error(edge) is None and decode_input(edge).constraints == {"floor": -(2**53), "ceiling": 2**53}


# ---------------------------------------------------------------- unique keys


def _raw(fields: dict, extra: str) -> bytes:
    """`fields` as a JSON object with `extra` (raw pairs) spliced in after its first pair."""
    text = json.dumps(fields)
    first_comma = text.index(",")
    return (text[:first_comma] + ", " + extra + text[first_comma:]).encode()


@pytest.mark.parametrize(
    ("line", "where"),
    [
        (lambda: _raw(json.loads(_open()), '"provider": "a", "provider": "b"'), "$.provider"),
        (lambda: _raw(delegate(at=at(0)), '"constraints": {"x": 1, "y": [{"z": 1, "z": 2}], "x": 3}'), "$.constraints.x"),
        (lambda: _raw(delegate(at=at(0)), '"constraints": {"list": [{"z": 1, "z": 2}]}'), "$.constraints.list[0].z"),
    ],
    ids=["top level", "outer object first", "in a list"],
)
def test_a_key_repeated_in_one_object_is_a_schema_error_naming_where(line, where: str) -> None:
    with pytest.raises(msgspec.ValidationError, match=r"duplicate key \(JSON readers disagree on which value wins\)") as caught:
        decode_input(line())
    assert str(caught.value).endswith(f"- at `{where}`")


def test_the_same_key_in_different_objects_and_colons_in_strings_are_accepted() -> None:
    fields = delegate(at=at(0), constraints={"id": {"id": 1}, "note": "a:b::c", "kind": [{"kind": ":"}, {"kind": 2}]})
    value = decode_input(json.dumps(fields).encode())
    assert value.constraints["note"] == "a:b::c" and repeated_key_error(json.dumps(fields).encode()) is None


def test_an_escaped_colon_cannot_hide_a_repeated_key() -> None:
    # The count's one blind spot: each lost pair's colon balanced by a colon
    # written as an escape, which decodes to one more colon in a string.
    line = _raw(delegate(at=at(0)), r'"constraints": {"x": 1, "x": 2, "y": "\u003a"}')
    assert line.count(b":") == msgspec.json.encode(msgspec.json.decode(line)).count(b":")  # the count alone is fooled
    with pytest.raises(msgspec.ValidationError, match=r"duplicate key .* at `\$\.constraints\.x`"):
        decode_input(line)
    clean = _raw(delegate(at=at(0)), r'"constraints": {"y": "\u003A"}')
    assert decode_input(clean).constraints == {"y": ":"}


def test_a_repeated_key_is_found_exactly_like_the_standard_librarys_reading() -> None:
    # Against an independent oracle: json.loads with a pair hook sees every pair.
    def oracle(line: bytes) -> bool:
        repeated = False

        def hook(pairs: list) -> dict:
            nonlocal repeated
            repeated = repeated or len(dict(pairs)) != len(pairs)
            return dict(pairs)

        json.loads(line, object_pairs_hook=hook)
        return repeated

    samples = [b'{"a":1}', b'{"a":{"a":1}}', b'{"a":1,"a":1}', b'{"a":"x:y","b":{"c":[1,{"d":2,"d":3}]}}', b'{"a:":1,"a":2}',
               b'{"a" : 1 , "a" : 2}', b'[{"a":1},{"a":2}]', b'{"\\u0061":1,"a":2}', b'{"k":"\\u003a","k":":"}']  # fmt: skip
    for sample in samples:
        assert (repeated_key_error(sample) is not None) == oracle(sample), sample
