"""The client's typed inputs (client/inputs.py) are the domain's kinds: the
same set, names, tags and fields (`at` optional), each documented with what
it does and where docs/contract/ specifies it; every fixture line reads
into one and is sent as bytes the domain decodes to the same input; bad
input fails when made, naming the field."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import msgspec
import pytest

from tandem.client import inputs
from tandem.client.kinds import KIND_DOCS
from tandem.domain import inputs as domain
from tests.unit.test_docs_self_contained import _anchors

ROOT = Path(__file__).resolve().parents[2]
CONTRACT_ROW = re.compile(r"^\| \[`([^`]+)`\]\(([^)#]+)#([^)]+)\) \| [^|]+ \| ([^|]+) \|$", re.M)
TRACES = sorted((ROOT / "fixtures").glob("*/*.jsonl"))
UTC = datetime.timezone.utc


def test_one_class_per_kind_of_the_domain_with_its_name_and_tag() -> None:
    assert set(inputs.KINDS) == set(domain.INPUT_KINDS)
    for tag, cls in inputs.KINDS.items():
        assert cls.domain.__struct_config__.tag == tag == cls.__struct_config__.tag
        assert getattr(inputs, cls.domain.__name__) is cls and cls.__name__ == cls.domain.__name__
        assert cls.actors == cls.domain.actors
    assert set(inputs.__all__) >= {cls.__name__ for cls in inputs.KINDS.values()}


def test_every_class_has_the_domain_kinds_fields_and_only_at_becomes_optional() -> None:
    for cls in inputs.KINDS.values():
        mine = {f.name: f for f in msgspec.structs.fields(cls)}
        theirs = {f.name: f for f in msgspec.structs.fields(cls.domain)}
        assert mine.keys() == theirs.keys(), cls
        for name, field in theirs.items():
            if name == "at":
                assert field.required and not mine[name].required and mine[name].default is msgspec.UNSET
            else:
                assert (mine[name].type, mine[name].default, mine[name].default_factory) == (field.type, field.default, field.default_factory), (cls, name)


def test_the_kinds_docs_are_the_contracts_tables() -> None:
    rows = CONTRACT_ROW.findall((ROOT / "docs" / "contract" / "README.md").read_text())
    table = {kind: (what.strip(), f"docs/contract/{file}#{anchor}") for kind, file, anchor, what in rows}
    assert KIND_DOCS == table
    assert set(KIND_DOCS) == set(domain.INPUT_KINDS)


def test_every_class_says_what_it_does_and_where_the_contract_specifies_it() -> None:
    for tag, cls in inputs.KINDS.items():
        what, where = KIND_DOCS[tag]
        doc = cls.__doc__ or ""
        assert what[1:] in doc and f"Specified in {where}." in doc and f"`{tag}`" in doc, (tag, doc)
        file, _, anchor = where.partition("#")
        assert anchor in _anchors(ROOT / file), f"{tag}: {where} is no heading"


def test_the_nested_structs_are_the_domains_under_their_names() -> None:
    assert inputs.NESTED, "the kinds nest Structs (GrantRequest, ...)"
    for name, cls in inputs.NESTED.items():
        assert getattr(inputs, name) is cls and cls.__module__.startswith("tandem.domain.")


def _lines(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().splitlines() if line.strip() and not line.lstrip().startswith(b"//")]


@pytest.mark.parametrize("path", TRACES, ids=[str(p.relative_to(ROOT / "fixtures")) for p in TRACES])
def test_every_fixture_line_reads_into_its_class_and_is_sent_as_the_same_input(path: Path) -> None:
    for line in _lines(path):
        try:
            expected = domain.decode_input(line)
        except (msgspec.ValidationError, msgspec.DecodeError):
            with pytest.raises((msgspec.ValidationError, msgspec.DecodeError)):
                inputs.parse(line)
            continue
        value = inputs.parse(line)
        assert type(value) is inputs.KINDS[expected.input_type]
        assert domain.decode_input(value.encoded()) == expected


def test_at_may_be_left_out_and_is_sent_in_utc_when_given() -> None:
    message = inputs.HumanMessage(conversation_id="fg", message_id="m1", text="hi")
    assert message.at is msgspec.UNSET and b'"at"' not in message.encoded()
    assert msgspec.json.decode(message.encoded()) == {"type": "human.message", "conversation_id": "fg", "message_id": "m1", "text": "hi"}
    stamped = inputs.HumanMessage(conversation_id="fg", message_id="m1", text="hi", at=datetime.datetime(2026, 3, 1, 9, tzinfo=UTC))
    assert msgspec.json.decode(stamped.encoded())["at"] == "2026-03-01T09:00:00Z"


@pytest.mark.parametrize(
    "fields, said",
    [
        ({"conversation_id": 7}, "Expected `str`, got `int` - at `$.conversation_id`"),
        ({"message_id": ""}, "Expected `str` of length >= 1 - at `$.message_id`"),
        ({"tokens": -1}, "Expected `int` >= 0 - at `$.tokens`"),
        ({"at": datetime.datetime(2026, 3, 1, 9)}, "Expected `datetime` with a timezone component - at `$.at`"),
        ({"at": datetime.datetime(2026, 3, 1, 9, tzinfo=datetime.timezone(datetime.timedelta(hours=1)))}, "in UTC"),
        ({"text": object()}, "- at `$.text`"),
    ],
)
def test_a_wrong_type_fails_when_the_input_is_made_naming_the_field(fields: dict[str, object], said: str) -> None:
    with pytest.raises(msgspec.ValidationError) as refused:
        inputs.HumanMessage(**{"conversation_id": "fg", "message_id": "m1", "text": "hi", **fields})  # type: ignore[arg-type]
    assert said in str(refused.value)


def test_an_unknown_field_fails_when_the_input_is_made_naming_it() -> None:
    with pytest.raises(TypeError, match="Unexpected keyword argument 'colour'"):
        inputs.HumanMessage(conversation_id="fg", message_id="m1", text="hi", colour="red")  # type: ignore[call-arg]
    with pytest.raises(msgspec.ValidationError, match="Object contains unknown field `colour`"):
        inputs.parse({"type": "human.message", "conversation_id": "fg", "message_id": "m1", "text": "hi", "colour": "red"})


def test_the_domains_own_checks_run_nested_paths_and_kinds_named() -> None:
    with pytest.raises(msgspec.ValidationError, match="task.revise needs at least one of `goal`"):
        inputs.ReviseTask(task_id="t1", expected_revision=1)
    with pytest.raises(msgspec.ValidationError, match=r"at `\$.grant.allowed_operations`"):
        inputs.parse({"type": "task.delegate", "task_id": "t1", "conversation_id": "fg", "message_refs": [], "goal": "g",
                      "done_when": ["done"], "grant": {"grant_id": "g1", "allowed_operations": "worker.start"}})  # fmt: skip
    with pytest.raises(msgspec.ValidationError, match=r"Invalid value 'human.mesage' - at `\$.type`"):
        inputs.parse({"type": "human.mesage"})
    with pytest.raises(msgspec.ValidationError, match=r"Expected `int`, got `str` - at `\$.tokens`"):
        inputs.parse({"type": "human.message", "conversation_id": "fg", "message_id": "m1", "text": "hi", "tokens": "3"})


PROPOSAL = {
    "operation_id": "op-1", "cause_key": "api:op-1", "operation": "worker.start", "target": "build", "resource": "wt-1",
    "task_id": "api", "grant_id": "g-api", "input_revisions": {"grant": 1},
}  # fmt: skip
GENERATION_MISSING = "`generation` is required when the actor is background"


@pytest.mark.parametrize("tag, fields", [("action.propose", PROPOSAL), ("action.revalidate", {"operation_id": "op-1", "input_revisions": {"grant": 1}})])
def test_a_rule_that_depends_on_the_sender_waits_for_the_server_when_no_actor_is_named(tag: str, fields: dict[str, object]) -> None:
    # Naming no actor, the input is its token's, which the client does not know:
    # it is made, and sent without `generation`; the server checks it for the token.
    made = inputs.parse({"type": tag, **fields})
    assert made.actor is None and made.generation is msgspec.UNSET  # type: ignore[attr-defined]
    assert b'"generation"' not in made.encoded() and b'"actor"' not in made.encoded()
    made_so = inputs.KINDS[tag](**{**fields, "input_revisions": inputs.InputRevisions(grant=1)})  # type: ignore[arg-type]
    assert made_so == made
    # Naming its actor, it is checked when made; a trace line naming none is
    # the kind's default's (background) and refused.
    with pytest.raises(msgspec.ValidationError, match=GENERATION_MISSING):
        inputs.parse({"type": tag, "actor": "background", **fields})
    with pytest.raises(msgspec.ValidationError, match=GENERATION_MISSING):
        domain.decode_input(msgspec.json.encode({"type": tag, "at": "2026-03-01T09:00:00Z", **fields}))
    assert inputs.parse({"type": tag, "actor": "human", **fields}).actor == "human"


def test_the_senders_other_rules_still_run_when_no_actor_is_named() -> None:
    with pytest.raises(msgspec.ValidationError, match="`target_sha` needs `source_revision`"):
        inputs.parse({"type": "action.propose", **PROPOSAL, "target_sha": "abc"})
    with pytest.raises(msgspec.ValidationError, match="exactly one of `task_id` and `rule_id`"):
        inputs.parse({"type": "action.propose", **PROPOSAL, "rule_id": "r"})
