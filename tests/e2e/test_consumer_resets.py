"""Sequence resets over HTTP (issue 26, docs/contract/consumer.md "Sequence
resets"): a real `tandem serve`, change-log batches posted with the source's
token; a producer that restarts its seq raises
`consumer_sequence_reset:{consumer_id}` in GET /v1/views/alerts, explain
names the entry (GET /v1/explain, the alert and the consumer), and the
reconciliation the producer's new epoch opens resolves it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.serving import Served

PR = "https://scm/pr/41"
ALERT = "consumer_sequence_reset:gh"


def comment(source_id: str, fingerprint: str) -> dict[str, Any]:
    return {"source_id": source_id, "kind": "comment", "scope": PR, "complete": True, "fingerprint": fingerprint}


def batch(epoch: int, *entries: tuple[int, str]) -> dict[str, Any]:
    """A `log.batch` of consumer gh: (seq, source) entries, each source's comment at version v1."""
    return {
        "type": "log.batch", "consumer_id": "gh", "epoch": epoch,
        "entries": [{"seq": seq, "observation": comment(source, f"{source}-v1")} for seq, source in entries],
    }  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    directory = tmp_path_factory.mktemp("sequence-reset")
    with Served(directory, f"sqlite:///{directory}/events.db", "--no-runtime-inputs") as served:
        yield served


def posted(server: Served, value: dict[str, Any]) -> dict[str, Any]:
    """The one result of `value` posted with the source's token."""
    with server.client("source") as client:
        (result,) = client.submit(value)["results"]
    return result


def alerts(server: Served) -> dict[str, dict[str, Any]]:
    with server.client("human") as client:
        body = client.view("alerts")
    return {row["alert_id"]: row for row in body["rows"]}


def test_a_restarted_producer_raises_the_alert_and_a_reconciliation_resolves_it(server: Served) -> None:
    assert posted(server, batch(1, (1, "c1"), (2, "c2"), (3, "c3"), (4, "c4")))["accepted"]
    assert posted(server, batch(1, (3, "c3"), (4, "c4"), (5, "c5")))["accepted"]  # a resend: no alert
    assert ALERT not in alerts(server)

    reset = posted(server, batch(1, (1, "n1"), (2, "n2")))  # the producer restarted its seq
    assert reset["accepted"]  # the contract's skip stays
    assert [e["type"] for e in reset["events"]][-3:] == ["EntriesSkipped", "SequenceReset", "AlertRaised"]
    row = alerts(server)[ALERT]
    assert (row["kind"], row["state"], row["count"]) == ("consumer_sequence_reset", "raised", 1)

    with server.client("human") as client:
        (alert,) = client.explain(ALERT)["matches"]
        (consumer,) = client.explain("gh", kind="consumer")["matches"]
        inbox = {r["cause_key"] for r in client.view("inbox")["rows"]}
    assert alert["steps"][0]["summary"].startswith(f"raised (occurrence 1): seq 1 carried n1 on comment:{PR}:n1")
    assert consumer["state"] == "consuming" and "resets 1" in consumer["summary"]
    assert [s["event"] for s in consumer["steps"]].count("SequenceReset") == 1
    assert f"comment:{PR}:n1" not in inbox  # skipped, not applied: what the alert is about

    refused = posted(server, batch(2, (3, "n3")))  # the producer says its log is new: gh/r1 opens
    assert (refused["accepted"], refused["reason"]) == (False, "reconciliation_required")
    facts = [comment(f"n{n}", f"n{n}-v1") for n in (1, 2, 3)]
    reconcile = {"type": "log.reconcile", "consumer_id": "gh", "reconciliation_id": "gh/r1", "epoch": 2,
                 "retained_head": 3, "facts": facts}  # fmt: skip
    assert posted(server, reconcile)["accepted"]
    after = alerts(server)
    assert after[ALERT]["state"] == "resolved" and after["reconciliation_required:gh"]["state"] == "resolved"
    with server.client("human") as client:
        inbox = {r["cause_key"] for r in client.view("inbox")["rows"]}
    assert {f"comment:{PR}:n{n}" for n in (1, 2, 3)} <= inbox
