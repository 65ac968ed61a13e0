"""`tandem explain` of a background's context recovery (contract v1.2
sections 5.3, 5.4; issue 23): a rejection `context_not_reseeded` in recovery
names the recovery, the required part's figures against the room and the two
inputs admitted; the reseed made once recovery is left lists each figure the
pass recorded and the one that fit."""

from __future__ import annotations

import pytest

from tandem.replay.explain import ExplainError, document, explain, render_text
from tests.integration.gate_stores import stored

FIXTURE = "60_bounded_context_rebuilt_from_durable_state"


def test_a_rejection_in_recovery_names_it_the_figures_and_the_inputs_admitted():
    with pytest.raises(ExplainError) as caught:
        explain(stored(FIXTURE), "inv-c")  # the open refused in recovery made no investigation
    message = str(caught.value)
    assert "was rejected context_not_reseeded ('bg': its epoch 2 reseed is not accepted (context recovery required" in message
    assert "the reseed's required part 438 tokens exceeds its room 400 (context_limit 600 - reserve 200)" in message
    assert "its checkpoint bg/c2 counts 348" in message
    assert "only background.checkpoint and investigation.close are admitted" in message


def test_out_of_recovery_the_rejection_names_the_reseed_it_waits_for():
    with pytest.raises(ExplainError) as caught:
        explain(stored(FIXTURE), "bg")
    message = str(caught.value)
    assert "rejected context_not_reseeded ('bg': its epoch 2 reseed is not accepted (bg/d1 is submitting))" in message


def test_the_reseed_made_once_recovery_is_left_lists_the_recovery():
    store = stored(FIXTURE)
    [delivery] = explain(store, "bg/d1")
    created = delivery.steps[0]
    recovery = [fact for fact in created.facts if fact.name == "recovery"]
    assert [fact.value for fact in recovery] == [
        {"recovery": "reseed", "needed": 468, "room": 400},
        {"recovery": "reseed", "needed": 438, "room": 400},
        {"recovery": None, "needed": 114, "room": 400},
    ]
    assert [fact.source.input.type for fact in recovery] == ["context.reset", "investigation.close", "background.checkpoint"]
    text = render_text(document(store, "bg/d1"))
    assert "context recovery: the required part 468 tokens > room 400; only background.checkpoint and investigation.close admitted" in text
    assert "left context recovery: the required part, costed again, is 114 tokens <= room 400" in text


def test_a_reseed_made_at_its_reset_lists_no_recovery():
    [delivery] = explain(stored("43_background_reseed_after_context_reset"), "bg/d1")
    assert [fact for fact in delivery.steps[0].facts if fact.name == "recovery"] == []
