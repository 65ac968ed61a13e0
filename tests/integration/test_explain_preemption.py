"""`tandem explain` of a preemption and of an `owner_active` block (contract
v1.2 section 8.1): each names the foreground whose owner is active, the
message (or the proposal of its work) that made the owner's input reach the
action, and why it concerns the action: its session, its task, or the
resource it shares with the foreground's work."""

from __future__ import annotations

from tandem.replay.explain import document, explain, render_text
from tests.integration.gate_stores import stored as gate_store

FIXTURE = "62_human_commands_supersede_affected_intents"


def stored(name: str = FIXTURE):  # type: ignore[no-untyped-def]
    return gate_store(name)


def step(explained, event: str):
    return next(link for link in explained.steps if link.event == event)


def by_name(link) -> dict[str, object]:
    return {fact.name: fact for fact in link.facts}


def test_a_preemption_by_a_message_names_the_foreground_and_the_resource_it_shares():
    [index] = explain(stored(), "index-1", kind="operation")
    facts = by_name(step(index, "ActionCancelRequested"))
    assert facts["preempted_by"].text == "human message m2 on fg2: fg2's owner is active"
    assert facts["preempted_by"].source.event == "MessageQueued"
    affected = facts["affected_by"]
    assert affected.text == "it shares resource wt-docs with fg2's work (op-docs): the owner's work waits for it, or holds it"
    assert affected.value == {"conversation_id": "fg2", "via": "resource", "resource": "wt-docs", "operations": ["op-docs"]}
    assert affected.source.event == "ActionProposed" and affected.source.input.line == 33  # op-docs's proposal


def test_a_preemption_by_its_session_and_one_by_a_proposal_of_the_owners_work():
    store = stored()
    [dream] = explain(store, "dream-fg", kind="operation")
    facts = by_name(step(dream, "ActionCancelRequested"))
    assert facts["preempted_by"].text == "human message m1 on fg: fg's owner is active"
    assert facts["affected_by"].text == "it serialises on fg's session (resource fg)"
    [vacuum] = explain(store, "vacuum-1", kind="operation")
    facts = by_name(step(vacuum, "ActionCancelRequested"))
    assert facts["preempted_by"].text == "op-notes proposed for fg's work while fg's owner is active"
    assert facts["preempted_by"].source.event == "ActionProposed"
    assert facts["affected_by"].value["via"] == "resource" and facts["affected_by"].value["resource"] == "store"
    text = render_text(document(store, "vacuum-1", kind="operation"))
    assert "maintenance work yields to the owner it concerns" in text
    assert "op-notes proposed for fg's work while fg's owner is active" in text


def test_an_owner_active_block_names_the_foreground_and_why_it_concerns_the_action():
    [dream] = explain(stored(), "dream-fg-2", kind="operation")
    blocked = [link for link in dream.steps if link.event == "ActionBlocked"]
    texts = [fact.text for fact in blocked[-1].facts]
    assert texts == [
        "owner_active: fg's owner is active: human turn fg/t1 running on fg",
        "owner_active: it serialises on fg's session (resource fg)",
    ]
    assert [fact.name for fact in blocked[-1].facts] == ["owner_active", "affected_by"]


def test_maintenance_no_owner_affects_is_neither_preempted_nor_blocked():
    [vacuum] = explain(stored(), "vacuum-2", kind="operation")
    assert [link.event for link in vacuum.steps] == ["ActionProposed", "ActionClaimed"]
