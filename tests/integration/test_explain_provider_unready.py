"""`tandem explain` of a provider incident's alert (contract v1.2 sections
3.10, 4.3, 10): it names the conversations it defers (provider_unready) with
the provider, its incident and the incident's observed_at."""

from __future__ import annotations

from tandem.replay.explain import explain
from tests.integration.gate_stores import stored


def test_the_incident_alert_explains_the_deferral_it_causes():
    [alert] = explain(stored("51_imported_heartbeat_not_fresh"), "incident:provider/anthropic")
    [deferred] = [step for step in alert.steps if step.event == "DeliveryDeferred"]
    assert deferred.summary == "nothing is delivered to fg while anthropic is not ready: deferred provider_unready"
    [fact] = deferred.facts
    assert fact.name == "provider_unready"
    assert fact.value == {"provider": "anthropic", "incident_id": "provider/anthropic", "observed_at": "2026-03-01T11:00:04Z"}


def test_each_occurrence_explains_its_own_deferral():
    [alert] = explain(stored("42_expired_auth_independent_incident"), "incident:provider/anthropic")
    observed = [step.facts[0].value["observed_at"] for step in alert.steps if step.event == "DeliveryDeferred"]
    assert observed == ["2026-03-01T10:00:00Z", "2026-03-01T10:29:58Z"]  # the known expiry, then the report
