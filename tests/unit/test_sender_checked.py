"""The schema rules that depend on who sends an input (`generation`, required
of a `background` `action.propose` or `action.revalidate`) see the actor the
input is recorded with (domain/inputs.py `decode_input`, its `unnamed`): in
a trace, its `actor` or the kind's default, with the words and the order of
the rules unchanged; over HTTP, its token's (replay/edge.py); in the client,
nobody known, so only the rules that need no sender run."""

from __future__ import annotations

import datetime
import inspect
import typing
from typing import Any

import msgspec
import pytest

from tandem.domain import inputs as inp
from tandem.domain.inputs import SENDER_CHECKED, Unnamed, decode_input
from tandem.replay.edge import EdgeRefused, LiveEdge, SpoolActors, TokenActor
from tandem.replay.traces import TraceInvalid, parse_trace

GENERATION_MISSING = "`generation` is required when the actor is background"
AT = "2026-03-01T09:00:00Z"
PROPOSE = {
    "type": "action.propose", "at": AT, "operation_id": "op-1", "cause_key": "api:op-1", "operation": "worker.start",
    "target": "build", "resource": "wt-1", "task_id": "api", "grant_id": "g-api", "input_revisions": {"grant": 1},
}  # fmt: skip
REVALIDATE = {"type": "action.revalidate", "at": AT, "operation_id": "op-1", "input_revisions": {"grant": 1}}


def line(value: dict[str, Any], **fields: Any) -> bytes:
    return msgspec.json.encode({**value, **fields})


def refusal(raw: bytes, unnamed: str | Unnamed = Unnamed.KIND_DEFAULT) -> str:
    with pytest.raises(msgspec.ValidationError) as refused:
        decode_input(raw, unnamed)
    return str(refused.value)


def test_the_kinds_with_rules_that_depend_on_the_sender() -> None:
    assert SENDER_CHECKED == {inp.ProposeAction, inp.RevalidateAction}
    for kind in SENDER_CHECKED:  # each runs them from __post_init__ only when the input names its actor
        assert "self.check_named_sender()" in inspect.getsource(kind.__post_init__), kind


def test_no_other_rule_of_a_kind_reads_who_sends_it() -> None:
    """A rule in `__post_init__` that reads the sender would see the kind's
    default for an input naming no actor, never the token's: such a rule
    belongs in `check_sent_by` (docs/maintaining.md, "Add an input kind")."""
    for kind in typing.get_args(inp.AnyInput):
        post_init = getattr(kind, "__post_init__", None)
        if post_init is not None and kind not in SENDER_CHECKED:
            source = inspect.getsource(post_init)
            assert "sender" not in source and "actor" not in source, kind


@pytest.mark.parametrize("value", [PROPOSE, REVALIDATE], ids=["propose", "revalidate"])
def test_a_trace_line_is_checked_for_its_actor_or_the_kinds_default(value: dict[str, Any]) -> None:
    assert refusal(line(value)) == GENERATION_MISSING  # naming none: the kind's default, background
    assert refusal(line(value, actor="background")) == GENERATION_MISSING
    assert decode_input(line(value, actor="human")).actor == "human"
    assert decode_input(line(value, actor="background", generation=1)).generation == 1
    unnamed = decode_input(line(value, generation=1))
    assert unnamed.actor is None and unnamed.sender == "background"  # recorded as written


def test_a_trace_lines_rules_keep_their_order() -> None:
    # Before the change these were the words, rule by rule, in this order.
    both = {"task_id": "api", "rule_id": "r"}
    assert refusal(line(PROPOSE, **both)) == "action.propose needs exactly one of `task_id` and `rule_id`"
    assert refusal(line(PROPOSE, target_sha="abc")) == GENERATION_MISSING
    assert refusal(line(PROPOSE, target_sha="abc", generation=1)) == "`target_sha` needs `source_revision`"
    assert refusal(line(PROPOSE, actor="human", moot_statuses=["closed"])) == "`moot_statuses` needs `source_revision`"


@pytest.mark.parametrize("value", [PROPOSE, REVALIDATE], ids=["propose", "revalidate"])
def test_an_actor_told_checks_the_input_as_that_actors_and_fills_it_in(value: dict[str, Any]) -> None:
    assert refusal(line(value), "background") == GENERATION_MISSING
    for actor in ("human", "executor"):  # an executor's is the engine's to refuse (not_authorized)
        decoded = decode_input(line(value), actor)
        assert (decoded.actor, decoded.generation) == (actor, msgspec.UNSET)
    # An input that names its actor is checked as that actor's, whoever is told.
    assert refusal(line(value, actor="background"), "human") == GENERATION_MISSING
    assert decode_input(line(value, actor="human"), "background").actor == "human"


def test_nobody_known_leaves_the_senders_rules_and_runs_the_others() -> None:
    decoded = decode_input(line(PROPOSE), Unnamed.UNKNOWN)
    assert decoded.actor is None and decoded.generation is msgspec.UNSET
    assert refusal(line(PROPOSE, target_sha="abc"), Unnamed.UNKNOWN) == "`target_sha` needs `source_revision`"
    assert refusal(line(PROPOSE, actor="background"), Unnamed.UNKNOWN) == GENERATION_MISSING


NOW = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)


def live(credential: TokenActor | SpoolActors, *values: dict[str, Any]) -> list[inp.Input]:
    """`values` without `at`, as a live batch with `credential`: the inputs as they will be recorded."""
    data = b"".join(line({k: v for k, v in value.items() if k != "at"}) + b"\n" for value in values)
    return [located.item.input for located in parse_trace(data, "http@0", live=LiveEdge(NOW, None, credential)).lines]


def test_over_http_the_token_is_the_actor_the_rules_see() -> None:
    (value,) = live(TokenActor("human"), PROPOSE)
    assert (value.actor, value.generation, value.at) == ("human", msgspec.UNSET, NOW)
    with pytest.raises(TraceInvalid) as refused:
        live(TokenActor("background"), {**PROPOSE, "generation": 1}, REVALIDATE)
    assert [(error.line, error.message) for error in refused.value.errors] == [(2, GENERATION_MISSING)]
    # A named actor is checked as named; another than the token's is then refused.
    with pytest.raises(EdgeRefused) as mismatch:
        live(TokenActor("background"), {**PROPOSE, "actor": "human"})
    assert mismatch.value.code == "actor_mismatch"


def test_the_spool_takes_the_kinds_default_as_a_trace_does() -> None:
    with pytest.raises(TraceInvalid) as refused:
        live(SpoolActors(("background",)), PROPOSE)
    assert [error.message for error in refused.value.errors] == [GENERATION_MISSING]
    (value,) = live(SpoolActors(("background",)), {**PROPOSE, "generation": 1})
    assert (value.actor, value.sender) == (None, "background")
