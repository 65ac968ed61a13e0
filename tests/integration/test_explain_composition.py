"""`tandem explain` of a composed delivery (contract v1.2 sections 6, 10): the
payload it recorded, the causes labelled untrusted with the observation that
made each, and, under `payload_required`, why its acceptance waits."""

from __future__ import annotations

from tandem.replay.explain import explain
from tests.integration.gate_stores import stored

FIXTURE = "55_exact_payload_and_untrusted_labels"


def facts(link) -> dict[str, object]:
    return {fact.name: fact.value for fact in link.facts}


def test_a_composed_delivery_explains_its_payload_and_its_untrusted_causes():
    [delivery] = explain(stored(FIXTURE), "fg/d1", kind="delivery")
    assert delivery.state == "accepted"
    assert [step.event for step in delivery.steps] == ["DeliveryCreated", "DeliveryComposed", "DeliveryReceipted"]
    composed = delivery.steps[1]
    assert composed.input.type == "delivery.composed" and composed.state == "submitting"
    assert facts(composed)["payload"] == {
        "ref": "payloads/fg/d1",
        "digest": "sha256:5b0f6c3a9e1d2b4f8a7c6e5d4b3a29180f7e6d5c4b3a291807f6e5d4c3b2a190",
        "adapter": "codex",
        "tokens": 412,
    }
    untrusted = next(fact for fact in composed.facts if fact.name == "untrusted")
    assert untrusted.value == ["comment:https://scm/pr/7:c1", 1]
    assert untrusted.source is not None and untrusted.source.event == "ObservationRecorded"
    assert untrusted.source.input.type == "observe"
    assert facts(composed)["payload_required"] is True


def test_a_human_turn_has_no_untrusted_fact():
    [delivery] = explain(stored(FIXTURE), "fg/d2", kind="delivery")
    composed = next(step for step in delivery.steps if step.event == "DeliveryComposed")
    assert "untrusted" not in facts(composed)
    # the same digest again and the mismatch recorded nothing: one composed link
    assert [step.event for step in delivery.steps].count("DeliveryComposed") == 1


def test_under_payload_required_a_delivery_with_no_payload_waits_for_it():
    [delivery] = explain(stored(FIXTURE), "fg/d4", kind="delivery")
    assert delivery.state == "submitting"
    [waiting] = delivery.waiting
    assert waiting.code == "delivery.composed"
    assert "payload_unrecorded" in waiting.text
    assert waiting.facts[0].name == "payload_required" and waiting.facts[0].source.event == "EngineConfigured"


def test_without_payload_required_a_submitting_delivery_waits_for_its_receipt():
    [delivery] = explain(stored("03_comment_reply_edit_delete"), "fg/d1", kind="delivery")
    assert delivery.state == "submitting"
    assert [waiting.code for waiting in delivery.waiting] == ["provider.receipt"]
